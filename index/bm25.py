"""BM25 over roaring-bitmap postings: build once into files, query through memory maps.

Files: `bm25.terms` (sorted terms, UTF-8, concatenated), `bm25.dict` ([terms+1] rows of byte
offsets into terms, postings and tf), `bm25.postings` (one serialized roaring bitmap of block
ordinals per term), `bm25.tf` (term frequencies aligned with each bitmap's ascending order),
`bm25.lengths` (tokens per block). Opening reads nothing: a term is found by binary search in
the mapped dictionary, so open time does not grow with the vocabulary. Never rank by anything
but the formula below, and never score a block that holds no query term.
"""

from __future__ import annotations

import array
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

import msgspec
import numpy as np
import numpy.typing as npt
from pyroaring import BitMap

from index.fsutil import Mapped, write_new_file

TERMS = "bm25.terms"
DICT = "bm25.dict"
POSTINGS = "bm25.postings"
TF = "bm25.tf"
LENGTHS = "bm25.lengths"
FILES = (TERMS, DICT, POSTINGS, TF, LENGTHS)

# Offsets are 32-bit: a snapshot with 4 GiB of postings (millions of blocks) is refused.
DICT_DTYPE = np.dtype([("term", "<u4"), ("posting", "<u4"), ("tf", "<u4")])
_MAX_OFFSET = 0xFFFF_FFFF


class Bm25Stats(msgspec.Struct, frozen=True, kw_only=True):
    """What a reader needs besides the files; kept in the snapshot header."""

    k1: float
    b: float
    n_blocks: int
    n_terms: int
    total_length: int  # sum of block lengths; avgdl = total_length / n_blocks
    tf_dtype: str  # "<u2" or "<u4"


def write_bm25(
    directory: Path, token_lists: Iterable[list[str]], *, k1: float, b: float
) -> tuple[dict[str, int], Bm25Stats]:
    """Index one token list per block (in ordinal order); return file sizes and stats."""
    pair_terms: list[str] = []
    pair_tfs: list[int] = []
    per_block: list[int] = []
    lengths: list[int] = []
    for tokens in token_lists:
        counts = Counter(tokens)
        pair_terms.extend(counts.keys())
        pair_tfs.extend(counts.values())
        per_block.append(len(counts))
        lengths.append(len(tokens))
    n_blocks = len(lengths)

    # Term ids are positions in code point order == UTF-8 byte order, which lookups compare.
    terms = sorted(dict.fromkeys(pair_terms))
    vocab = {t: i for i, t in enumerate(terms)}
    term_ids = np.fromiter(map(vocab.__getitem__, pair_terms), np.int64, len(pair_terms))
    blocks = np.repeat(np.arange(n_blocks, dtype=np.uint32), per_block)
    order = np.argsort(term_ids, kind="stable")  # stable: ordinals stay ascending per term
    blocks = blocks[order]
    tf_all = np.asarray(pair_tfs, dtype=np.uint32)[order]
    tf_dtype = "<u2" if tf_all.size == 0 or int(tf_all.max()) <= 0xFFFF else "<u4"
    df = np.bincount(term_ids, minlength=len(terms))
    tf_offsets = np.concatenate(([0], np.cumsum(df))).astype(np.uint64)

    encoded_terms = [t.encode("utf-8") for t in terms]
    postings: list[bytes] = []
    for t in range(len(terms)):
        bitmap = BitMap(array.array("I", blocks[tf_offsets[t] : tf_offsets[t + 1]].tobytes()))
        bitmap.run_optimize()
        postings.append(bitmap.serialize())

    columns = {
        "term": np.cumsum([0] + [len(t) for t in encoded_terms], dtype=np.uint64),
        "posting": np.cumsum([0] + [len(p) for p in postings], dtype=np.uint64),
        "tf": tf_offsets,
    }
    table = np.zeros(len(terms) + 1, dtype=DICT_DTYPE)
    for name, column in columns.items():
        if int(column[-1]) > _MAX_OFFSET:
            raise ValueError(f"BM25 {name} data exceeds 4 GiB; split the collection")
        table[name] = column
    sizes = {
        TERMS: write_new_file(directory / TERMS, encoded_terms),
        DICT: write_new_file(directory / DICT, table.tobytes()),
        POSTINGS: write_new_file(directory / POSTINGS, postings),
        TF: write_new_file(directory / TF, tf_all.astype(tf_dtype).tobytes()),
        LENGTHS: write_new_file(directory / LENGTHS, np.asarray(lengths, "<u4").tobytes()),
    }
    stats = Bm25Stats(
        k1=k1,
        b=b,
        n_blocks=n_blocks,
        n_terms=len(terms),
        total_length=int(sum(lengths)),
        tf_dtype=tf_dtype,
    )
    return sizes, stats


def idf(df: int, n: int) -> float:
    """Lucene's idf: ln(1 + (N - df + 0.5) / (df + 0.5)); always positive."""
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


class Bm25Index:
    """Read side over the mapped files; safe for concurrent readers (no mutable state)."""

    def __init__(
        self,
        stats: Bm25Stats,
        terms: Mapped,
        table: Mapped,
        postings: Mapped,
        tf: Mapped,
        lengths: Mapped,
    ) -> None:
        self.stats = stats
        self._terms = terms
        self._table: npt.NDArray[np.void] = np.frombuffer(table, dtype=DICT_DTYPE)
        self._postings = postings
        self._tf: npt.NDArray[np.unsignedinteger] = np.frombuffer(tf, dtype=stats.tf_dtype)
        self._lengths: npt.NDArray[np.uint32] = np.frombuffer(lengths, dtype="<u4")
        if len(self._table) != stats.n_terms + 1:
            raise ValueError(f"{DICT} has {len(self._table)} rows for {stats.n_terms} terms")
        if len(self._lengths) != stats.n_blocks:
            raise ValueError(f"{LENGTHS} has {len(self._lengths)} blocks, not {stats.n_blocks}")
        self._term_offsets: npt.NDArray[np.uint64] = self._table["term"]

    def release(self) -> None:
        """Drop every array that views the maps so they can be closed."""
        self._table = np.zeros(0, dtype=DICT_DTYPE)
        self._term_offsets = np.zeros(0, dtype=np.uint64)
        self._tf = np.zeros(0, dtype=np.uint16)
        self._lengths = np.zeros(0, dtype=np.uint32)
        self._terms = b""
        self._postings = b""

    def term_id(self, term: str) -> int | None:
        """Binary search of the sorted, mapped term dictionary."""
        target = term.encode("utf-8")
        offsets = self._term_offsets
        lo, hi = 0, self.stats.n_terms
        while lo < hi:
            mid = (lo + hi) // 2
            probe = self._terms[int(offsets[mid]) : int(offsets[mid + 1])]
            if probe < target:
                lo = mid + 1
            elif probe > target:
                hi = mid
            else:
                return mid
        return None

    def postings(self, term_id: int) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.float64]]:
        """(ascending block ordinals, term frequencies) of one term."""
        row = self._table[term_id : term_id + 2]
        raw = self._postings[int(row["posting"][0]) : int(row["posting"][1])]
        ordinals = np.frombuffer(BitMap.deserialize(raw).to_array(), dtype=np.uint32)
        tf = self._tf[int(row["tf"][0]) : int(row["tf"][1])].astype(np.float64)
        return ordinals, tf

    def search(
        self, tokens: Sequence[str], k: int, ranges: Sequence[tuple[int, int]] | None = None
    ) -> list[tuple[int, float]]:
        """Top `k` (ordinal, score): score desc, then ordinal asc; blocks with >= 1 term only.

        `tokens` are scored as given (callers pass distinct query tokens); `ranges` limits the
        candidates to [start, end) ordinal ranges; df and avgdl stay collection-wide.
        """
        if k <= 0:
            return []
        return top_k(*self.scores(tokens, ranges), k)

    def scores(
        self, tokens: Sequence[str], ranges: Sequence[tuple[int, int]] | None = None
    ) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.float64]]:
        """Every block in `ranges` holding >= 1 of `tokens`: (ascending ordinals, BM25 scores),
        unranked, for callers that combine BM25 with other evidence before ranking."""
        n = self.stats.n_blocks
        none = (np.zeros(0, dtype=np.uint32), np.zeros(0, dtype=np.float64))
        if n == 0 or not tokens:
            return none
        k1, b = self.stats.k1, self.stats.b
        avgdl = self.stats.total_length / n if self.stats.total_length else 1.0
        mask: npt.NDArray[np.bool_] | None = None
        if ranges is not None:
            mask = np.zeros(n, dtype=np.bool_)
            for start, end in ranges:
                mask[start:end] = True
        found: list[tuple[npt.NDArray[np.uint32], npt.NDArray[np.float64]]] = []
        for token in tokens:
            term = self.term_id(token)
            if term is None:
                continue
            ordinals, tf = self.postings(term)
            weight = idf(len(ordinals), n)
            if mask is not None:
                keep = mask[ordinals]
                ordinals, tf = ordinals[keep], tf[keep]
            if len(ordinals) == 0:
                continue
            dl = self._lengths[ordinals].astype(np.float64)
            found.append((ordinals, weight * tf / (tf + k1 * (1.0 - b + b * dl / avgdl))))
        if not found:
            return none
        if len(found) == 1:
            return found[0]
        dense = np.zeros(n, dtype=np.float64)
        hit = np.zeros(n, dtype=np.bool_)
        for ordinals, contribution in found:
            dense[ordinals] += contribution  # ordinals are distinct within one term
            hit[ordinals] = True
        candidates = np.flatnonzero(hit).astype(np.uint32)
        return candidates, dense[candidates]


def top_k(
    ordinals: npt.NDArray[np.unsignedinteger], scores: npt.NDArray[np.float64], k: int
) -> list[tuple[int, float]]:
    """The best `k` by score desc, ties by ordinal asc, exactly (ties at the cut included)."""
    if len(scores) > k:
        threshold = np.partition(scores, len(scores) - k)[len(scores) - k]
        keep = scores >= threshold
        ordinals, scores = ordinals[keep], scores[keep]
    order = np.lexsort((ordinals, -scores))[:k]
    return [(int(ordinals[i]), float(scores[i])) for i in order]
