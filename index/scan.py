"""Exact scan over folded block text: every non-overlapping occurrence, per block, in scope.

The answer is by construction what a naive `fold(text).count(fold(term))` per block gives:
UTF-8 is self-synchronising, so a byte match of a whole encoded term is a character match, and
NUL separators keep matches inside one block. Nothing here tokenises, stems or ranks.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

from index.fsutil import Mapped
from index.textnorm import fold


def scan_form(text: str) -> str:
    """`fold(text)` with NUL (the block separator of folded.bin) stored as U+FFFD.

    PDF text layers do carry NUL (lshort-zh-cn.pdf has two); a term is mapped the same way,
    so a scan equals a naive `fold(text).count(fold(term))` for every term without NUL/U+FFFD.
    """
    return fold(text).replace("\x00", "\ufffd")


class BlockStarts(list[int]):
    """Block offsets as a list (bisect on it costs well under a microsecond, where numpy's
    searchsorted on a strided column copied the column per call) and, in `array`, as one
    contiguous int64 array for mapping many match positions to blocks at once."""

    def __init__(self, starts: list[int]) -> None:
        super().__init__(starts)
        self.array: npt.NDArray[np.int64] = np.asarray(starts, dtype=np.int64)


def block_starts(offsets: npt.NDArray[np.uint64], folded_size: int) -> BlockStarts:
    """Byte offset of every block in folded.bin plus a sentinel, as `scan` wants them.

    Block i is folded[starts[i] : starts[i + 1] - 1]; the sentinel is folded_size + 1, as if a
    separator followed the last block.
    """
    return BlockStarts([*offsets.tolist(), folded_size + 1])


def scan(
    folded: Mapped,
    starts: Sequence[int],
    folded_term: str,
    ranges: Iterable[tuple[int, int]],
    *,
    vectorised: bool | None = None,
) -> list[tuple[int, int]]:
    """(block ordinal, count) for every block in `ranges` whose folded text holds the term.

    `folded` holds the folded texts joined by NUL, `starts` comes from `block_starts`.
    `ranges` are [start, end) ordinal ranges, ascending and disjoint; the result is in ordinal
    order. `folded_term` is mapped like the text (`scan_form`); an empty term matches nothing.

    Two exact methods. Short terms that cannot overlap themselves are found with numpy (one
    compare on the term's rarest byte, then the other bytes at the candidates): CPython's
    substring search is slowest on exactly those terms. Others use `find` with one count per
    hit block. `vectorised` forces the choice (None: by term); True still never uses numpy on
    a self-overlapping term, whose non-overlapping count needs the sequential scan.
    """
    if not folded_term:
        return []
    needle = folded_term.replace("\x00", "\ufffd").encode("utf-8")
    if vectorised is None:
        vectorised = len(needle) <= _VECTOR_MAX_NEEDLE
    vectorised = vectorised and not _overlaps_itself(needle)
    hits: list[tuple[int, int]] = []
    for first, end in ranges:
        if first >= end:
            continue
        if vectorised:
            hits.extend(_scan_vectorised(folded, starts, needle, first, end))
        else:
            hits.extend(_scan_find(folded, starts, needle, first, end))
    return hits


# Above this many bytes the find loop skips far enough per step to match numpy (measured).
_VECTOR_MAX_NEEDLE = 12
_CHUNK = 1 << 21  # bytes compared per numpy pass: bounds the temporary arrays


def _overlaps_itself(needle: bytes) -> bool:
    """True when two occurrences can overlap (a proper prefix equals a suffix, e.g. "aba").

    Otherwise every occurrence is counted by the non-overlapping count, so finding all of them
    independently gives the same answer as a left-to-right scan.
    """
    return any(needle[:k] == needle[-k:] for k in range(1, len(needle)))


def _scan_find(
    folded: Mapped, starts: Sequence[int], needle: bytes, first: int, end: int
) -> list[tuple[int, int]]:
    """One find per hit block, then one count of the rest of that block."""
    hits: list[tuple[int, int]] = []
    find = folded.find
    pos, stop = starts[first], starts[end] - 1
    block = first
    while True:
        pos = find(needle, pos, stop)
        if pos < 0:
            return hits
        # The block holding the hit: the last block starting at or before it.
        block = bisect_right(starts, pos, block, end) - 1
        block_end = starts[block + 1] - 1
        hits.append((block, folded[pos:block_end].count(needle)))
        pos = block_end + 1


def _scan_vectorised(
    folded: Mapped, starts: Sequence[int], needle: bytes, first: int, end: int
) -> list[tuple[int, int]]:
    """Every occurrence of a self-non-overlapping `needle` in blocks [first, end), by numpy."""
    data = np.frombuffer(folded, dtype=np.uint8)
    low, high = starts[first], starts[end] - 1  # the bytes of the blocks, separators between
    last = high - len(needle)  # the last position a match can start at
    if last < low:
        return []
    sample = np.bincount(data[low : min(high, low + 65_536)], minlength=256)
    anchor = min(range(len(needle)), key=lambda i: int(sample[needle[i]]))
    found: list[npt.NDArray[np.intp]] = []
    for base in range(low, last + 1, _CHUNK):
        top = min(base + _CHUNK, last + 1)  # match starts in [base, top)
        at = np.flatnonzero(data[base + anchor : top + anchor] == needle[anchor]) + base
        for i, byte in enumerate(needle):
            if i != anchor and len(at):
                at = at[data[at + i] == byte]
        found.append(at)
    positions = np.concatenate(found)
    if len(positions) == 0:
        return []
    array = starts.array if isinstance(starts, BlockStarts) else np.asarray(starts, np.int64)
    blocks = np.searchsorted(array, positions, "right") - 1 - first
    counts = np.bincount(blocks, minlength=end - first)
    hit = np.flatnonzero(counts)
    return list(zip((hit + first).tolist(), counts[hit].tolist(), strict=True))


def snippet(text: str, folded_text: str, folded_term: str, width: int = 60) -> str:
    """The original `text` around the first occurrence of `folded_term` in `folded_text`.

    About `width` characters of context, half before and half after the hit, whitespace
    collapsed, "…" where text was cut. Folded offsets are mapped back to the original by
    folding prefixes (only ever done for hit blocks). Without a hit: the start of the text.
    """
    hit = folded_text.find(folded_term) if folded_term else -1
    if hit < 0:
        left, right = 0, min(len(text), width)
    else:
        start = _original_offset(text, hit)
        end = max(start, _original_offset(text, hit + len(folded_term) - 1)) + 1
        left, right = max(0, start - width // 2), min(len(text), end + width // 2)
    piece = " ".join(text[left:right].split())
    return ("…" if left > 0 else "") + piece + ("…" if right < len(text) else "")


def _original_offset(text: str, folded_offset: int) -> int:
    """The index of the original character whose folding covers `folded_offset`.

    The smallest i with len(fold(text[:i + 1])) > folded_offset, by bisection: folding is
    length-monotone over prefixes for all practical text (NFC may merge a combining mark into
    the previous character, which keeps the length, never shortens earlier output).
    """
    if text.isascii():  # ASCII folds one character to one character
        return min(folded_offset, len(text) - 1)
    lo, hi = 0, len(text) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if len(fold(text[: mid + 1])) > folded_offset:
            hi = mid
        else:
            lo = mid + 1
    return lo
