"""OCR of scanned PDF pages: real corpus text rendered to images, recognised back, in reading
order and where it is printed. Each recognised page costs seconds: pages are small and each
is recognised once per module."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pymupdf
import pytest

from engine.parsing import ParseLimits, ocr_engine_version
from engine.parsing.ocr import OcrOutcome, OcrPage, merged, recognise_page, recognise_pdf_pages
from tests.scans import (
    EN_CLIP,
    EN_PDF,
    ZH_CLIP,
    ZH_PDF,
    add_blank,
    add_scan,
    add_two_columns,
    char_recall,
    clip_of,
    save,
    source_text,
)

_mupdf: Any = pymupdf
SIDEWAYS_CLIP = (30, 0, 60, 68)  # the heading and its first paragraph

LEFT = (
    "Alpha column begins here. The first column tells how the parser reads a page. "
    "It keeps going for several lines so that it wraps inside its box."
)
RIGHT = (
    "Omega column starts on the right. The second column must be read after the whole "
    "first one, never line by line across the gutter."
)


@pytest.fixture(scope="module")
def scans(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = _mupdf.open()
    add_scan(out, ZH_PDF, ZH_CLIP)  # page 0
    add_scan(out, EN_PDF, EN_CLIP)  # page 1
    add_scan(out, EN_PDF, SIDEWAYS_CLIP, turn=90)  # page 2: scanned on its side
    add_two_columns(out, LEFT, RIGHT)  # page 3
    add_blank(out)  # page 4
    return save(out, tmp_path_factory.mktemp("scans") / "scans.pdf")


@pytest.fixture(scope="module")
def recognised(scans: Path) -> dict[int, OcrPage]:
    return recognise_pdf_pages(scans, [0, 1, 2, 3, 4], ParseLimits()).pages


def _text(page: OcrPage) -> str:
    return "\n".join(p.text for p in page.paragraphs)


def test_scanned_pages_have_no_text_layer(scans: Path) -> None:
    with _mupdf.open(str(scans)) as doc:
        assert all(not page.get_text().strip() for page in doc)


def test_chinese_scan_is_recognised_without_spaces_between_characters(
    recognised: dict[int, OcrPage],
) -> None:
    text = _text(recognised[0])
    assert char_recall(source_text(ZH_PDF, ZH_CLIP), text) >= 0.9
    assert "跨平台、免费、开源的" in text
    # a line wrapped inside a paragraph joins without a space between Chinese characters
    assert "强大的排版工具" in text.replace("\n", "") or "排版工具" in text
    assert recognised[0].confidence >= 0.85


def test_english_scan_is_recognised_with_spaces_between_words(
    recognised: dict[int, OcrPage],
) -> None:
    text = _text(recognised[1])
    # what is missed is mostly typographic: curly quotes read as straight ones, dashes
    assert char_recall(source_text(EN_PDF, EN_CLIP), text) >= 0.85
    assert "root shell prompt" in text
    assert "preserves some of the environment" in text


def test_page_scanned_on_its_side_reads_upright(recognised: dict[int, OcrPage]) -> None:
    text = _text(recognised[2])
    assert char_recall(source_text(EN_PDF, SIDEWAYS_CLIP), text) >= 0.85
    assert "root shell prompt" in text


def test_two_columns_are_read_one_after_the_other(recognised: dict[int, OcrPage]) -> None:
    text = " ".join(p.text for p in recognised[3].paragraphs)
    squashed = text.replace(" ", "")  # reading order, whatever spaces the recogniser kept
    assert "Alphacolumnbeginshere" in squashed and "Omegacolumnstarts" in squashed
    assert "gutter" in text
    # the whole left column comes before the right one
    assert squashed.index("wrapsinsideitsbox") < squashed.index("Omegacolumnstarts")
    lefts = [p for p in recognised[3].paragraphs if "Alpha" in p.text]
    assert lefts and all(line[2] < 250 for line in lefts[0].lines)  # its lines stay left


def test_blank_page_gives_no_text(recognised: dict[int, OcrPage]) -> None:
    assert recognised[4].paragraphs == () and recognised[4].chars == 0


def test_line_boxes_are_where_the_text_is_printed(recognised: dict[int, OcrPage]) -> None:
    """In PDF points of the scanned page: each recognised line lies on a printed line."""
    with _mupdf.open(str(EN_PDF)) as source:
        page, rect = clip_of(source, EN_CLIP)
        printed = [
            _mupdf.Rect(line["bbox"]) - (rect.x0, rect.y0, rect.x0, rect.y0)
            for block in page.get_text("dict", clip=rect)["blocks"]
            for line in block.get("lines", ())
        ]
    lines = [line for p in recognised[1].paragraphs for line in p.lines]
    assert len(lines) >= 6
    for x0, y0, x1, y1, _ in lines:
        box = _mupdf.Rect(x0, y0, x1, y1)
        assert any(abs(box.y0 - r.y0) < 6 and (box & r).get_area() > 0 for r in printed), box


def test_line_boxes_follow_a_rotated_page(tmp_path: Path) -> None:
    """A page stored on its side with /Rotate 90 shows upright; its boxes come back in the
    page's own (unrotated) coordinates, like pymupdf's text extraction: there the lines run
    down the page."""
    out = _mupdf.open()
    add_scan(out, EN_PDF, (30, 0, 60, 40), turn=270)  # two lines, stored turned
    out[0].set_rotation(90)
    path = save(out, tmp_path / "rotated.pdf")
    with _mupdf.open(str(path)) as doc:
        found = recognise_page(doc[0])
        unrotated = doc[0].cropbox
    assert "root shell prompt" in _text(found)
    for x0, y0, x1, y1, _ in (line for p in found.paragraphs for line in p.lines):
        assert 0 <= x0 < x1 <= unrotated.width + 1 and 0 <= y0 < y1 <= unrotated.height + 1
        assert y1 - y0 > x1 - x0  # on the unrotated page the line runs top to bottom


def test_page_limit_and_off_switch(scans: Path) -> None:
    limited = recognise_pdf_pages(scans, [4, 1], ParseLimits(ocr_max_pages=1))
    assert set(limited.pages) == {1} and limited.skipped == (4,)
    (warning,) = limited.warnings(1)
    assert warning.code == "ocr_page_limit" and warning.pages == (5,)
    assert recognise_pdf_pages(scans, [1], ParseLimits(ocr=False)).pages == {}


def test_the_page_limit_counts_over_every_range_of_a_document(
    recognised: dict[int, OcrPage],
) -> None:
    first = OcrOutcome({0: recognised[0], 1: recognised[1]})
    second = OcrOutcome({3: recognised[3]}, skipped=(4,))
    whole = merged([second, first], limit=2)
    assert sorted(whole.pages) == [0, 1] and whole.skipped == (3, 4)
    pages, confidence = whole.summary()
    assert [p for p, _ in pages] == [1, 2] and confidence is not None and confidence > 0.85


def test_engine_and_models_are_named_for_the_manifest() -> None:
    version = ocr_engine_version()
    assert version.startswith("rapidocr-onnxruntime ")
    assert "PP-OCRv4_det" in version and "PP-OCRv4_rec" in version
