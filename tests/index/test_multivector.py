"""Several vectors per block (sentence windows): rows map back to the right block whatever the
block order, a block scores by its best part (max) or best two (top2_mean), HNSW agrees with
exact search, and the similarity floor is calibrated deterministically and kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt
import pytest

from index.prepared import prepare_document
from index.records import (
    BlockRecord,
    DocumentRecord,
    EmbeddingSpec,
    PartScoring,
    RetrievalParams,
    SectionRecord,
    SnapshotManifest,
    VectorLayout,
)
from index.snapshot import Snapshot, build_snapshot, read_manifest
from index.vectors import PART_BLOCKS

DIM = 16
SPEC = EmbeddingSpec(provider="local", model="m", dimensions=DIM)


def record(doc_id: str, n_blocks: int) -> DocumentRecord:
    section = SectionRecord(
        path="S",
        title="S",
        ordinal=0,
        depth=1,
        parent=-1,
        direct_blocks=n_blocks,
        subtree_blocks=n_blocks,
        direct_tokens=n_blocks,
        subtree_tokens=n_blocks,
        first_sentence="",
    )
    blocks = tuple(
        BlockRecord(block_index=i, block_id=f"{doc_id}b{i}", section=0, text=f"text {i}", tokens=1)
        for i in range(n_blocks)
    )
    return DocumentRecord(
        doc_id=doc_id,
        content_hash=f"h{doc_id}",
        source=f"{doc_id}.txt",
        source_label=f"{doc_id}.txt",
        title=doc_id,
        sections=(section,),
        blocks=blocks,
    )


def manifest(scoring: PartScoring = "max", threshold: int = 1000) -> SnapshotManifest:
    return SnapshotManifest(
        snapshot_id="s",
        parent_id=None,
        collection="c",
        status="ready",
        created_at="2026-12-02T00:00:00Z",
        embedding=SPEC,
        retrieval=RetrievalParams(
            bm25_k1=1.2,
            bm25_b=0.75,
            rrf_k=60,
            top_k=5,
            min_similarity=0.2,
            exact_search_max_blocks=threshold,
        ),
        vector_layout=VectorLayout(granularity="sentence", window=2, stride=1, scoring=scoring),
    )


def unit(rows: npt.ArrayLike) -> npt.NDArray[np.float32]:
    a = np.asarray(rows, dtype=np.float32)
    return np.asarray(a / np.linalg.norm(a, axis=-1, keepdims=True), dtype=np.float32)


def random_units(n: int, seed: int) -> npt.NDArray[np.float32]:
    return unit(np.random.default_rng(seed).standard_normal((n, DIM)))


def build(directory: Path, docs: list[DocumentRecord], vectors: list[Any], counts: list[Any],
          m: SnapshotManifest | None = None, probes: Any = None) -> SnapshotManifest:  # fmt: skip
    m = m or manifest()
    assert m.retrieval is not None
    return build_snapshot(
        directory,
        m,
        docs,
        vectors,
        k1=1.2,
        b=0.75,
        exact_search_max_blocks=m.retrieval.exact_search_max_blocks,
        part_counts=counts,
        probes=probes,
    )


def test_documents_prepared_with_their_part_counts_build_the_same_files(tmp_path: Path) -> None:
    """Vector keys of the parts and heading-path counts made in a document's preparation
    (as a parse worker makes them) give the very files a build computes itself; a
    preparation made for other part counts is not used for them."""
    doc = record("d1", 4)
    shuffled = msgspec.structs.replace(doc, blocks=tuple(reversed(doc.blocks)))
    counts = np.array([2, 1, 3, 1])
    rows = random_units(int(counts.sum()), seed=4)
    m = manifest()
    assert m.retrieval is not None
    built = []
    for name, prepared in (
        ("plain", None),
        ("prepared", [prepare_document(shuffled, counts)]),
        ("other-counts", [prepare_document(shuffled, np.array([1, 1, 1, 1]))]),
    ):
        built.append(
            build_snapshot(
                tmp_path / name,
                m,
                [shuffled],
                [rows],
                k1=1.2,
                b=0.75,
                exact_search_max_blocks=m.retrieval.exact_search_max_blocks,
                part_counts=[counts],
                prepared=prepared,
            )
        )
    assert built[0].files == built[1].files == built[2].files
    for name in built[0].files:
        plain = (tmp_path / "plain" / name).read_bytes()
        assert plain == (tmp_path / "prepared" / name).read_bytes(), name
        assert plain == (tmp_path / "other-counts" / name).read_bytes(), name


def test_every_part_maps_to_its_block_even_when_blocks_come_out_of_order(tmp_path: Path) -> None:
    doc = record("d1", 4)
    counts = np.array([1, 3, 2, 1])
    rows = random_units(int(counts.sum()), seed=1)
    # The same document with its blocks (and their parts) given in reverse order.
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    reversed_rows = np.concatenate(
        [rows[starts[i] : starts[i] + counts[i]] for i in range(3, -1, -1)]
    )
    shuffled = msgspec.structs.replace(doc, blocks=tuple(reversed(doc.blocks)))
    build(tmp_path / "s", [shuffled], [reversed_rows], [counts[::-1].copy()])
    with Snapshot.open(tmp_path / "s") as snap:
        assert snap.header.n_vectors == 7
        assert PART_BLOCKS in snap.manifest.files
        assert snap.doc_part_counts(0).tolist() == [1, 3, 2, 1]
        stored = snap.doc_vectors(0)
        assert np.array_equal(stored, rows.astype(np.float16).astype(np.float32))
        # Each part, as a query, finds its own block first, with similarity ~1.
        owner = np.repeat(np.arange(4), counts)
        for row, block in zip(rows, owner, strict=True):
            (first, score), *_ = snap.vector_search(row, 2)
            assert snap.block(first).block_id == f"d1b{block}"
            assert score == pytest.approx(1.0, abs=2e-3)


def test_search_returns_each_block_once_and_respects_document_scope(tmp_path: Path) -> None:
    docs = [record("d1", 5), record("d2", 5)]
    counts = [np.full(5, 3), np.full(5, 2)]
    vectors = [random_units(15, seed=2), random_units(10, seed=3)]
    build(tmp_path / "s", docs, vectors, counts)
    with Snapshot.open(tmp_path / "s") as snap:
        query = random_units(1, seed=4)[0]
        found = snap.vector_search(query, 10)
        assert sorted(o for o, _ in found) == list(range(10))  # every block, once
        scores = [s for _, s in found]
        assert scores == sorted(scores, reverse=True)
        scoped = snap.vector_search(query, 10, [1])
        assert [o for o, _ in scoped] == [o for o, _ in found if o >= 5]


def score_case(tmp_path: Path, scoring: PartScoring, threshold: int = 1000) -> list[str]:
    """Block 'sharp' has one part equal to the query and one orthogonal to it (max 1.0, mean
    of two 0.5); block 'broad' has two parts at 0.8 (max 0.8, mean 0.8)."""
    q = np.eye(DIM, dtype=np.float32)[0]
    e1 = np.eye(DIM, dtype=np.float32)[1]
    near = unit(0.8 * q + 0.6 * e1)
    near2 = unit(0.8 * q - 0.6 * e1)
    filler = random_units(40, seed=5)
    filler[:, 0] = -np.abs(filler[:, 0])  # pointing away from the query
    filler = unit(filler)
    doc = record("d", 22)
    rows = np.concatenate([np.stack([q, e1, near, near2]), filler])
    counts = np.array([2, 2] + [2] * 20)
    directory = tmp_path / f"{scoring}{threshold}"
    build(directory, [doc], [rows], [counts], manifest(scoring, threshold))
    with Snapshot.open(directory) as snap:
        assert snap.header.vector_index == ("hnsw" if threshold < 44 else "exact")
        found = snap.vector_search(q, 2)
        names = {0: "sharp", 1: "broad"}
        expected = {"max": (1.0, 0.8), "top2_mean": (0.5, 0.8)}[scoring]
        by_name = {names[o]: s for o, s in found}
        assert by_name["sharp"] == pytest.approx(expected[0], abs=3e-3)
        assert by_name["broad"] == pytest.approx(expected[1], abs=3e-3)
        return [names[o] for o, _ in found]


def test_max_scores_a_block_by_its_best_part_and_top2_mean_by_its_best_two(tmp_path: Path) -> None:
    assert score_case(tmp_path, "max") == ["sharp", "broad"]
    assert score_case(tmp_path, "top2_mean") == ["broad", "sharp"]


def test_hnsw_over_parts_ranks_blocks_as_exact_search_does(tmp_path: Path) -> None:
    assert score_case(tmp_path, "max", threshold=10) == ["sharp", "broad"]
    assert score_case(tmp_path, "top2_mean", threshold=10) == ["broad", "sharp"]
    docs = [record("d1", 300)]
    counts = [np.random.default_rng(6).integers(1, 5, 300)]
    vectors = [random_units(int(counts[0].sum()), seed=7)]
    build(tmp_path / "exact", docs, vectors, counts, manifest(threshold=10_000))
    build(tmp_path / "hnsw", docs, vectors, counts, manifest(threshold=50))
    queries = random_units(20, seed=8)
    with Snapshot.open(tmp_path / "exact") as exact, Snapshot.open(tmp_path / "hnsw") as hnsw:
        assert hnsw.header.vector_index == "hnsw"
        agree = [
            len(
                {o for o, _ in exact.vector_search(q, 10)}
                & {o for o, _ in hnsw.vector_search(q, 10)}
            )
            for q in queries
        ]
        assert sum(agree) / (10 * len(queries)) >= 0.95


def test_wrong_part_counts_are_refused(tmp_path: Path) -> None:
    doc = record("d", 3)
    with pytest.raises(ValueError, match="parts"):
        build(tmp_path / "a", [doc], [random_units(5, 1)], [np.array([1, 1, 1])])
    with pytest.raises(ValueError, match="part_counts"):
        build(tmp_path / "b", [doc], [random_units(3, 1)], [np.array([1, 0, 2])])
    with pytest.raises(ValueError, match="part_counts"):
        build(tmp_path / "c", [doc], [random_units(3, 1)], None)  # type: ignore[arg-type]


def test_floor_is_calibrated_from_the_probes_the_same_way_every_build(tmp_path: Path) -> None:
    docs = [record("d1", 30)]
    counts = [np.full(30, 2)]
    vectors = [random_units(60, seed=9)]
    probes = random_units(12, seed=10)
    first = build(tmp_path / "a", docs, vectors, counts, probes=probes)
    again = build(tmp_path / "b", docs, vectors, counts, probes=probes)
    floor = first.similarity_floor
    assert floor is not None and floor == again.similarity_floor
    assert read_manifest(tmp_path / "a").similarity_floor == floor  # stored, not recomputed
    assert floor.probes == 12
    # Each probe's best score is what search ranks first for it; the floor sits above all.
    with Snapshot.open(tmp_path / "a") as snap:
        best = [snap.vector_search(p, 1)[0][1] for p in probes]
    assert floor.max == pytest.approx(max(best), abs=3e-3)
    assert floor.mean == pytest.approx(float(np.mean(best)), abs=3e-3)
    assert floor.threshold == pytest.approx(max(0.2, floor.p95 + floor.std), abs=1e-5)
    assert floor.mean < floor.p95 < floor.threshold


def test_a_one_document_add_extends_the_parents_graph_by_that_documents_parts(
    tmp_path: Path,
) -> None:
    first = [record("d1", 40)]
    counts = [np.random.default_rng(11).integers(1, 4, 40)]
    vectors = [random_units(int(counts[0].sum()), seed=12)]
    m = manifest(threshold=20)
    build(tmp_path / "parent", first, vectors, counts, m)
    added = record("d2", 5)
    new_counts = np.array([2, 1, 3, 1, 2])
    child = build_snapshot(
        tmp_path / "child",
        m,
        [*first, added],
        [*vectors, random_units(9, seed=13)],
        parent=tmp_path / "parent",
        k1=1.2,
        b=0.75,
        exact_search_max_blocks=20,
        part_counts=[*counts, new_counts],
    )
    graph = child.vector_graph
    assert graph is not None and graph.from_parent
    assert (graph.vectors_added, graph.vectors_removed) == (9, 0)  # only the new parts
    with Snapshot.open(tmp_path / "child") as snap:
        assert snap.doc_part_counts(1).tolist() == new_counts.tolist()
