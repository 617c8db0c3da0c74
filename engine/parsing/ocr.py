"""Offline OCR of PDF pages that have no usable text layer.

Renders a page with PyMuPDF, recognises it with RapidOCR (PP-OCRv4 Chinese/English ONNX models
shipped inside the `rapidocr-onnxruntime` wheel; nothing is downloaded), and turns its boxes into
lines and paragraphs in reading order, each line's box in PDF points like a text-layer line.
CPU-heavy: runs in parse worker processes only, never on the app's event loop. The engine is
loaded once per process, on the first page that needs it.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
import importlib.util
import sqlite3
import statistics
import threading
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pymupdf

from engine.parsing.limits import ParseLimits
from engine.parsing.lines import is_cjk, join_lines
from engine.parsing.model import LineBox, ParseWarning
from engine.parsing.ocr_cache import (
    CachedPage,
    CachedParagraph,
    OcrCache,
    SourceMemo,
    open_cache,
    page_key,
    page_source_key,
)
from engine.parsing.ocr_signals import PageSignals
from engine.parsing.quality import PageQuality, page_quality

# Rendering resolutions, measured on real pages of the corpus rendered to images (bench/
# bench_ocr.py): lines are found on the page at 100 dpi (the detector's cost grows with the
# image's area, and PP-OCR's detector upscales anything under 736 px on its short side anyway)
# and read from the page at 200 dpi: the recogniser scales every line to 48 px high, so its
# cost hardly changes, and 9-10 pt print read from more pixels keeps far more of its spaces.
OCR_DPI = 100
READ_DPI = 200
# In a PDF that has a text layer, an image-only page where OCR reads fewer characters than
# this is a cover, a logo or a figure (the Debian reference's cover reads "debian"), not a
# scanned page of text.
MIN_SCANNED_CHARS = 20
# A page whose recognised characters average a lower score is listed in the import report.
LOW_CONFIDENCE = 0.8
ENGINE_PACKAGE = "rapidocr-onnxruntime"
# The version of what recognising a page gives (its paragraphs and their lines, as
# `recognise_page` groups the engine's lines): part of every OCR cache key, so bump it when that
# grouping changes. It is not the PDF parser's version: reading a text layer differently must not
# send every scanned page of every library through OCR again. Its value is the PDF parser version
# under which this grouping was last changed (the cache keys once held that version), so caches
# written before the two were told apart stay valid.
OCR_LAYOUT_VERSION = "pdf-4"

_mupdf: Any = pymupdf  # pymupdf ships without type hints

_engine: Any = None
_engine_lock = threading.Lock()


class OcrParagraph(msgspec.Struct, frozen=True):
    text: str
    lines: tuple[LineBox, ...]  # in PDF points on the page, like a text-layer paragraph's
    confidence: float  # recogniser's score, averaged over characters (0..1)


class OcrPage(msgspec.Struct, frozen=True):
    """What OCR found on one page: paragraphs in reading order (none on a blank page)."""

    paragraphs: tuple[OcrParagraph, ...] = ()
    confidence: float = 0.0  # over the page's characters; 0.0 when nothing was recognised
    chars: int = 0
    seconds: float = 0.0  # time to render and recognise


@functools.cache
def engine_version() -> str:
    """The OCR engine and its models, for manifests ("rapidocr-onnxruntime 1.4.4 (...)"), read
    from the installed package without loading it (once per process: reading the package's
    metadata costs milliseconds); "" when it is not installed."""
    try:
        version = importlib.metadata.version(ENGINE_PACKAGE)
        spec = importlib.util.find_spec("rapidocr_onnxruntime")
    except (importlib.metadata.PackageNotFoundError, ImportError, ValueError):
        return ""
    models: list[str] = []
    if spec is not None and spec.origin:
        models = sorted(p.stem for p in (Path(spec.origin).parent / "models").glob("*.onnx"))
    try:
        runtime = f"; onnxruntime {importlib.metadata.version('onnxruntime')}"
    except importlib.metadata.PackageNotFoundError:
        runtime = ""
    return f"{ENGINE_PACKAGE} {version} ({', '.join(models)}{runtime})"


def available() -> bool:
    return importlib.util.find_spec("rapidocr_onnxruntime") is not None


def _get_engine() -> Any:
    global _engine
    with _engine_lock:
        if _engine is None:
            from rapidocr_onnxruntime import RapidOCR  # heavy: onnxruntime, cv2

            _engine = RapidOCR()
        return _engine


# --- recognition -------------------------------------------------------------------------------


@dataclass(slots=True)
class _Box:
    """One recognised piece of text, axis-aligned, in pixels of the rendered page."""

    x0: float
    y0: float
    x1: float
    y1: float
    text: str
    score: float

    @property
    def h(self) -> float:
        return max(1.0, self.y1 - self.y0)

    @property
    def w(self) -> float:
        return max(1.0, self.x1 - self.x0)


def _recognise(det: np.ndarray, fine: np.ndarray | None = None) -> list[_Box]:
    """Text lines found on `det` (grey), each box in `det`'s pixels. With `fine`, the same
    page rendered at a higher resolution, lines are found on `det` and read from `fine`: the
    detector's cost grows with the image's area, the recogniser's does not (every line is
    scaled to 48 px high)."""
    eng = _get_engine()
    quads, _ = eng(det, use_cls=False, use_rec=False)
    if not quads:
        return []
    points = [np.asarray(q, dtype=np.float32) for q in quads]
    crops = eng.get_crop_img_list(np.repeat(det[:, :, None], 3, axis=2), points)
    # Which lines are upside down is decided on the crops the classifier is made for (at the
    # detector's resolution): on finer crops it turns some upright lines over.
    upright, turned, _ = eng.text_cls(crops)
    if fine is not None:
        scale = fine.shape[0] / det.shape[0]
        crops = eng.get_crop_img_list(
            np.repeat(fine[:, :, None], 3, axis=2), [p * scale for p in points]
        )
        threshold = eng.text_cls.cls_thresh
        upright = [
            np.ascontiguousarray(np.rot90(crop, 2))
            if "180" in label and score > threshold
            else crop
            for crop, (label, score) in zip(crops, turned, strict=True)
        ]
    read, _ = eng.text_rec(upright, True)
    boxes: list[_Box] = []
    for quad, (text, score, info) in zip(quads, read, strict=True):
        if float(score) < eng.text_score:
            continue
        columns = [int(c) for word in info[2] for c in word]
        text = _spaced(str(text), columns).strip()
        if not text:
            continue
        xs = [float(pt[0]) for pt in quad]
        ys = [float(pt[1]) for pt in quad]
        boxes.append(_Box(min(xs), min(ys), max(xs), max(ys), text, float(score)))
    return boxes


def _latin(ch: str) -> bool:
    return ch.isascii() and ch.isalnum()


def _width(ch: str) -> float:
    """A Latin character's width relative to a lower-case letter's, roughly."""
    if ch in "mwMW":
        return 1.5
    if ch in "iljtfrI1":
        return 0.8
    return 1.2 if ch.isupper() else 1.0


def _spaced(text: str, columns: list[int]) -> str:
    """`text` with the spaces the recogniser dropped between Latin words put back.

    PP-OCR's Chinese/English recogniser often reads "the parser" as "theparser". Its output
    columns (one per 8 px of a line scaled to 48 px high) say where it saw each character:
    neighbours in a word sit their widths apart (about 2.5 columns for two lower-case
    letters), a word gap adds a space's width more. A space also goes after a comma or
    semicolon, and after a full stop that ends a sentence ("here.The"), when a letter follows
    straight on."""
    if len(columns) != len(text) or len(text) < 2:
        return text
    gaps = [b - a for a, b in pairwise(columns)]
    pairs = [  # a doubled letter has a blank column between its two (CTC decoding)
        (k, gap, (_width(text[k]) + _width(text[k + 1])) / 2 + (text[k] == text[k + 1]) * 0.5)
        for k, gap in enumerate(gaps)
        if _latin(text[k]) and _latin(text[k + 1])
    ]
    if len(pairs) < 4:
        return text
    unit = statistics.median(gap / width for _, gap, width in pairs)
    extra = max(1.5, 0.55 * unit)
    split = {k for k, gap, width in pairs if gap >= max(4.0, unit * width + extra)}
    out = [text[0]]
    for k, gap in enumerate(gaps):
        a, b = text[k], text[k + 1]
        if (
            k in split
            or (a in ",;" and b.isascii() and b.isalpha() and gap >= 3)
            or (a == "." and b.isupper() and k > 0 and text[k - 1].islower() and gap >= 3)
        ):
            out.append(" ")
        out.append(b)
    return "".join(out)


def _weight(boxes: list[_Box]) -> float:
    return sum(b.score * len(b.text) for b in boxes)


def _sideways(boxes: list[_Box]) -> bool:
    """Most text in tall narrow boxes: a page scanned on its side."""
    tall = sum(len(b.text) for b in boxes if b.h > 2.5 * b.w and len(b.text) > 1)
    return tall > 0.5 * sum(len(b.text) for b in boxes)


def _upright_boxes(gray: np.ndarray, fine: np.ndarray | None) -> list[_Box]:
    """Boxes in the coordinates of `gray`, trying the page turned a quarter either way when its
    text runs sideways (the classifier only handles upside-down lines)."""
    boxes = _recognise(gray, fine)
    if not boxes or not _sideways(boxes):
        return boxes
    height, width = gray.shape[:2]
    best, best_weight = boxes, _weight(boxes)
    for k in (1, 3):  # np.rot90: k=1 turns counter-clockwise
        turned = _recognise(
            np.ascontiguousarray(np.rot90(gray, k)),
            None if fine is None else np.ascontiguousarray(np.rot90(fine, k)),
        )
        weight = _weight(turned)
        if weight > best_weight:
            best, best_weight = [_unturn(b, k, width, height) for b in turned], weight
    return best


def _unturn(b: _Box, k: int, width: int, height: int) -> _Box:
    """A box found on the image turned by np.rot90(k), back on the image as rendered."""
    if k == 1:  # turned (x, y) = (y, width - 1 - x)
        return _Box(width - b.y1, b.x0, width - b.y0, b.x1, b.text, b.score)
    # k == 3: turned (x, y) = (height - 1 - y, x)
    return _Box(b.y0, height - b.x1, b.y1, height - b.x0, b.text, b.score)


# --- reading order -----------------------------------------------------------------------------


def _rows(boxes: list[_Box], gutters: list[float]) -> list[_Box]:
    """Pieces side by side on one printed line, on the same side of every column gutter,
    merged into one line (the detector cuts a line at a wide space or a dash it skips)."""
    rows: list[_Box] = []
    for b in sorted(boxes, key=lambda b: (b.y0 + b.y1) / 2):
        for r in reversed(rows[-6:]):
            overlap = min(r.y1, b.y1) - max(r.y0, b.y0)
            h = min(r.h, b.h)
            left, right = (r, b) if r.x0 <= b.x0 else (b, r)
            gap = right.x0 - left.x1
            across = any(left.x1 <= g <= right.x0 for g in gutters)
            if overlap > 0.6 * h and gap < 3 * h and not across:
                n_left, n_right = len(left.text), len(right.text)
                r.text = left.text + _space(left.text, right.text) + right.text
                r.score = (left.score * n_left + right.score * n_right) / (n_left + n_right)
                r.x0, r.y0 = min(r.x0, b.x0), min(r.y0, b.y0)
                r.x1, r.y1 = max(r.x1, b.x1), max(r.y1, b.y1)
                break
        else:
            rows.append(_Box(b.x0, b.y0, b.x1, b.y1, b.text, b.score))
    return rows


def _space(left: str, right: str) -> str:
    return "" if is_cjk(left[-1]) or is_cjk(right[0]) else " "


def _gutters(boxes: list[_Box], line_h: float) -> list[float]:
    """x positions of gaps between columns: runs that no narrow piece of text covers, at
    least 1.5 line heights wide, with several lines on both sides. Pieces as wide as most of
    the text (titles, a full-width paragraph) are left out: they span the columns."""
    left = min(b.x0 for b in boxes)
    right = max(b.x1 for b in boxes)
    narrow = [b for b in boxes if b.w < 0.6 * (right - left)]
    if len(narrow) < 4:
        return []
    step = max(1.0, line_h / 4)
    bins = int((right - left) / step) + 1
    covered = np.zeros(bins, dtype=bool)
    for b in narrow:
        covered[int((b.x0 - left) / step) : int((b.x1 - left) / step) + 1] = True
    gutters: list[float] = []
    k = 0
    while k < bins:
        if covered[k]:
            k += 1
            continue
        start = k
        while k < bins and not covered[k]:
            k += 1
        x0, x1 = left + start * step, left + k * step
        if x1 - x0 >= 1.5 * line_h:
            mid = (x0 + x1) / 2
            on_left = sum(1 for b in narrow if b.x1 <= mid)
            on_right = sum(1 for b in narrow if b.x0 >= mid)
            if on_left >= 3 and on_right >= 3:
                gutters.append(mid)
    return gutters


def _reading_order(lines: list[_Box], gutters: list[float]) -> list[list[_Box]]:
    """Lines grouped into runs read top to bottom: a run is one column of a stretch of page
    between lines that span the columns; the columns of a stretch are read left to right."""
    ordered = sorted(lines, key=lambda b: (b.y0, b.x0))
    if not gutters:
        return [ordered]
    runs: list[list[_Box]] = []
    columns: list[list[_Box]] = [[] for _ in range(len(gutters) + 1)]
    for b in ordered:
        if any(b.x0 < g < b.x1 for g in gutters):  # spans the columns: ends a stretch
            runs.extend(column for column in columns if column)
            columns = [[] for _ in range(len(gutters) + 1)]
            runs.append([b])
            continue
        columns[sum(1 for g in gutters if b.x0 >= g)].append(b)
    runs.extend(column for column in columns if column)
    return runs


def _paragraphs(run: list[_Box], line_h: float) -> list[list[_Box]]:
    """A run's lines cut into paragraphs: at a blank line's worth of space, a line of another
    size, an indented first line, or after a short line that ends a sentence."""
    right = max(b.x1 for b in run)
    left = min(b.x0 for b in run)
    groups: list[list[_Box]] = []
    for b in run:
        if groups:
            prev = groups[-1][-1]
            h = min(prev.h, b.h)
            gap = b.y0 - prev.y1
            breaks = (
                gap > 0.9 * h
                or abs(b.h - prev.h) > 0.35 * max(prev.h, b.h)
                or (b.x0 > left + 1.2 * line_h and b.x0 > prev.x0 + 1.2 * line_h)
                or (prev.text[-1] in ".!?。！？:：" and prev.x1 < right - 2 * line_h)
            )
            if not breaks:
                groups[-1].append(b)
                continue
        groups.append([b])
    return groups


# --- pages -------------------------------------------------------------------------------------


def _to_points(page: Any, dpi: int) -> Any:
    """The matrix from pixels of the rendered page to the coordinates its text layer uses
    (unrotated page space, like pymupdf's text extraction)."""
    scale = 72.0 / dpi
    return _mupdf.Matrix(scale, scale) * page.derotation_matrix


def _paragraph(group: list[_Box], to_points: Any) -> OcrParagraph:
    lines: list[LineBox] = []
    for b in group:
        r = _mupdf.Rect(b.x0, b.y0, b.x1, b.y1) * to_points
        lines.append(
            (round(r.x0, 1), round(r.y0, 1), round(r.x1, 1), round(r.y1, 1), len(b.text) + 1)
        )
    chars = sum(len(b.text) for b in group)
    confidence = sum(b.score * len(b.text) for b in group) / max(1, chars)
    return OcrParagraph(join_lines([b.text for b in group]), tuple(lines), round(confidence, 3))


def layout(boxes: list[_Box], to_points: Any) -> OcrPage:
    """Recognised boxes (pixels) to the page's paragraphs in reading order."""
    if not boxes:
        return OcrPage()
    line_h = statistics.median(b.h for b in boxes)
    gutters = _gutters(boxes, line_h)
    lines = _rows(boxes, gutters)
    paragraphs = [
        _paragraph(group, to_points)
        for run in _reading_order(lines, gutters)
        for group in _paragraphs(run, line_h)
    ]
    chars = sum(len(b.text) for b in lines)
    confidence = sum(b.score * len(b.text) for b in lines) / max(1, chars)
    return OcrPage(tuple(paragraphs), round(confidence, 3), chars)


def render_gray(page: Any, dpi: int = OCR_DPI) -> np.ndarray:
    pix = page.get_pixmap(dpi=dpi, colorspace=_mupdf.csGRAY, alpha=False)
    return np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.height, pix.stride)[
        :, : pix.width
    ]


def recognise_page(
    page: Any, dpi: int = OCR_DPI, read_dpi: int = READ_DPI, gray: np.ndarray | None = None
) -> OcrPage:
    """The text OCR finds on a pymupdf page, in reading order; an empty OcrPage when blank.
    Lines are found on the page rendered at `dpi` (`gray`, when already rendered) and read at
    `read_dpi`."""
    started = time.perf_counter()
    if gray is None:
        gray = render_gray(page, dpi)
    if int(gray.min()) > 245:  # nothing printed: no need to load or run the engine
        return OcrPage(seconds=time.perf_counter() - started)
    fine = render_gray(page, read_dpi) if read_dpi > dpi else None
    found = layout(_upright_boxes(gray, fine), _to_points(page, dpi))
    return msgspec.structs.replace(found, seconds=round(time.perf_counter() - started, 3))


# --- a document's scanned pages ----------------------------------------------------------------


class OcrOutcome(msgspec.Struct, frozen=True):
    """The recognised pages of one PDF, or of a range of its pages (0-based page -> OcrPage),
    and the pages that needed OCR but were left out by the page limit."""

    pages: dict[int, OcrPage] = {}
    skipped: tuple[int, ...] = ()  # 0-based
    failed: tuple[int, ...] = ()  # 0-based pages the engine failed on

    @property
    def text_pages(self) -> list[int]:
        """0-based pages where OCR found text, in order."""
        return sorted(p for p, page in self.pages.items() if page.paragraphs)

    def beside_text(self, has_text_layer: bool) -> OcrOutcome:
        """These pages in a document that has (True) or lacks a text layer elsewhere: beside
        text, pages where OCR read only a word or two are pictures and are left out."""
        if not has_text_layer:
            return self
        kept = {p: page for p, page in self.pages.items() if page.chars >= MIN_SCANNED_CHARS}
        return OcrOutcome(kept, self.skipped, self.failed)

    def paragraphs(self, page: int) -> tuple[OcrParagraph, ...]:
        found = self.pages.get(page)
        return found.paragraphs if found is not None else ()

    def summary(self) -> tuple[tuple[tuple[int, float], ...], float | None]:
        """((1-based page, confidence) of every page with text, confidence over all their
        characters), as ParsedDocument records them."""
        found = [(p, self.pages[p]) for p in self.text_pages]
        chars = sum(page.chars for _, page in found)
        if not chars:
            return (), None
        overall = sum(page.confidence * page.chars for _, page in found) / chars
        return tuple((p + 1, page.confidence) for p, page in found), round(overall, 3)

    def warnings(self, limit: int) -> list[ParseWarning]:
        """What to tell about these pages: those left out by the page limit, and those
        recognised with low confidence."""
        out: list[ParseWarning] = []
        if self.skipped:
            skipped = [p + 1 for p in self.skipped]
            out.append(
                ParseWarning(
                    code="ocr_page_limit",
                    message=f"{_scanned_pages(len(skipped))} not recognised "
                    f"({_pages_said(skipped)}): a document has at most {limit:,} "
                    f"{'page' if limit == 1 else 'pages'} recognised. To include "
                    f"{'it' if len(skipped) == 1 else 'them'}, choose “Recognise all pages” for "
                    "this document in the Library, or raise the limit under Settings, Scanned "
                    "documents, and import it again.",
                    pages=tuple(skipped),
                    count=len(skipped),
                )
            )
        if self.failed:
            failed = [p + 1 for p in self.failed]
            out.append(
                ParseWarning(
                    code="ocr_failed",
                    message=f"Text recognition failed on {_pages_said(failed)}, so "
                    f"{'it was' if len(failed) == 1 else 'they were'} left out; the other "
                    "pages were imported.",
                    pages=tuple(failed),
                )
            )
        low = [
            p + 1
            for p, page in sorted(self.pages.items())
            if page.chars and page.confidence < LOW_CONFIDENCE
        ]
        if low:
            out.append(
                ParseWarning(
                    code="ocr_low_confidence",
                    message=f"The text of {_pages_said(low)} was recognised from a scan with "
                    "low confidence; check what is quoted from it against the page.",
                    pages=tuple(low),
                )
            )
        return out


def merged(parts: list[OcrOutcome], limit: int) -> OcrOutcome:
    """The outcomes of a PDF's page ranges as one, the page limit applied to the whole: pages
    past the first `limit` that needed OCR count as skipped."""
    pages = {p: page for part in parts for p, page in part.pages.items()}
    wanted = sorted(pages)
    kept = {p: pages[p] for p in wanted[:limit]}
    skipped = sorted({*wanted[limit:], *(p for part in parts for p in part.skipped)})
    failed = sorted(p for part in parts for p in part.failed)
    return OcrOutcome(kept, tuple(skipped), tuple(failed))


def _scanned_pages(n: int) -> str:
    return "1 scanned page was" if n == 1 else f"{n:,} scanned pages were"


def _pages_said(pages: list[int]) -> str:
    shown = ", ".join(str(p) for p in pages[:12]) + (" …" if len(pages) > 12 else "")
    return f"page {shown}" if len(pages) == 1 else f"pages {shown}"


def recognise_unreadable(
    doc: Any,
    numbers: range,
    texts: list[list[str]],
    controls: list[int],
    limits: ParseLimits,
    broken: Collection[int] = (),
    qualities: Sequence[PageQuality] | None = None,
) -> OcrOutcome:
    """OCR of the pages `numbers` (0-based) of the open PDF `doc` that have no text, or text
    the quality check rejects (`texts`, `controls`: each page's row texts and removed control
    characters, as extracted; `qualities`: their checks when already made); at most
    limits.ocr_max_pages of them, in page order. Pages pymupdf could not load (`broken`,
    1-based) are left alone. Nothing when OCR is off or the engine is not installed."""
    if not limits.ocr or not available():
        return OcrOutcome()

    def readable(k: int) -> bool:
        if qualities is not None:
            return qualities[k].readable
        return page_quality(texts[k], controls[k] if k < len(controls) else 0).readable

    wanted = [
        p
        for k, p in enumerate(numbers)
        if p + 1 not in broken and (not texts[k] or not readable(k))
    ]
    found: dict[int, OcrPage] = {}
    failed: list[int] = []
    todo = wanted[: limits.ocr_max_pages]
    if not todo:
        return OcrOutcome(skipped=tuple(wanted[limits.ocr_max_pages :]))
    signals = PageSignals(limits.ocr_progress)
    signals.wanted(len(todo))
    cache = open_cache(limits.ocr_cache)  # for these pages only: closed when they are done
    settings = _cache_settings() if cache is not None else ""
    memo: SourceMemo = {}  # fonts and images these pages share are digested once
    try:
        for p in todo:
            signals.hold()  # while the import is paused
            cached = False
            try:
                found[p], cached = _recognise_cached(doc, doc[p], cache, settings, memo)
            except MemoryError:
                raise
            except Exception:  # the engine failing on one page must not lose the document
                failed.append(p)
            signals.page_done(p, cached)
    finally:
        if cache is not None:
            cache.close()
    return OcrOutcome(found, tuple(wanted[limits.ocr_max_pages :]), tuple(failed))


def _cache_settings() -> str:
    """What else a cached page was recognised under: resolutions, engine and models, the
    renderer (MuPDF draws fonts a PDF does not embed from its own) and OCR_LAYOUT_VERSION."""
    renderer = f"pymupdf {_mupdf.VersionBind} mupdf {_mupdf.VersionFitz}"
    return f"{OCR_DPI}/{READ_DPI}\x1f{engine_version()}\x1f{renderer}\x1f{OCR_LAYOUT_VERSION}"


def _source_key(doc: Any, page: Any, settings: str, memo: SourceMemo) -> str | None:
    try:
        return page_source_key(doc, page, settings, memo)
    except Exception:  # pymupdf cannot read one of its objects: the image is keyed instead
        return None


def _recognise_cached(
    doc: Any, page: Any, cache: OcrCache | None, settings: str, memo: SourceMemo
) -> tuple[OcrPage, bool]:
    """The page recognised, or as recognised before from the same objects (or, for a page
    that cannot be keyed so, the same rendered image); and whether it came from the cache.
    A page found in the cache is not rendered, and the engine is not loaded for it."""
    if cache is None:
        return recognise_page(page), False
    started = time.perf_counter()
    gray: np.ndarray | None = None
    key = _source_key(doc, page, settings, memo)
    if key is None:
        gray = render_gray(page, OCR_DPI)
        key = page_key(gray, (float(page.rect.width), float(page.rect.height)), settings)
    try:
        hit = cache.get(key)
    except sqlite3.Error:
        hit = None
    if hit is not None:
        paragraphs = tuple(OcrParagraph(q.text, q.lines, q.confidence) for q in hit.paragraphs)
        seconds = round(time.perf_counter() - started, 3)
        return OcrPage(paragraphs, hit.confidence, hit.chars, seconds), True
    found = recognise_page(page, gray=gray)
    stored = CachedPage(
        tuple(CachedParagraph(q.text, q.lines, q.confidence) for q in found.paragraphs),
        found.confidence,
        found.chars,
    )
    with contextlib.suppress(sqlite3.Error):  # a cache that cannot be written costs a rerun
        cache.put(key, stored)
    return found, False


def recognise_pdf_pages(path: Path, pages: list[int], limits: ParseLimits) -> OcrOutcome:
    """OCR of the pages `pages` (0-based) of the PDF at `path`, whatever text they have (for
    tests and benchmarks; parsing uses recognise_unreadable)."""
    if not limits.ocr or not available():
        return OcrOutcome()
    wanted = sorted(pages)
    doc: Any = _mupdf.open(str(path), filetype="pdf")
    try:
        found = {p: recognise_page(doc[p]) for p in wanted[: limits.ocr_max_pages]}
    finally:
        doc.close()
    return OcrOutcome(found, tuple(wanted[limits.ocr_max_pages :]))
