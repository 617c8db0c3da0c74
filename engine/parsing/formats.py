"""Which files Citewise reads and the version of each parser: the table discovery decides by
without loading any parser (PyMuPDF, lxml, OCR load only when a file is parsed)."""

from __future__ import annotations

FORMAT_BY_SUFFIX: dict[str, str] = {
    ".pdf": "pdf",
    ".epub": "epub",
    ".docx": "docx",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".md": "markdown",
    ".markdown": "markdown",
    ".txt": "text",
    ".text": "text",
}
SUPPORTED_SUFFIXES: frozenset[str] = frozenset(FORMAT_BY_SUFFIX)
PARSER_VERSIONS: dict[str, str] = {
    "pdf": "pdf-6",  # -4: text-quality check, repaired files read, overlapping CJK lines joined;
    # -5: double-spaced prose joined, margin line numbers dropped (OCR cache not keyed by this);
    # -6: a document typewritten throughout read as prose, not line by line as code; a file name
    # of any common type ("10811.exe") is not a title
    "epub": "epub-3",  # -2: SVG text, <object> fallbacks, in-body footers; -3: spine fallbacks
    "docx": "docx-4",  # -2: notes, comments, text boxes once; -3: drop caps, form cells, bodies;
    # -4: emoji written as symbol references, headers and footers of a document with no body text
    "html": "html-4",  # -3: a heading's in-page links are not link text; -4: "js-" classes
    "markdown": "markdown-3",  # -2: Latin-1, damaged UTF-8; -3: no <script>, no tag-only paragraph
    "text": "text-3",  # -3: Big5 read; EUC-KR and EUC-JP refused, not misread as GB18030
}
