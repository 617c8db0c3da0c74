"""PDF to sections with pymupdf: text rows per page, running headers and footers dropped,
sections from the outline (split where each heading is printed) or else from font size.

Paragraphs never span pages (each carries its 1-based physical page). Extraction keeps every
character pymupdf reports for body text: it joins lines but never rewrites words.
"""

from __future__ import annotations

import contextlib
import functools
import operator
import re
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from itertools import pairwise
from pathlib import Path
from typing import Any

import msgspec
import pymupdf

from engine.errors import ParseError
from engine.gc_pause import gc_paused
from engine.parsing.furniture import fold_key, without_furniture
from engine.parsing.lang import detect_lang
from engine.parsing.limits import ParseLimits
from engine.parsing.lines import clean_text, glue, is_cjk, join_lines, short_title
from engine.parsing.model import LineBox, ParsedDocument, ParseWarning, unexpected_failure
from engine.parsing.ocr import OcrOutcome, merged, recognise_unreadable
from engine.parsing.pdf_file import (
    Damage,
    checked_page_count,
    cut_off,
    damage_of,
    damage_warning,
    open_pdf,
    unreadable_pages,
)
from engine.parsing.quality import MIN_READABLE_DOCUMENT_SHARE, PageQuality, page_quality
from engine.parsing.sections import SectionBuilder

_mupdf: Any = pymupdf  # pymupdf ships without type hints

_MONO_FONT = re.compile(r"mono|courier|typewriter|consol|menlo|code|fixed", re.IGNORECASE)
_BOLD_FONT = re.compile(r"bold|black|heavy|semibold", re.IGNORECASE)
_NUMBER_PREFIX = re.compile(
    r"^\s*§?\s*(?:第\s*[0-9零〇一二三四五六七八九十百千两]+\s*[章节篇部卷]"
    r"|(?:chapter|part|appendix|section|附录)\s*[0-9A-Za-z]{0,4}\.?"
    r"|\d{1,3}(?:\.\d{1,3})*\.?(?=\s|$)"
    r"|[A-Z](?:\.\d{1,3})+\.?(?=\s|$)|[A-Z]\.(?=\s))\s*",
    re.IGNORECASE,
)
_LABEL = re.compile(
    r"^(?:(?:chapter|part|appendix)\s+[0-9A-Z]{1,4}|第\s*[0-9零〇一二三四五六七八九十百千两]+\s*[章篇部卷]"
    r"|附录\s*[A-Z])\.?$",
    re.IGNORECASE,
)
_BULLET = re.compile(r"^\s*(?:[•◦▪‣●○■□\-–*]|\d{1,3}[.)]|\(\w{1,3}\))\s")
_SENTENCE_END = frozenset(".!?。！？:：;；")
# A gap between two lines of more than this many line heights ends a paragraph...
PARAGRAPH_GAP = 0.75
# ...unless the page's prose is set open (double-spaced drafts, theses, manuscripts), where every
# wrapped line sits about a line below the one before: there a wrapped line continues across a
# gap up to the page's usual one plus this much. Measured over a page's wrapped lines (lines the
# next line's first word would not have fitted on), at least OPEN_LEADING_LINES of them.
LEADING_SLACK = 0.5
OPEN_LEADING_LINES = 4
# How a wrapped line of Latin prose ends (a letter, or a comma, hyphen or dash mid-sentence,
# maybe before closing quotes or brackets) and how the next one goes on (a lower-case letter).
# A table row or a contents line ends in a number and a new row often starts with a capital:
# neither is taken for a continuation.
_CONTINUES = frozenset(",;-‐–—")
_CLOSERS = "\"'’”)]"
_HEADING_END = frozenset(".,;:。，；：、")
_JUNK_TITLES = re.compile(r"^(untitled|document\d*|title|)$", re.IGNORECASE)
_TITLE_PREFIX = re.compile(r"^microsoft (word|powerpoint) - ", re.IGNORECASE)
# A title that is the name of the file it was made from ("thesis.docx", "10811.exe"): the
# program that wrote the PDF filled the field in, not the author.
_FILE_NAME = re.compile(
    r"\.(docx?|pdf|tex|dvi|odt|rtf|indd|pptx?|xlsx?|txt|md|html?|xml|ps|eps|wpd|qx[dp]|pub|"
    r"p65|pm\d|fm|exe|tmp|jpe?g|png|tiff?)$",
    re.IGNORECASE,
)


@dataclass(slots=True)
class _Row:
    """One visual line of text: the lines pymupdf reports side by side, merged."""

    x0: float
    y0: float
    x1: float
    y1: float
    text: str
    size: float
    bold: bool
    mono: bool

    @property
    def height(self) -> float:
        return max(1.0, self.y1 - self.y0)


_styles: dict[tuple[str, int, float], tuple[float, bool, bool]] = {}


def _style(font: str, flags: int, size: float) -> tuple[float, bool, bool]:
    """(size to half a point, bold, mono) of a span. A document sets its text in a handful of
    fonts and sizes, so this is memoised: it runs for every span of every page."""
    key = (font, flags, size)
    style = _styles.get(key)
    if style is None:
        style = (
            round(float(size) * 2) / 2,
            bool(flags & 16 or _BOLD_FONT.search(font)),
            bool(flags & 8 or _MONO_FONT.search(font)),
        )
        if len(_styles) < 4096:
            _styles[key] = style
    return style


# A row as plain data: x0, y0, x1, y1, text, size, bold, mono. Extraction builds these (a
# tuple is much cheaper to make, and to pickle between processes, than a _Row).
_RowTuple = tuple[float, float, float, float, str, float, bool, bool]

_span_style = operator.itemgetter("font", "flags", "size")

# Two or more Han characters, each alone between spaces: letter-spaced Chinese, not words.
# That is `(?<!\w)HAN(?: HAN)+(?!\w)`, written to open with the Han class (the character
# before it checked once it is taken): re then skips to the next Han character in C instead
# of trying the look-behind at every position of every line.
_HAN = "[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]"
_SPACED_HAN = re.compile(rf"{_HAN}(?<!\w{_HAN})(?: {_HAN})+(?!\w)")


def _close_up(m: re.Match[str]) -> str:
    return m.group(0).replace(" ", "")


def _line_text_style(spans: list[dict[str, Any]]) -> tuple[str, float, bool, bool]:
    """The raw text of a line of several spans and its (size, bold, mono), each by the share
    of characters: the size most are set in (on a tie, the first seen), bold when 80% are,
    mono when 60% are.

    A third to a half of the lines of several spans have one style throughout (their spans
    differ in colour or position only): those take one look-up; the others weigh each distinct
    style once."""
    texts = [s["text"] for s in spans]
    keys = list(map(_span_style, spans))
    first = keys[0]
    if keys.count(first) == len(keys):
        text = "".join(texts)
        if not text:
            return "", 0.0, False, False
        size, is_bold, is_mono = _styles.get(first) or _style(*first)
        return text, size, is_bold, is_mono
    weights: dict[tuple[str, int, float], int] = {}  # style key -> characters, first seen first
    for span_text, key in zip(texts, keys, strict=True):
        if span_text:  # an empty span weighs nothing and sets no style
            weights[key] = weights.get(key, 0) + (len(span_text.strip()) or 1)
    if not weights:
        return "", 0.0, False, False
    sizes: dict[float, int] = {}
    bold = mono = total = 0
    for key, weight in weights.items():
        size, is_bold, is_mono = _styles.get(key) or _style(*key)
        sizes[size] = sizes.get(size, 0) + weight
        total += weight
        if is_bold:
            bold += weight
        if is_mono:
            mono += weight
    size = next(iter(sizes)) if len(sizes) == 1 else max(sizes.items(), key=_second)[0]
    return "".join(texts), size, bold >= 0.8 * total, mono >= 0.6 * total


def _second(item: tuple[float, int]) -> int:
    return item[1]


@contextlib.contextmanager
def _extracting() -> Iterator[None]:
    """Settings for extracting pages, restored after.

    - Line boxes from font size (ascender 0.8, descender 0.2 of it) instead of each font's
      own metrics: pymupdf then skips a font lookup per character, a third of the "dict"
      extraction's cost, and lines of every font get boxes on one scale (a CJK font's tall
      metrics no longer make adjacent lines overlap). Process-wide in pymupdf: parsing runs
      in worker processes, never beside the app's own PDF rendering.
    - Cyclic garbage collection off (pymupdf builds a dict for every span).
    """
    was_skipping = bool(_mupdf.TOOLS.unset_quad_corrections())
    _mupdf.TOOLS.unset_quad_corrections(True)
    try:
        with gc_paused():
            yield
    finally:
        _mupdf.TOOLS.unset_quad_corrections(was_skipping)


def _page_rows(page: Any) -> tuple[list[_RowTuple], int]:
    """The page's visual lines in pymupdf's order, side-by-side lines merged into one row,
    and how many control characters were removed from them (for the text-quality check).

    Lines of one row may overlap a little: Chinese set one character per line has boxes
    wider than the character's advance, each starting where the last one's glyph ends. They
    are merged when a line starts at least a quarter of the row height after the previous
    line's start and ends after it, with a CJK character on either side of the join; a line
    printed over another (fake bold) starts at nearly the same place and stays a row of its
    own. Han characters set with a space between every two ("全 世 界", "目 录") are closed
    up, so a phrase reads as one word.

    Runs for every line of every page, so it works on tuples and local names."""
    rows: list[_RowTuple] = []
    controls = 0
    last_x0 = 0.0  # where the last line merged into rows[-1] starts
    for block in page.get_text("dict", flags=_mupdf.TEXTFLAGS_TEXT)["blocks"]:
        if block["type"] != 0:
            continue
        for line in block["lines"]:
            spans = line["spans"]
            if len(spans) == 1:  # most lines: no weighing of styles
                span = spans[0]
                text = span["text"]
                key = _span_style(span)
                size, bold, mono = _styles.get(key) or _style(*key)
            else:
                text, size, bold, mono = _line_text_style(spans)
            if not text.isprintable():  # only then can clean_text change it
                cleaned = clean_text(text)
                controls += len(text) - len(cleaned)
                text = cleaned
            text = text.strip()
            if not text:
                continue
            if " " in text and not text.isascii():
                text = _SPACED_HAN.sub(_close_up, text)
            x0, y0, x1, y1 = line["bbox"]
            if rows:
                px0, py0, px1, py1, ptext, psize, pbold, pmono = rows[-1]
                # the same row: overlapping by over half the lower height, and to the right
                # (Chinese or Japanese: or a little right of the last line's start, ending
                # beyond it; Latin table cells that touch stay apart, as they always were)
                # min() and max() spelled out: this runs for every line of every page
                overlap = (y1 if y1 < py1 else py1) - (y0 if y0 > py0 else py0)
                upper_h, lower_h = py1 - py0, y1 - y0
                upper_h = upper_h if upper_h > 1.0 else 1.0
                lower_h = lower_h if lower_h > 1.0 else 1.0
                lower = lower_h if lower_h < upper_h else upper_h
                if overlap > 0.5 * lower and (
                    x0 >= px1 - 2
                    or (
                        x0 >= last_x0 + 0.25 * lower
                        and x1 > px1
                        and (is_cjk(text[0]) or is_cjk(ptext[-1]))
                    )
                ):
                    last_x0 = x0
                    rows[-1] = (
                        px0,
                        min(py0, y0),
                        max(px1, x1),
                        max(py1, y1),
                        ptext + glue(ptext, text) + text,
                        max(psize, size),
                        pbold and bold,
                        pmono and mono,
                    )
                    continue
            last_x0 = x0
            rows.append((x0, y0, x1, y1, text, size, bold, mono))
    return rows, controls


def _extract(doc: Any, numbers: range) -> tuple[list[list[_RowTuple]], list[int], list[int]]:
    """The rows of the pages `numbers` (0-based), the control characters each page lost, and
    the 1-based numbers of pages pymupdf fails to read (a damaged page tree or content
    stream): those have no rows, and the other pages are still read."""
    pages: list[list[_RowTuple]] = []
    controls: list[int] = []
    broken: list[int] = []
    count = doc.page_count
    with _extracting():
        for p in numbers:
            if not 0 <= p < count:
                raise IndexError(f"page {p} of a PDF of {count} pages")
            try:
                rows, removed = _page_rows(doc[p])
            except MemoryError:
                raise
            except Exception:
                rows, removed = [], 0
                broken.append(p + 1)
            # OCR (issue 19) belongs here, while the page is open: a page with no rows, or
            # whose rows fail page_quality([row texts], removed), is the one to recognise;
            # _assemble judges whatever rows it is then given.
            pages.append(rows)
            controls.append(removed)
    return pages, controls, broken


# --- headings --------------------------------------------------------------------------------


def _strip_number(text: str) -> str:
    return _NUMBER_PREFIX.sub("", text, count=1)


def _find_heading(
    rows: list[_Row],
    start: int,
    title: str,
    body_size: float,
    seen: dict[str, tuple[str, str]],
) -> tuple[int, int] | None:
    """(row, number of rows) where the outline title is printed, at or after `start`.

    `seen` keeps the keys of text already tried: the search goes over the same rows for
    every bookmark on a page, and twice (prominent rows first)."""
    wanted = {fold_key(title), fold_key(_strip_number(title))} - {""}
    if not wanted:
        return None
    longest = max(len(k) for k in wanted)
    for prominent_only in (True, False):
        for k in range(start, len(rows)):
            first = rows[k]
            if prominent_only and not (first.bold or first.size > body_size + 0.5):
                continue
            acc = ""
            for m in range(k, min(k + 4, len(rows))):
                acc = acc + glue(acc, rows[m].text) + rows[m].text if acc else rows[m].text
                keys = seen.get(acc)
                if keys is None:
                    keys = seen[acc] = (fold_key(acc), fold_key(_strip_number(acc)))
                full, stripped = keys
                if full in wanted or stripped in wanted:
                    return k, m - k + 1
                if len(stripped) > longest + 12:
                    break
    return None


@dataclass(slots=True)
class _Split:
    page: int
    row: int
    rows: int  # rows the printed heading takes (0 when it was not found on the page)
    title: str
    depth: int


def _outline(doc: Any) -> list[list[Any]]:
    """The bookmarks as [level, title, page]; a damaged outline counts as none."""
    try:
        return list(doc.get_toc(simple=True))
    except Exception:
        return []


def _outline_splits(
    outline: list[list[Any]], pages: list[list[_Row]], body_size: float
) -> list[_Split]:
    """Where each bookmark's heading is printed, in reading order."""
    splits: list[_Split] = []
    pos_page, pos_row = 0, 0
    seen: dict[str, tuple[str, str]] = {}
    for entry in outline:
        level, title, page_no = int(entry[0]), short_title(clean_text(str(entry[1]))), int(entry[2])
        if not title or not 1 <= page_no <= len(pages):
            continue
        target = page_no - 1
        if target < pos_page:
            target = pos_page  # out of reading order: it cannot start before the last heading
        start = pos_row if target == pos_page else 0
        found = _find_heading(pages[target], start, title, body_size, seen)
        if found is None and target + 1 < len(pages):
            nxt = _find_heading(pages[target + 1], 0, title, body_size, seen)
            if nxt is not None:
                target, found = target + 1, nxt
        if found is None:
            splits.append(_Split(target, start, 0, title, level))
            pos_page, pos_row = target, start
        else:
            splits.append(_Split(target, found[0], found[1], title, level))
            pos_page, pos_row = target, found[0] + found[1]
    return splits


def _font_splits(pages: list[list[_Row]], body_size: float) -> list[_Split]:
    """Without an outline: rows clearly larger than body text, or short bold numbered rows."""
    sized: list[tuple[int, int, float]] = []
    for p, rows in enumerate(pages):
        for k, r in enumerate(rows):
            if (
                not r.mono
                and r.size >= body_size * 1.15
                and r.size >= body_size + 1
                and len(r.text) <= 200
                and any(ch.isalnum() for ch in r.text)
            ):
                sized.append((p, k, r.size))
    levels = sorted({s for _, _, s in sized}, reverse=True)
    depth_of = {s: min(6, i + 1) for i, s in enumerate(levels)}
    bold_depth = min(6, len(levels) + 1)
    candidates: dict[tuple[int, int], int] = {(p, k): depth_of[s] for p, k, s in sized}
    for p, rows in enumerate(pages):
        for k, r in enumerate(rows):
            if (p, k) in candidates or not r.bold or r.mono or abs(r.size - body_size) > 0.5:
                continue
            text = r.text.strip()
            if len(text) > 80 or not text or text[-1] in _HEADING_END:
                continue
            if levels and not _NUMBER_PREFIX.match(text):
                continue
            isolated = k == 0 or rows[k].y0 - rows[k - 1].y1 > 0.5 * r.height
            if isolated and _strip_number(text):
                candidates[(p, k)] = bold_depth
    splits: list[_Split] = []
    for (p, k), depth in sorted(candidates.items()):
        last = splits[-1] if splits else None
        rows = pages[p]
        if (
            last is not None
            and last.page == p
            and last.row + last.rows == k
            and last.depth == depth
            and rows[k].y0 - rows[k - 1].y1 < 0.8 * rows[k].height
        ):
            last.rows += 1  # a heading wrapped onto a second line
            last.title = last.title + glue(last.title, rows[k].text) + rows[k].text
            continue
        splits.append(_Split(p, k, 1, rows[k].text, depth))
    return _merge_labels(splits)


def _merge_labels(splits: list[_Split]) -> list[_Split]:
    """ "Chapter 1" printed above "GNU/Linux tutorials" is one heading, titled by the second."""
    out: list[_Split] = []
    for split in splits:
        last = out[-1] if out else None
        if (
            last is not None
            and _LABEL.match(last.title)
            and last.page == split.page
            and last.row + last.rows == split.row
        ):
            out[-1] = _Split(
                last.page,
                last.row,
                last.rows + split.rows,
                split.title,
                min(last.depth, split.depth),
            )
        else:
            out.append(split)
    return out


# --- paragraphs ------------------------------------------------------------------------------


def _open_leading(rows: list[_Row], right: float) -> float | None:
    """The usual gap between a page's wrapped lines, in line heights, when it is more than
    PARAGRAPH_GAP (the page is set open); None for a page set solid or too short to tell."""
    gaps = []
    for prev, cur in pairwise(rows):
        if (
            prev.mono
            or cur.mono
            or abs(cur.size - prev.size) > 1.0
            or not _wrapped(prev, cur, right)
        ):
            continue
        gap = (cur.y0 - prev.y1) / min(prev.height, cur.height)
        if -0.5 <= gap <= 3.0:
            gaps.append(gap)
    if len(gaps) < OPEN_LEADING_LINES:
        return None
    usual = statistics.median(gaps)
    return usual if usual > PARAGRAPH_GAP else None


def _wrapped(prev: _Row, cur: _Row, right: float) -> bool:
    """`prev` ends where it does because the first word of `cur` would not have fitted after it
    (a word's width taken as 0.6 em a character, about the widest a Latin face averages)."""
    word = (cur.text.split(maxsplit=1) or [""])[0]
    return right - prev.x1 < (len(word) + 1) * 0.6 * cur.size


def _wrapped_prose(prev: _Row, cur: _Row, right: float) -> bool:
    """`prev` wrapped mid-sentence and `cur` goes on in lower case."""
    last = prev.text.rstrip(_CLOSERS)[-1:]  # "as in “talos”" ends mid-sentence too
    ends_mid = (last.isalpha() and not is_cjk(last)) or last in _CONTINUES
    return ends_mid and cur.text[:1].islower() and _wrapped(prev, cur, right)


def _breaks(
    prev: _Row, cur: _Row, first: _Row, right: float, leading: Callable[[], float | None]
) -> bool:
    """Whether `cur` starts a new paragraph; `leading()`: the page's open leading, measured
    only for a page where wrapped prose meets a wide gap (most pages never ask)."""
    if cur.mono != prev.mono:
        return True
    h = min(max(1.0, prev.y1 - prev.y0), max(1.0, cur.y1 - cur.y0))  # the lower height
    gap = cur.y0 - prev.y1
    if gap < -0.5 * h:
        return True
    if gap > PARAGRAPH_GAP * h:
        if cur.mono or not _wrapped_prose(prev, cur, right):
            return True
        usual = leading()
        if usual is None or gap > (usual + LEADING_SLACK) * h:
            return True
    if cur.mono:
        return False
    if abs(cur.size - prev.size) > 1.0 or _BULLET.match(cur.text):
        return True
    if cur.x0 > prev.x0 + 0.8 * cur.size and not _BULLET.match(first.text):
        return True  # an indented first line
    ends = prev.text[-1:] in _SENTENCE_END
    return ends and prev.x1 < right - 2 * prev.size


def _boxes(rows: list[_Row]) -> tuple[LineBox, ...]:
    """Where rows are printed, to 0.1 pt, with the characters each holds (for a paragraph cut
    into several blocks: each block then marks its own lines)."""
    return tuple(
        (round(r.x0, 1), round(r.y0, 1), round(r.x1, 1), round(r.y1, 1), len(r.text) + 1)
        for r in rows
    )


def _emit_rows(
    rows: list[_Row],
    page: int,
    right: float,
    builder: SectionBuilder,
    leading: Callable[[], float | None],
) -> None:
    """Rows of one page to paragraphs; `leading()`: the page's open leading (`_open_leading`)."""
    group: list[_Row] = []

    def flush() -> None:
        if group:
            lines = _boxes(group)
            if group[0].mono:
                text = "\n".join(r.text for r in group)
                builder.paragraph(text, page, preformatted=True, lines=lines)
            elif len(group) == 1:  # rows are stripped: nothing to join
                builder.paragraph(group[0].text, page, lines=lines)
            else:
                builder.paragraph(join_lines([r.text for r in group]), page, lines=lines)
            group.clear()

    for row in rows:
        if group and _breaks(group[-1], row, group[0], right, leading):
            flush()
        group.append(row)
    flush()


# --- document --------------------------------------------------------------------------------


def _body_size(pages: list[list[_Row]]) -> float:
    """The size most characters are set in; on a tie, the first one seen."""
    sizes: dict[float, int] = {}
    for rows in pages:
        for r in rows:
            sizes[r.size] = sizes.get(r.size, 0) + len(r.text)
    return max(sizes.items(), key=_second)[0] if sizes else 10.0


# A document set in a typewriter face throughout (a court transcript, a screenplay, an old
# report) has no other face to set its code in: when this share of its characters is
# monospaced and few of them are code punctuation, its monospaced lines are prose, joined into
# paragraphs and read for headings as any other text, not kept line for line as code.
MONO_BODY_SHARE = 0.8
MAX_CODE_PUNCTUATION_SHARE = 0.02
_CODE_PUNCTUATION = frozenset("{}[]();=<>\\|#")


def _typewritten_prose(pages: list[list[_Row]]) -> list[list[_Row]]:
    """`pages` with the mono mark taken off every row when the document is typewritten prose
    (see MONO_BODY_SHARE); otherwise `pages` itself."""
    chars = mono = code = 0
    for rows in pages:
        for r in rows:
            n = len(r.text)
            chars += n
            if r.mono:
                mono += n
                code += sum(1 for ch in r.text if ch in _CODE_PUNCTUATION)
    if not chars or mono < MONO_BODY_SHARE * chars or code > MAX_CODE_PUNCTUATION_SHARE * chars:
        return pages
    return [[replace(r, mono=False) for r in rows] for rows in pages]


def _right_edge(rows: list[_Row]) -> float:
    edges = sorted(r.x1 for r in rows if not r.mono) or sorted(r.x1 for r in rows)
    return edges[int(len(edges) * 0.9)] if edges else 0.0


def _meta_title(doc: Any) -> str:
    raw = (doc.metadata or {}).get("title") or ""
    title = _TITLE_PREFIX.sub("", short_title(clean_text(str(raw))))
    if _JUNK_TITLES.match(title) or _FILE_NAME.search(title):
        return ""
    return title


def _page_labels(doc: Any) -> tuple[str, ...]:
    """The printed label of every page ("iv", "40"), () when the PDF defines none (or a
    damaged label tree: the viewer then shows physical page numbers only)."""
    try:
        rules = doc._get_page_labels()  # read once; pymupdf's page.get_label() reads per page
        if not rules:
            return ()
        label_of = _mupdf.utils.get_label_pno
        return tuple(str(label_of(p, rules)) for p in range(doc.page_count))
    except Exception:
        return ()


def parse_pdf(path: Path, limits: ParseLimits) -> ParsedDocument:
    doc = open_pdf(path)
    try:
        page_count = checked_page_count(doc, path, limits)
        damage = damage_of(doc, path)
        rows, controls, broken = _extract(doc, range(page_count))
        ocr, qualities = _recognised(doc, range(page_count), rows, controls, broken, limits)
        outline, meta_title = _outline(doc), _meta_title(doc)
        labels = _page_labels(doc)
    finally:
        doc.close()
    raw_pages = [[_Row(*row) for row in page] for page in rows]
    return _assemble(
        path,
        limits,
        page_count,
        raw_pages,
        outline,
        meta_title,
        labels,
        controls,
        damage,
        broken,
        ocr,
        qualities,
    )


def _recognised(
    doc: Any,
    numbers: range,
    rows: list[list[_RowTuple]],
    controls: list[int],
    broken: list[int],
    limits: ParseLimits,
) -> tuple[OcrOutcome, list[PageQuality]]:
    """OCR (engine/parsing/ocr.py) of the pages `numbers` with no rows, or rows the quality
    check rejects, while the page is open; a page where OCR read text loses its rows, so
    _assemble takes that page's text from OCR alone. Also each page's text quality as
    `_screen` judges it (once OCR has taken its rows): the check is made once, here."""
    texts = [[row[4] for row in page] for page in rows]
    qualities = [
        page_quality(t, controls[k] if k < len(controls) else 0) for k, t in enumerate(texts)
    ]
    outcome = recognise_unreadable(doc, numbers, texts, controls, limits, broken, qualities)
    for p in outcome.text_pages:
        k = p - numbers.start
        rows[k] = []  # its text is OCR's now: the control characters its rows lost are gone too
        qualities[k] = page_quality([])
    return outcome, qualities


def _pages_list(pages: list[int]) -> str:
    shown = ", ".join(str(p) for p in pages[:12]) + (" …" if len(pages) > 12 else "")
    return f"page {shown}" if len(pages) == 1 else f"pages {shown}"


def _screen(
    raw_pages: list[list[_Row]],
    controls: list[int],
    qualities: list[PageQuality] | None = None,
    ocr_tried: frozenset[int] = frozenset(),
) -> tuple[list[list[_Row]], list[int]]:
    """The pages with the rows of unreadable pages (text-quality check) taken out, and the
    1-based numbers of those pages. Raises unreadable_text when the readable pages hold less
    than half of the document's characters. `qualities`: each page's check made where it was
    extracted (see `_recognised`), else it is made here. `ocr_tried`: the 0-based pages text
    recognition has already read (in vain, where they are still unreadable), so the message
    does not advise what was just done.

    The hook for OCR: the pages returned here are the ones to recognise instead."""
    if qualities is None or len(qualities) != len(raw_pages):
        qualities = [
            page_quality([r.text for r in rows], controls[p] if p < len(controls) else 0)
            for p, rows in enumerate(raw_pages)
        ]
    rejected = [p + 1 for p, q in enumerate(qualities) if not q.readable]
    if not rejected:
        return raw_pages, []
    total = sum(q.chars for q in qualities)
    readable = sum(q.chars for q in qualities if q.readable)
    if readable < MIN_READABLE_DOCUMENT_SHARE * total:
        if all(p - 1 in ocr_tried for p in rejected):
            advice = (
                ", and text recognition (OCR) found no text there either. Export it again "
                "from the program that made it, and import the result."
            )
        else:
            advice = (
                ". Export it again from the program that made it, or run it through text "
                "recognition (OCR), and import the result."
            )
        raise ParseError(
            "unreadable_text",
            "The text in this PDF cannot be read: its fonts do not say which letters they "
            f"draw, so {_pages_list(rejected)} came out as meaningless symbols{advice}",
        )
    gone = set(rejected)
    return [[] if p + 1 in gone else rows for p, rows in enumerate(raw_pages)], rejected


def _assemble(
    path: Path,
    limits: ParseLimits,
    page_count: int,
    raw_pages: list[list[_Row]],
    outline: list[list[Any]],
    meta_title: str,
    page_labels: tuple[str, ...] = (),
    controls: list[int] | None = None,
    damage: Damage = "",
    broken: list[int] | None = None,
    ocr: OcrOutcome | None = None,
    qualities: list[PageQuality] | None = None,
) -> ParsedDocument:
    """The document from every page's rows: quality check, furniture, outline or font
    headings, paragraphs.

    Everything that looks across pages happens here, from the rows alone (the file is not
    read), so rows extracted range by range in other processes, joined in page order, give
    exactly the document of one pass.
    """
    warnings: list[ParseWarning] = []
    if broken:
        if len(broken) == page_count:
            raise unreadable_pages()
        warnings.append(
            ParseWarning(
                code="pdf_pages_damaged",
                message=f"{_pages_list(broken).capitalize()} of this PDF "
                f"{'is' if len(broken) == 1 else 'are'} damaged and could not be read; the "
                "other pages were imported.",
                pages=tuple(broken),
            )
        )
    tried = frozenset((*ocr.pages, *ocr.failed)) if ocr is not None else frozenset()
    raw_pages, rejected = _screen(raw_pages, controls or [], qualities, tried)
    ocr = (ocr or OcrOutcome()).beside_text(any(raw_pages))
    scanned = ocr.text_pages  # 0-based pages whose text comes from OCR
    recognised = {p + 1 for p in scanned}
    # OCR read those; those past the OCR page limit are told once, by its warning (which
    # offers to recognise them), not also as unreadable.
    beyond_limit = {p + 1 for p in ocr.skipped}
    rejected = [p for p in rejected if p not in recognised and p not in beyond_limit]
    if rejected:
        warnings.append(
            ParseWarning(
                code="unreadable_pages",
                message=f"The text of {_pages_list(rejected)} of this PDF cannot be read (its "
                "fonts do not say which letters they draw), so it was left out; the other "
                "pages were imported.",
                pages=tuple(rejected),
            )
        )
    if not any(raw_pages) and damage == "cut_off" and not scanned:
        raise cut_off()
    pages = without_furniture(raw_pages)
    if not any(pages) and not scanned:
        if ocr.pages and not ocr.skipped and not ocr.failed:
            # Text recognition read every page without text and found no words there: blank
            # pages, or pictures without words. Running OCR again would find none either.
            raise ParseError(
                "no_text",
                "This PDF contains no text: its pages have no text layer, and text recognition "
                "found no words on them. Check that it is the file you meant.",
            )
        raise ParseError(
            "no_text_layer",
            "This PDF has no text layer (it is probably a scan or made of images); run it "
            "through OCR, for example with a PDF editor, and import the result.",
        )
    warning = damage_warning(damage)
    if warning is not None:
        warnings.insert(0, warning)
    pages = _typewritten_prose(pages)
    body_size = _body_size(pages)
    splits = _outline_splits(outline, pages, body_size)
    found = sum(1 for split in splits if split.rows)
    if found * 2 < len(splits) or not splits:
        # no outline, or one whose titles are mostly not printed where it points
        splits = _font_splits(pages, body_size) or splits

    builder = SectionBuilder(limits.max_sections)
    by_page: dict[int, list[_Split]] = {}
    for split in splits:
        by_page.setdefault(split.page, []).append(split)
    for p, rows in enumerate(pages):
        right = _right_edge(rows)
        leading = functools.cache(functools.partial(_open_leading, rows, right))
        at = 0
        for split in by_page.get(p, ()):
            row = max(split.row, at)
            _emit_rows(rows[at:row], p + 1, right, builder, leading)
            heading_rows = rows[row : row + split.rows]
            text = join_lines([r.text for r in heading_rows]) if heading_rows else None
            lines = _boxes(heading_rows)
            builder.heading(split.title, split.depth, text=text, page=p + 1, lines=lines)
            at = max(at, row + len(heading_rows))
        _emit_rows(rows[at:], p + 1, right, builder, leading)
        for paragraph in ocr.paragraphs(p):
            builder.paragraph(paragraph.text, p + 1, lines=paragraph.lines)
    title = meta_title or builder.first_heading or path.stem
    sections = builder.finish(title)
    ocr_pages, ocr_confidence = ocr.summary()
    return ParsedDocument(
        title=title,
        lang=detect_lang(builder.texts()),
        format="pdf",
        sections=sections,
        pages=page_count,
        page_labels=page_labels if len(page_labels) == page_count else (),
        warnings=(*warnings, *ocr.warnings(limits.ocr_max_pages)),
        ocr_pages=ocr_pages,
        pages_ocr=len(ocr_pages),
        ocr_confidence=ocr_confidence,
    )


# --- one PDF across several worker processes ---------------------------------------------------
#
# A long PDF is the one file of a batch that keeps a worker busy alone. `plan_pdf` reads what
# the whole document shares (page count, outline, title) and cuts it into page ranges;
# `parse_pdf_pages` extracts one range's rows (in any worker, in any order); `assemble_pdf`
# joins them in page order and runs the same `_assemble` as `parse_pdf` without reading the
# file, so the document is identical to one pass.

# Pages per range: ranges small enough that a batch's PDFs spread evenly over the workers,
# large enough that reopening the file per range (a few milliseconds) stays negligible.
PAGES_PER_PART = 48


class PdfPlan(msgspec.Struct, frozen=True, kw_only=True):
    """What a PDF's pages share, and the page ranges to extract in parallel."""

    stamp: tuple[int, int]  # size and modification time of the file when it was read
    page_count: int
    ranges: list[tuple[int, int]]  # [start, end), 0-based, in order, covering every page
    outline: list[list[Any]]  # [level, title, page] as pymupdf gives it
    meta_title: str
    page_labels: tuple[str, ...] = ()  # the printed label of every page, () when none
    damage: Damage = ""  # what pymupdf had to repair to read the file (see damage_of)


class PdfPart(msgspec.Struct, frozen=True, kw_only=True):
    """The rows of pages [start, start + len(pages)) of one PDF, as the file was then."""

    stamp: tuple[int, int]
    start: int
    pages: list[list[_RowTuple]]
    controls: list[int] = []  # per page, the control characters removed from its rows
    broken: list[int] = []  # 1-based numbers of the pages pymupdf failed to read
    ocr: OcrOutcome | None = None  # the range's pages recognised by OCR (engine/parsing/ocr.py)
    seconds: float = 0.0  # time its worker spent reading the range
    qualities: list[PageQuality] = []  # per page, its text-quality check (see _recognised)


def _stamp(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_size, st.st_mtime_ns


def plan_pdf(
    path: Path, limits: ParseLimits, pages_per_part: int = PAGES_PER_PART
) -> PdfPlan | None:
    """The plan for a PDF of at least two ranges' worth of pages; None for a shorter one
    and for anything wrong with it, which `parse_pdf` then reports exactly as always."""
    path = Path(path)
    try:
        stamp = _stamp(path)
        doc = open_pdf(path)
    except Exception:
        return None
    try:
        page_count = checked_page_count(doc, path, limits)
        if page_count < 2 * pages_per_part:
            return None
        outline, meta_title = _outline(doc), _meta_title(doc)
        labels = _page_labels(doc)
        damage = damage_of(doc, path)
    except Exception:
        return None
    finally:
        doc.close()
    parts = -(-page_count // pages_per_part)
    return PdfPlan(
        stamp=stamp,
        page_count=page_count,
        ranges=list(pairwise(page_count * k // parts for k in range(parts + 1))),
        outline=outline,
        meta_title=meta_title,
        page_labels=labels,
        damage=damage,
    )


# The open document a worker keeps between the page ranges of one parse: each later range
# of that file the worker reads skips opening it and loading its fonts again (10-30 ms a
# range, an eighth of the extraction of the shared corpus's PDFs). Opened from the file's
# bytes, so no file handle stays open while it is kept (Windows could not delete or rename
# the file meanwhile); files larger than this are opened per range from the file.
KEEP_MAX_BYTES = 64 << 20
_kept: tuple[str, tuple[int, int], Any] | None = None  # (session, stamp, document)


def release_kept_pdf() -> None:
    """Close the document kept for the page ranges of a parse, if any (see parse_pdf_pages)."""
    global _kept
    kept, _kept = _kept, None
    if kept is not None:
        with contextlib.suppress(Exception):
            kept[2].close()


def _pages_document(path: Path, stamp: tuple[int, int], session: str) -> tuple[Any, bool]:
    """The document to read pages of `path` from, and whether it is kept for the next range
    of the same `session` (else the caller closes it)."""
    global _kept
    if _kept is not None and session and _kept[:2] == (session, stamp):
        return _kept[2], True
    release_kept_pdf()
    if not session or stamp[0] > KEEP_MAX_BYTES:
        return open_pdf(path, pages_only=True), False
    doc = open_pdf(path, pages_only=True, data=path.read_bytes())
    _kept = (session, stamp, doc)
    return doc, True


def parse_pdf_pages(
    path: Path,
    start: int,
    end: int,
    limits: ParseLimits | None = None,
    *,
    session: str = "",
) -> PdfPart:
    """The rows of pages [start, end) (0-based), and the pages among them without usable text
    recognised by OCR as `limits` allow (by default, on); raises only ParseError.

    Ranges of one parse that name the same `session` (a string unique to that parse) and run
    in one process share an open document: it stays open after the range, until a range of
    another session or of a changed file, or `release_kept_pdf`."""
    path = Path(path)
    started = time.perf_counter()
    try:
        stamp = _stamp(path)
        doc, kept = _pages_document(path, stamp, session)
        try:
            pages, controls, broken = _extract(doc, range(start, end))
            limits = limits or ParseLimits()
            ocr, qualities = _recognised(doc, range(start, end), pages, controls, broken, limits)
        except BaseException:
            if kept:
                release_kept_pdf()
            raise
        finally:
            if not kept:
                doc.close()
    except ParseError:
        raise
    except Exception as exc:
        raise unexpected_failure(exc) from exc
    return PdfPart(
        stamp=stamp,
        start=start,
        pages=pages,
        controls=controls,
        broken=broken,
        ocr=ocr,
        seconds=round(time.perf_counter() - started, 3),
        qualities=qualities,
    )


def assemble_pdf(
    path: Path, limits: ParseLimits, plan: PdfPlan, parts: list[PdfPart]
) -> ParsedDocument:
    """The document from the rows of every range of `plan`, in any order; never reads the
    file. Raises only ParseError, "changed" when the parts were read from another version
    of the file than the plan."""
    ordered = sorted(parts, key=lambda part: part.start)
    covered = [(part.start, part.start + len(part.pages)) for part in ordered]
    if covered != plan.ranges:
        raise ValueError(f"parts cover pages {covered}, the plan {plan.ranges}")
    if any(part.stamp != plan.stamp for part in ordered):
        raise ParseError(
            "changed",
            "This PDF changed while it was being imported; import it again once it is saved.",
        )
    raw_pages = [[_Row(*row) for row in rows] for part in ordered for rows in part.pages]
    controls = [n for part in ordered for n in (part.controls or [0] * len(part.pages))]
    checked = all(len(part.qualities) == len(part.pages) for part in ordered)
    qualities = [q for part in ordered for q in part.qualities] if checked else None
    try:
        return _assemble(
            Path(path),
            limits,
            plan.page_count,
            raw_pages,
            plan.outline,
            plan.meta_title,
            plan.page_labels,
            controls,
            plan.damage,
            [n for part in ordered for n in part.broken],
            merged([part.ocr for part in ordered if part.ocr is not None], limits.ocr_max_pages),
            qualities,
        )
    except ParseError:
        raise
    except Exception as exc:
        raise unexpected_failure(exc) from exc
