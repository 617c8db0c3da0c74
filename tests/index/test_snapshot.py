"""A snapshot round-trips every field, hashes deterministically, and refuses or reports damage."""

from __future__ import annotations

import functools
import os
import re
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any
from unittest import mock

import msgspec
import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import index.vectors
from index import blockstore, bm25
from index.errors import ManifestDamaged, SnapshotError
from index.prepared import prepare_document
from index.records import (
    BlockRecord,
    BuildStats,
    DocumentRecord,
    EmbeddingSpec,
    RetrievalParams,
    SectionRecord,
    SnapshotManifest,
)
from index.snapshot import (
    HEADER,
    MANIFEST,
    Snapshot,
    build_snapshot,
    read_manifest,
    verify_snapshot,
)
from index.textnorm import document_tokens, fold
from index.vectors import build_threads

DOCS = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus" / "docs"
DIM = 32
SPEC = EmbeddingSpec(provider="local", model="test-model", dimensions=DIM)


def sectioned_document(relative: str, doc_id: str, lang: str, limit: int) -> DocumentRecord:
    """A DocumentRecord of real corpus text: Markdown headings (or one root), ~400-char blocks."""
    text = (DOCS / relative).read_text("utf-8")
    sections: list[tuple[str, int, list[str]]] = [(relative, 1, [])]
    for para in re.split(r"\n\s*\n", text):
        heading = re.match(r"(#{1,3}) (.+)", para.strip())
        if heading and relative.endswith(".md"):
            sections.append((heading.group(2), len(heading.group(1)), []))
        elif para.strip():
            sections[-1][2].append(para.strip())
    section_records: list[SectionRecord] = []
    blocks: list[BlockRecord] = []
    for ordinal, (title, depth, paras) in enumerate(sections):
        section_records.append(
            SectionRecord(
                path=f"{title} ({ordinal})",
                title=title,
                ordinal=ordinal,
                depth=depth,
                parent=-1,
                direct_blocks=0,
                subtree_blocks=0,
                direct_tokens=0,
                subtree_tokens=0,
                first_sentence=paras[0][:40] if paras else "",
                page=ordinal + 1 if ordinal % 2 else None,
            )
        )
        current = ""
        for para in [*paras, ""]:
            if len(blocks) >= limit:
                break
            if current and (not para or len(current) + len(para) > 400):
                n = len(blocks)
                blocks.append(
                    BlockRecord(
                        block_index=n,
                        block_id=f"{doc_id}-b{n:04d}",
                        section=ordinal,
                        text=current,
                        tokens=len(current) // 4,
                        page_start=n // 3 + 1 if n % 4 else None,
                        page_end=n // 3 + 2 if n % 4 else None,
                    )
                )
                current = ""
            current = f"{current}\n\n{para}" if current else para
        if len(blocks) >= limit:
            break
    return DocumentRecord(
        doc_id=doc_id,
        content_hash=f"sha-{doc_id}",
        source=relative,
        source_label=f"label of {relative}",
        title=f"Title {doc_id}",
        aliases=(f"{doc_id}-alias",),
        lang=lang,
        format="markdown" if relative.endswith(".md") else "text",
        pages=7,
        parser_version="p1",
        chunker_version="c1",
        sections=tuple(section_records),
        blocks=tuple(blocks),
    )


def unit_vectors(n: int, seed: int) -> npt.NDArray[np.float32]:
    rows = np.random.default_rng(seed).standard_normal((n, DIM))
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows.astype(np.float32)


@pytest.fixture(scope="module")
def documents() -> list[DocumentRecord]:
    return [
        sectioned_document("nodejs-md/events.md", "dEvents", "en", limit=120),
        sectioned_document("debian-reference.zh-cn.txt", "dDebZh", "zh", limit=150),
        sectioned_document("nodejs-md/dns.md", "dDns", "en", limit=60),
    ]


@pytest.fixture(scope="module")
def vectors(documents: list[DocumentRecord]) -> list[npt.NDArray[np.float32]]:
    return [unit_vectors(len(d.blocks), seed=i) for i, d in enumerate(documents)]


def manifest(snapshot_id: str = "s1", **changes: Any) -> SnapshotManifest:
    base = SnapshotManifest(
        snapshot_id=snapshot_id,
        parent_id=None,
        collection="default",
        status="ready",
        created_at="2026-11-30T00:00:00Z",
        embedding=SPEC,
        parser_versions={"markdown": "p1", "text": "p1"},
        chunker_version="c1",
        retrieval=RetrievalParams(
            bm25_k1=1.2,
            bm25_b=0.75,
            rrf_k=60,
            top_k=5,
            min_similarity=0.2,
            exact_search_max_blocks=1000,
        ),
        stats=BuildStats(documents_in=3, documents_succeeded=3),
    )
    return msgspec.structs.replace(base, **changes)


def build(
    directory: Path,
    documents: list[DocumentRecord],
    vectors: list[npt.NDArray[np.float32]],
    m: SnapshotManifest | None = None,
    threshold: int = 1000,
    parent: Path | None = None,
) -> SnapshotManifest:
    m = m or manifest()
    if m.retrieval is not None:
        m = msgspec.structs.replace(
            m, retrieval=msgspec.structs.replace(m.retrieval, exact_search_max_blocks=threshold)
        )
    return build_snapshot(
        directory,
        m,
        documents,
        vectors,
        parent=parent,
        k1=1.2,
        b=0.75,
        exact_search_max_blocks=threshold,
    )


@pytest.fixture(scope="module")
def built(
    tmp_path_factory: pytest.TempPathFactory,
    documents: list[DocumentRecord],
    vectors: list[npt.NDArray[np.float32]],
) -> tuple[Path, SnapshotManifest]:
    directory = tmp_path_factory.mktemp("snapshots") / "s1"
    return directory, build(directory, documents, vectors)


def test_every_document_and_block_field_round_trips(
    built: tuple[Path, SnapshotManifest], documents: list[DocumentRecord]
) -> None:
    directory, final = built
    with Snapshot.open(directory) as snap:
        assert snap.manifest == final == read_manifest(directory)
        assert snap.n_blocks == sum(len(d.blocks) for d in documents) == final.stats.blocks_indexed
        start = 0
        for doc_ordinal, (info, record) in enumerate(zip(snap.documents, documents, strict=True)):
            for field in ("doc_id", "content_hash", "source", "source_label", "title", "aliases"):
                assert getattr(info, field) == getattr(record, field)
            for field in ("lang", "format", "pages", "parser_version", "chunker_version"):
                assert getattr(info, field) == getattr(record, field)
            assert info.sections == record.sections
            assert (info.block_start, info.block_count) == (start, len(record.blocks))
            assert snap.doc_ordinal(record.doc_id) == doc_ordinal
            for block in record.blocks:
                got = snap.block(start + block.block_index)
                assert (got.doc, got.doc_id, got.ordinal) == (
                    doc_ordinal,
                    record.doc_id,
                    start + block.block_index,
                )
                assert got.citation == f"{record.doc_id}#{block.block_id}"
                for field in ("block_index", "block_id", "section", "text", "tokens"):
                    assert getattr(got, field) == getattr(block, field)
                assert (got.page_start, got.page_end) == (block.page_start, block.page_end)
                assert snap.block_ordinal(record.doc_id, block.block_id) == got.ordinal
            start += len(record.blocks)
        assert snap.doc_ordinal("nope") is None
        assert snap.block_ordinal("dEvents", "nope") is None
        with pytest.raises(IndexError):
            snap.block(snap.n_blocks)


def test_manifest_is_completed_and_lists_every_file_with_its_size(
    built: tuple[Path, SnapshotManifest], documents: list[DocumentRecord]
) -> None:
    directory, final = built
    on_disk = {p.name: p.stat().st_size for p in directory.iterdir() if p.name != MANIFEST}
    assert final.files == on_disk
    assert final.vector_index == "exact"
    assert [(d.doc_id, d.blocks) for d in final.documents] == [
        (d.doc_id, len(d.blocks)) for d in documents
    ]
    assert final.stats.documents_in == 3  # the caller's figures are kept
    assert len(final.content_hash) == 64
    assert verify_snapshot(directory).ok


def test_searches_through_the_snapshot_respect_document_scope(
    built: tuple[Path, SnapshotManifest], vectors: list[npt.NDArray[np.float32]]
) -> None:
    directory, _ = built
    with Snapshot.open(directory) as snap:
        events, zh = snap.doc_ordinal("dEvents"), snap.doc_ordinal("dDebZh")
        assert events is not None and zh is not None
        hits = snap.bm25_search("removeListener event emitter", 5)
        assert hits and snap.block(hits[0][0]).doc_id in {"dEvents", "dDns"}
        assert snap.bm25_search("removeListener", 5, docs=[zh]) == []
        zh_hits = snap.bm25_search("软件包", 5, docs=[zh])
        assert zh_hits and all(snap.block(o).doc == zh for o, _ in zh_hits)

        found = snap.scan("EventEmitter")
        naive = [
            (o, fold(snap.block(o).text).count(fold("EventEmitter"))) for o in range(snap.n_blocks)
        ]
        assert found == [(o, c) for o, c in naive if c]
        assert snap.scan("EventEmitter", docs=[zh]) == []
        first = found[0][0]
        assert "EventEmitter" in snap.snippet(first, "eventemitter")

        probe = vectors[1][7]
        assert snap.vector_search(probe, 1)[0][0] == snap.block_ordinal("dDebZh", "dDebZh-b0007")
        scoped = snap.vector_search(probe, 5, docs=[events])
        assert len(scoped) == 5 and all(snap.block(o).doc == events for o, _ in scoped)
        assert snap.bm25_search("x", 5, docs=[]) == [] and snap.scan("x", docs=[]) == []
        with pytest.raises(IndexError):
            snap.scan("x", docs=[99])


def test_blocks_given_out_of_order_are_stored_by_block_index_with_their_vectors(
    tmp_path: Path, documents: list[DocumentRecord], vectors: list[npt.NDArray[np.float32]]
) -> None:
    doc = documents[2]
    shuffled = msgspec.structs.replace(doc, blocks=tuple(reversed(doc.blocks)))
    build(tmp_path / "s", [shuffled], [vectors[2][::-1].copy()])
    with Snapshot.open(tmp_path / "s") as snap:
        assert [snap.block(i).block_id for i in range(snap.n_blocks)] == [
            b.block_id for b in doc.blocks
        ]
        stored = snap.doc_vectors(0)
        assert np.array_equal(stored, vectors[2].astype(np.float16).astype(np.float32))


def test_same_inputs_give_the_same_content_hash_and_bytes_whatever_the_id_and_time(
    tmp_path: Path, documents: list[DocumentRecord], vectors: list[npt.NDArray[np.float32]]
) -> None:
    a = build(tmp_path / "a", documents, vectors, manifest("a"))
    b = build(
        tmp_path / "b",
        documents,
        vectors,
        manifest("b", parent_id="a", created_at="2027-01-01T00:00:00Z"),
    )
    assert a.content_hash == b.content_hash
    assert a.files == b.files
    for name in a.files:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()

    edited = list(documents)
    blocks = list(edited[1].blocks)
    blocks[3] = msgspec.structs.replace(blocks[3], text=blocks[3].text + "。")
    edited[1] = msgspec.structs.replace(edited[1], blocks=tuple(blocks))
    c = build(tmp_path / "c", edited, vectors, manifest("c"))
    assert c.content_hash != a.content_hash
    d = build(tmp_path / "d", documents, vectors, manifest("d", status="ready_partial"))
    assert d.content_hash != a.content_hash


def test_open_rejects_a_truncated_file_and_a_missing_manifest(
    tmp_path: Path, documents: list[DocumentRecord], vectors: list[npt.NDArray[np.float32]]
) -> None:
    build(tmp_path / "s", documents[:1], vectors[:1])
    text = tmp_path / "s" / "text.bin"
    text.write_bytes(text.read_bytes()[:-1])
    with pytest.raises(SnapshotError, match=r"text\.bin has"):
        Snapshot.open(tmp_path / "s")
    (tmp_path / "s" / MANIFEST).unlink()
    with pytest.raises(SnapshotError, match="incomplete"):
        Snapshot.open(tmp_path / "s")
    with pytest.raises(SnapshotError):
        Snapshot.open(tmp_path / "never-built")


def test_a_truncated_manifest_is_damaged_not_missing(
    tmp_path: Path, documents: list[DocumentRecord], vectors: list[npt.NDArray[np.float32]]
) -> None:
    build(tmp_path / "s", documents[:1], vectors[:1])
    path = tmp_path / "s" / MANIFEST
    path.write_bytes(path.read_bytes()[:40])
    with pytest.raises(ManifestDamaged, match=r"manifest\.json is corrupt"):
        read_manifest(tmp_path / "s")
    with pytest.raises(ManifestDamaged):
        Snapshot.open(tmp_path / "s")
    path.unlink()
    with pytest.raises(SnapshotError, match="incomplete") as missing:
        read_manifest(tmp_path / "s")
    assert not isinstance(missing.value, ManifestDamaged)


def test_verify_detects_a_flipped_byte_that_open_does_not_check(
    tmp_path: Path, documents: list[DocumentRecord], vectors: list[npt.NDArray[np.float32]]
) -> None:
    final = build(tmp_path / "s", documents[:1], vectors[:1])
    postings = tmp_path / "s" / "bm25.postings"
    data = bytearray(postings.read_bytes())
    data[len(data) // 2] ^= 0x01
    postings.write_bytes(bytes(data))
    with Snapshot.open(tmp_path / "s"):
        pass  # sizes still match: open does not re-hash
    result = verify_snapshot(tmp_path / "s")
    assert not result.ok
    assert result.expected == final.content_hash != result.actual
    assert any("content hash" in p for p in result.problems)
    (tmp_path / "s" / "stray.tmp").write_bytes(b"x")
    assert any("stray.tmp" in p for p in verify_snapshot(tmp_path / "s").problems)


def test_a_snapshot_with_no_documents_opens_and_finds_nothing(tmp_path: Path) -> None:
    final = build(tmp_path / "empty", [], [], manifest(stats=BuildStats()))
    assert final.stats.blocks_indexed == 0 and final.vector_index == "exact"
    with Snapshot.open(tmp_path / "empty") as snap:
        assert snap.n_blocks == 0 and snap.documents == ()
        assert snap.bm25_search("anything 软件", 5) == []
        assert snap.vector_search(unit_vectors(1, 0)[0], 5) == []
        assert snap.scan("anything") == []
    assert verify_snapshot(tmp_path / "empty").ok


def test_build_refuses_an_existing_directory_and_leaves_nothing_when_input_is_wrong(
    tmp_path: Path, documents: list[DocumentRecord], vectors: list[npt.NDArray[np.float32]]
) -> None:
    (tmp_path / "exists").mkdir()
    with pytest.raises(FileExistsError):
        build(tmp_path / "exists", documents[:1], vectors[:1])
    gap = msgspec.structs.replace(documents[2], blocks=documents[2].blocks[1:])
    with pytest.raises(ValueError, match="block indexes"):
        build(tmp_path / "bad", [gap], [vectors[2][1:]])
    assert not (tmp_path / "bad").exists()
    with pytest.raises(ValueError, match="shape"):
        build(tmp_path / "bad", documents[:1], [vectors[1]])
    with pytest.raises(ValueError, match="retrieval"):
        build_snapshot(
            tmp_path / "bad",
            manifest(),
            documents[:1],
            vectors[:1],
            k1=2.0,
            b=0.75,
            exact_search_max_blocks=1000,
        )
    assert not (tmp_path / "bad").exists()


def test_hnsw_graph_is_extended_from_a_parent_with_the_same_embedding_only(
    tmp_path: Path, documents: list[DocumentRecord], vectors: list[npt.NDArray[np.float32]]
) -> None:
    parent = tmp_path / "p"
    m = build(parent, documents[:2], vectors[:2], threshold=100)
    assert m.vector_index == "hnsw"
    child = build(tmp_path / "c", documents[1:], vectors[1:], threshold=100, parent=parent)
    other = manifest(embedding=EmbeddingSpec(provider="local", model="other", dimensions=DIM))
    moved = build(tmp_path / "o", documents[1:], vectors[1:], other, threshold=100, parent=parent)
    assert child.vector_index == moved.vector_index == "hnsw"
    # The manifest says how each graph was built: all cores, stated HNSW parameters, and
    # whether it was extended from the parent (and by how much) or built afresh.
    assert m.vector_graph is not None and child.vector_graph is not None
    assert moved.vector_graph is not None
    assert m.vector_graph.threads == child.vector_graph.threads == build_threads()
    assert (m.vector_graph.connectivity, m.vector_graph.expansion_add) == (16, 128)
    assert m.vector_graph.library.startswith("usearch ")
    assert not m.vector_graph.from_parent and not moved.vector_graph.from_parent
    assert child.vector_graph.from_parent
    assert child.vector_graph.vectors_removed == len(documents[0].blocks)
    assert child.vector_graph.vectors_added == len(documents[2].blocks)
    with Snapshot.open(tmp_path / "c") as c, Snapshot.open(tmp_path / "o") as o:
        assert c.header.graph_from_parent and not o.header.graph_from_parent
        for snap in (c, o):
            ordinal = snap.block_ordinal("dDns", "dDns-b0003")
            assert snap.vector_search(vectors[2][3], 1)[0][0] == ordinal
            events = snap.doc_ordinal("dEvents")
            assert events is None  # removed with its vectors
    assert verify_snapshot(parent).ok


def test_closed_snapshot_refuses_reads_and_close_is_idempotent(
    built: tuple[Path, SnapshotManifest],
) -> None:
    snap = Snapshot.open(built[0])
    block = snap.block(0)
    snap.close()
    snap.close()
    with pytest.raises(SnapshotError, match="closed"):
        snap.block(1)
    with pytest.raises(SnapshotError, match="closed"):
        _ = block.text


def test_concurrent_readers_get_the_same_answers(built: tuple[Path, SnapshotManifest]) -> None:
    with Snapshot.open(built[0]) as snap:
        expected = (snap.bm25_search("listener 软件包", 10), snap.scan("the"))
        results: list[object] = []

        def read() -> None:
            for _ in range(20):
                results.append((snap.bm25_search("listener 软件包", 10), snap.scan("the")))

        threads = [threading.Thread(target=read) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert results == [expected] * 80


_OPENED: list[str] | None = None
_MAPPED: list[str] | None = None


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _OPENED is None or _MAPPED is None:
        return
    if event == "open" and isinstance(args[0], str | Path):
        _OPENED.append(Path(args[0]).name)
    elif event == "mmap.__new__" and args[0] >= 0:
        _MAPPED.append(Path(os.readlink(f"/proc/self/fd/{args[0]}")).name)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="maps fds via /proc")
def test_open_reads_only_the_small_metadata_files_and_maps_the_rest(
    built: tuple[Path, SnapshotManifest],
) -> None:
    global _OPENED, _MAPPED
    sys.addaudithook(_audit)
    _OPENED, _MAPPED = [], []
    try:
        Snapshot.open(built[0]).close()
        opened, mapped = set(_OPENED), set(_MAPPED)
    finally:
        _OPENED = _MAPPED = None
    assert {"text.bin", "folded.bin", "bm25.postings", "vectors.f16"} <= mapped
    assert opened - mapped == {MANIFEST, HEADER, "documents.msgpack"}


def test_a_build_carrying_documents_over_from_its_parent_equals_a_fresh_build(
    tmp_path: Path, documents: list[DocumentRecord], vectors: list[npt.NDArray[np.float32]]
) -> None:
    # Documents the parent holds are carried (folded text and BM25 postings copied, not
    # recomputed); the result is the fresh build's, byte for byte, over two generations.
    build(tmp_path / "s1", documents, vectors, manifest("s1"))
    extra = sectioned_document("nodejs-md/readline.md", "dReadline", "en", limit=40)
    dns = documents[2]
    edited = msgspec.structs.replace(
        dns, blocks=(msgspec.structs.replace(dns.blocks[0], text="edited"), *dns.blocks[1:])
    )
    generations = [
        ([documents[0], extra, edited], [vectors[0], unit_vectors(40, 7), vectors[2]]),
        ([extra, edited], [unit_vectors(40, 7), vectors[2]]),
    ]
    parent = tmp_path / "s1"
    for k, (docs, vecs) in enumerate(generations, start=2):
        carried = build(tmp_path / f"s{k}", docs, vecs, manifest(f"s{k}"), parent=parent)
        fresh = build(tmp_path / f"fresh{k}", docs, vecs, manifest(f"fresh{k}"))
        assert carried.content_hash == fresh.content_hash and carried.files == fresh.files
        for name in fresh.files:
            assert (parent.parent / f"s{k}" / name).read_bytes() == (
                tmp_path / f"fresh{k}" / name
            ).read_bytes(), name
        with Snapshot.open(tmp_path / f"s{k}") as a, Snapshot.open(tmp_path / f"fresh{k}") as b:
            for query in ("emitter listener", "readline interface", "edited 软件包"):
                assert a.bm25_search(query, 10) == b.bm25_search(query, 10)
            assert a.scan("edited") == b.scan("edited") != []
        assert verify_snapshot(tmp_path / f"s{k}").ok
        parent = tmp_path / f"s{k}"


def test_only_documents_identical_to_the_parents_are_carried_over(
    tmp_path: Path, built: tuple[Path, SnapshotManifest], documents: list[DocumentRecord]
) -> None:
    events, deb_zh, dns = documents
    retitled = msgspec.structs.replace(events, title="Another title")
    blocks = list(dns.blocks)
    text = blocks[5].text  # one character changed: same length, same fields, other bytes
    assert text[-1].isascii()
    blocks[5] = msgspec.structs.replace(
        blocks[5], text=text[:-1] + ("x" if text[-1] != "x" else "y")
    )
    edited = msgspec.structs.replace(dns, blocks=tuple(blocks))
    moved = msgspec.structs.replace(deb_zh, blocks=deb_zh.blocks[:-1])
    with Snapshot.open(built[0]) as parent:
        for docs, expected in (
            ([dns, events, deb_zh], [2, 0, 1]),
            ([retitled, edited, moved], [None, None, None]),
        ):
            carried = [
                blockstore.same_in_parent(parent._store(), d, blockstore.layout(d)) for d in docs
            ]
            assert carried == expected


def test_a_document_record_read_back_is_the_one_that_was_built(
    built: tuple[Path, SnapshotManifest], documents: list[DocumentRecord]
) -> None:
    with Snapshot.open(built[0]) as snap:
        for doc in documents:
            ordinal = snap.doc_ordinal(doc.doc_id)
            assert ordinal is not None
            assert snap.document_record(ordinal) == doc


def build_prepared(
    directory: Path,
    documents: list[DocumentRecord],
    vectors: list[npt.NDArray[np.float32]],
    ready: list[bool],
    parent: Path | None = None,
    threshold: int = 1000,
) -> SnapshotManifest:
    return build_snapshot(
        directory,
        manifest(directory.name, retrieval=None),
        documents,
        vectors,
        parent=parent,
        k1=1.2,
        b=0.75,
        exact_search_max_blocks=threshold,
        prepared=[
            prepare_document(d) if r else None for d, r in zip(documents, ready, strict=True)
        ],
    )


def assert_same_files(a: Path, ma: SnapshotManifest, b: Path, mb: SnapshotManifest) -> None:
    assert ma.content_hash == mb.content_hash and ma.files == mb.files
    for name in ma.files:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def assert_bm25_is_that_of_title_and_text(directory: Path, docs: list[DocumentRecord]) -> None:
    """The snapshot's BM25 files are those of each block's "section title\ntext" tokens."""
    tokens = [
        document_tokens(f"{d.sections[b.section].title}\n{b.text}")
        for d in docs
        for b in sorted(d.blocks, key=lambda b: b.block_index)
    ]
    reference = directory.parent / f"{directory.name}-bm25"
    reference.mkdir()
    bm25.write_bm25(reference, tokens, k1=1.2, b=0.75)
    for name in bm25.FILES:
        assert (reference / name).read_bytes() == (directory / name).read_bytes(), name


# Documents of the property test: slices of real corpus text (English and Chinese), some with
# shuffled block order; each build takes any subset, in any order, prepared or not.
_POOL = [
    ("nodejs-md/events.md", "dEvents", "en", 30),
    ("debian-reference.zh-cn.txt", "dDebZh", "zh", 30),
    ("nodejs-md/dns.md", "dDns", "en", 20),
    ("nodejs-md/readline.md", "dReadline", "en", 15),
]


@functools.cache
def pool() -> list[tuple[DocumentRecord, npt.NDArray[np.float32]]]:
    out = []
    for i, (relative, doc_id, lang, limit) in enumerate(_POOL):
        doc = sectioned_document(relative, doc_id, lang, limit)
        if i % 2:  # blocks given out of block_index order, their vectors with them
            doc = msgspec.structs.replace(doc, blocks=doc.blocks[::-1])
        out.append((doc, unit_vectors(len(doc.blocks), seed=i)))
    return out


_PICK = st.lists(st.tuples(st.integers(0, len(_POOL) - 1), st.booleans()), max_size=4)


@settings(max_examples=12, deadline=None)
@given(first=_PICK, second=_PICK, threshold=st.sampled_from([0, 1000]))
def test_prepared_documents_give_the_same_files_fresh_and_with_a_parent(
    first: list[tuple[int, bool]], second: list[tuple[int, bool]], threshold: int
) -> None:
    # Two generations; the second is built fresh and on the first (documents carried over,
    # the HNSW graph extended). Whichever documents come prepared, the files are the same
    # (HNSW graphs built on one thread: on more, their bytes differ from build to build).
    with (
        tempfile.TemporaryDirectory() as tmp,
        mock.patch.object(index.vectors, "build_threads", lambda: 1),
    ):
        root = Path(tmp)
        parent: Path | None = None
        for k, picks in enumerate((first, second)):
            chosen = list(dict.fromkeys(i for i, _ in picks))  # doc ids must be distinct
            ready = [dict(picks)[i] for i in chosen]
            docs = [pool()[i][0] for i in chosen]
            vecs = [pool()[i][1] for i in chosen]
            for name, on in (("fresh", None), ("child", parent)):
                plain = root / f"{name}-plain{k}"
                m_plain = build_prepared(plain, docs, vecs, [False] * len(docs), on, threshold)
                if on is None:
                    assert_bm25_is_that_of_title_and_text(plain, docs)
                for variant, flags in (("some", ready), ("all", [True] * len(docs))):
                    d = root / f"{name}-{variant}{k}"
                    m = build_prepared(d, docs, vecs, flags, on, threshold)
                    assert_same_files(d, m, plain, m_plain)
            parent = root / f"child-plain{k}"


def test_a_preparation_is_refused_for_any_other_record(
    tmp_path: Path, documents: list[DocumentRecord], vectors: list[npt.NDArray[np.float32]]
) -> None:
    events, deb_zh, _ = documents
    ready = prepare_document(events)
    edited_block = msgspec.structs.replace(events.blocks[3], text="changed text")
    others = [
        deb_zh,
        msgspec.structs.replace(events, content_hash="sha-other"),
        msgspec.structs.replace(
            events, blocks=(*events.blocks[:3], edited_block, *events.blocks[4:])
        ),
        msgspec.structs.replace(events, blocks=events.blocks[:-1]),
        msgspec.structs.replace(events, chunker_version="c2"),
    ]
    for k, other in enumerate(others):
        with pytest.raises(ValueError, match="prepare"):
            build_snapshot(
                tmp_path / f"s{k}",
                manifest(f"s{k}", retrieval=None),
                [other],
                [unit_vectors(len(other.blocks), 0)],
                k1=1.2,
                b=0.75,
                exact_search_max_blocks=1000,
                prepared=[ready],
            )
        assert not (tmp_path / f"s{k}").exists()
    # Edits of a title, label or aliases change nothing prepared: the preparation still serves.
    retitled = msgspec.structs.replace(events, title="Edited title", aliases=("x",))
    m = build_snapshot(
        tmp_path / "ok",
        manifest("ok", retrieval=None),
        [retitled],
        [vectors[0]],
        k1=1.2,
        b=0.75,
        exact_search_max_blocks=1000,
        prepared=[ready],
    )
    assert m.documents[0].blocks == len(events.blocks)
    with Snapshot.open(tmp_path / "ok") as snap:
        assert snap.documents[0].title == "Edited title"
    with pytest.raises(ValueError, match="prepared documents"):
        build_snapshot(
            tmp_path / "n",
            manifest("n", retrieval=None),
            [events],
            [vectors[0]],
            k1=1.2,
            b=0.75,
            exact_search_max_blocks=1000,
            prepared=[],
        )
