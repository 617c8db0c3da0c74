"""Where PDF blocks are printed, in the snapshot: rects and page labels round-trip, travel with
a document carried into the next snapshot, stay compact, and a snapshot written before they
were kept (no rects.bin, no labels in documents.msgpack) still opens, without them."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import numpy as np
import pytest

from index import blockstore
from index.blockstore import RECT_DTYPE, RECTS, RECTS_HEADER
from index.records import DocumentRecord
from index.snapshot import MANIFEST, Snapshot
from tests.index.test_snapshot import build, sectioned_document, unit_vectors


def with_rects(doc: DocumentRecord) -> DocumentRecord:
    """`doc` as a PDF: every block printed on its pages, one rect per line."""
    blocks = []
    for block in doc.blocks:
        first = block.page_start or 1
        rects = tuple(
            (
                first + k // 4,
                *(
                    round(v, 1)
                    for v in (56.7 + k % 3, 80.2 + 13.1 * k, 540.3 - k % 5, 92.1 + 13.1 * k)
                ),
            )
            for k in range(block.block_index % 9)
        )
        blocks.append(msgspec.structs.replace(block, rects=rects))
    return msgspec.structs.replace(
        doc,
        format="pdf",
        blocks=tuple(blocks),
        page_labels=tuple(["i", "ii", *map(str, range(1, 6))]),
    )


@pytest.fixture(scope="module")
def docs() -> list[DocumentRecord]:
    return [
        with_rects(sectioned_document("nodejs-md/events.md", "dPdf", "en", limit=80)),
        sectioned_document("nodejs-md/dns.md", "dMd", "en", limit=30),  # no rects, no labels
    ]


def _build(directory: Path, docs: list[DocumentRecord], parent: Path | None = None) -> None:
    vectors = [unit_vectors(len(d.blocks), seed=i) for i, d in enumerate(docs)]
    build(directory, docs, vectors, parent=parent)


def test_rects_and_page_labels_round_trip(tmp_path: Path, docs: list[DocumentRecord]) -> None:
    _build(tmp_path / "s1", docs)
    with Snapshot.open(tmp_path / "s1") as snap:
        assert snap.page_labels(0) == docs[0].page_labels and snap.page_labels(1) == ()
        for doc, record in enumerate(docs):
            start = snap.documents[doc].block_start
            for block in record.blocks:
                assert snap.block_rects(start + block.block_index) == block.rects
            assert snap.document_record(doc) == record  # what carrying it forward rebuilds


def test_a_carried_document_keeps_its_rects_and_labels(
    tmp_path: Path, docs: list[DocumentRecord]
) -> None:
    _build(tmp_path / "s1", docs)
    with Snapshot.open(tmp_path / "s1") as parent:
        carried = [parent.document_record(0), parent.document_record(1)]
    _build(tmp_path / "s2", carried[::-1], parent=tmp_path / "s1")
    with Snapshot.open(tmp_path / "s2") as snap:
        assert snap.document_record(1) == docs[0]
        assert snap.page_labels(1) == docs[0].page_labels


def test_rects_take_twelve_bytes_each(tmp_path: Path, docs: list[DocumentRecord]) -> None:
    _build(tmp_path / "s1", docs)
    n_blocks = sum(len(d.blocks) for d in docs)
    n_rects = sum(len(b.rects) for d in docs for b in d.blocks)
    size = (tmp_path / "s1" / RECTS).stat().st_size
    assert RECT_DTYPE.itemsize == 12
    assert size == RECTS_HEADER.itemsize + 4 * (n_blocks + 1) + 12 * n_rects


def as_written_before_rects(directory: Path) -> None:
    """Make `directory` what a build before rects wrote: no rects.bin, and documents.msgpack
    without page labels (both absent from the manifest's file list)."""

    class OldDocumentsFile(msgspec.Struct, kw_only=True):
        format_version: int
        documents: tuple[msgspec.Raw, ...]
        block_ids: tuple[msgspec.Raw, ...]

    path = directory / blockstore.DOCUMENTS
    old = msgspec.msgpack.decode(path.read_bytes(), type=OldDocumentsFile)
    path.write_bytes(msgspec.msgpack.encode(old))
    (directory / RECTS).unlink()
    manifest = json.loads((directory / MANIFEST).read_text())
    del manifest["files"][RECTS]
    manifest["files"][blockstore.DOCUMENTS] = path.stat().st_size
    (directory / MANIFEST).write_text(json.dumps(manifest))


def test_a_snapshot_from_before_rects_opens_without_them(
    tmp_path: Path, docs: list[DocumentRecord]
) -> None:
    _build(tmp_path / "s1", docs)
    as_written_before_rects(tmp_path / "s1")
    with Snapshot.open(tmp_path / "s1") as snap:
        assert snap.page_labels(0) == ()
        assert all(snap.block_rects(i) == () for i in range(snap.n_blocks))
        record = snap.document_record(0)
        assert [b.text for b in record.blocks] == [b.text for b in docs[0].blocks]
        assert record.page_labels == () and all(b.rects == () for b in record.blocks)
        assert snap.block(3).text == docs[0].blocks[3].text


def test_rects_of_a_format_this_build_does_not_know_are_ignored(
    tmp_path: Path, docs: list[DocumentRecord]
) -> None:
    _build(tmp_path / "s1", docs)
    path = tmp_path / "s1" / RECTS
    data = bytearray(path.read_bytes())
    data[: RECTS_HEADER.itemsize] = np.array([(99, 0)], dtype=RECTS_HEADER).tobytes()
    path.write_bytes(bytes(data))  # same size: the manifest's check still passes
    with Snapshot.open(tmp_path / "s1") as snap:
        assert snap.block_rects(1) == ()
        assert snap.block(1).text == docs[0].blocks[1].text
