"""parse_file: the one entry point that turns a file into a ParsedDocument.

Chooses the parser from the suffix, checks the content really is that kind of file, and
translates every failure into ParseError(reason, message). Pure and synchronous, a top-level
function so it can run in a worker process; it never writes anything.
"""

from __future__ import annotations

from pathlib import Path

from engine.errors import ParseError
from engine.parsing.docx import parse_docx
from engine.parsing.epub import parse_epub
from engine.parsing.formats import FORMAT_BY_SUFFIX
from engine.parsing.html import parse_html
from engine.parsing.limits import MIB, ParseLimits
from engine.parsing.markdown import parse_markdown
from engine.parsing.model import ParsedDocument, unexpected_failure
from engine.parsing.pdf import PdfPlan, parse_pdf, plan_pdf
from engine.parsing.text import parse_text

_NAMES = {
    "pdf": "PDF",
    "epub": "EPUB book",
    "docx": "Word document",
    "html": "web page",
    "markdown": "Markdown file",
    "text": "text file",
}
# Leading bytes of kinds of file people rename by mistake.
_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"%PDF-", "a PDF"),
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"II*\x00", "a TIFF image"),
    (b"MM\x00*", "a TIFF image"),
    (b"PK\x03\x04", "a ZIP archive"),
    (b"PK\x05\x06", "a ZIP archive"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an old-style Office file"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (b"Rar!\x1a\x07", "a RAR archive"),
    (b"\x7fELF", "a program"),
    (b"{\\rtf", "an RTF document"),
    (b"ID3\x03", "an MP3 audio file"),
    (b"ID3\x04", "an MP3 audio file"),
    (b"OggS", "an audio file"),
    (b"\x00\x00\x00\x18ftyp", "a video file"),
    (b"\x00\x00\x00\x20ftyp", "a video file"),
)
_RIFF_KINDS = {b"WEBP": "a WebP image", b"WAVE": "a WAV audio file", b"AVI ": "a video file"}
_CFB = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ENCRYPTION_INFO = "EncryptionInfo".encode("utf-16-le")


def _sniff(head: bytes, pdf_anywhere: bool) -> str | None:
    """What the leading bytes say the file is, in words, or None if they say nothing.

    A PDF may have junk before its header (readers look in the first 1 KB); a text file that
    merely mentions "%PDF-" near its start is still text."""
    if b"%PDF-" in (head[:1024] if pdf_anywhere else head[:5]):
        return "a PDF"
    if head.startswith(b"RIFF") and head[8:12] in _RIFF_KINDS:
        return _RIFF_KINDS[head[8:12]]
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    if head.startswith(b"BM") and head[6:10] == b"\x00\x00\x00\x00":
        return "a BMP image"
    if head.startswith(b"MZ") and (b"PE\x00\x00" in head or b"cannot be run in DOS" in head):
        return "a Windows program"
    return None


def _wrong_kind(fmt: str, kind: str) -> ParseError:
    return ParseError(
        "unsupported_type",
        f"This file is named like a {_NAMES[fmt]} but is actually {kind}; if it is a document, "
        "give it the right file extension and import it again.",
    )


def _not_readable(fmt: str) -> ParseError:
    return ParseError(
        "corrupt",
        f"This file is named like a {_NAMES[fmt]} but its contents are not one (it may be "
        "damaged or unfinished); open it in the program that made it and save it again.",
    )


def _check_content(path: Path, fmt: str, head: bytes) -> None:
    kind = _sniff(head, pdf_anywhere=fmt == "pdf")
    if fmt == "pdf":
        if kind is None or kind == "a PDF":
            return  # no header at all: pymupdf may still read it, else it says "not a PDF"
        raise _wrong_kind(fmt, kind)
    if fmt in ("docx", "epub"):
        if head.startswith(b"PK\x03\x04"):
            return
        if head.startswith(_CFB) and fmt == "docx":
            if _ENCRYPTION_INFO in path.read_bytes():
                raise ParseError(
                    "encrypted",
                    "This Word document is password-protected; open it in Word, remove the "
                    "password (File > Info > Protect Document) and import it again.",
                )
            raise ParseError(
                "unsupported_type",
                "This is an old-style Word .doc file renamed to .docx; open it in Word or "
                "LibreOffice, save it as .docx and import it again.",
            )
        raise _wrong_kind(fmt, kind) if kind else _not_readable(fmt)
    if kind is not None:  # text formats: a recognised binary signature is never text
        raise _wrong_kind(fmt, kind)


def _format(path: Path) -> str:
    fmt = FORMAT_BY_SUFFIX.get(path.suffix.lower())
    if fmt is None:
        shown = path.suffix or "(no extension)"
        raise ParseError(
            "unsupported_type",
            f"Citewise cannot import {shown} files; it reads PDF, EPUB, Word (.docx), HTML, "
            "Markdown and plain-text files.",
        )
    return fmt


def _check_file(path: Path, fmt: str, limits: ParseLimits) -> None:
    """What is checked before any parser reads the file: it is a file, not empty, within the
    size limit, and its leading bytes do not say it is something else."""
    size = path.stat().st_size
    if not path.is_file():
        raise IsADirectoryError(str(path))
    if size == 0:
        raise ParseError(
            "empty_file", "This file is empty (0 bytes); check that it is the file you meant."
        )
    if size > limits.max_file_bytes:
        raise ParseError(
            "too_large",
            f"This file is {size / MIB:,.0f} MB, more than the "
            f"{limits.max_file_bytes / MIB:,.0f} MB limit (ingest.max_file_megabytes); "
            "split it or raise the limit in the settings.",
        )
    with path.open("rb") as fh:
        head = fh.read(4096)
    _check_content(path, fmt, head)


def _parse(path: Path, limits: ParseLimits) -> ParsedDocument:
    fmt = _format(path)
    try:
        _check_file(path, fmt, limits)
        if fmt == "pdf":
            return parse_pdf(path, limits)
        if fmt == "docx":
            return parse_docx(path, limits)
        if fmt == "epub":
            return parse_epub(path, limits)
        data = path.read_bytes()
    except OSError as exc:
        raise ParseError(
            "corrupt",
            "Citewise could not read this file; check that it still exists, is not open in "
            "another program and that you are allowed to open it.",
        ) from exc
    if fmt == "html":
        return parse_html(path, data, limits)
    if fmt == "markdown":
        return parse_markdown(path, data, limits)
    return parse_text(path, data, limits)


DEFAULT_LIMITS = ParseLimits()


def may_read_in_ranges(path: Path) -> bool:
    """Whether `plan_parallel_parse` can return a plan for `path`: only a PDF is read as page
    ranges, decided by the suffix alone, so any other file can be parsed whole without asking."""
    return FORMAT_BY_SUFFIX.get(Path(path).suffix.lower()) == "pdf"


def plan_parallel_parse(path: Path, limits: ParseLimits = DEFAULT_LIMITS) -> PdfPlan | None:
    """How to parse `path` in parallel (`parse_pdf_pages` for each range of the plan, then
    `assemble_pdf`) when it is a PDF long enough to be worth it; None for every other file
    and for any file with a problem, which `parse_file` then reports as always. Reads the
    file (run it where parse_file runs), never fails."""
    path = Path(path)
    if not may_read_in_ranges(path):
        return None
    try:
        _check_file(path, "pdf", limits)
    except (ParseError, OSError):
        return None
    return plan_pdf(path, limits)


def parse_file(path: Path, limits: ParseLimits = DEFAULT_LIMITS) -> ParsedDocument:
    """Parse one document. Raises only ParseError, whatever the file contains."""
    path = Path(path)
    try:
        return _parse(path, limits)
    except ParseError:
        raise
    except Exception as exc:  # a library failing on bad input, or out of memory
        raise unexpected_failure(exc) from exc
