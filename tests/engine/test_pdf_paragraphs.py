"""PDF lines to paragraphs on pages set open (double-spaced drafts, theses, manuscripts): a
wrapped line of prose goes on across the line's gap, as on a page set solid; a new paragraph
(an indented line, or one after a short line that ends a sentence), a contents list and table
rows on the same page stay apart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pymupdf
import pytest

from engine.parsing import ParseLimits, parse_file

_mupdf: Any = pymupdf

LEFT, RIGHT, SIZE = 72.0, 523.0, 11.0
FIRST = (
    "Reading a long draft on screen is tiring, so many students print their theses with double "
    "spacing and wide margins, which leaves room for notes written by hand between the lines of "
    "every paragraph, and for the questions a reader asks of the text as it goes on. Printed "
    "that way, a chapter of twenty pages takes forty, but it reads better with a pencil in hand "
    "and leaves the writer a page of comments to work through."
)
SECOND = (
    "The second paragraph starts with an indented first line, as most manuscripts do, and it "
    "runs over several lines so that a reader can see where one paragraph ends and the next "
    "one begins."
)
CONTENTS = ["Contents", "Introduction 1", "Methods and materials 12", "results in brief 27"]


def _wrap(text: str, indent: float, font: str = "tiro") -> list[tuple[float, str]]:
    """`text` set greedily between the margins, as a word processor sets it: (x, line)."""
    lines: list[tuple[float, str]] = []
    x, words = LEFT + indent, text.split()
    line: list[str] = []
    for word in words:
        trial = " ".join([*line, word])
        if line and x + _mupdf.get_text_length(trial, fontname=font, fontsize=SIZE) > RIGHT:
            lines.append((x, " ".join(line)))
            x, line = LEFT, [word]
        else:
            line.append(word)
    lines.append((x, " ".join(line)))
    return lines


def _page(path: Path, pitch: float, with_contents: bool = False, font: str = "tiro") -> Path:
    """Two paragraphs of prose with `pitch` points from one baseline to the next (14 is solid
    for 11 pt type; 30 is double spacing), and maybe a contents list set the same way; `font`
    "cour" sets it in Courier, as on a typewriter."""
    pdf = _mupdf.open()
    page = pdf.new_page()
    y = 90.0
    rows = [*_wrap(FIRST, 0, font), *_wrap(SECOND, 24, font)]
    if with_contents:
        rows += [(LEFT, line) for line in CONTENTS]
    for x, line in rows:
        page.insert_text((x, y), line, fontname=font, fontsize=SIZE)
        y += pitch
    pdf.save(path)
    return path


def _paragraphs(path: Path) -> list[str]:
    doc = parse_file(path, ParseLimits(ocr=False))
    return [p.text for s in doc.sections for p in s.paragraphs]


@pytest.mark.parametrize("pitch", [14.0, 30.0])
def test_prose_set_solid_or_double_spaced_gives_the_same_paragraphs(
    tmp_path: Path, pitch: float
) -> None:
    paragraphs = _paragraphs(_page(tmp_path / "draft.pdf", pitch))
    assert paragraphs == [FIRST, SECOND]


@pytest.mark.parametrize("pitch", [14.0, 30.0])
def test_a_typewritten_document_is_prose_not_code(tmp_path: Path, pitch: float) -> None:
    """Set in Courier throughout (a court transcript, a screenplay), the monospaced lines are
    the document's prose: joined into the same paragraphs as in a proportional face."""
    paragraphs = _paragraphs(_page(tmp_path / "typed.pdf", pitch, font="cour"))
    assert paragraphs == [FIRST, SECOND]


def test_a_program_listing_in_courier_keeps_its_lines(tmp_path: Path) -> None:
    listing = [
        "def mean(values):",
        "    if not values:",
        '        raise ValueError("no values")',
        "    total = sum(values)",
        "    return total / len(values)",
        "print(mean([1, 2, 3]))  # 2.0",
    ]
    pdf = _mupdf.open()
    page = pdf.new_page()
    for k, line in enumerate(listing):
        page.insert_text((LEFT, 90.0 + 14.0 * k), line, fontname="cour", fontsize=SIZE)
    pdf.save(tmp_path / "listing.pdf")
    # its lines as lines (their indentation is not kept: rows are read stripped)
    assert _paragraphs(tmp_path / "listing.pdf") == ["\n".join(x.strip() for x in listing)]


def test_contents_lines_on_a_double_spaced_page_stay_apart(tmp_path: Path) -> None:
    """Lines that end in a page number, or start a new entry in capitals, are not prose that
    wrapped, however the page is spaced (the last entry starts in lower case on purpose: the
    line above it ends in a number)."""
    paragraphs = _paragraphs(_page(tmp_path / "thesis.pdf", 30.0, with_contents=True))
    assert paragraphs[:2] == [FIRST, SECOND]
    assert paragraphs[2:] == CONTENTS


def test_a_page_of_short_lines_is_not_taken_for_open_prose(tmp_path: Path) -> None:
    """No line there wrapped (the next line's first word would have fitted after each), so
    the page's leading is never measured and the gap rule stands."""
    pdf = _mupdf.open()
    page = pdf.new_page()
    names = ["apples and pears", "oranges", "plums and cherries", "grapes", "lemons and limes"]
    for k, name in enumerate(names):
        page.insert_text((LEFT, 90.0 + 30 * k), name, fontname="tiro", fontsize=SIZE)
    path = tmp_path / "list.pdf"
    pdf.save(path)
    assert _paragraphs(path) == names
