"""Document parsers: a file in, a ParsedDocument (flat sections in reading order) out.

The public surface is parse_file and its contracts, plus plan_parallel_parse, parse_pdf_pages
and assemble_pdf (one long PDF parsed in several worker processes); everything else in this
package is an implementation detail. Parsers only read; they never write files.
"""

from engine.errors import ParseError
from engine.parsing.dispatch import (
    PARSER_VERSIONS,
    SUPPORTED_SUFFIXES,
    parse_file,
    plan_parallel_parse,
)
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
from engine.parsing.pdf import PdfPart, PdfPlan, assemble_pdf, parse_pdf_pages

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
    "ocr_engine_version",
    "parse_file",
    "parse_pdf_pages",
    "plan_parallel_parse",
    "unique_paths",
]
