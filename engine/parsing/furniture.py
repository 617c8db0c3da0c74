"""Running headers, footers and page numbers of a PDF: the rows repeated at the top or bottom of
many pages, or printed alone at a page's edge as its number; and the line numbers printed down
a transcript's or a manuscript's margin.

Works on rows alone (anything with y0, y1 and text). Removing them never removes a document's
only text: when nothing else is printed, the text stays.
"""

from __future__ import annotations

import re
import statistics
import unicodedata
from collections import Counter
from collections.abc import Sequence
from typing import Protocol, TypeVar


class RowLike(Protocol):
    @property
    def y0(self) -> float: ...
    @property
    def y1(self) -> float: ...
    @property
    def text(self) -> str: ...


R = TypeVar("R", bound=RowLike)

# A printed page number, the whole row: "12", "Page 3", "3 of 10", "- 7 -", "第 5 页", or a
# roman numeral of front matter, i to lxxxix in one case ("xiv", "XIV"; never "cm", "mix" or
# "di", which are words and units).
_ROMAN = r"(?:x?l|l?x{0,3}|xc)(?:ix|iv|v?i{0,3})"
PAGE_NUMBER = re.compile(
    rf"^(?:(?i:page|p\.)\s*)?(?:\d{{1,4}}|(?=[ivxl]){_ROMAN}|(?=[IVXL]){_ROMAN.upper()})"
    r"(?:\s*(?:/|(?i:of))\s*\d{1,4})?$"
    r"|^[-–—]\s*\d{1,4}\s*[-–—]$"
    r"|^第\s*\d{1,4}\s*页(?:\s*[,，/]?\s*共\s*\d{1,4}\s*页)?$"
)
_DIGITS = re.compile(r"\d+")
_LINE_NUMBER = re.compile(r"^[0-9]{1,4}$")
# Line numbers down a margin: at least this many rows, each a bare number one more than the
# one above it, most of them level with a line of text (a list whose numbers stand on lines of
# their own keeps them).
MIN_LINE_NUMBERS = 5


def fold_key(text: str) -> str:
    """The letters and digits of `text`, NFKC-normalised and casefolded: what two printings
    of one line (a running header, a heading and its bookmark) have in common."""
    return "".join(filter(str.isalnum, unicodedata.normalize("NFKC", text).casefold()))


def _band_rows(pages: Sequence[Sequence[RowLike]], top: bool, row_h: float) -> list[set[int]]:
    """Rows in a header (top) or footer band shared by many pages and set off by a gap."""
    empty: list[set[int]] = [set() for _ in pages]
    edges: list[float] = []
    for rows in pages:
        if rows:
            edges.append(min(r.y0 for r in rows) if top else max(r.y1 for r in rows))
    if len(edges) < 3:
        return empty
    modal, count = Counter(round(e / 2) for e in edges).most_common(1)[0]
    near = sum(1 for e in edges if abs(round(e / 2) - modal) <= 1)
    if near < max(3, 0.4 * len(edges)) or count == 0:
        return empty
    edge = modal * 2.0
    found: list[set[int]] = []
    gaps: list[float] = []
    for rows in pages:
        if top:
            band = {k for k, r in enumerate(rows) if abs(r.y0 - edge) <= 3.5}
        else:
            band = {k for k, r in enumerate(rows) if abs(r.y1 - edge) <= 3.5}
        rest = [r for k, r in enumerate(rows) if k not in band]
        if band and rest:
            if top:
                gap = min(r.y0 for r in rest) - max(rows[k].y1 for k in band)
            else:
                gap = min(rows[k].y0 for k in band) - max(r.y1 for r in rest)
            gaps.append(gap)
            found.append(band if gap >= 0.6 * row_h else set())
        else:
            found.append(band)
    if not gaps or statistics.median(gaps) < 1.2 * row_h:
        return empty
    return found


def _line_numbers(rows: Sequence[RowLike]) -> set[int]:
    """The rows of one page that number its lines down the margin (1, 2, 3 … beside the text)."""
    numbered = sorted(
        (k for k, r in enumerate(rows) if _LINE_NUMBER.match(r.text.strip())),
        key=lambda k: rows[k].y0,
    )
    runs: list[list[int]] = []
    for k in numbered:
        run = runs[-1] if runs else None
        if (
            run is not None
            and int(rows[k].text) == int(rows[run[-1]].text) + 1
            and rows[k].y0 >= rows[run[-1]].y1
        ):
            run.append(k)
        else:
            runs.append([k])
    found: set[int] = set()
    for run in runs:
        if len(run) < MIN_LINE_NUMBERS:
            continue
        beside = sum(1 for k in run if _level_with_text(rows, k))
        if 2 * beside >= len(run):
            found.update(run)
    return found


def _level_with_text(rows: Sequence[RowLike], k: int) -> bool:
    """Another row, not a bare number, shares row k's line."""
    row = rows[k]
    middle = (row.y0 + row.y1) / 2
    return any(
        j != k and other.y0 <= middle <= other.y1 and not _LINE_NUMBER.match(other.text.strip())
        for j, other in enumerate(rows)
    )


def _furniture(pages: Sequence[Sequence[RowLike]]) -> list[set[int]]:
    """Per page, the rows that are running headers, footers, page numbers or line numbers."""
    heights = [max(1.0, r.y1 - r.y0) for rows in pages for r in rows]  # each row's height
    row_h = statistics.median(heights) if heights else 10.0
    drop = [
        a | b
        for a, b in zip(
            _band_rows(pages, True, row_h), _band_rows(pages, False, row_h), strict=True
        )
    ]
    # Text repeated at the top or bottom of many pages (numbers ignored) is furniture too.
    edge_keys: list[dict[int, str]] = []
    counts: Counter[str] = Counter()
    for p, rows in enumerate(pages):
        # rows from top to bottom, first in reading order on a tie
        order = sorted(range(len(rows)), key=[r.y0 for r in rows].__getitem__)
        keys = {k: _DIGITS.sub("#", fold_key(rows[k].text)) for k in {*order[:2], *order[-2:]}}
        edge_keys.append(keys)
        counts.update(set(keys.values()))
        if rows:
            for k in (order[0], order[-1]):
                if PAGE_NUMBER.match(rows[k].text.strip()):
                    drop[p].add(k)
        drop[p] |= _line_numbers(rows)
    text_pages = sum(1 for rows in pages if rows)
    threshold = max(3, 0.3 * text_pages)
    for p, keys in enumerate(edge_keys):
        for k, key in keys.items():
            if key and counts[key] >= threshold:
                drop[p].add(k)
    return drop


def without_furniture(raw_pages: list[list[R]]) -> list[list[R]]:
    """The pages without running headers, footers and page numbers — unless that would leave
    no text at all (every page prints only "Page N", or the same line): then only bare page
    numbers go, and if they are all there is, nothing goes."""
    drop = _furniture(raw_pages)
    pages = [
        [r for k, r in enumerate(rows) if k not in dropped]
        for rows, dropped in zip(raw_pages, drop, strict=True)
    ]
    if any(pages) or not any(raw_pages):
        return pages
    pages = [[r for r in rows if not PAGE_NUMBER.match(r.text)] for rows in raw_pages]
    return pages if any(pages) else raw_pages
