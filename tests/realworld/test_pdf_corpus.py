"""The PDF regression corpus (tests/realworld/pdf, sources in its README.md): each file lands or
fails as expected, with the expected warnings, and the phrase it is kept for is found by an
exact scan_term after a real import."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from actors.ingest import ImportResult
from engine.parsing import ParseError, ParseLimits, parse_file
from tests.corpus import make_app, run_import

HERE = Path(__file__).resolve().parent / "pdf"


class Lands:
    def __init__(self, phrase: str, *warnings: str) -> None:
        self.phrase, self.warnings = phrase, list(warnings)


class Fails:
    def __init__(self, reason: str, says: str = "", never_says: str = "") -> None:
        self.reason, self.says, self.never_says = reason, says, never_says


EXPECTED: dict[str, Lands | Fails] = {
    # fonts without a Unicode mapping: mojibake, U+FFFF, control characters
    "pdfjs-90ms_rksj_h_sample.pdf": Fails("unreadable_text", "cannot be read"),
    "pdfjs-arial_unicode_ab_cidfont.pdf": Fails("unreadable_text", "cannot be read"),
    "pdfjs-issue11549_reduced.pdf": Fails("unreadable_text", "cannot be read"),
    "pdfminer-issue-791-non-unicode-cmap.pdf": Fails("unreadable_text", "cannot be read"),
    "pdfjs-standard_fonts.pdf": Lands("FONT: courier", "unreadable_pages"),
    # damaged files: pymupdf's repair is trusted; "downloading" only for a file cut short
    "pdfjs-bug1250079.pdf": Lands("Bug 1250079", "pdf_cut_off"),
    "pdfjs-issue6069.pdf": Lands("Missing value for startxref", "pdf_cut_off"),
    "pdfjs-bug1606566.pdf": Lands("Bug 1606566", "pdf_repaired"),
    "pdfjs-Pages-tree-refs.pdf": Lands("Pages loop", "pdf_pages_damaged"),
    "pdfjs-bug1020226.pdf": Fails("corrupt", "finished downloading"),
    "pdfjs-issue21436.pdf": Fails("corrupt", "no pages", never_says="downloading"),
    "pypdf-libreoffice-writer-password.pdf": Fails("encrypted", "password"),
    # Chinese and Japanese layouts
    "pdfjs-XiaoBiaoSong.pdf": Lands("关于红军作战的原则"),
    "pdfjs-SimFang-variant.pdf": Lands("全世界无产者，联合起来"),
    "pdfjs-vertical.pdf": Lands("あいうえお"),
    "pymupdf-chinese-tables.pdf": Lands("发行人历史信用评级情况"),
    # text that looks like running headers or page numbers but is all there is
    "pdfjs-hello_world_rotated.pdf": Lands("Hello world"),
    "pdfjs-issue11768_reduced.pdf": Lands("cm"),
    "pdfjs-issue8088.pdf": Lands("Issue 8088 - Page 2"),
    "pymupdf-test_4712_a.pdf": Lands("Page 3"),
    # line numbers down the margin (their absence is checked below)
    "pdfplumber-scotus-transcript-p1.pdf": Lands("IN THE SUPREME COURT OF THE UNITED STATES"),
    # prose set double-spaced: the phrase runs across a line break
    "pdfjs-file_pdfjs_test.pdf": Lands("an existing feature doesn't have enough tests"),
    # an ordinary document, as a baseline
    "pypdf-pdflatex-4-pages.pdf": Lands("text without a meaning"),
}


def test_the_table_names_every_file_of_the_corpus_and_it_stays_small() -> None:
    files = sorted(HERE.glob("*.pdf"))
    assert sorted(p.name for p in files) == sorted(EXPECTED)
    assert sum(p.stat().st_size for p in files) < 2 * 1024 * 1024
    readme = (HERE / "README.md").read_text(encoding="utf-8")
    assert all(name in readme for name in EXPECTED)


# What the text layer alone gives: with OCR on, a garbled page is recognised instead (and these
# files then land with OCR text); that path is tests/engine/test_pdf_ocr.py's.
NO_OCR = ParseLimits(ocr=False)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_file_parses_to_its_expected_outcome(name: str) -> None:
    expected = EXPECTED[name]
    if isinstance(expected, Fails):
        with pytest.raises(ParseError) as info:
            parse_file(HERE / name, NO_OCR)
        assert info.value.reason == expected.reason
        assert expected.says in info.value.message
        assert not expected.never_says or expected.never_says not in info.value.message
    else:
        doc = parse_file(HERE / name, NO_OCR)
        assert [w.code for w in doc.warnings] == expected.warnings
        for w in doc.warnings:
            assert w.message.endswith(".") and len(w.message) > 40  # a sentence, not a code


def test_line_numbers_down_a_margin_are_not_stored() -> None:
    doc = parse_file(HERE / "pdfplumber-scotus-transcript-p1.pdf", NO_OCR)
    paragraphs = [p.text for s in doc.sections for p in s.paragraphs]
    assert "Washington, D.C." in paragraphs
    # The 25 margin numbers are gone. The page's own number stays: printed above the
    # reporter's name in the footer of a one-page file, nothing marks it as a page number.
    assert [p for p in paragraphs if p.strip().isdigit()] == ["1"]


def test_unreadable_text_advises_recognition_only_where_it_has_not_run() -> None:
    # issue11549's one page is garbled; text recognition reads nothing on it either
    name = HERE / "pdfjs-issue11549_reduced.pdf"
    with pytest.raises(ParseError) as without:
        parse_file(name, NO_OCR)
    assert "run it through text recognition (OCR)" in without.value.message
    with pytest.raises(ParseError) as recognised:
        parse_file(name, ParseLimits(ocr=True))
    assert recognised.value.reason == "unreadable_text"
    message = recognised.value.message
    assert "found no text there either" in message and "run it through" not in message


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ImportResult]:
    home = tmp_path_factory.mktemp("pdf-corpus")
    result = run_import(make_app(home, ingest={"ocr": False}), sorted(HERE.glob("*.pdf")))
    return home, result


def test_an_import_lands_and_fails_exactly_the_expected_files(
    imported: tuple[Path, ImportResult],
) -> None:
    _, result = imported
    failed = {Path(f.source).name: f.reason for f in result.failed_documents}
    want = {n: e.reason for n, e in EXPECTED.items() if isinstance(e, Fails)}
    assert failed == want
    assert result.library_documents == len(EXPECTED) - len(want)


def _scan(home: Path, term: str) -> dict[str, object]:
    async def go() -> dict[str, object]:
        app = make_app(home)
        try:
            outcome = await app.run_tool("scan_term", {"term": term})
        finally:
            await app.aclose()
        result: dict[str, object] = json.loads(outcome.json)
        return result

    return anyio.run(go, backend="trio")


@pytest.mark.parametrize("name", sorted(n for n, e in EXPECTED.items() if isinstance(e, Lands)))
def test_the_phrase_of_each_landed_file_is_found_by_an_exact_scan(
    imported: tuple[Path, ImportResult], name: str
) -> None:
    expected = EXPECTED[name]
    assert isinstance(expected, Lands)
    result = _scan(imported[0], expected.phrase)
    hits = result.get("hits")
    assert isinstance(hits, list) and hits, result
    assert any(str(h["source_label"]).endswith(name) for h in hits), hits
