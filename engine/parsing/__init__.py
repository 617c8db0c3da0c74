"""Document parsers: a file in, a ParsedDocument (flat sections in reading order) out.

The public surface is parse_file and its contracts, plus may_read_in_ranges,
plan_parallel_parse, parse_pdf_pages, release_kept_pdf and assemble_pdf (one long PDF parsed in
several worker processes); everything else in this package is an implementation detail.
Parsers only read; they never write files.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from index.lazy import lazy_attributes

if TYPE_CHECKING:  # the same names, for type checkers; at run time each loads on first use
    from engine.errors import ParseError
    from engine.parsing.dispatch import may_read_in_ranges, parse_file, plan_parallel_parse
    from engine.parsing.formats import PARSER_VERSIONS, SUPPORTED_SUFFIXES
    from engine.parsing.limits import ParseLimits
    from engine.parsing.model import (
        PATH_SEPARATOR,
        Paragraph,
        ParsedDocument,
        ParsedSection,
        ParseWarning,
        unique_paths,
    )
    from engine.parsing.ocr import engine_version as ocr_engine_version
    from engine.parsing.pdf import (
        PdfPart,
        PdfPlan,
        assemble_pdf,
        parse_pdf_pages,
        release_kept_pdf,
    )

# public name -> (module, name there): importing the package loads none of them (PEP 562)
_EXPORTS: dict[str, tuple[str, str]] = {
    "ParseError": ("engine.errors", "ParseError"),
    "PARSER_VERSIONS": ("engine.parsing.formats", "PARSER_VERSIONS"),
    "SUPPORTED_SUFFIXES": ("engine.parsing.formats", "SUPPORTED_SUFFIXES"),
    "parse_file": ("engine.parsing.dispatch", "parse_file"),
    "may_read_in_ranges": ("engine.parsing.dispatch", "may_read_in_ranges"),
    "plan_parallel_parse": ("engine.parsing.dispatch", "plan_parallel_parse"),
    "ParseLimits": ("engine.parsing.limits", "ParseLimits"),
    "PATH_SEPARATOR": ("engine.parsing.model", "PATH_SEPARATOR"),
    "Paragraph": ("engine.parsing.model", "Paragraph"),
    "ParsedDocument": ("engine.parsing.model", "ParsedDocument"),
    "ParsedSection": ("engine.parsing.model", "ParsedSection"),
    "ParseWarning": ("engine.parsing.model", "ParseWarning"),
    "unique_paths": ("engine.parsing.model", "unique_paths"),
    "ocr_engine_version": ("engine.parsing.ocr", "engine_version"),
    "PdfPart": ("engine.parsing.pdf", "PdfPart"),
    "PdfPlan": ("engine.parsing.pdf", "PdfPlan"),
    "assemble_pdf": ("engine.parsing.pdf", "assemble_pdf"),
    "parse_pdf_pages": ("engine.parsing.pdf", "parse_pdf_pages"),
    "release_kept_pdf": ("engine.parsing.pdf", "release_kept_pdf"),
}

__all__ = [
    "PARSER_VERSIONS",
    "PATH_SEPARATOR",
    "SUPPORTED_SUFFIXES",
    "Paragraph",
    "ParseError",
    "ParseLimits",
    "ParseWarning",
    "ParsedDocument",
    "ParsedSection",
    "PdfPart",
    "PdfPlan",
    "assemble_pdf",
    "may_read_in_ranges",
    "ocr_engine_version",
    "parse_file",
    "parse_pdf_pages",
    "plan_parallel_parse",
    "release_kept_pdf",
    "unique_paths",
]


__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS, __all__)
