"""Hard limits a parser enforces before and while reading a document.

A document over a limit fails with a ParseError; a limit is never a reason to return part of a
document. Defaults match IngestSettings (max_file_megabytes, max_archive_megabytes).
"""

from __future__ import annotations

import msgspec

MIB = 1024 * 1024


class ParseLimits(msgspec.Struct, frozen=True):
    max_file_bytes: int = 512 * MIB  # size of the file on disk
    max_archive_bytes: int = 256 * MIB  # inflated total of a DOCX/EPUB, from declared sizes
    max_archive_entries: int = 10_000  # members of a DOCX/EPUB
    max_compression_ratio: int = 200  # per member above ratio_floor_bytes: zip-bomb guard
    ratio_floor_bytes: int = 4 * MIB  # small members may compress better than the ratio
    max_sections: int = 20_000  # headings in one document
    max_pages: int = 20_000  # PDF pages
    ocr: bool = True  # recognise PDF pages without a text layer (IngestSettings.ocr)
    ocr_max_pages: int = 500  # pages recognised in one document; the rest are reported
    ocr_cache: str = ""  # the OCR cache's file (engine/parsing/ocr_cache.py); "": none
    # A file the worker appends a line to per recognised page, and holds between pages while
    # `<file>.pause` exists (engine/parsing/ocr_signals.py); "": none.
    ocr_progress: str = ""
