"""Opening a PDF with pymupdf, and what is wrong with a file it cannot read: one message per
kind of failure (not a PDF, cut off, cannot be opened, no pages), and a warning for a file it
had to repair but could read (such a file is imported: pymupdf's repair is trusted).

"May not have finished downloading" is said only of a file that really stops early.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pymupdf

from engine.errors import ParseError
from engine.parsing.limits import ParseLimits
from engine.parsing.model import ParseWarning

_mupdf: Any = pymupdf  # pymupdf ships without type hints


class _PagesOnly(pymupdf.Document):
    """A PDF opened only to read its pages' text. pymupdf loads the whole outline on every
    open (13 ms for the 261-page Debian reference); page ranges never use it, and a long PDF
    is opened once per range."""

    def _loadOutline(self) -> None:  # pymupdf's name for it
        return None


class _OutlineOnce(pymupdf.Document):
    """A PDF whose outline is loaded once: pymupdf loads it on open and again for every
    get_toc (13 ms each for the Debian reference, twice per read of a whole document)."""

    def _loadOutline(self) -> Any:  # pymupdf's name for it
        if "_outline_once" not in self.__dict__:
            load: Any = super()._loadOutline  # pymupdf ships without type hints
            self._outline_once = load()
        return self._outline_once


def _has_pdf_header(path: Path) -> bool:
    with path.open("rb") as fh:
        return b"%PDF-" in fh.read(1024)


def _ends_early(path: Path) -> bool:
    """The file stops before a PDF's end: no %%EOF marker in its last 2 KB (a download or
    copy cut off, as opposed to a damaged file of full length)."""
    with path.open("rb") as fh:
        fh.seek(0, 2)
        size = fh.tell()
        fh.seek(max(0, size - 2048))
        return b"%%EOF" not in fh.read()


# One message per way a PDF can fail to be read (all with reason "corrupt").
def _not_a_pdf() -> ParseError:
    return ParseError(
        "corrupt",
        "This file is named like a PDF but its contents are not one (it may be damaged or "
        "unfinished); open it in the program that made it and save it again.",
    )


def cut_off() -> ParseError:
    return ParseError(
        "corrupt",
        "This PDF is cut off: the file stops before its end (it may not have finished "
        "downloading or copying) and no text could be read from what there is; get a "
        "complete copy and import it again.",
    )


def _unopenable() -> ParseError:
    return ParseError(
        "corrupt",
        "This PDF is damaged and cannot be opened; try opening it in a PDF viewer and "
        "saving or printing it to a new PDF, then import that.",
    )


def _no_pages() -> ParseError:
    return ParseError(
        "corrupt",
        "This PDF is damaged: Citewise finds no pages in it; try opening it in a PDF viewer "
        "and saving or printing it to a new PDF, then import that.",
    )


def unreadable_pages() -> ParseError:
    return ParseError(
        "corrupt",
        "This PDF is damaged: none of its pages can be read; try opening it in a PDF viewer "
        "and saving or printing it to a new PDF, then import that.",
    )


def open_pdf(path: Path, *, pages_only: bool = False, data: bytes | None = None) -> Any:
    """The PDF at `path` opened with pymupdf (from `data`, its bytes, when given: no file
    handle then stays open); ParseError for a file it cannot open or may not read."""
    _mupdf.TOOLS.mupdf_display_errors(False)
    _mupdf.TOOLS.mupdf_display_warnings(False)
    try:
        opener: Any = _PagesOnly if pages_only else _OutlineOnce
        if data is None:
            doc = opener(str(path), filetype="pdf")
        else:
            doc = opener(stream=data, filetype="pdf")
    except Exception as exc:
        if not _has_pdf_header(path):
            raise _not_a_pdf() from exc
        raise (cut_off() if _ends_early(path) else _unopenable()) from exc
    if not doc.is_pdf:  # pymupdf reads what the bytes are (HTML, XPS…), whatever it is told
        doc.close()
        raise _not_a_pdf()
    if doc.needs_pass:
        doc.close()
        raise ParseError(
            "encrypted",
            "This PDF is password-protected; save a copy without the password (for example "
            "by printing it to PDF) and import that.",
        )
    return doc


# What pymupdf had to do to read a file: "" (nothing), "repaired" (it rebuilt a damaged
# cross-reference table, as PDF viewers do) or "cut_off" (repaired, and the file stops early).
Damage = str


def damage_of(doc: Any, path: Path) -> Damage:
    if not doc.is_repaired:
        return ""
    return "cut_off" if _ends_early(path) else "repaired"


def checked_page_count(doc: Any, path: Path, limits: ParseLimits) -> int:
    """The page count of a PDF pymupdf opened. A repaired file is trusted: it is read, and
    the document says so in a warning (see damage_warning)."""
    try:
        page_count: int = doc.page_count
    except Exception as exc:  # pymupdf: "Invalid number of pages"
        raise _no_pages() from exc
    if page_count == 0:
        if not _has_pdf_header(path):
            raise _not_a_pdf()
        raise cut_off() if _ends_early(path) else _no_pages()
    if page_count > limits.max_pages:
        raise ParseError(
            "too_large",
            f"This PDF has {page_count:,} pages, more than the {limits.max_pages:,} "
            "Citewise imports from one file; split it into smaller PDFs.",
        )
    return page_count


def damage_warning(damage: Damage) -> ParseWarning | None:
    if damage == "cut_off":
        return ParseWarning(
            code="pdf_cut_off",
            message="This PDF stops before its end (it may not have finished downloading); "
            "the text that could be read was imported, but pages may be missing. Import a "
            "complete copy to have all of it.",
        )
    if damage == "repaired":
        return ParseWarning(
            code="pdf_repaired",
            message="This PDF is damaged; Citewise repaired it while reading it, as PDF "
            "viewers do, and imported its text. If a page seems to be missing, compare it "
            "with the original.",
        )
    return None
