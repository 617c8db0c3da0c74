"""BM25 over roaring-bitmap postings: build once into files, query through memory maps.

Files: `bm25.terms` (sorted terms, UTF-8, concatenated), `bm25.dict` ([terms+1] rows of byte
offsets into terms, postings and tf), `bm25.postings` (one serialized roaring bitmap of block
ordinals per term), `bm25.tf` (term frequencies aligned with each bitmap's ascending order),
`bm25.lengths` (tokens per block), `bm25.keys` (each term's 8-byte lookup key, precomputed so
the first search after opening derives nothing; snapshots written before it derive the keys on
their first query, to the same values). Opening reads nothing. Never rank by anything but the
formula below, and never score a block that holds no query term.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import chain
from pathlib import Path
from typing import NamedTuple

import msgspec
import numpy as np
import numpy.typing as npt
from pyroaring import BitMap

from index.fsutil import Mapped, write_new_file
from index.roaring import deserialize_many, serialize_many

TERMS = "bm25.terms"
DICT = "bm25.dict"
POSTINGS = "bm25.postings"
TF = "bm25.tf"
LENGTHS = "bm25.lengths"
KEYS = "bm25.keys"
FILES = (TERMS, DICT, POSTINGS, TF, LENGTHS)  # every snapshot has these; KEYS is optional
# bm25.keys: one "<u8" per term, its first 8 UTF-8 bytes read big-endian (zero-padded). A new
# layout is a new version here and in engine/versions/formats.py.
KEYS_FORMAT = 1

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


class TermCounts(NamedTuple):
    """The term frequencies of consecutive blocks, counted once (e.g. as their document
    arrives): the distinct terms in code point order and, per (term, block) pair sorted by
    term then block, the term's index in `terms`, the block's position in the run and the
    frequency; plus the number of tokens of each block."""

    terms: list[str]
    term_ids: npt.NDArray[np.int64]
    blocks: npt.NDArray[np.uint32]
    tfs: npt.NDArray[np.uint32]
    lengths: npt.NDArray[np.uint32]


def count_terms(token_lists: Iterable[Sequence[str]]) -> TermCounts:
    """The TermCounts of blocks given as token lists (bags: order does not matter)."""
    counters: list[Counter[str]] = []
    lengths: list[int] = []
    for tokens in token_lists:
        counters.append(Counter(tokens))
        lengths.append(len(tokens))
    pair_terms = list(chain.from_iterable(counters))
    n_pairs = len(pair_terms)
    tfs = np.fromiter(chain.from_iterable(c.values() for c in counters), np.uint32, n_pairs)
    terms = sorted(set(pair_terms))
    vocab = {t: i for i, t in enumerate(terms)}
    term_ids = np.fromiter(map(vocab.__getitem__, pair_terms), np.int64, n_pairs)
    per_block = np.fromiter(map(len, counters), np.int64, len(counters))
    blocks = np.repeat(np.arange(len(counters), dtype=np.uint32), per_block)
    order = np.argsort((term_ids << 32) | blocks, kind="stable")
    return TermCounts(
        terms, term_ids[order], blocks[order], tfs[order], np.asarray(lengths, dtype=np.uint32)
    )


def write_bm25(
    directory: Path,
    blocks: Iterable[list[str] | int | TermCounts],
    *,
    k1: float,
    b: float,
    parent: Bm25Index | None = None,
) -> tuple[dict[str, int], Bm25Stats]:
    """Index the blocks in ordinal order; return file sizes and stats.

    An item is one block's token list; or the ordinal of the same block in `parent` (built
    from the same tokens): its postings and length are then carried over instead of
    tokenising it again; or the TermCounts of the next len(item.lengths) blocks, counted
    beforehand. The files are the same, byte for byte, whichever way a block is given.
    """
    parts: list[tuple[int, TermCounts]] = []  # first ordinal, counts of consecutive blocks
    pending: list[list[str]] = []  # token lists not yet counted, ending at `ordinal`
    carried_from: list[int] = []  # parent ordinal of each carried block ...
    carried_to: list[int] = []  # ... and its ordinal here
    ordinal = 0
    for item in blocks:
        if isinstance(item, list):
            pending.append(item)
            ordinal += 1
            continue
        if pending:
            parts.append((ordinal - len(pending), count_terms(pending)))
            pending = []
        if isinstance(item, int):
            carried_from.append(item)
            carried_to.append(ordinal)
            ordinal += 1
        else:
            parts.append((ordinal, item))
            ordinal += len(item.lengths)
    if pending:
        parts.append((ordinal - len(pending), count_terms(pending)))
    n_blocks = ordinal
    block_lengths = np.zeros(n_blocks, dtype=np.uint32)  # carried ones filled from the parent
    for first, counts in parts:
        block_lengths[first : first + len(counts.lengths)] = counts.lengths

    carried = _carried_postings(parent, carried_from, carried_to, block_lengths)
    # Term ids are positions in code point order == UTF-8 byte order, which lookups compare.
    # Every source lists its terms sorted: sorting their concatenation merges sorted runs.
    every = list(chain(carried.terms, *(counts.terms for _, counts in parts)))
    every.sort()
    terms = list(dict.fromkeys(every))
    vocab = {t: i for i, t in enumerate(terms)}

    def global_ids(local: list[str]) -> npt.NDArray[np.int64]:
        return np.fromiter(map(vocab.__getitem__, local), np.int64, len(local))

    term_ids = np.concatenate(
        [
            global_ids(carried.terms)[carried.term_ids],
            *(global_ids(counts.terms)[counts.term_ids] for _, counts in parts),
        ]
    )
    ordinals = np.concatenate(
        [carried.ordinals, *(counts.blocks + np.uint32(first) for first, counts in parts)]
    )
    tf_all = np.concatenate([carried.tfs, *(counts.tfs for _, counts in parts)])
    # Sorted by term, then ordinal: postings ascend. Every source arrives sorted, so the
    # stable sort (a merge of sorted runs) is nearly linear.
    order = np.argsort((term_ids.astype(np.uint64) << np.uint64(32)) | ordinals, kind="stable")
    blocks_sorted = ordinals[order]
    tf_all = tf_all[order]
    tf_dtype = "<u2" if tf_all.size == 0 or int(tf_all.max()) <= 0xFFFF else "<u4"
    df = np.bincount(term_ids, minlength=len(terms))
    tf_offsets = np.concatenate(([0], np.cumsum(df))).astype(np.uint64)

    encoded_terms = [t.encode("utf-8") for t in terms]
    postings, posting_offsets = serialize_many(blocks_sorted, tf_offsets.astype(np.int64))
    columns = {
        "term": np.cumsum([0] + [len(t) for t in encoded_terms], dtype=np.uint64),
        "posting": posting_offsets.astype(np.uint64),
        "tf": tf_offsets,
    }
    table = np.zeros(len(terms) + 1, dtype=DICT_DTYPE)
    for name, column in columns.items():
        if int(column[-1]) > _MAX_OFFSET:
            raise ValueError(f"BM25 {name} data exceeds 4 GiB; split the collection")
        table[name] = column
    term_bytes = b"".join(encoded_terms)
    sizes = {
        TERMS: write_new_file(directory / TERMS, term_bytes),
        DICT: write_new_file(directory / DICT, table.tobytes()),
        POSTINGS: write_new_file(directory / POSTINGS, postings.tobytes()),
        TF: write_new_file(directory / TF, tf_all.astype(tf_dtype).tobytes()),
        LENGTHS: write_new_file(directory / LENGTHS, block_lengths.astype("<u4").tobytes()),
        KEYS: write_new_file(
            directory / KEYS, prefix_keys(table["term"], term_bytes).astype("<u8").tobytes()
        ),
    }
    stats = Bm25Stats(
        k1=k1,
        b=b,
        n_blocks=n_blocks,
        n_terms=len(terms),
        total_length=int(block_lengths.sum(dtype=np.uint64)),
        tf_dtype=tf_dtype,
    )
    return sizes, stats


class _Carried(NamedTuple):
    """Postings taken over from a parent index: the parent terms they use, and per posting
    an index into those terms, the new block ordinal and the term frequency; sorted by term,
    then ordinal."""

    terms: list[str]
    term_ids: npt.NDArray[np.intp]
    ordinals: npt.NDArray[np.uint32]
    tfs: npt.NDArray[np.uint32]


def _carried_postings(
    parent: Bm25Index | None,
    carried_from: list[int],
    carried_to: list[int],
    lengths: npt.NDArray[np.uint32],
) -> _Carried:
    """The parent's postings of the blocks carried over, renumbered; fills their `lengths`."""
    if not carried_from:
        none = np.zeros(0, dtype=np.uint32)
        return _Carried([], np.zeros(0, dtype=np.intp), none, none)
    if parent is None:
        raise ValueError("blocks carried over from a parent index, but no parent given")
    n_parent = parent.stats.n_blocks
    source = np.asarray(carried_from, dtype=np.int64)
    target = np.asarray(carried_to, dtype=np.int64)
    if bool(np.any((source < 0) | (source >= n_parent))):
        raise ValueError(f"carried block ordinals must be in 0..{n_parent - 1}")
    renumber = np.full(n_parent, -1, dtype=np.int64)
    renumber[source] = target
    if len(np.unique(source)) != len(source):
        raise ValueError("a parent block is carried over twice")
    lengths[target] = parent._lengths[source]

    term_ids, old_ordinals, tfs = parent.all_postings()
    new_ordinals = renumber[old_ordinals]
    keep = new_ordinals >= 0
    term_ids = term_ids[keep]
    present = np.zeros(parent.stats.n_terms, dtype=np.bool_)
    present[term_ids] = True  # the terms some carried block still holds
    compact = np.cumsum(present, dtype=np.intp) - 1
    return _Carried(
        parent.terms(np.flatnonzero(present)),
        compact[term_ids],
        new_ordinals[keep].astype(np.uint32),
        tfs[keep].astype(np.uint32),
    )


def idf(df: int, n: int) -> float:
    """Lucene's idf: ln(1 + (N - df + 0.5) / (df + 0.5)); always positive."""
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


_Scored = tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]  # ordinals, contributions

# Terms in at least this many blocks are worth caching: below, decoding costs microseconds.
_HOT_MIN_DF = 512
HOT_CACHE_BYTES = 32 << 20


class _HotTerms:
    """A least-recently-used cache of scored postings, bounded in bytes; thread-safe.

    Entries are derived from immutable files, so a hit is always exact; only memory is at stake.
    """

    def __init__(self, budget: int) -> None:
        self._budget = budget
        self._entries: dict[int, _Scored] = {}
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, term: int) -> _Scored | None:
        with self._lock:
            entry = self._entries.pop(term, None)
            if entry is not None:
                self._entries[term] = entry  # now the most recently used
            return entry

    def put(self, term: int, entry: _Scored) -> _Scored:
        """Keep `entry` (made read-only: it is shared by every later query) and return it."""
        for part in entry:
            part.setflags(write=False)
        size = entry[0].nbytes + entry[1].nbytes
        if size > self._budget:
            return entry
        with self._lock:
            old = self._entries.pop(term, None)
            if old is not None:
                self._bytes -= old[0].nbytes + old[1].nbytes
            while self._entries and self._bytes + size > self._budget:
                victim = self._entries.pop(next(iter(self._entries)))
                self._bytes -= victim[0].nbytes + victim[1].nbytes
            self._entries[term] = entry
            self._bytes += size
        return entry

    @property
    def nbytes(self) -> int:
        return self._bytes

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0


class Bm25Index:
    """Read side over the mapped files; safe for concurrent readers.

    State beyond the maps, derived from them on first use (never at open): an 8-byte key per
    term for the vectorised lookup when the snapshot has no `bm25.keys` (older ones), the
    length normalisation per block (built twice by racing readers at worst, never wrong), and a
    locked, byte-bounded cache of hot terms.
    """

    def __init__(
        self,
        stats: Bm25Stats,
        terms: Mapped,
        table: Mapped,
        postings: Mapped,
        tf: Mapped,
        lengths: Mapped,
        keys: Mapped | None = None,
        *,
        cache_bytes: int = HOT_CACHE_BYTES,
    ) -> None:
        self.stats = stats
        self._terms = terms
        # The packed dictionary rows as an [n_terms + 1, 3] matrix: term, posting, tf offsets.
        self._rows: npt.NDArray[np.uint32] = np.frombuffer(table, dtype="<u4").reshape(-1, 3)
        self._postings = postings
        self._tf: npt.NDArray[np.unsignedinteger] = np.frombuffer(tf, dtype=stats.tf_dtype)
        self._lengths: npt.NDArray[np.uint32] = np.frombuffer(lengths, dtype="<u4")
        if len(self._rows) != stats.n_terms + 1:
            raise ValueError(f"{DICT} has {len(self._rows)} rows for {stats.n_terms} terms")
        if len(self._lengths) != stats.n_blocks:
            raise ValueError(f"{LENGTHS} has {len(self._lengths)} blocks, not {stats.n_blocks}")
        self._keys: npt.NDArray[np.uint64] | None = None
        if keys is not None:
            self._keys = np.frombuffer(keys, dtype="<u8")
            if len(self._keys) != stats.n_terms:
                raise ValueError(f"{KEYS} has {len(self._keys)} keys for {stats.n_terms} terms")
        self._norm: npt.NDArray[np.float64] | None = None
        # Every contribution is > 0 with k1 >= 0 and 0 <= b <= 1, so a summed score of 0
        # means "no term"; other parameters take the path that does not rely on it.
        self._positive = stats.k1 >= 0 and 0 <= stats.b <= 1
        self._hot = _HotTerms(cache_bytes)

    def release(self) -> None:
        """Drop every array that views the maps so they can be closed."""
        self._rows = np.zeros((0, 3), dtype=np.uint32)
        self._tf = np.zeros(0, dtype=np.uint16)
        self._lengths = np.zeros(0, dtype=np.uint32)
        self._keys = np.zeros(0, dtype=np.uint64)
        self._norm = np.zeros(0, dtype=np.float64)
        self._hot.clear()
        self._terms = b""
        self._postings = b""

    def term_id(self, term: str) -> int | None:
        """The id of `term` in the sorted dictionary, or None."""
        return self.term_ids([term])[0]

    def term_ids(self, terms: Sequence[str]) -> list[int | None]:
        """Ids of `terms` (None where absent): one searchsorted over 8-byte term prefixes for
        all of them, then a byte comparison inside the (nearly always 1-long) equal-prefix run."""
        encoded = [t.encode("utf-8") for t in terms]
        if not encoded:
            return []
        keys = self._prefix_keys()
        wanted = np.fromiter(map(_prefix_key, encoded), dtype=np.uint64, count=len(encoded))
        lows = np.searchsorted(keys, wanted, "left").tolist()
        highs = np.searchsorted(keys, wanted, "right").tolist()
        offsets = self._rows[:, 0]
        found: list[int | None] = []
        for target, lo, hi in zip(encoded, lows, highs, strict=True):
            hit = None
            while lo < hi:  # binary search among the terms sharing the prefix, in byte order
                mid = (lo + hi) // 2
                probe = self._terms[int(offsets[mid]) : int(offsets[mid + 1])]
                if probe < target:
                    lo = mid + 1
                elif probe > target:
                    hi = mid
                else:
                    hit = mid
                    break
            found.append(hit)
        return found

    def _prefix_keys(self) -> npt.NDArray[np.uint64]:
        """The terms' lookup keys: bm25.keys, or derived once from the terms (older snapshots).

        Terms are in byte order, so the keys are non-decreasing and the terms equal to a query
        term are all in the run of keys equal to its key.
        """
        keys = self._keys
        if keys is None:
            keys = self._keys = prefix_keys(self._rows[:, 0], self._terms)
        return keys

    def _length_norm(self) -> npt.NDArray[np.float64]:
        """k1 * (1 - b + b * dl / avgdl) per block, the term-independent part of BM25."""
        norm = self._norm
        if norm is None:
            k1, b = self.stats.k1, self.stats.b
            n = self.stats.n_blocks
            avgdl = self.stats.total_length / n if self.stats.total_length else 1.0
            dl = self._lengths.astype(np.float64)
            norm = k1 * (1.0 - b + b * dl / avgdl)
            self._norm = norm
        return norm

    def postings(self, term_id: int) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.float64]]:
        """(ascending block ordinals, term frequencies) of one term."""
        (_, p0, t0), (_, p1, t1) = self._rows[term_id : term_id + 2].tolist()
        return self._ordinals(p0, p1), self._tf[t0:t1].astype(np.float64)

    def all_postings(
        self,
    ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.uint32], npt.NDArray[np.unsignedinteger]]:
        """Every posting as (term id, block ordinal, term frequency), sorted by term id, then
        ordinal: the whole index decoded, for carrying it into a new one."""
        n_terms = self.stats.n_terms
        ordinals, counts = deserialize_many(self._postings, self._rows[: n_terms + 1, 1])
        ends = self._rows[:, 2].astype(np.intp)
        df = ends[1:] - ends[:-1]
        if not np.array_equal(counts, df) or len(ordinals) != len(self._tf):
            raise ValueError(f"{POSTINGS} and {TF} disagree on the number of postings")
        return np.repeat(np.arange(n_terms, dtype=np.intp), df), ordinals, self._tf

    def terms(self, ids: npt.NDArray[np.integer]) -> list[str]:
        """The terms with the given ids."""
        offsets = self._rows[:, 0].tolist()
        data = self._terms
        return [data[offsets[t] : offsets[t + 1]].decode("utf-8") for t in np.asarray(ids).tolist()]

    def _ordinals(self, start: int, end: int) -> npt.NDArray[np.uint32]:
        bitmap = BitMap.deserialize(self._postings[start:end])
        return np.frombuffer(bitmap.to_array(), dtype=np.uint32)

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
        unranked, for callers that combine BM25 with other evidence before ranking.

        Work is proportional to the postings of the query terms: they are decoded and scored
        in one pass over their concatenation, then summed per block in token order (so a
        score is bit-identical to adding the terms' contributions one by one).
        """
        n = self.stats.n_blocks
        none = (np.zeros(0, dtype=np.uint32), np.zeros(0, dtype=np.float64))
        if n == 0 or not tokens:
            return none
        ids = [t for t in self.term_ids(tokens) if t is not None]
        if not ids:
            return none
        here = np.asarray(ids, dtype=np.intp)
        rows = zip(self._rows[here].tolist(), self._rows[here + 1].tolist(), strict=True)
        pieces: list[_Scored | None] = []
        cold: list[tuple[int, int, int, int, int]] = []  # term id, postings and tf offsets
        for term, ((_, p0, t0), (_, p1, t1)) in zip(ids, rows, strict=True):
            hot = self._hot.get(term)
            pieces.append(hot)
            if hot is None:
                cold.append((term, p0, p1, t0, t1))
        fresh = iter(self._score_terms(cold) if cold else [])
        scored = [next(fresh) if piece is None else piece for piece in pieces]
        if len(scored) == 1:
            ordinals, contribution = scored[0]
        else:
            ordinals = np.concatenate([o for o, _ in scored])
            contribution = np.concatenate([c for _, c in scored])
        if ranges is not None:
            keep = _in_ranges(ordinals, ranges)
            ordinals, contribution = ordinals[keep], contribution[keep]
            if len(ordinals) == 0:
                return none
        if len(scored) == 1:  # copies: the cached arrays are shared and read-only
            return ordinals.astype(np.uint32), contribution.copy()
        return self._sum_per_block(ordinals, contribution)

    def _score_terms(self, terms: list[tuple[int, int, int, int, int]]) -> list[_Scored]:
        """(ordinals, contributions) of each term, computed in one pass over them all; terms
        with many postings are kept in the hot-term cache."""
        n = self.stats.n_blocks
        parts = [self._ordinals(p0, p1) for _, p0, p1, _, _ in terms]
        dfs = [t1 - t0 for *_, t0, t1 in terms]
        ordinals = np.concatenate(parts, dtype=np.intp)
        tf = np.concatenate([self._tf[t0:t1] for *_, t0, t1 in terms], dtype=np.float64)
        weight = np.repeat(np.array([idf(df, n) for df in dfs], dtype=np.float64), dfs)
        contribution = weight * tf / (tf + self._length_norm()[ordinals])
        out: list[_Scored] = []
        start = 0
        for (term, *_), df in zip(terms, dfs, strict=True):
            piece = (ordinals[start : start + df], contribution[start : start + df])
            if df >= _HOT_MIN_DF:  # copies: a cached slice must not pin the whole batch
                piece = self._hot.put(term, (piece[0].copy(), piece[1].copy()))
            out.append(piece)
            start += df
        return out

    def _sum_per_block(
        self, ordinals: npt.NDArray[np.intp], contribution: npt.NDArray[np.float64]
    ) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.float64]]:
        """Sum the contributions of each distinct ordinal, in their order of appearance.

        np.bincount adds its weights one by one in array order, so either way a block's score
        is ((c1 + c2) + c3)... over the query terms in order. Many postings: one dense array of
        n_blocks. Few: a stable sort (a merge of the per-term ascending runs) to compact them.
        """
        n = self.stats.n_blocks
        if self._positive and len(ordinals) * _DENSE_RATIO >= n:
            dense = np.asarray(
                np.bincount(ordinals, weights=contribution, minlength=n), dtype=np.float64
            )
            hit = np.flatnonzero(dense > 0)
            return hit.astype(np.uint32), dense[hit]
        order = np.argsort(ordinals, kind="stable")
        ordered = ordinals[order]
        first = np.empty(len(ordered), dtype=np.bool_)
        first[:1] = True
        np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
        slot = np.cumsum(first) - 1
        candidates = ordered[first]
        summed = np.bincount(slot, weights=contribution[order], minlength=len(candidates))
        return candidates.astype(np.uint32), np.asarray(summed, dtype=np.float64)


# Dense accumulation once the postings reach 1/_DENSE_RATIO of the blocks (measured crossover).
_DENSE_RATIO = 8


def prefix_keys(
    offsets: npt.NDArray[np.unsignedinteger], terms: Mapped | bytes
) -> npt.NDArray[np.uint64]:
    """Each term's first 8 UTF-8 bytes as a big-endian integer, zero-padded (`_prefix_key` for
    every term at once); `offsets` are the [n_terms + 1] term offsets into `terms`."""
    bounds = np.asarray(offsets, dtype=np.int64)
    starts, sizes = bounds[:-1], np.diff(bounds)
    data = np.frombuffer(terms, dtype=np.uint8)
    keys = np.zeros(len(starts), dtype=np.uint64)
    for j in range(8):
        present = np.flatnonzero(sizes > j)
        keys[present] |= data[starts[present] + j].astype(np.uint64) << np.uint64(56 - 8 * j)
    return keys


def _prefix_key(term: bytes) -> int:
    return int.from_bytes(term[:8].ljust(8, b"\x00"), "big")


def _in_ranges(
    ordinals: npt.NDArray[np.intp], ranges: Sequence[tuple[int, int]]
) -> npt.NDArray[np.bool_]:
    """Which ordinals fall in any [start, end) of `ranges` (in any order, overlapping or not)."""
    spans = sorted((start, end) for start, end in ranges if start < end)
    if not spans:
        return np.zeros(len(ordinals), dtype=np.bool_)
    starts = np.array([s for s, _ in spans], dtype=np.int64)
    # The furthest end among spans starting at or before each start: covers overlaps.
    ends = np.maximum.accumulate(np.array([e for _, e in spans], dtype=np.int64))
    at = np.searchsorted(starts, ordinals, "right") - 1
    return (at >= 0) & (ordinals < ends[np.maximum(at, 0)])


def top_k(
    ordinals: npt.NDArray[np.unsignedinteger], scores: npt.NDArray[np.float64], k: int
) -> list[tuple[int, float]]:
    """The best `k` by score desc, ties by ordinal asc, exactly (ties at the cut included)."""
    if k <= 0:
        return []
    if len(scores) > k:
        keep = np.flatnonzero(scores >= _top_k_floor(scores, k))
        ordinals, scores = ordinals[keep], scores[keep]
    order = np.lexsort((ordinals, -scores))[:k]
    return [(int(ordinals[i]), float(scores[i])) for i in order]


_CHUNK = 64


def _top_k_floor(scores: npt.NDArray[np.float64], k: int) -> float:
    """A value no greater than the k-th largest score, and usually equal or close to it.

    Below k * _CHUNK scores: the k-th largest itself. Above: the k-th largest of the maxima of
    _CHUNK-long chunks; k distinct chunks have a maximum at least that large, so at least k
    scores are >= it. Partitioning the maxima is ~_CHUNK times cheaper than the scores.
    """
    size = len(scores)
    if size < k * _CHUNK:
        return float(np.partition(scores, size - k)[size - k])
    whole = size - size % _CHUNK
    maxima = scores[:whole].reshape(-1, _CHUNK).max(axis=1)
    if whole < size:
        maxima = np.append(maxima, scores[whole:].max())
    return float(np.partition(maxima, len(maxima) - k)[len(maxima) - k])
