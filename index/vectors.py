"""Block vectors of a snapshot: a float16 matrix for exact search, plus an HNSW graph when large.

`vectors.f16` is [n_blocks, dim] little-endian float16 (row = block ordinal); exact search is
usearch's brute-force cosine over it (measured faster than numpy here). Above
`exact_search_max_blocks` a usearch HNSW graph (`vectors.usearch`, opened as a memory-mapped
view) is added; it is extended from the parent's graph, never rebuilt, when the parent has one.
`vector_keys.u64`/`vector_ordinals.u32` map stable keys to ordinals. Never multi-threaded adds:
they make the graph bytes non-reproducible.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
from pathlib import Path
from typing import Literal

import numpy as np
import numpy.typing as npt

# usearch's extension carries a static libstdc++ whose unique (process-wide) symbols crash
# onnxruntime, the OCR engine's runtime, when it loads after usearch in the same process;
# loaded before, both work. Where onnxruntime is not installed, nothing changes.
with contextlib.suppress(ImportError):
    import onnxruntime  # noqa: F401

from usearch.index import Index, Matches
from usearch.index import search as brute_force

from index.fsutil import Mapped, fsync_file, write_new_file

MATRIX = "vectors.f16"
KEYS = "vector_keys.u64"
ORDINALS = "vector_ordinals.u32"
GRAPH = "vectors.usearch"

VectorKind = Literal["exact", "hnsw", "none"]

_TIE_MARGIN = 16  # extra rows fetched so ties at the cut can be ordered by ordinal
# HNSW search breadth: usearch's default 64 gave recall@10 0.947 on 4k clustered 64-d vectors,
# 128 gave 0.987 for +0.01 ms per query.
_EXPANSION_SEARCH = 128


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
) -> tuple[dict[str, int], VectorKind, bool]:
    """Write the vector files for `matrix` (row = ordinal) whose block keys are `keys`.

    `parent` is a snapshot directory with an HNSW graph of the same embedding; when given and
    an HNSW graph is needed, the parent's graph is loaded (the parent file is only read), keys
    that are gone or whose vector changed are removed, new ones added. Returns (file sizes,
    kind, whether the parent's graph was reused).
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
        return sizes, "exact", False
    reused = parent is not None and (parent / GRAPH).is_file()
    if parent is not None and reused:
        graph = _extend_parent_graph(parent, halves, keys, dim)
    else:
        graph = Index(ndim=dim, metric="cos", dtype="f16")
        graph.add(keys, halves, threads=1)
    graph.save(str(directory / GRAPH))
    _unload(graph)
    fsync_file(directory / GRAPH, point="snapshot.graph")
    sizes[GRAPH] = (directory / GRAPH).stat().st_size
    return sizes, "hnsw", reused


def _extend_parent_graph(
    parent: Path, halves: npt.NDArray[np.float16], keys: npt.NDArray[np.uint64], dim: int
) -> Index:
    graph = Index.restore(str(parent / GRAPH), view=False)
    if graph is None or graph.ndim != dim:
        raise ValueError(f"parent graph {parent / GRAPH} does not match dimension {dim}")
    parent_keys = np.fromfile(parent / KEYS, dtype="<u8")
    parent_ordinals = np.fromfile(parent / ORDINALS, dtype="<u4")
    parent_matrix = np.fromfile(parent / MATRIX, dtype="<f2").reshape(-1, dim)
    # A key kept from the parent must carry the very same vector (bit for bit: numpy compares
    # float16 values slowly, their bits fast); otherwise re-add it.
    position = np.searchsorted(parent_keys, keys)
    position[position >= len(parent_keys)] = 0
    present = parent_keys[position] == keys if len(parent_keys) else np.zeros(len(keys), bool)
    same = present.copy()
    if bool(present.any()):
        old_rows = parent_matrix[parent_ordinals[position[present]]].view(np.uint16)
        same[present] = np.all(old_rows == halves[present].view(np.uint16), axis=1)
    kept = keys[same]
    gone = np.setdiff1d(parent_keys, kept, assume_unique=True)
    if len(gone):
        graph.remove(gone)
    fresh = np.flatnonzero(~same)  # ordinal order: deterministic
    if len(fresh):
        graph.add(keys[fresh], halves[fresh], threads=1)
    return graph


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
            graph = Index.restore(str(graph_path), view=True)
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
    if not isinstance(matches, Matches):
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
