"""PDF import on awkward real-world shapes: garbled text layers, page furniture that is all the
text there is, line numbers down a margin, files pymupdf has to repair, and Chinese set one
character per line."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import msgspec
import pymupdf as _pymupdf
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.parsing import ParsedDocument, ParseError, PdfPart, PdfPlan, assemble_pdf, parse_file
from engine.parsing import pdf as pdf_module
from engine.parsing.furniture import PAGE_NUMBER
from engine.parsing.quality import page_quality

pymupdf: Any = _pymupdf  # pymupdf ships without type hints


def texts(doc: ParsedDocument) -> list[str]:
    return [p.text for s in doc.sections for p in s.paragraphs]


def codes(doc: ParsedDocument) -> list[str]:
    return [w.code for w in doc.warnings]


def make_pdf(path: Path, pages: list[list[tuple[float, float, str]]], font: str = "helv") -> Path:
    """A PDF with each page's (x, y, text) placed as given."""
    doc = pymupdf.open()
    for lines in pages:
        page = doc.new_page()
        for x, y, text in lines:
            page.insert_text((x, y), text, fontname=font, fontsize=12)
    doc.save(path)
    doc.close()
    return path


def body(n: int) -> list[tuple[float, float, str]]:
    return [(72, 100 + 16 * k, f"Body line {k} of page {n} says something new.") for k in range(5)]


# --- the text-quality check ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Hello ASCII \x93œ\x96{\x8cŒ\x83e\x83X\x83g",  # Shift-JIS bytes read as Latin-1
        "\uf76f\uf770\uf765\uf76e\uf76d\uf761\uf767",  # private-use glyph codes
        "\ufffd\ufffd\ufffd \ufffd\ufffd",
        "\uffff\uffff\uffff\uffff",
        "(cid:12)(cid:14)(cid:3)(cid:7) (cid:9)(cid:12) ok",
        '!"#$ !"%&\'!()$* $+#*\'!*,-./0 !*8(9% !*:8;<=>?@ !"#',  # glyph ids as ASCII
    ],
)
def test_garbled_page_text_is_unreadable(text: str) -> None:
    assert not page_quality([text]).readable


@pytest.mark.parametrize(
    "text",
    [
        "An ordinary sentence of English text, with punctuation; and digits 1, 2, 3.",
        "学而时习之，不亦说乎？有朋自远方来，不亦乐乎？",
        "Contents . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . . 1",
        "A = 0.35   B = 0.40   C = 0.45 (x + y)^2 = x^2 + 2xy + y^2",
        "\uf0b7 Bullet one \uf0b7 Bullet two \uf0b7 Bullet three, all set in Symbol",
        "\uf0b7 Yes\n\uf0b7 No\n\uf0b7 Maybe\n\uf0b7 Ok",  # Word's Symbol-font bullets
        "",
    ],
)
def test_ordinary_page_text_is_readable(text: str) -> None:
    assert page_quality([text]).readable


_DEBRIS_CHAR = re.compile(
    "[\x00-\x1f\x7f-\x9f\ud800-\udfff\ue000-\uefff\uf100-\uf8ff\ufdd0-\ufdef\ufffd-\uffff"
    "\U000f0000-\U0010ffff]"
)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.lists(
            st.one_of(
                st.characters(blacklist_categories=("Cs",)),
                st.sampled_from(["a", "Z", "7", " ", ".", "\ufffd", "\x01", "\ue000", "中"]),
                st.just("(cid:12)"),
            ),
            max_size=40,
        ).map("".join),
        max_size=3,
    ),
    st.sampled_from([0, 3]),
)
def test_page_counts_are_those_of_the_plain_definitions(texts: list[str], controls: int) -> None:
    """Counted character by character as the check defines them (its shortcuts for ASCII
    and printable text count the same)."""
    text = re.sub(r"\(cid:\d+\)", "", "".join("".join(texts).split()))
    cids = len("".join("".join(texts).split())) - len(text)
    counted = page_quality(texts, controls)
    assert counted.chars == len(text) + cids + controls
    assert counted.debris == controls + cids + sum(1 for ch in text if _DEBRIS_CHAR.match(ch))
    if counted.collapsed == len(text):
        assert counted.letters == sum(1 for ch in text if ch.isalnum())


def test_control_characters_removed_by_extraction_count_against_the_page() -> None:
    assert page_quality([], controls=40).readable is False
    assert page_quality(["Some real words on the page, plenty of them."], controls=2).readable


def test_words_joined_by_control_characters_are_unreadable_however_few() -> None:
    """A font whose codes are glyph numbers shifts each character down by 29: the spaces come
    out as U+0003, which extraction removes, and the letters stay letters. Few controls, but
    more than the page's spaces: its words were joined by them (pdfminer's issue-791 sample,
    "Peníze prostředky na účtech", reads as below)."""
    shifted = page_quality(["3HQČåQtSURVWĜHGN\\QD~þWHFK"], controls=3)
    assert shifted.debris < 0.2 * shifted.chars  # the share of debris alone would pass it
    assert not shifted.readable
    # real words keep their spaces, however many stray controls a page loses
    assert page_quality(["Three real words", "and two more here"], controls=3).readable
    assert page_quality(["Chapter1Introduction"], controls=2).readable  # too few to tell
    # Chinese and Japanese need no spaces: stray controls there are only debris
    assert page_quality(["学而时习之，不亦说乎？有朋自远方来，不亦乐乎？"], controls=3).readable


# --- page numbers -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "row",
    ["12", "Page 3", "PAGE 3", "page 3 of 10", "3 / 10", "- 7 -", "— 12 —", "p. 4", "第 5 页",
     "第5页 共10页", "iv", "XIV", "xl", "lxxxix", "Page iv"],
)  # fmt: skip
def test_page_number_rows_are_recognised(row: str) -> None:
    assert PAGE_NUMBER.match(row)


@pytest.mark.parametrize(
    "row",
    ["cm", "mix", "di", "mi", "cd", "dc", "Vi", "civil", "12 apples", "Page 3 is here", "2 cm",
     "Chapter 1", "Document 1:Page 1", "x1", "页"],
)  # fmt: skip
def test_words_and_units_are_not_page_numbers(row: str) -> None:
    assert not PAGE_NUMBER.match(row)


# --- furniture never removes a document's only text -------------------------------------------


def test_pages_whose_only_text_is_page_n_keep_it(tmp_path: Path) -> None:
    path = make_pdf(tmp_path / "p.pdf", [[(72, 750, f"Page {n}")] for n in range(1, 7)])
    assert texts(parse_file(path)) == [f"Page {n}" for n in range(1, 7)]


def test_real_text_repeated_on_every_page_is_kept(tmp_path: Path) -> None:
    path = make_pdf(tmp_path / "r.pdf", [[(72, 72, "Hello world")] for _ in range(5)])
    assert texts(parse_file(path)) == ["Hello world"] * 5


def test_repeated_text_is_kept_but_bare_page_numbers_still_go(tmp_path: Path) -> None:
    pages = [[(72, 72, "Hello world"), (300, 780, str(n))] for n in range(1, 6)]
    assert texts(parse_file(make_pdf(tmp_path / "n.pdf", pages))) == ["Hello world"] * 5


def test_a_page_reading_cm_is_text_not_a_roman_page_number(tmp_path: Path) -> None:
    path = make_pdf(tmp_path / "cm.pdf", [[(72, 780, "cm")]])
    assert texts(parse_file(path)) == ["cm"]


def test_running_headers_and_numbers_still_go_when_there_is_body_text(tmp_path: Path) -> None:
    pages = [[(72, 40, "A Running Header"), *body(n), (300, 780, str(n))] for n in range(1, 6)]
    got = texts(parse_file(make_pdf(tmp_path / "h.pdf", pages)))
    assert not any("Running Header" in t for t in got) and not any(t.isdigit() for t in got)
    assert any("page 3 says" in t for t in got)


def test_line_numbers_down_the_margin_go_and_the_lines_stay(tmp_path: Path) -> None:
    """A transcript or a manuscript under review numbers every line in the margin, blank ones
    too, written as a column of its own: the numbers are not text a person would cite."""
    spoken = ["THE COURT: We will hear argument first", "this morning in case 07-1315.", "", ""]
    lines = [*spoken, "MR. MERCER: Thank you, Your Honor.", "", "May it please the Court:"]
    numbers = [(50, 100 + 26 * k, str(k + 1)) for k in range(len(lines))]
    text = [(100, 100 + 26 * k, line) for k, line in enumerate(lines) if line]
    got = texts(parse_file(make_pdf(tmp_path / "transcript.pdf", [numbers + text])))
    assert " ".join(got) == " ".join(line for line in lines if line)


def test_numbers_on_lines_of_their_own_are_kept(tmp_path: Path) -> None:
    """A list whose numbers stand above their items: the numbers say which step is which.
    (The page's first and last rows are text: a bare number there is its page number.)"""
    page = [(72, 80, "Bread, step by step.")]
    for k in range(1, 7):
        page += [(72, 60 + 40 * k, str(k)), (72, 76 + 40 * k, f"Step {k} of the recipe.")]
    page.append((72, 400, "Serve warm."))
    got = texts(parse_file(make_pdf(tmp_path / "steps.pdf", [page])))
    steps = " ".join(f"{k} Step {k} of the recipe." for k in range(1, 7))
    assert " ".join(got) == f"Bread, step by step. {steps} Serve warm."


# --- garbled documents -------------------------------------------------------------------------


def _assemble_rows(tmp_path: Path, pages: list[list[str]], controls: list[int]) -> ParsedDocument:
    """A document from rows given directly (as a worker extracts them), one row per string;
    the same whether the part carries its pages' quality checks (as extraction makes them,
    so assembly does not check again) or not."""
    path = make_pdf(tmp_path / "rows.pdf", [[(72, 72, "x")] for _ in pages])
    st = path.stat()
    stamp = (st.st_size, st.st_mtime_ns)
    rows = [
        [(72.0, 100.0 + 16 * k, 400.0, 112.0 + 16 * k, t, 12.0, False, False)
         for k, t in enumerate(page)]
        for page in pages
    ]  # fmt: skip
    plan = PdfPlan(stamp=stamp, page_count=len(pages), ranges=[(0, len(pages))], outline=[],
                   meta_title="")  # fmt: skip
    part = PdfPart(stamp=stamp, start=0, pages=rows, controls=controls)
    checked = msgspec.structs.replace(
        part, qualities=[page_quality(page, n) for page, n in zip(pages, controls, strict=True)]
    )
    outcomes: list[ParsedDocument | tuple[str, str]] = []
    for handed in (part, checked):
        try:
            outcomes.append(assemble_pdf(path, parse_limits(), plan, [handed]))
        except ParseError as exc:
            outcomes.append((exc.reason, exc.message))
    assert outcomes[0] == outcomes[1]
    return assemble_pdf(path, parse_limits(), plan, [checked])


def parse_limits() -> Any:
    from engine.parsing import ParseLimits

    return ParseLimits()


GOOD = ["A sentence a person can read, page after page.", "And another one follows it here."]
GARBLED = ["\uf76f\uf770\uf765\uf76e\uf76d\uf761\uf767\uf761\uf77a\uf769\uf76e" * 3] * 2


def test_a_few_garbled_pages_are_left_out_and_reported_by_number(tmp_path: Path) -> None:
    doc = _assemble_rows(tmp_path, [GOOD, GARBLED, GOOD, GOOD, [], GOOD], [0] * 6)
    assert all("\uf76f" not in t for t in texts(doc))
    (warning,) = doc.warnings
    assert warning.code == "unreadable_pages" and warning.pages == (2,)
    assert "page 2" in warning.message


def test_a_page_of_control_characters_counts_as_garbled(tmp_path: Path) -> None:
    doc = _assemble_rows(tmp_path, [GOOD, [], GOOD], [0, 30, 0])
    assert doc.warnings[0].pages == (2,)


def test_a_mostly_garbled_pdf_fails_unreadable_text_not_no_text_layer(tmp_path: Path) -> None:
    with pytest.raises(ParseError) as info:
        _assemble_rows(tmp_path, [GARBLED, GARBLED, GOOD[:1]], [0, 0, 0])
    assert info.value.reason == "unreadable_text"
    assert "cannot be read" in info.value.message and "pages 1, 2" in info.value.message
    with pytest.raises(ParseError) as info:
        _assemble_rows(tmp_path, [[], []], [120, 80])  # text layers of control characters only
    assert info.value.reason == "unreadable_text"


# --- damaged files -----------------------------------------------------------------------------


def three_pages(tmp_path: Path) -> bytes:
    path = make_pdf(tmp_path / "ok.pdf", [body(n) for n in range(1, 4)])
    return path.read_bytes()


def test_a_pdf_pymupdf_repairs_is_imported_with_a_warning(tmp_path: Path) -> None:
    data = three_pages(tmp_path)
    at = data.rindex(b"startxref")
    path = tmp_path / "bad-xref.pdf"
    path.write_bytes(data[:at] + b"startxref\n17\n%%EOF\n")  # the xref is not where it says
    doc = parse_file(path)
    assert codes(doc) == ["pdf_repaired"] and any("page 3 says" in t for t in texts(doc))
    assert "downloading" not in doc.warnings[0].message


def test_a_pdf_cut_off_after_its_pages_is_imported_with_a_cut_off_warning(
    tmp_path: Path,
) -> None:
    data = three_pages(tmp_path)
    path = tmp_path / "cut.pdf"
    path.write_bytes(data[: data.rindex(b"xref")])  # no xref table, trailer or %%EOF
    doc = parse_file(path)
    assert codes(doc) == ["pdf_cut_off"] and "downloading" in doc.warnings[0].message
    assert any("page 3 says" in t for t in texts(doc))


def test_a_pdf_without_its_header_that_pymupdf_reads_is_imported(tmp_path: Path) -> None:
    data = three_pages(tmp_path)
    path = tmp_path / "headless.pdf"
    path.write_bytes(b"%" + data[data.index(b"\n") :])
    assert any("page 2 says" in t for t in texts(parse_file(path)))


def test_a_web_page_saved_with_a_pdf_name_is_still_refused(tmp_path: Path) -> None:
    path = tmp_path / "download.pdf"
    path.write_text("<html><body><h1>404 Not Found</h1><p>Gone.</p></body></html>\n")
    with pytest.raises(ParseError) as info:
        parse_file(path)
    assert info.value.reason == "corrupt" and "contents are not one" in info.value.message


def test_only_a_file_that_stops_early_may_not_have_finished_downloading(tmp_path: Path) -> None:
    data = three_pages(tmp_path)
    cut = tmp_path / "cut.pdf"
    cut.write_bytes(data[:300])
    with pytest.raises(ParseError) as info:
        parse_file(cut)
    assert info.value.reason == "corrupt" and "finished downloading" in info.value.message
    empty = tmp_path / "no-pages.pdf"  # complete file, but its page tree is gone
    empty.write_bytes(data.replace(b"/Type /Pages", b"/Type /Nothing").replace(b"/Kids", b"/Kins"))
    with pytest.raises(ParseError) as info:
        parse_file(empty)
    assert info.value.reason == "corrupt" and "downloading" not in info.value.message


# --- CJK layout ---------------------------------------------------------------------------------

PHRASE = "学而时习之不亦说乎"


def one_character_per_line(path: Path, lines: int = 3) -> Path:
    """Chinese set as one text line per character, each box wider than its advance (a
    trailing space), so neighbouring boxes overlap by half: how some PDF producers write it."""
    chars = [
        (72 + 12 * k, 100 + 20 * n, ch + " ") for n in range(lines) for k, ch in enumerate(PHRASE)
    ]
    return make_pdf(path, [chars], font="china-s")


def test_chinese_set_one_character_per_line_joins_into_one_paragraph(tmp_path: Path) -> None:
    doc = parse_file(one_character_per_line(tmp_path / "zh.pdf"))
    assert texts(doc) == [PHRASE * 3] and doc.lang == "zh"


def test_letter_spaced_han_characters_are_closed_up_but_words_keep_their_spaces(
    tmp_path: Path,
) -> None:
    lines = [(72, 100, "全 世 界 无 产 者"), (72, 140, "山西省闻喜县诚镇初中 李新录")]
    got = texts(parse_file(make_pdf(tmp_path / "sp.pdf", [lines], font="china-s")))
    assert got == ["全世界无产者", "山西省闻喜县诚镇初中 李新录"]


# The rule as the parser's comment states it: Han characters, each alone between spaces.
_HAN = "[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]"
_PLAIN_SPACED_HAN = re.compile(rf"(?<!\w){_HAN}(?: {_HAN})+(?!\w)")


@settings(max_examples=1000, deadline=None)
@given(st.text(alphabet="中文\u3400 a1_，é\t", max_size=14))
def test_letter_spaced_han_is_found_where_the_plain_rule_finds_it(line: str) -> None:
    assert pdf_module._SPACED_HAN.sub(pdf_module._close_up, line) == _PLAIN_SPACED_HAN.sub(
        pdf_module._close_up, line
    )


def test_text_printed_twice_for_bold_is_not_merged_into_one_row(tmp_path: Path) -> None:
    lines = [(72, 100, "Bold title"), (72.4, 100, "Bold title")]
    got = texts(parse_file(make_pdf(tmp_path / "fake-bold.pdf", [lines])))
    assert all(t.count("Bold") == 1 for t in got)


@pytest.mark.parametrize(
    ("field", "title"),
    [
        ("Lecture notes on entropy", "Lecture notes on entropy"),
        ("Microsoft Word - thesis.docx", "titled"),  # then the file's own name
        ("10811.exe", "titled"),  # the Supreme Court transcript's (tests/realworld)
        ("chapter 3.txt", "titled"),
        ("Node.js", "Node.js"),  # a name with a dot is still a title
    ],
)
def test_a_file_name_in_the_title_field_is_not_the_title(
    tmp_path: Path, field: str, title: str
) -> None:
    path = make_pdf(tmp_path / "titled.pdf", [[(72, 100, "first line"), *body(1)[1:]]])
    doc = pymupdf.open(path)
    doc.set_metadata({"title": field})
    doc.saveIncr()
    doc.close()
    assert parse_file(path).title == title
