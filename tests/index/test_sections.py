"""The heading-path field written at build time holds what computing it at search time gave."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import msgspec
import numpy as np

from index.records import (
    BlockRecord,
    DocumentRecord,
    EmbeddingSpec,
    RetrievalParams,
    SectionRecord,
    SnapshotManifest,
)
from index.sections import SECTION_PATHS
from index.snapshot import Snapshot, build_snapshot, verify_snapshot
from index.textnorm import tokenize


def _document(doc_id: str, paths: list[str], blocks_per_section: int) -> DocumentRecord:
    sections = tuple(
        SectionRecord(
            path=path,
            title=path.rsplit(" > ", 1)[-1],
            ordinal=i,
            depth=path.count(" > ") + 1,
            parent=-1,
            direct_blocks=blocks_per_section,
            subtree_blocks=blocks_per_section,
            direct_tokens=0,
            subtree_tokens=0,
            first_sentence="",
        )
        for i, path in enumerate(paths)
    )
    n = len(paths) * blocks_per_section
    # Blocks given out of order: the field follows the stored (block_index) order.
    blocks = tuple(
        BlockRecord(
            block_index=i,
            block_id=f"{doc_id}-b{i}",
            section=i // blocks_per_section,
            text=f"body {i} of {doc_id}",
            tokens=4,
        )
        for i in reversed(range(n))
    )
    return DocumentRecord(
        doc_id=doc_id,
        content_hash=doc_id * 4,
        source=f"{doc_id}.md",
        source_label="",
        title="",
        sections=sections,
        blocks=blocks,
    )


def test_section_paths_hold_the_postings_lengths_and_block_sections_of_the_outlines(
    tmp_path: Path,
) -> None:
    docs = [
        _document("dA", ["Threads", "Threads > Locks and threads", "Library FAQ"], 2),
        _document("dB", ["安装", "安装 > 网络设置", "Threads"], 3),
    ]
    vectors = [np.eye(len(d.blocks), 4, dtype=np.float32) + 0.5 for d in docs]
    vectors = [v / np.linalg.norm(v, axis=1, keepdims=True) for v in vectors]
    params = RetrievalParams(
        bm25_k1=1.2,
        bm25_b=0.75,
        rrf_k=60,
        top_k=5,
        min_similarity=0.2,
        exact_search_max_blocks=100,
    )
    manifest = SnapshotManifest(
        snapshot_id="s",
        parent_id=None,
        collection="c",
        status="ready",
        created_at="",
        embedding=EmbeddingSpec(provider="t", model="t", dimensions=4),
        retrieval=params,
    )
    built = build_snapshot(
        tmp_path / "s", manifest, docs, vectors, k1=1.2, b=0.75, exact_search_max_blocks=100
    )
    assert SECTION_PATHS in built.files and verify_snapshot(tmp_path / "s").ok
    expected: dict[str, list[tuple[int, int]]] = {}
    lengths = []
    for doc in docs:
        for section in doc.sections:
            counts = Counter(tokenize(section.path))
            for token, tf in counts.items():
                expected.setdefault(token, []).append((len(lengths), tf))
            lengths.append(sum(counts.values()))
    with Snapshot.open(tmp_path / "s") as snap:
        paths = snap.section_paths()
        assert paths is not None
        assert paths.section_lengths.tolist() == lengths
        # dA: 6 blocks in sections 0,0,1,1,2,2; dB's sections are global 3..5, 3 blocks each.
        assert paths.block_section.tolist() == [0, 0, 1, 1, 2, 2] + [3] * 3 + [4] * 3 + [5] * 3
        for token, entries in expected.items():
            found = paths.get(token)
            assert found is not None
            assert list(zip(found[0].tolist(), found[1].tolist(), strict=True)) == entries
        assert paths.get("nowhere") is None and paths.get("") is None


def test_a_snapshot_without_the_field_says_so(tmp_path: Path) -> None:
    doc = _document("dA", ["Intro"], 1)
    manifest = SnapshotManifest(
        snapshot_id="s", parent_id=None, collection="c", status="ready", created_at=""
    )
    built = build_snapshot(
        tmp_path / "s",
        manifest,
        [doc],
        [np.zeros((1, 0))],
        k1=1.2,
        b=0.75,
        exact_search_max_blocks=10,
    )
    # An older snapshot: the same files and manifest without the field.
    (tmp_path / "s" / SECTION_PATHS).unlink()
    files = {k: v for k, v in built.files.items() if k != SECTION_PATHS}
    older = msgspec.structs.replace(built, files=files)
    (tmp_path / "s" / "manifest.json").write_bytes(msgspec.json.encode(older))
    with Snapshot.open(tmp_path / "s") as snap:
        assert snap.section_paths() is None


def test_a_child_carries_its_unchanged_documents_paths_and_writes_what_a_fresh_build_does(
    tmp_path: Path,
) -> None:
    a = _document("dA", ["Threads", "Threads > Locks and threads"], 2)
    b = _document("dB", ["安装", "安装 > 网络设置", "Library FAQ"], 1)
    c = _document("dC", ["Library FAQ > Threads", "Events"], 2)
    manifest = SnapshotManifest(
        snapshot_id="s", parent_id=None, collection="c", status="ready", created_at=""
    )

    def build(name: str, docs: list[DocumentRecord], parent: Path | None = None) -> None:
        build_snapshot(
            tmp_path / name,
            manifest,
            docs,
            [np.zeros((len(d.blocks), 0)) for d in docs],
            parent=parent,
            k1=1.2,
            b=0.75,
            exact_search_max_blocks=10,
        )

    build("parent", [a, b])
    build("child", [b, c], parent=tmp_path / "parent")
    build("fresh", [b, c])
    child = (tmp_path / "child" / SECTION_PATHS).read_bytes()
    assert child == (tmp_path / "fresh" / SECTION_PATHS).read_bytes()
    with Snapshot.open(tmp_path / "parent") as parent:
        paths = parent.section_paths()
        assert paths is not None
        assert paths.document_counts(1) == [
            sorted(Counter(tokenize(s.path)).items()) for s in b.sections
        ]
        assert paths.document_counts(2) is None
