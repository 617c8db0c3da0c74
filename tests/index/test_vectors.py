"""Vector search: exact equals numpy brute force; HNSW keeps recall, scope and parent intact."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from index.fsutil import close_map, map_file
from index.vectors import (
    GRAPH,
    KEYS,
    MATRIX,
    ORDINALS,
    VectorIndex,
    vector_key,
    write_vectors,
)

DIM = 64


def unit_rows(n: int, seed: int, clusters: int = 0) -> npt.NDArray[np.float32]:
    """Random unit vectors; with `clusters`, points around that many centres (like embeddings)."""
    rng = np.random.default_rng(seed)
    if clusters:
        centres = rng.standard_normal((clusters, DIM))
        rows = centres[rng.integers(0, clusters, n)] + 0.35 * rng.standard_normal((n, DIM))
    else:
        rows = rng.standard_normal((n, DIM))
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows.astype(np.float32)


def keys_for(names: list[str]) -> npt.NDArray[np.uint64]:
    return np.array([vector_key("doc", name) for name in names], dtype=np.uint64)


@contextmanager
def opened(directory: Path, n: int, threshold: int) -> Iterator[VectorIndex]:
    matrix, keys, ordinals = (map_file(directory / name) for name in (MATRIX, KEYS, ORDINALS))
    graph = directory / GRAPH
    index = VectorIndex(
        matrix,
        keys,
        ordinals,
        graph if graph.exists() else None,
        n_blocks=n,
        dim=DIM,
        exact_search_max_blocks=threshold,
    )
    try:
        yield index
    finally:
        index.release()
        for m in (matrix, keys, ordinals):
            close_map(m)


def brute_force(
    matrix: npt.NDArray[np.float32], query: npt.NDArray[np.float32], rows: list[int]
) -> list[tuple[int, float]]:
    """Cosine similarity against the stored (float16) values, best first, ties by ordinal."""
    stored = matrix.astype(np.float16).astype(np.float64)[rows]
    q = query.astype(np.float16).astype(np.float64)
    sims = stored @ q / (np.linalg.norm(stored, axis=1) * np.linalg.norm(q))
    return sorted(zip(rows, sims.tolist(), strict=True), key=lambda h: (-h[1], h[0]))


def test_exact_search_equals_numpy_brute_force(tmp_path: Path) -> None:
    matrix = unit_rows(3000, seed=1)
    write_vectors(
        tmp_path, matrix, keys_for([str(i) for i in range(3000)]), exact_search_max_blocks=10_000
    )
    queries = unit_rows(20, seed=2)
    with opened(tmp_path, 3000, 10_000) as index:
        assert index.kind == "exact"
        for q in queries:
            for ranges in ([(0, 3000)], [(10, 400), (2500, 2600)]):
                rows = [r for a, b in ranges for r in range(a, b)]
                expected = brute_force(matrix, q, rows)[:10]
                got = index.search(q, 10, ranges)
                assert [o for o, _ in got] == [o for o, _ in expected]
                assert np.allclose([s for _, s in got], [s for _, s in expected], atol=1e-4)


def test_exact_ties_are_ordered_by_ordinal_even_beyond_the_fetch_margin(tmp_path: Path) -> None:
    matrix = unit_rows(200, seed=3)
    matrix[50:150] = matrix[7]  # 101 identical rows: one score for all of them
    write_vectors(
        tmp_path, matrix, keys_for([str(i) for i in range(200)]), exact_search_max_blocks=1000
    )
    with opened(tmp_path, 200, 1000) as index:
        got = index.search(matrix[7], 40)
        assert [o for o, _ in got] == [7, *range(50, 89)]
        assert len({s for _, s in got}) == 1


def test_search_returns_nothing_for_an_empty_scope_or_k_zero(tmp_path: Path) -> None:
    matrix = unit_rows(10, seed=4)
    write_vectors(
        tmp_path, matrix, keys_for([str(i) for i in range(10)]), exact_search_max_blocks=100
    )
    with opened(tmp_path, 10, 100) as index:
        assert index.search(matrix[0], 5, []) == []
        assert index.search(matrix[0], 0) == []
        with pytest.raises(ValueError, match="shape"):
            index.search(np.zeros(DIM + 1, dtype=np.float32), 5)


def recall_at_10(
    index: VectorIndex,
    matrix: npt.NDArray[np.float32],
    queries: npt.NDArray[np.float32],
    ordinals_of_rows: list[int],
    ranges: list[tuple[int, int]] | None = None,
) -> float:
    total = 0
    for q in queries:
        rows = (
            ordinals_of_rows
            if ranges is None
            else [r for r in ordinals_of_rows if any(a <= r < b for a, b in ranges)]
        )
        expected = {o for o, _ in brute_force(matrix, q, rows)[:10]}
        got = index.search(q, 10, ranges)
        assert len(got) == 10
        if ranges is not None:
            assert all(any(a <= o < b for a, b in ranges) for o, _ in got)
        total += len(expected & {o for o, _ in got})
    return total / (10 * len(queries))


N_HNSW = 4000
THRESHOLD = 1000


@pytest.fixture(scope="module")
def hnsw_data() -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    return unit_rows(N_HNSW + 300, seed=5, clusters=40), unit_rows(60, seed=6, clusters=40)


def test_hnsw_recall_at_10_against_exact(
    tmp_path: Path, hnsw_data: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]
) -> None:
    matrix = hnsw_data[0][:N_HNSW]
    _, kind, build = write_vectors(
        tmp_path,
        matrix,
        keys_for([str(i) for i in range(N_HNSW)]),
        exact_search_max_blocks=THRESHOLD,
    )
    assert kind == "hnsw" and build is not None and not build.from_parent
    with opened(tmp_path, N_HNSW, THRESHOLD) as index:
        assert index.kind == "hnsw"
        everything = list(range(N_HNSW))
        assert recall_at_10(index, matrix, hnsw_data[1], everything) >= 0.95
        # A scope larger than the exact threshold over-fetches from the graph and filters.
        wide = [(0, 700), (1500, 3000)]
        assert recall_at_10(index, matrix, hnsw_data[1], everything, wide) >= 0.9
        # A small scope is searched exactly.
        narrow = [(100, 300), (3900, 4000)]
        assert recall_at_10(index, matrix, hnsw_data[1], everything, narrow) == 1.0


def test_hnsw_graph_bytes_are_reproducible_when_built_on_one_thread(
    tmp_path: Path, hnsw_data: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]
) -> None:
    matrix = hnsw_data[0][:2000]
    keys = keys_for([str(i) for i in range(2000)])
    digests = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        write_vectors(tmp_path / name, matrix, keys, exact_search_max_blocks=THRESHOLD, threads=1)
        digests.append(hashlib.sha256((tmp_path / name / GRAPH).read_bytes()).hexdigest())
    assert digests[0] == digests[1]


def test_hnsw_searches_of_a_built_graph_repeat_across_opens_whatever_the_build_threads(
    tmp_path: Path, hnsw_data: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]
) -> None:
    n = 2000
    matrix, queries = hnsw_data[0][:n], hnsw_data[1]
    keys = keys_for([str(i) for i in range(n)])
    everything = list(range(n))
    results: dict[int, list[list[tuple[int, float]]]] = {}
    for threads in (1, 4):
        directory = tmp_path / f"t{threads}"
        directory.mkdir()
        _, _, build = write_vectors(
            directory, matrix, keys, exact_search_max_blocks=THRESHOLD, threads=threads
        )
        assert build is not None and build.threads == threads
        opens = []
        for _ in range(2):
            with opened(directory, n, THRESHOLD) as index:
                opens.append([index.search(q, 10) for q in queries])
        assert opens[0] == opens[1]  # same graph, same query: the same blocks, same order
        with opened(directory, n, THRESHOLD) as index:
            assert recall_at_10(index, matrix, queries, everything) >= 0.95
        results[threads] = opens[0]
    # Graphs built on different thread counts are different graphs: each is deterministic and
    # as good as the other, but their approximate top-10s may differ in a few places.
    agree = sum(
        len({o for o, _ in a} & {o for o, _ in b})
        for a, b in zip(results[1], results[4], strict=True)
    )
    assert agree >= 0.95 * 10 * len(queries)


def test_hnsw_extended_from_parent_matches_a_fresh_build_and_leaves_parent_untouched(
    tmp_path: Path, hnsw_data: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]
) -> None:
    everything, queries = hnsw_data
    names = [str(i) for i in range(len(everything))]
    parent, child, fresh = tmp_path / "parent", tmp_path / "child", tmp_path / "fresh"
    for d in (parent, child, fresh):
        d.mkdir()
    # Parent: "documents" A = rows 0..1999, B = rows 2000..3999.
    write_vectors(
        parent, everything[:N_HNSW], keys_for(names[:N_HNSW]), exact_search_max_blocks=THRESHOLD
    )
    before = (parent / GRAPH).read_bytes(), (parent / GRAPH).stat().st_mtime_ns
    # Child: document A removed, document C (rows 4000..4299) added; B keeps its vectors,
    # and one of B's blocks now carries a changed vector (it must be re-added, not kept).
    rows = list(range(2000, len(everything)))
    matrix = everything[rows].copy()
    matrix[5] = everything[0]
    keys = keys_for([names[r] for r in rows])
    _, kind, build = write_vectors(
        child, matrix, keys, exact_search_max_blocks=THRESHOLD, parent=parent
    )
    assert kind == "hnsw" and build is not None and build.from_parent
    # B's changed block and all of C are added; A and B's old vector removed.
    assert (build.vectors_added, build.vectors_removed) == (301, 2001)
    assert ((parent / GRAPH).read_bytes(), (parent / GRAPH).stat().st_mtime_ns) == before
    write_vectors(fresh, matrix, keys, exact_search_max_blocks=THRESHOLD)
    n = len(rows)
    ordinals = list(range(n))
    with opened(child, n, THRESHOLD) as extended, opened(fresh, n, THRESHOLD) as rebuilt:
        r_extended = recall_at_10(extended, matrix, queries, ordinals)
        r_rebuilt = recall_at_10(rebuilt, matrix, queries, ordinals)
        assert r_extended >= 0.95 and abs(r_extended - r_rebuilt) <= 0.03
        # The changed block is found under its new vector; removed blocks never come back.
        [(best, similarity)] = extended.search(matrix[5], 1)
        assert best == 5 and similarity == pytest.approx(1.0, abs=1e-3)
        for q in queries[:10]:
            assert all(0 <= o < n for o, _ in extended.search(q, 10))


def test_vector_key_is_stable_63_bit_and_separates_fields() -> None:
    assert vector_key("d1", "b1") == vector_key("d1", "b1")
    assert vector_key("d1", "b1") != vector_key("d1b", "1")
    assert all(0 <= vector_key("d", str(i)) < 2**63 for i in range(1000))
    # Pinned: a changed derivation would orphan every stored HNSW graph's keys.
    assert vector_key("doc", "block") == 0x1DCA42AD6C855087


def test_duplicate_keys_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="share a vector key"):
        write_vectors(
            tmp_path, unit_rows(2, seed=7), keys_for(["x", "x"]), exact_search_max_blocks=10
        )
