"""Search over a snapshot opened again (as each request pins it afresh) gives the same blocks
and reuses what earlier searches derived from that snapshot's content."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from engine.tools import retrieval
from index.records import (
    BlockRecord,
    DocumentRecord,
    EmbeddingSpec,
    RetrievalParams,
    SectionRecord,
    SnapshotManifest,
)
from index.snapshot import Snapshot, build_snapshot

DIM = 16
PARAMS = RetrievalParams(
    bm25_k1=1.2, bm25_b=0.75, rrf_k=60, top_k=5, min_similarity=-1.0, exact_search_max_blocks=50
)
WORDS = [
    "threads",
    "locks",
    "timers",
    "events",
    "packages",
    "network",
    "files",
    "cache",
    "queue",
    "signal",
]


def _library(tmp_path: Path, name: str, seed: int) -> Path:
    rng = np.random.default_rng(seed)
    docs, vectors = [], []
    for d in range(4):
        sections = tuple(
            SectionRecord(
                path=f"{WORDS[(d + s) % 10].title()} > Part {s}",
                title=f"Part {s}",
                ordinal=s,
                depth=1,
                parent=-1,
                direct_blocks=10,
                subtree_blocks=10,
                direct_tokens=0,
                subtree_tokens=0,
                first_sentence="",
            )
            for s in range(4)
        )
        blocks = tuple(
            BlockRecord(
                block_index=i,
                block_id=f"b{i}",
                section=i // 10,
                text=" ".join(rng.choice(WORDS, 12)) + f" marker{d}x{i}",
                tokens=13,
            )
            for i in range(40)
        )
        docs.append(
            DocumentRecord(
                doc_id=f"d{d}",
                content_hash=f"h{d}",
                source=f"{d}.md",
                source_label=f"{d}.md",
                title=f"Doc {d}",
                sections=sections,
                blocks=blocks,
            )
        )
        v = rng.standard_normal((40, DIM)).astype(np.float32)
        vectors.append(v / np.linalg.norm(v, axis=1, keepdims=True))
    manifest = SnapshotManifest(
        snapshot_id=name,
        parent_id=None,
        collection="c",
        status="ready",
        created_at="",
        embedding=EmbeddingSpec(provider="t", model="t", dimensions=DIM),
        retrieval=PARAMS,
    )
    build_snapshot(
        tmp_path / name, manifest, docs, vectors, k1=1.2, b=0.75, exact_search_max_blocks=50
    )
    return tmp_path / name


def test_a_reopened_snapshot_gives_the_same_blocks_and_shares_what_search_derived(
    tmp_path: Path,
) -> None:
    directory = _library(tmp_path, "s", seed=1)  # 160 blocks: above 50, an HNSW graph
    other = _library(tmp_path, "t", seed=2)
    queries = ["threads and locks", "network cache", "timers > part 2", "marker2x7"]
    rng = np.random.default_rng(9)
    vectors = rng.standard_normal((len(queries), DIM)).astype(np.float32)
    results = []
    for _ in range(2):
        with Snapshot.open(directory) as snap:
            assert snap.manifest.vector_index == "hnsw"
            outcomes = [
                retrieval.search(snap, q, v, None, PARAMS)
                for q, v in zip(queries, vectors, strict=True)
            ]
            results.append([(o.ordinals, o.trace) for o in outcomes])
            derived = retrieval._aux(snap)
    assert results[0] == results[1]
    with Snapshot.open(directory) as again, Snapshot.open(other) as different:
        assert retrieval._aux(again) is derived
        assert retrieval._aux(different) is not derived
