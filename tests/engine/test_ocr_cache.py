"""The OCR cache and the page signals: a page recognised once is taken from the cache the next
time (the same image, the same engine), a different page is not, a new PDF parser keeps the
recognised pages (a new grouping of recognised lines does not), a damaged cache file is set
aside, and a worker holds between pages while the pause file exists."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pymupdf
import pytest

from engine.parsing import PARSER_VERSIONS, ParseLimits, ocr
from engine.parsing.ocr import recognise_unreadable
from engine.parsing.ocr_cache import OcrCache
from engine.parsing.ocr_signals import PageCounts, PageSignals, pause_file
from tests.scans import EN_PDF, add_scan, save

_mupdf: Any = pymupdf


def _recognise(path: Path, limits: ParseLimits) -> tuple[dict[int, str], PageCounts]:
    signals = Path(limits.ocr_progress)
    signals.unlink(missing_ok=True)
    doc = _mupdf.open(str(path))
    try:
        outcome = recognise_unreadable(
            doc, range(doc.page_count), [[] for _ in range(doc.page_count)], [], limits
        )
    finally:
        doc.close()
    counts = PageCounts(signals)
    counts.read()
    texts = {p: " ".join(q.text for q in page.paragraphs) for p, page in outcome.pages.items()}
    return texts, counts


def _one_scan(tmp_path: Path) -> tuple[Path, ParseLimits]:
    """A PDF of one scanned page, and limits that recognise it with a cache in tmp_path."""
    out = _mupdf.open()
    add_scan(out, EN_PDF, (30, 150, 60, 36), dpi=100)
    scan = save(out, tmp_path / "one.pdf")
    limits = ParseLimits(
        ocr_cache=str(tmp_path / "ocr.sqlite"), ocr_progress=str(tmp_path / "pages")
    )
    return scan, limits


def test_a_page_recognised_once_comes_from_the_cache_with_the_same_text(tmp_path: Path) -> None:
    scan, limits = _one_scan(tmp_path)
    first, counts = _recognise(scan, limits)
    assert (counts.wanted, counts.done, counts.cached) == (1, 1, 0)
    again, counts = _recognise(scan, limits)
    assert (counts.wanted, counts.done, counts.cached) == (1, 1, 1)
    assert again == first and first[0].strip()
    assert OcrCache(tmp_path / "ocr.sqlite").count() == 1

    other = _mupdf.open()  # another page's image is recognised, not taken from the cache
    add_scan(other, EN_PDF, (31, 150, 60, 36), dpi=100)
    _, counts = _recognise(save(other, tmp_path / "two.pdf"), limits)
    assert counts.cached == 0 and OcrCache(tmp_path / "ocr.sqlite").count() == 2


def test_a_new_pdf_parser_keeps_the_recognised_pages_and_a_new_ocr_layout_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scan, limits = _one_scan(tmp_path)
    first, counts = _recognise(scan, limits)
    assert counts.cached == 0
    # A PDF parser that reads text layers differently reads every PDF again, but its scanned
    # pages come from the cache: the grouping of recognised lines is not its to change.
    monkeypatch.setitem(PARSER_VERSIONS, "pdf", PARSER_VERSIONS["pdf"] + "-next")
    again, counts = _recognise(scan, limits)
    assert counts.cached == 1 and again == first
    monkeypatch.setattr(ocr, "OCR_LAYOUT_VERSION", ocr.OCR_LAYOUT_VERSION + "-next")
    _, counts = _recognise(scan, limits)
    assert counts.cached == 0 and OcrCache(tmp_path / "ocr.sqlite").count() == 2


def test_a_damaged_cache_file_is_set_aside_and_started_afresh(tmp_path: Path) -> None:
    path = tmp_path / "ocr.sqlite"
    path.write_bytes(b"not a database" * 100)
    assert OcrCache(path).count() == 0
    assert [p.name.split(".corrupt-")[0] for p in tmp_path.glob("*.corrupt-*")] == ["ocr.sqlite"]


def test_a_worker_holds_between_pages_while_the_pause_file_exists(tmp_path: Path) -> None:
    name = str(tmp_path / "pages")
    signals = PageSignals(name)
    signals.wanted(2)
    signals.page_done(0, cached=True)
    pause_file(name).touch()
    released: list[float] = []
    worker = threading.Thread(target=lambda: (signals.hold(), released.append(time.time())))
    worker.start()
    time.sleep(0.6)
    assert not released  # still held
    pause_file(name).unlink()
    worker.join(timeout=5)
    assert released
    counts = PageCounts(Path(name))
    assert counts.read() and (counts.wanted, counts.done, counts.cached) == (2, 1, 1)
    assert not counts.read()  # nothing new since


def test_the_page_key_changes_with_what_the_page_draws_and_not_otherwise(tmp_path: Path) -> None:
    from engine.parsing.ocr_cache import page_source_key

    out = _mupdf.open()
    add_scan(out, EN_PDF, (30, 150, 60, 36), dpi=100)
    path = save(out, tmp_path / "one.pdf")
    doc = _mupdf.open(str(path))
    key = page_source_key(doc, doc[0], "s")
    assert key is not None and page_source_key(doc, doc[0], "s") == key
    assert page_source_key(doc, doc[0], "other settings") != key
    same = _mupdf.open(str(path))
    assert page_source_key(same, same[0], "s") == key  # the same file opened again
    (image,) = doc[0].get_images(full=True)
    doc.update_stream(image[0], b"\x00" * 64)  # the image changed, the page object not
    assert page_source_key(doc, doc[0], "s") != key
    rotated = _mupdf.open(str(path))
    rotated[0].set_rotation(90)
    assert page_source_key(rotated, rotated[0], "s") != key
    marked = _mupdf.open(str(path))
    marked[0].add_text_annot((10, 10), "a note")
    assert page_source_key(marked, marked[0], "s") != key
