"""The import report from real parses: pictures in books and Word documents said, a PDF's
unreadable pages listed, characters, the CJK share and the language. (A scan's recognised
pages and the OCR page limit: tests/actors/test_import_report.py, end to end.)"""

from __future__ import annotations

from pathlib import Path

from engine.import_report import import_report
from engine.parsing import ParseLimits, parse_file
from engine.parsing.model import Paragraph, ParsedDocument, ParsedSection

REALWORLD = Path(__file__).resolve().parents[1] / "realworld"
NO_OCR = ParseLimits(ocr=False)
BOOK = "idpf-haruko-html-jpeg.epub"  # 12 pictures


def test_an_epub_with_pictures_says_how_many_were_not_read() -> None:
    report = import_report(parse_file(REALWORLD / "epub" / BOOK))
    (warning,) = report.warnings
    assert warning.code == "images_not_read" and warning.count == 12
    assert "12 images" in warning.message
    assert report.pages is None and report.pages_with_text is None  # a book has no pages
    assert report.chars > 500 and report.pages_ocr == 0 and report.ocr_engine == ""
    assert report.parse_seconds is None  # the parse worker measures it, not the parser
    assert import_report(parse_file(REALWORLD / "epub" / BOOK), 0.25).parse_seconds == 0.25


def test_an_epub_without_pictures_has_no_warning() -> None:
    report = import_report(parse_file(REALWORLD / "epub" / "idpf-wasteland-otf-obf.epub"))
    assert report.warnings == () and report.chars > 1000


def test_a_docx_picture_in_a_comment_is_counted_once() -> None:
    parsed = parse_file(REALWORLD / "docx" / "python-docx-comments-rich-para.docx")
    (warning,) = import_report(parsed).warnings
    assert (warning.code, warning.count) == ("images_not_read", 1)
    assert "1 image;" in warning.message


def test_a_pdf_with_unreadable_pages_lists_them_and_counts_the_pages_with_text() -> None:
    report = import_report(parse_file(REALWORLD / "pdf" / "pdfjs-standard_fonts.pdf", NO_OCR))
    (warning,) = report.warnings
    assert warning.code == "unreadable_pages" and warning.pages == (13, 14)
    assert (report.pages, report.pages_with_text, report.pages_ocr) == (14, 12, 0)
    assert report.lang == "en" and report.cjk_share < 0.05 and report.ocr_confidence is None


def test_chinese_text_has_its_share_and_language(tmp_path: Path) -> None:
    path = tmp_path / "笔记.md"
    path.write_text("# 第一章\n\n这是一段中文说明,讲的是 Python 的安装。\n", encoding="utf-8")
    report = import_report(parse_file(path))
    assert report.lang == "zh" and report.cjk_share > 0.6
    assert report.chars == len("这是一段中文说明,讲的是 Python 的安装。") + len("第一章")


def test_counts_cover_every_paragraph_with_text_and_no_blank_one() -> None:
    """Characters, the CJK share (of the characters that are not whitespace) and the pages
    with text, counted exactly over paragraphs of every kind: blank ones count nothing."""
    paragraphs = (
        Paragraph("Install with apt.", page=1),
        Paragraph(" \n\t", page=2),  # blank: neither its characters nor its page count
        Paragraph("", page=3),
        Paragraph("用 apt 安装。\u3000全角", page=4),
        Paragraph("no page", page=None),
    )
    doc = ParsedDocument(
        title="t",
        lang="en",
        format="pdf",
        pages=5,
        sections=(ParsedSection(title="Intro", depth=1, page=5, paragraphs=paragraphs),),
    )
    report = import_report(doc)
    texts = ["Install with apt.", "用 apt 安装。\u3000全角", "no page"]
    assert report.chars == sum(map(len, texts))
    visible = sum(len("".join(t.split())) for t in texts)  # the ideographic space is blank
    cjk = len("用安装。全角")  # 。 is CJK punctuation; the ideographic space is whitespace
    assert report.cjk_share == round(cjk / visible, 3)
    assert report.pages_with_text == 3  # pages 1, 4 and the heading's page 5
