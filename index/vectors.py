"""Block vectors of a snapshot: a float16 matrix for exact search, plus an HNSW graph when large.

`vectors.f16` is [n_blocks, dim] little-endian float16 (row = block ordinal); exact search is
usearch's brute-force cosine over it (measured faster than numpy here). Above
`exact_search_max_blocks` a usearch HNSW graph (`vectors.usearch`, opened as a memory-mapped
view) is added; it is extended from the parent's graph, never rebuilt, when the parent has one.
`vector_keys.u64`/`vector_ordinals.u32` map stable keys to ordinals. Graphs are built with
every core: the bytes then differ from build to build (the manifest's `vector_graph` says how
a graph was built), but a built graph never changes and is searched on one thread, so the same
snapshot and query always give the same blocks.
"""

from __future__ import annotations

import contextlib
import hashlib
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
from index.records import GraphBuild

MATRIX = "vectors.f16"
KEYS = "vector_keys.u64"
ORDINALS = "vector_ordinals.u32"
GRAPH = "vectors.usearch"

VectorKind = Literal["exact", "hnsw", "none"]

_TIE_MARGIN = 16  # extra rows fetched so ties at the cut can be ordered by ordinal
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


def write_vectors(
    directory: Path,
    matrix: npt.NDArray[np.float32],
    keys: npt.NDArray[np.uint64],
    *,
    exact_search_max_blocks: int,
    parent: Path | None = None,
    threads: int | None = None,
) -> tuple[dict[str, int], VectorKind, GraphBuild | None]:
    """Write the vector files for `matrix` (row = ordinal) whose block keys are `keys`.

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
    graph = load_usearch().index.Index.restore(str(parent / GRAPH), view=False)
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
    """Read side: exact search over the mapped matrix, HNSW over the mapped graph when present."""

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
    ) -> None:
        self.dim = dim
        self.n_blocks = n_blocks
        self.exact_search_max_blocks = exact_search_max_blocks
        self._matrix: npt.NDArray[np.float16] = np.frombuffer(matrix, dtype="<f2").reshape(
            n_blocks, dim
        )
        self._keys: npt.NDArray[np.uint64] = np.frombuffer(keys, dtype="<u8")
        self._ordinals: npt.NDArray[np.uint32] = np.frombuffer(ordinals, dtype="<u4")
        if len(self._keys) != n_blocks or len(self._ordinals) != n_blocks:
            raise ValueError("vector key map does not match the number of blocks")
        self._graph: Index | None = None
        if graph_path is not None:
            graph = load_usearch().index.Index.restore(str(graph_path), view=True)
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

    def rows(self, start: int, end: int) -> npt.NDArray[np.float32]:
        """A float32 copy of the stored vectors of ordinals [start, end)."""
        return self._matrix[start:end].astype(np.float32)

    def search(
        self,
        query: npt.NDArray[np.floating],
        k: int,
        ranges: list[tuple[int, int]] | None = None,
    ) -> list[tuple[int, float]]:
        """Top `k` (ordinal, cosine similarity), similarity desc, ties by ordinal asc."""
        if query.shape != (self.dim,):
            raise ValueError(f"query has shape {query.shape}, expected ({self.dim},)")
        if ranges is None:
            ranges = [(0, self.n_blocks)] if self.n_blocks else []
        rows = sum(end - start for start, end in ranges)
        if k <= 0 or rows == 0:
            return []
        q = np.ascontiguousarray(query, dtype=np.float16)
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
        scoped = rows < self.n_blocks
        mask = np.zeros(self.n_blocks, dtype=np.bool_)
        for start, end in ranges:
            mask[start:end] = True
        # Over-fetch in proportion to how much of the collection is out of scope, widening
        # until k hits are in scope or the whole graph has been returned.
        fetch = min(self.n_blocks, k * math.ceil(self.n_blocks / rows) * (2 if scoped else 1))
        while True:
            matches = _single(self._graph.search(q, fetch, threads=1))
            keys = matches.keys
            position = np.searchsorted(self._keys, keys)
            ordinals = self._ordinals[np.minimum(position, len(self._keys) - 1)].astype(np.uint64)
            valid = self._keys[np.minimum(position, len(self._keys) - 1)] == keys
            keep = valid & mask[ordinals]
            if int(keep.sum()) >= k or fetch >= self.n_blocks:
                break
            fetch = min(self.n_blocks, fetch * 4)
        return _ranked(ordinals[keep], matches.distances[keep], k)


def _single(matches: object) -> Matches:
    if not isinstance(matches, load_usearch().index.Matches):
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
