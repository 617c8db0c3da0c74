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


def block_starts(offsets: npt.NDArray[np.uint64], folded_size: int) -> list[int]:
    """Byte offset of every block in folded.bin plus a sentinel, as the list `scan` wants.

    Block i is folded[starts[i] : starts[i + 1] - 1]; the sentinel is folded_size + 1, as if a
    separator followed the last block. A plain list: bisect on it costs well under a
    microsecond, where numpy's searchsorted on a strided column copied the column per call.
    """
    return [*offsets.tolist(), folded_size + 1]


def scan(
    folded: Mapped, starts: Sequence[int], folded_term: str, ranges: Iterable[tuple[int, int]]
) -> list[tuple[int, int]]:
    """(block ordinal, count) for every block in `ranges` whose folded text holds the term.

    `folded` holds the folded texts joined by NUL, `starts` comes from `block_starts`.
    `ranges` are [start, end) ordinal ranges, ascending and disjoint; the result is in ordinal
    order. `folded_term` is mapped like the text (`scan_form`); an empty term matches nothing.
    Work is one find per hit block, not per hit: each hit block is counted in one call.
    """
    if not folded_term:
        return []
    needle = folded_term.replace("\x00", "\ufffd").encode("utf-8")
    hits: list[tuple[int, int]] = []
    for first, end in ranges:
        if first >= end:
            continue
        pos, stop = starts[first], starts[end] - 1
        while True:
            pos = folded.find(needle, pos, stop)
            if pos < 0:
                break
            # The block holding the hit: the last block starting at or before it.
            block = bisect_right(starts, pos, first, end) - 1
            block_end = starts[block + 1] - 1
            hits.append((block, folded[pos:block_end].count(needle)))
            pos = block_end + 1
    return hits


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
