"""PDF pages without usable text are recognised by OCR while the PDF is parsed, in one pass and
range by range alike; a PDF with nothing printed still fails as it always did."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pymupdf
import pytest

from engine.errors import ParseError
from engine.parsing import ParseLimits, parse_file
from engine.parsing.pdf import assemble_pdf, parse_pdf_pages, plan_pdf
from tests.scans import EN_PDF, ZH_CLIP, ZH_PDF, add_blank, add_scan, save

REALWORLD_PDF = Path(__file__).resolve().parents[1] / "realworld" / "pdf"

_mupdf: Any = pymupdf
SHORT_EN = (30, 0, 60, 68)  # a heading and one paragraph


def _paragraphs(doc: Any) -> list[Any]:
    return [p for s in doc.sections for p in s.paragraphs]


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Page 1 has a text layer; page 2 is a scan of English text."""
    out = _mupdf.open()
    page = out.new_page(width=400, height=200)
    page.insert_text((40, 60), "A page with its own text layer.", fontsize=12)
    add_scan(out, EN_PDF, SHORT_EN)
    return save(out, tmp_path_factory.mktemp("pdf-ocr") / "mixed.pdf")


def test_an_image_only_chinese_pdf_is_recognised(tmp_path: Path) -> None:
    out = _mupdf.open()
    add_scan(out, ZH_PDF, ZH_CLIP)
    doc = parse_file(save(out, tmp_path / "scan.pdf"), ParseLimits())
    assert doc.lang == "zh" and doc.pages == 1
    assert doc.pages_ocr == 1 and doc.ocr_confidence is not None and doc.ocr_confidence > 0.85
    assert [p for p, _ in doc.ocr_pages] == [1]
    paragraphs = _paragraphs(doc)
    text = "".join(p.text for p in paragraphs)
    assert "跨平台、免费、开源的" in text
    assert all(p.page == 1 and p.lines for p in paragraphs)  # boxes for the source viewer
    assert not [w for w in doc.warnings if w.code == "ocr_low_confidence"]


def test_a_scanned_page_beside_a_text_page_is_recognised_and_marked(mixed: Path) -> None:
    doc = parse_file(mixed, ParseLimits())
    by_page = {p.page: p.text for p in _paragraphs(doc)}
    assert by_page[1] == "A page with its own text layer."
    assert "root shell prompt" in " ".join(p.text for p in _paragraphs(doc) if p.page == 2)
    assert doc.pages_ocr == 1 and [p for p, _ in doc.ocr_pages] == [2]


def test_page_ranges_give_the_document_of_one_pass(mixed: Path) -> None:
    limits = ParseLimits()
    plan = plan_pdf(mixed, limits, pages_per_part=1)
    assert plan is not None and plan.ranges == [(0, 1), (1, 2)]
    parts = [parse_pdf_pages(mixed, start, end, limits) for start, end in plan.ranges]
    assert assemble_pdf(mixed, limits, plan, parts[::-1]) == parse_file(mixed, limits)


def test_with_ocr_off_a_scan_fails_as_having_no_text_layer(tmp_path: Path) -> None:
    out = _mupdf.open()
    add_scan(out, ZH_PDF, ZH_CLIP)
    path = save(out, tmp_path / "scan.pdf")
    with pytest.raises(ParseError) as caught:
        parse_file(path, ParseLimits(ocr=False))
    assert caught.value.reason == "no_text_layer"


def test_a_blank_scan_and_a_whitespace_only_pdf_fail_as_holding_no_text(tmp_path: Path) -> None:
    """OCR read their pages and found no words, so the advice is not to run OCR (a scan with
    OCR off still is no_text_layer, above)."""
    out = _mupdf.open()
    add_blank(out)
    add_blank(out)
    blank = save(out, tmp_path / "blank.pdf")
    out = _mupdf.open()
    out.new_page().insert_text((72, 72), "      ", fontsize=12)
    spaces = save(out, tmp_path / "spaces.pdf")
    out = _mupdf.open()
    out.new_page()  # nothing at all on it
    empty_page = save(out, tmp_path / "empty-page.pdf")
    for path in (blank, spaces, empty_page):
        with pytest.raises(ParseError) as caught:
            parse_file(path, ParseLimits())
        assert caught.value.reason == "no_text", path
        assert "OCR" not in caught.value.message
        with pytest.raises(ParseError) as caught:
            parse_file(path, ParseLimits(ocr=False))
        assert caught.value.reason == "no_text_layer", path


def test_pages_past_the_limit_are_left_out_and_said(tmp_path: Path) -> None:
    out = _mupdf.open()
    add_scan(out, EN_PDF, SHORT_EN)
    add_scan(out, EN_PDF, SHORT_EN)
    doc = parse_file(save(out, tmp_path / "two.pdf"), ParseLimits(ocr_max_pages=1))
    assert [p for p, _ in doc.ocr_pages] == [1]
    (warning,) = [w for w in doc.warnings if w.code == "ocr_page_limit"]
    assert warning.pages == (2,) and "Settings" in warning.message


def test_a_garbled_page_past_the_limit_is_told_once_by_the_limits_warning() -> None:
    # pages 13 and 14 draw symbol fonts that map to no letters: OCR reads both when it may
    path = REALWORLD_PDF / "pdfjs-standard_fonts.pdf"
    assert [p for p, _ in parse_file(path, ParseLimits()).ocr_pages] == [13, 14]
    doc = parse_file(path, ParseLimits(ocr_max_pages=1))
    # page 14 is left for the limit's warning (which offers to recognise it), not also
    # reported as unreadable
    assert [(w.code, w.pages) for w in doc.warnings] == [("ocr_page_limit", (14,))]


def test_a_page_whose_words_are_joined_by_control_codes_is_recognised_instead() -> None:
    """pdfminer's issue-791 sample: a font whose codes are glyph numbers gives Latin letters
    joined by control characters (no text at all with OCR off, tests/realworld). With OCR on
    the page is recognised, and the control characters its text layer lost no longer count
    against it: it lands with what OCR read."""
    doc = parse_file(REALWORLD_PDF / "pdfminer-issue-791-non-unicode-cmap.pdf", ParseLimits())
    assert doc.pages_ocr == 1
    text = " ".join(p.text for p in _paragraphs(doc))
    assert "prostredky na uctech" in text and "3HQ" not in text
