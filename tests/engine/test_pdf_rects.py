"""Where PDF blocks are printed: the rectangles kept at import hold exactly the block's text on
its pages, a paragraph cut into several blocks gives each block its own lines, and the printed
page labels are kept."""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path
from typing import Any

import pymupdf
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.chunker import _PrintedLines, chunk_document
from engine.parsing import parse_file
from engine.parsing.limits import ParseLimits
from engine.parsing.model import LineBox
from engine.parsing.pdf import PAGES_PER_PART, assemble_pdf, parse_pdf_pages, plan_pdf
from engine.tokens import TokenCounter
from index.records import DocumentRecord
from tests.corpus import DOCS

mupdf: Any = pymupdf
DEBIAN = DOCS / "debian-reference.en.pdf"
COUNTER = TokenCounter()


def chunk(path: Path, parsed: Any = None, target: int = 400) -> DocumentRecord:
    return chunk_document(
        parsed or parse_file(path),
        content_hash=hashlib.sha256(path.read_bytes()).hexdigest(),
        source=path.name,
        source_label=path.name,
        parser_version="pdf-test",
        target_tokens=target,
        counter=COUNTER,
    )


@cache
def debian() -> DocumentRecord:
    return chunk(DEBIAN)


def _alnum(text: str) -> str:
    return "".join(ch for ch in text.casefold() if ch.isalnum())


def _words_in(words: list[tuple[Any, ...]], rect: tuple[float, float, float, float]) -> str:
    """The page's words whose centre lies inside `rect`, in reading order (a cheap stand-in
    for page.get_textbox, which scans the whole text page on every call: 50 ms a rect)."""
    x0, y0, x1, y1 = rect
    return " ".join(
        w[4] for w in words if x0 <= (w[0] + w[2]) / 2 <= x1 and y0 <= (w[1] + w[3]) / 2 <= y1
    )


def test_the_rects_of_a_block_hold_its_text_on_its_pages() -> None:
    record = debian()
    pdf = mupdf.open(DEBIAN)
    words: dict[int, list[tuple[Any, ...]]] = {}  # page number -> its words with their boxes
    sample = record.blocks[::20]  # 33 blocks spread over the book
    assert all(b.rects for b in record.blocks)
    for block in sample:
        assert block.page_start is not None and block.page_end is not None
        assert {r[0] for r in block.rects} <= set(range(block.page_start, block.page_end + 1))
        found = ""
        for page_no, x0, y0, x1, y1 in block.rects:
            if page_no not in words:
                words[page_no] = pdf[page_no - 1].get_text("words")
            found += _words_in(words[page_no], (x0, y0, x1, y1))
        have = _alnum(found)
        missing = [w for w in block.text.split() if _alnum(w) and _alnum(w) not in have]
        assert missing == [], (block.block_index, missing[:5])
        # and not much else: the rects do not sweep in the rest of the page
        assert len(have) <= 1.25 * len(_alnum(block.text)) + 20, block.block_index


def test_rects_are_compact_lines_to_a_tenth_of_a_point() -> None:
    record = debian()
    rects = [r for b in record.blocks for r in b.rects]
    assert all(round(v, 1) == v for r in rects for v in r[1:])
    assert all(r[1] < r[3] and r[2] < r[4] for r in rects)
    # a line per rect or fewer (lines of one width merge), never a box per word
    assert len(rects) / len(record.blocks) < 20


def test_a_paragraph_cut_into_several_blocks_marks_each_block_on_its_own_lines() -> None:
    # A small target cuts the book's long paragraphs at sentence ends.
    record = chunk(DEBIAN, target=40)
    by_rects: dict[tuple[Any, ...], int] = {}
    for block in record.blocks:
        by_rects[block.rects] = by_rects.get(block.rects, 0) + 1
    # Blocks cut from one paragraph would share every rect if the cut were not followed.
    assert max(by_rects.values()) <= 2
    assert len(by_rects) > 0.9 * len(record.blocks)


def test_page_labels_are_the_printed_ones() -> None:
    record = debian()
    pdf = mupdf.open(DEBIAN)
    assert len(record.page_labels) == pdf.page_count
    for index in (0, 1, 27, 28, 51, pdf.page_count - 1):
        assert record.page_labels[index] == pdf[index].get_label()
    assert record.page_labels[1] == "i" and record.page_labels[51] != "52"


def test_a_pdf_without_labels_keeps_none(tmp_path: Path) -> None:
    pdf = mupdf.open()
    page = pdf.new_page()
    page.insert_textbox(mupdf.Rect(72, 72, 520, 700), "Only a page of text.", fontsize=12)
    pdf.save(str(tmp_path / "plain.pdf"))
    record = chunk(tmp_path / "plain.pdf")
    assert record.page_labels == ()
    [block] = record.blocks
    [(page_no, x0, y0, x1, y1)] = block.rects
    assert page_no == 1 and 70 <= x0 < x1 <= 530 and 60 <= y0 < y1 <= 100


def test_a_pdf_parsed_in_parts_has_the_same_rects_and_labels() -> None:
    limits = ParseLimits()
    plan = plan_pdf(DEBIAN, limits)
    assert plan is not None and len(plan.ranges) >= 2 and plan.page_count > PAGES_PER_PART
    parts = [parse_pdf_pages(DEBIAN, start, end) for start, end in plan.ranges]
    assembled = chunk(DEBIAN, assemble_pdf(DEBIAN, limits, plan, parts))
    whole = debian()
    assert assembled.page_labels == whole.page_labels
    assert [b.rects for b in assembled.blocks] == [b.rects for b in whole.blocks]


@pytest.mark.parametrize("name", ["lshort-zh-cn.pdf"])
def test_chinese_blocks_are_found_in_their_rects(name: str) -> None:
    path = DOCS / name
    record = chunk(path)
    pdf = mupdf.open(path)
    assert record.page_labels[:3] == ("A", "B", "i")
    for block in record.blocks[5::40]:
        found = "".join(
            pdf[p - 1].get_textbox(mupdf.Rect(x0, y0, x1, y1)) for p, x0, y0, x1, y1 in block.rects
        )
        text, have = _alnum(block.text), _alnum(found)
        # every character of the block is printed inside its rects (order may differ)
        assert sum(1 for ch in text if ch not in have) <= 0.02 * len(text), block.block_index


def _span(text: str, font: str = "Times-Roman", size: float = 10.0, flags: int = 0) -> dict:
    return {"text": text, "font": font, "size": size, "flags": flags}


def test_a_line_of_several_spans_takes_the_style_most_of_its_characters_are_set_in() -> None:
    from engine.parsing.pdf import _line_text_style

    # One style throughout (spans that differ in colour or position only).
    one_style = [_span("Hello "), _span("world")]
    assert _line_text_style(one_style) == ("Hello world", 10.0, False, False)
    # The size most characters have; bold only when 80% are; empty spans weigh nothing.
    mixed = [
        _span("Chapter", "Times-Bold", 14.0),
        _span(""),
        _span(" one two three", "Times-Roman", 10.0),
    ]
    assert _line_text_style(mixed) == ("Chapter one two three", 10.0, False, False)
    mostly_bold = [_span("Important words here", "Arial-Bold", 12.0), _span(" ok", size=12.0)]
    assert _line_text_style(mostly_bold) == ("Important words here ok", 12.0, True, False)
    # A tie in size goes to the size seen first; mono when 60% are.
    tie = [_span("abcd", "Courier", 9.0), _span("efgh", size=11.0)]
    assert _line_text_style(tie) == ("abcdefgh", 9.0, False, False)
    code = [_span("print(x)", "Courier", 9.0), _span(" # a", size=9.0)]
    assert _line_text_style(code) == ("print(x) # a", 9.0, False, True)
    assert _line_text_style([_span(""), _span("", size=12.0)]) == ("", 0.0, False, False)


def _lines_by_scanning(
    lines: tuple[LineBox, ...], length: int, begin: int, end: int
) -> tuple[LineBox, ...]:
    """The rule _PrintedLines answers by bisection, applied line by line: the lines sharing
    more than one (scaled) character with [begin, end), else the first sharing the most."""
    total = sum(line[4] for line in lines)
    if not lines or total <= 0:
        return ()
    scale = length / total
    chosen, best, best_overlap, at = [], lines[0], -1.0, 0
    for line in lines:
        lo, hi = at * scale, (at + line[4]) * scale
        at += line[4]
        overlap = min(hi, end) - max(lo, begin)
        if overlap > 1.0:
            chosen.append(line)
        if overlap > best_overlap:
            best, best_overlap = line, overlap
    return tuple(chosen) or (best,)


@settings(max_examples=3000, deadline=None)
@given(
    counts=st.lists(st.sampled_from([0, 1, 2, 3, 7, 40, 80]), max_size=14),
    length=st.integers(0, 500),
    begin=st.integers(-3, 503),
    size=st.integers(-2, 80),
)
def test_the_lines_of_a_sentence_are_found_by_bisection_as_by_scanning(
    counts: list[int], length: int, begin: int, size: int
) -> None:
    lines = tuple((float(i), 10.0 * i, 100.0, 10.0 * i + 9, n) for i, n in enumerate(counts))
    printed = _PrintedLines(lines, length)
    assert printed.of(begin, begin + size) == _lines_by_scanning(lines, length, begin, begin + size)
