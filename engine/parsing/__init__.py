"""Document parsers: a file in, a ParsedDocument (flat sections in reading order) out.

The public surface is parse_file and its contracts; everything else in this package is an
implementation detail. Parsers only read; they never write files.
"""

from engine.parsing.dispatch import PARSER_VERSIONS, SUPPORTED_SUFFIXES, parse_file
from engine.parsing.limits import ParseLimits
from engine.parsing.model import (
    PATH_SEPARATOR,
    Paragraph,
    ParsedDocument,
    ParsedSection,
    ParseError,
    unique_paths,
)

__all__ = [
    "PARSER_VERSIONS",
    "PATH_SEPARATOR",
    "SUPPORTED_SUFFIXES",
    "Paragraph",
    "ParseError",
    "ParseLimits",
    "ParsedDocument",
    "ParsedSection",
    "parse_file",
    "unique_paths",
]
