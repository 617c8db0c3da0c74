"""`citewise documents show DOC`: one document of the active snapshot and its import report
(pages, pages with text, OCR, characters, language, parse time, warnings), as text or JSON."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from rich.markup import escape

from actors import AppError
from cli.output import EXIT_OK, emit_json, out

if TYPE_CHECKING:
    from actors import App, DocumentView, ImportReport


def show_document(app: App, args: argparse.Namespace) -> int:
    if args.doc is None:
        raise AppError("say which document: `citewise documents show DOC_ID|SOURCE`")
    docs = app.documents(args.collection)
    found = next((d for d in docs if args.doc in (d.doc_id, d.source)), None)
    if found is None:
        raise AppError(
            f"{args.doc!r} is neither a doc_id nor a document source in the active snapshot; "
            "see `citewise documents list`"
        )
    if args.json:
        emit_json(found)
        return EXIT_OK
    out.print(escape(f"{found.doc_id}  {found.source}  “{found.title}” ({found.format})"))
    for line in report_lines(found):
        out.print(escape(line))
    return EXIT_OK


def report_lines(doc: DocumentView) -> list[str]:
    """The report in lines a person reads."""
    r = doc.report
    if r is None:
        return ["no import report: imported by an earlier version (import it again for one)"]
    lines = [_reading(r)]
    if r.pages_ocr:
        lines.append(_ocr(r))
    if not r.warnings:
        lines.append("no warnings")
    for w in r.warnings:
        pages = f" [pages {', '.join(map(str, w.pages))}]" if w.pages else ""
        lines.append(f"warning {w.code}{pages}: {w.message}")
    return lines


def _reading(r: ImportReport) -> str:
    parts = []
    if r.pages is not None:
        parts.append(f"{_pages(r.pages)}, {r.pages_with_text or 0:,} with text")
    parts.append(f"{r.chars:,} characters ({r.cjk_share:.0%} CJK)")
    parts.append(f"language {r.lang}")
    if r.parse_seconds is not None:
        parts.append(f"read in {r.parse_seconds:.2f} s")
    return " · ".join(parts)


def _ocr(r: ImportReport) -> str:
    confidence = "" if r.ocr_confidence is None else f", confidence {r.ocr_confidence:.0%}"
    low = (
        f", low confidence on pages {', '.join(map(str, r.low_confidence_pages))}"
        if r.low_confidence_pages
        else ""
    )
    return f"{_pages(r.pages_ocr)} recognised by OCR{confidence}{low} ({r.ocr_engine})"


def _pages(n: int) -> str:
    return f"{n:,} {'page' if n == 1 else 'pages'}"
