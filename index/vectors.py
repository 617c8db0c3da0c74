"""Block vectors of a snapshot: a float16 matrix for exact search, plus an HNSW graph when large.

`vectors.f16` is [n_blocks, dim] little-endian float16 (row = block ordinal); exact search is
usearch's brute-force cosine over it (measured faster than numpy here). Above
`exact_search_max_blocks` a usearch HNSW graph (`vectors.usearch`, opened as a memory-mapped
view) is added; it is extended from the parent's graph, never rebuilt, when the parent has one.
`vector_keys.u64`/`vector_ordinals.u32` map stable keys to rows. A snapshot with several
vectors per block (sentence windows) has one row per part, parts of a block adjacent and in
block order, and `vector_blocks.u32` names each row's block; a block then scores by its best
parts and the search still returns blocks. Graphs are built with
every core: the bytes then differ from build to build (the manifest's `vector_graph` says how
a graph was built), but a built graph never changes and is searched on one thread, so the same
snapshot and query always give the same blocks.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import math
import os
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Literal

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from usearch.index import Index, Matches

from index.fsutil import Mapped, close_map, fsync_file, map_file, write_new_file
from index.records import GraphBuild, PartScoring, SimilarityFloor

MATRIX = "vectors.f16"
KEYS = "vector_keys.u64"
ORDINALS = "vector_ordinals.u32"
GRAPH = "vectors.usearch"
PART_BLOCKS = "vector_blocks.u32"  # block ordinal of each row, only with several per block

VectorKind = Literal["exact", "hnsw", "none"]

_TIE_MARGIN = 16  # extra rows fetched so ties at the cut can be ordered by ordinal
# Rows first fetched per wanted block with several vectors per block, widened (x4) while too
# few distinct blocks come back: on 3k synthetic blocks of 5 vectors (HNSW), 2 per block gave
# a vector search p50 of 1.7-2.2 ms against 3.7-7.2 ms for 6 (a loaded machine).
_PARTS_FETCHED_PER_BLOCK = 2
# HNSW search breadth: usearch's default 64 gave recall@10 0.947 on 4k clustered 64-d vectors,
# 128 gave 0.987 for +0.01 ms per query.
_EXPANSION_SEARCH = 128
# Build parameters, stated rather than left to usearch's defaults (the same values), so the
# manifest can say how a graph was built.
_CONNECTIVITY = 16
_EXPANSION_ADD = 128


def build_threads() -> int:
    """The cores this process may run on: what an HNSW build uses."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def load_usearch() -> ModuleType:
    """The `usearch` package and its `index` module, imported on first use: the one place
    the project imports usearch.

    usearch's extension carries a static libstdc++ whose unique (process-wide) symbols crash
    onnxruntime (the OCR engine's runtime) when onnxruntime loads after usearch in the same
    process; loaded before, both work. So onnxruntime, when installed, is imported here first:
    a process that never searches or builds vectors (`citewise status`, a parse worker) pays
    for neither, and no order of use can load usearch before onnxruntime.
    tests/index/test_usearch_order.py checks that nothing else imports usearch.
    """
    with contextlib.suppress(ImportError):
        import onnxruntime  # noqa: F401

    import usearch.index

    return usearch


def vector_key(doc_id: str, block_id: str) -> int:
    """A stable 63-bit key for a block: blake2b-8 of doc_id NUL block_id, top bit cleared."""
    digest = hashlib.blake2b(f"{doc_id}\x00{block_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & 0x7FFF_FFFF_FFFF_FFFF


def part_key(doc_id: str, block_id: str, part: int) -> int:
    """A stable 63-bit key for part `part` of a block with several vectors."""
    digest = hashlib.blake2b(f"{doc_id}\x00{block_id}\x00{part}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & 0x7FFF_FFFF_FFFF_FFFF


def write_vectors(
    directory: Path,
    matrix: npt.NDArray[np.floating],
    keys: npt.NDArray[np.uint64],
    *,
    exact_search_max_blocks: int,
    parent: Path | None = None,
    threads: int | None = None,
    part_blocks: npt.NDArray[np.uint32] | None = None,
) -> tuple[dict[str, int], VectorKind, GraphBuild | None]:
    """Write the vector files for `matrix` (row = ordinal, or = part when `part_blocks` gives
    each row's block ordinal, non-decreasing; stored as float16, so a float16 matrix is
    written as it is) whose keys are `keys`; the threshold counts rows.

    `parent` is a snapshot directory with an HNSW graph of the same embedding; when given and
    an HNSW graph is needed, the parent's graph is loaded (the parent file is only read), keys
    that are gone or whose vector changed are removed, new ones added. `threads` insert the
    vectors (default: every core; 1 makes the graph's bytes reproducible). Returns (file
    sizes, kind, how the graph was built or None without one).
    """
    n, dim = matrix.shape
    if len(keys) != n:
        raise ValueError(f"{len(keys)} keys for {n} vectors")
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    if n > 1 and bool(np.any(sorted_keys[1:] == sorted_keys[:-1])):
        raise ValueError("two blocks share a vector key (duplicate doc_id/block_id)")
    halves = np.ascontiguousarray(matrix, dtype="<f2")
    sizes = {
        MATRIX: write_new_file(directory / MATRIX, halves.tobytes()),
        KEYS: write_new_file(directory / KEYS, sorted_keys.astype("<u8").tobytes()),
        ORDINALS: write_new_file(directory / ORDINALS, order.astype("<u4").tobytes()),
    }
    if part_blocks is not None:
        if len(part_blocks) != n or (
            n > 1 and bool(np.any(np.diff(part_blocks.astype(np.int64)) < 0))
        ):
            raise ValueError("part_blocks must name one block per row, in block order")
        sizes[PART_BLOCKS] = write_new_file(
            directory / PART_BLOCKS, part_blocks.astype("<u4").tobytes()
        )
    if n <= exact_search_max_blocks:
        return sizes, "exact", None
    threads = threads or build_threads()
    if parent is not None and (parent / GRAPH).is_file():
        graph, added, removed = _extend_parent_graph(parent, halves, keys, dim, threads)
        from_parent = True
    else:
        graph = load_usearch().index.Index(
            ndim=dim,
            metric="cos",
            dtype="f16",
            connectivity=_CONNECTIVITY,
            expansion_add=_EXPANSION_ADD,
        )
        graph.add(keys, halves, threads=threads)
        added, removed, from_parent = n, 0, False
    build = GraphBuild(
        library=f"usearch {metadata.version('usearch')}",
        threads=threads,
        connectivity=int(graph.connectivity),
        expansion_add=int(graph.expansion_add),
        expansion_search=_EXPANSION_SEARCH,
        from_parent=from_parent,
        vectors_added=added,
        vectors_removed=removed,
    )
    graph.save(str(directory / GRAPH))
    _unload(graph)
    fsync_file(directory / GRAPH, point="snapshot.graph")
    sizes[GRAPH] = (directory / GRAPH).stat().st_size
    return sizes, "hnsw", build


def _extend_parent_graph(
    parent: Path,
    halves: npt.NDArray[np.float16],
    keys: npt.NDArray[np.uint64],
    dim: int,
    threads: int,
) -> tuple[Index, int, int]:
    """The parent's graph loaded into memory (usearch cannot add to a memory-mapped view),
    without the keys that are gone or changed, with the new ones added: (graph, added,
    removed). The parent's key map and matrix are only mapped, not read whole."""
    graph: Index = load_usearch().index.Index.restore(str(parent / GRAPH), view=False)
    if graph is None or graph.ndim != dim:
        raise ValueError(f"parent graph {parent / GRAPH} does not match dimension {dim}")
    maps = [map_file(parent / name) for name in (KEYS, ORDINALS, MATRIX)]
    try:
        same, gone = _kept_from_parent(maps[0], maps[1], maps[2], halves, keys)
    finally:
        for mapped in maps:
            close_map(mapped)
    if len(gone):
        graph.remove(gone)
    fresh = np.flatnonzero(~same)  # ordinal order
    if len(fresh):
        graph.add(keys[fresh], halves[fresh], threads=threads)
    return graph, len(fresh), len(gone)


def _kept_from_parent(
    keys_map: Mapped,
    ordinals_map: Mapped,
    matrix_map: Mapped,
    halves: npt.NDArray[np.float16],
    keys: npt.NDArray[np.uint64],
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.uint64]]:
    """(which of `keys` the parent's graph holds with the very same vector, the parent keys
    to remove). A kept vector must match bit for bit: numpy compares float16 values slowly,
    their bits fast. No array returned views the maps."""
    parent_keys = np.frombuffer(keys_map, dtype="<u8")
    parent_ordinals = np.frombuffer(ordinals_map, dtype="<u4")
    parent_matrix = np.frombuffer(matrix_map, dtype="<u2").reshape(-1, halves.shape[1])
    if not len(parent_keys):
        return np.zeros(len(keys), np.bool_), np.zeros(0, np.uint64)
    position = np.searchsorted(parent_keys, keys)
    position[position >= len(parent_keys)] = 0
    same = parent_keys[position] == keys
    if bool(same.any()):
        old_rows = parent_matrix[parent_ordinals[position[same]]]
        same[same] = np.all(old_rows == halves[same].view(np.uint16), axis=1)
    gone = np.setdiff1d(parent_keys, keys[same], assume_unique=True)
    return same, gone


class VectorIndex:
    """Read side: exact search over the mapped matrix, HNSW over the mapped graph when present.

    With several vectors per block (`part_blocks`), rows are parts: a block scores by its
    best part ("max") or the mean of its best two ("top2_mean"), and search returns blocks.
    """

    def __init__(
        self,
        matrix: Mapped,
        keys: Mapped,
        ordinals: Mapped,
        graph_path: Path | None,
        *,
        n_blocks: int,
        dim: int,
        exact_search_max_blocks: int,
        part_blocks: Mapped | None = None,
        scoring: PartScoring = "max",
    ) -> None:
        self.dim = dim
        self.n_blocks = n_blocks
        self.exact_search_max_blocks = exact_search_max_blocks
        self.scoring: PartScoring = scoring
        self._part_blocks: npt.NDArray[np.uint32] | None = None
        self._row_start = np.arange(n_blocks + 1, dtype=np.int64)
        if part_blocks is not None:
            self._part_blocks = np.frombuffer(part_blocks, dtype="<u4")
            self._row_start = np.searchsorted(
                self._part_blocks, np.arange(n_blocks + 1, dtype=np.uint32)
            ).astype(np.int64)
            if len(self._part_blocks) and int(self._part_blocks[-1]) >= n_blocks:
                raise ValueError("vector_blocks names a block beyond the snapshot")
        self.n_rows = int(self._row_start[-1])
        self._matrix: npt.NDArray[np.float16] = np.frombuffer(matrix, dtype="<f2").reshape(
            self.n_rows, dim
        )
        self._keys: npt.NDArray[np.uint64] = np.frombuffer(keys, dtype="<u8")
        self._ordinals: npt.NDArray[np.uint32] = np.frombuffer(ordinals, dtype="<u4")
        if len(self._keys) != self.n_rows or len(self._ordinals) != self.n_rows:
            raise ValueError("vector key map does not match the number of vectors")
        self._graph: Index | None = None
        if graph_path is not None:
            graph: Index | None = load_usearch().index.Index.restore(str(graph_path), view=True)
            if graph is None or graph.ndim != dim:
                raise ValueError(f"{graph_path.name} is not a usearch index of dimension {dim}")
            graph.expansion_search = _EXPANSION_SEARCH  # type: ignore[misc]  # has a setter
            self._graph = graph

    @property
    def kind(self) -> VectorKind:
        return "hnsw" if self._graph is not None else "exact"

    def release(self) -> None:
        """Unmap the graph and drop every array that views the maps."""
        if self._graph is not None:
            _unload(self._graph)
            self._graph = None
        self._matrix = np.zeros((0, self.dim), dtype=np.float16)
        self._keys = np.zeros(0, dtype=np.uint64)
        self._ordinals = np.zeros(0, dtype=np.uint32)
        self._part_blocks = None if self._part_blocks is None else np.zeros(0, dtype=np.uint32)

    def rows(self, start: int, end: int) -> npt.NDArray[np.float32]:
        """A float32 copy of the stored vectors of block ordinals [start, end) (every part)."""
        return self._matrix[self._row_start[start] : self._row_start[end]].astype(np.float32)

    def lead_rows(self, ordinals: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
        """A float32 copy of the first stored vector of each block in `ordinals`: the block's
        only vector, or with several per block the first part (the whole block, when the
        layout embeds it, see VectorLayout.with_block)."""
        return self._matrix[self._row_start[ordinals]].astype(np.float32)

    def part_counts(self, start: int, end: int) -> npt.NDArray[np.int64]:
        """How many vectors each block of ordinals [start, end) has."""
        return np.diff(self._row_start[start : end + 1])

    def search(
        self,
        query: npt.NDArray[np.floating],
        k: int,
        ranges: list[tuple[int, int]] | None = None,
    ) -> list[tuple[int, float]]:
        """Top `k` (block ordinal, score), score desc, ties by ordinal asc. The score is the
        cosine similarity of the query and the block's vector, or of its best parts."""
        if query.shape != (self.dim,):
            raise ValueError(f"query has shape {query.shape}, expected ({self.dim},)")
        if ranges is None:
            ranges = [(0, self.n_blocks)] if self.n_blocks else []
        q = np.ascontiguousarray(query, dtype=np.float16)
        if self._part_blocks is None:
            return self._search_rows(q, k, ranges)
        starts = self._row_start
        row_ranges = [(int(starts[a]), int(starts[b])) for a, b in ranges if b > a]
        rows = sum(b - a for a, b in row_ranges)
        if k <= 0 or rows == 0:
            return []
        per_block = min(_PARTS_FETCHED_PER_BLOCK, math.ceil(self.n_rows / max(1, self.n_blocks)))
        fetch = min(rows, k * per_block + _TIE_MARGIN)
        while True:
            hits = self._search_rows(q, fetch, row_ranges)
            ranked = self._block_scores(q, hits)
            # A block not fetched has no part above the fetched tail, so no score above it:
            # the top k are final once the k-th is strictly above the tail.
            tail = hits[-1][1] if hits else -math.inf
            if len(hits) < fetch or fetch >= rows:
                break
            if len(ranked) >= k and ranked[k - 1][1] > tail:
                break
            fetch = min(rows, fetch * 4)
        return ranked[:k]

    def _block_scores(
        self, q: npt.NDArray[np.float16], hits: list[tuple[int, float]]
    ) -> list[tuple[int, float]]:
        """The blocks of the fetched parts, each scored from all of its parts."""
        assert self._part_blocks is not None
        best: dict[int, float] = {}
        for row, similarity in hits:  # best first: a block's first hit is its best part
            best.setdefault(int(self._part_blocks[row]), similarity)
        if self.scoring == "top2_mean" and best:
            qf = q.astype(np.float32)
            qf /= float(np.linalg.norm(qf)) or 1.0
            for block in best:
                part = self._matrix[self._row_start[block] : self._row_start[block + 1]]
                sims = _cosines(part, qf)
                best[block] = float(np.sort(sims)[-2:].mean())
        return sorted(best.items(), key=lambda entry: (-entry[1], entry[0]))

    def _search_rows(
        self, q: npt.NDArray[np.float16], k: int, ranges: list[tuple[int, int]]
    ) -> list[tuple[int, float]]:
        """Top `k` (row, cosine similarity) within row `ranges`."""
        rows = sum(end - start for start, end in ranges)
        if k <= 0 or rows == 0:
            return []
        if self._graph is None or rows <= self.exact_search_max_blocks:
            return self._exact(q, k, ranges)
        return self._approximate(q, k, ranges, rows)

    def _exact(
        self, q: npt.NDArray[np.float16], k: int, ranges: list[tuple[int, int]]
    ) -> list[tuple[int, float]]:
        brute_force = load_usearch().index.search
        found_ordinals: list[npt.NDArray[np.uint64]] = []
        found_distances: list[npt.NDArray[np.float32]] = []
        for start, end in ranges:
            rows = end - start
            fetch = min(rows, k + _TIE_MARGIN)
            while True:
                matches = _single(brute_force(self._matrix[start:end], q, fetch, "cos", exact=True))
                distances = matches.distances
                # Widen while the fetched tail still ties the k-th: ties are broken by ordinal.
                if fetch >= rows or len(distances) < k or distances[-1] > distances[k - 1]:
                    break
                fetch = min(rows, fetch * 4)
            found_ordinals.append(matches.keys + np.uint64(start))
            found_distances.append(distances)
        return _ranked(np.concatenate(found_ordinals), np.concatenate(found_distances), k)

    def _approximate(
        self, q: npt.NDArray[np.float16], k: int, ranges: list[tuple[int, int]], rows: int
    ) -> list[tuple[int, float]]:
        assert self._graph is not None
        n = self.n_rows
        scoped = rows < n
        mask = np.zeros(n, dtype=np.bool_)
        for start, end in ranges:
            mask[start:end] = True
        # Over-fetch in proportion to how much of the collection is out of scope, widening
        # until k hits are in scope or the whole graph has been returned.
        fetch = min(n, k * math.ceil(n / rows) * (2 if scoped else 1))
        while True:
            matches = _single(self._graph.search(q, fetch, threads=1))
            keys = matches.keys
            position = np.searchsorted(self._keys, keys)
            ordinals = self._ordinals[np.minimum(position, len(self._keys) - 1)].astype(np.uint64)
            valid = self._keys[np.minimum(position, len(self._keys) - 1)] == keys
            keep = valid & mask[ordinals]
            if int(keep.sum()) >= k or fetch >= n:
                break
            fetch = min(n, fetch * 4)
        return _ranked(ordinals[keep], matches.distances[keep], k)


def _cosines(
    rows: npt.NDArray[np.float16], unit_query: npt.NDArray[np.float32]
) -> npt.NDArray[np.float32]:
    """Cosine similarity of each float16 row with a unit-length float32 query."""
    block = rows.astype(np.float32)
    norms = np.linalg.norm(block, axis=1)
    norms[norms == 0] = 1.0
    out: npt.NDArray[np.float32] = (block @ unit_query) / norms
    return out


def best_block_scores(
    matrix: npt.NDArray[np.float16],
    row_start: npt.NDArray[np.int64],
    probes: npt.NDArray[np.float32],
    scoring: PartScoring,
) -> npt.NDArray[np.float64]:
    """For each probe vector, the best score any block reaches against it (exact, whole
    collection): what `VectorIndex.search` would rank first. Deterministic; chunked so the
    float32 working set stays small."""
    n_rows = len(matrix)
    units = np.asarray(probes, dtype=np.float32)
    units = units / np.maximum(np.linalg.norm(units, axis=1, keepdims=True), 1e-12)
    best = np.full(len(units), -1.0, dtype=np.float64)
    if n_rows == 0 or len(units) == 0:
        return best
    chunk = 32_768
    # Work in whole blocks so a block's parts are never split across chunks.
    bounds = np.searchsorted(row_start, np.arange(0, n_rows, chunk), side="right") - 1
    edges = sorted({int(row_start[b]) for b in bounds} | {n_rows})
    for lo, hi in itertools.pairwise(edges):
        rows = matrix[lo:hi].astype(np.float32)
        norms = np.linalg.norm(rows, axis=1)
        norms[norms == 0] = 1.0
        sims = (units @ rows.T) / norms  # [probes, rows]
        if scoring == "max" or len(row_start) - 1 == n_rows:
            best = np.maximum(best, sims.max(axis=1))
            continue
        first = int(np.searchsorted(row_start, lo))
        last = int(np.searchsorted(row_start, hi))
        starts = row_start[first:last] - lo
        counts = np.diff(np.append(starts, hi - lo))
        top = np.maximum.reduceat(sims, starts, axis=1)
        # The second best part of each block: the best once its best is masked out (a tie
        # at the best is its own second).
        at_top = sims >= np.repeat(top, counts, axis=1)
        tied = np.add.reduceat(at_top.astype(np.int32), starts, axis=1) > 1
        second = np.maximum.reduceat(np.where(at_top, -np.inf, sims), starts, axis=1)
        second = np.where(tied | (counts[None, :] == 1), top, second)
        best = np.maximum(best, ((top + second) / 2).max(axis=1))
    return best


def _single(matches: object) -> Matches:
    one_query: type[Matches] = load_usearch().index.Matches
    if not isinstance(matches, one_query):
        raise TypeError(f"expected the matches of one query, got {type(matches).__name__}")
    return matches


def _unload(graph: Index) -> None:
    """Free the graph's memory or unmap its file (Windows cannot delete a mapped file)."""
    graph.reset()  # type: ignore[no-untyped-call]


def _ranked(
    ordinals: npt.NDArray[np.uint64], distances: npt.NDArray[np.float32], k: int
) -> list[tuple[int, float]]:
    order = np.lexsort((ordinals, distances))[:k]
    return [(int(ordinals[i]), 1.0 - float(distances[i])) for i in order]


# The floor is the 95th percentile of the nonsense probes' best scores plus one standard
# deviation of them: where next to no unrelated text reaches, with the spread as a margin. The
# maximum alone is one outlier's: in a five-block collection one probe ("rubu") reached 0.42
# where the rest stayed under 0.35, and a real question's best block scored 0.47. One floor for
# all probes: a floor of the Chinese-character probes alone (0.46 on the shared corpus) sat
# above the best blocks of real Chinese questions (from 0.46).
FLOOR_RULE = "max(min_similarity, p95 of probe scores + their std)"


def calibrate_floor(
    best: npt.NDArray[np.float64], min_similarity: float, probes_version: str = ""
) -> SimilarityFloor:
    """The similarity floor from the probes' best block scores (`best_block_scores`)."""
    values = np.round(np.asarray(best, dtype=np.float64), 6)
    if not len(values):
        raise ValueError("no probes to calibrate the similarity floor with")
    spread = float(values.std())
    threshold = round(max(min_similarity, float(np.percentile(values, 95)) + spread), 6)
    top = float(values.max())
    return SimilarityFloor(
        probes=len(values),
        probes_version=probes_version,
        mean=round(float(values.mean()), 6),
        std=round(float(values.std()), 6),
        p95=round(float(np.percentile(values, 95)), 6),
        max=top,
        threshold=threshold,
        rule=FLOOR_RULE,
    )
