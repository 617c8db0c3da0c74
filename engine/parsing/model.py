"""What a parser hands to the chunker: a document as a flat list of sections in reading order.

Parsers only read; they never write files. A parser that cannot produce a trustworthy document
raises ParseError with a machine reason and a sentence a person understands.
"""

from __future__ import annotations

import msgspec

from engine.errors import ParseError

PATH_SEPARATOR = " / "


# A printed line of a PDF paragraph: its box on the paragraph's page (x0, y0, x1, y1 in
# points, origin top left) and how many characters of the paragraph it holds.
LineBox = tuple[float, float, float, float, int]


class Paragraph(msgspec.Struct, frozen=True):
    text: str
    page: int | None = None  # 1-based physical page (PDF), None elsewhere
    lines: tuple[LineBox, ...] = ()  # PDF: where the paragraph is printed on `page`


class ParsedSection(msgspec.Struct, frozen=True, kw_only=True):
    title: str  # as printed
    depth: int  # 1 = top level; deeper headings have larger depth
    paragraphs: tuple[Paragraph, ...] = ()
    page: int | None = None  # page where the heading sits (PDF)


class ParseWarning(msgspec.Struct, frozen=True, kw_only=True):
    """Something a person should know about a document that was imported anyway."""

    code: str  # machine reason, e.g. "replaced_bytes", "legacy_encoding"
    message: str  # a sentence a person understands
    pages: tuple[int, ...] = ()  # 1-based pages concerned (PDF), () when not page-bound
    count: int = 0  # how many of what the code names (bytes, images, pages), 0 when unsaid


class ParsedDocument(msgspec.Struct, frozen=True, kw_only=True):
    title: str
    lang: str  # "en" | "zh"
    format: str  # pdf | epub | docx | html | markdown | text
    sections: tuple[ParsedSection, ...]  # document order; never empty
    pages: int | None = None
    page_labels: tuple[str, ...] = ()  # PDF: the printed label of each page, () when it has none
    warnings: tuple[ParseWarning, ...] = ()  # imported, but with something worth telling
    # PDF pages whose text was recognised by OCR: (1-based page, the recogniser's confidence
    # over its characters, 0..1), in page order; pages_ocr and ocr_confidence sum them up.
    ocr_pages: tuple[tuple[int, float], ...] = ()
    pages_ocr: int = 0
    ocr_confidence: float | None = None  # over every recognised character; None without OCR


def images_not_read(images: int, kind: str) -> tuple[ParseWarning, ...]:
    """The warning for a book or document (`kind`) with `images` pictures, which are not
    recognised: their text is not imported, and a person should know it is missing."""
    if not images:
        return ()
    which = "1 image" if images == 1 else f"{images:,} images"
    return (
        ParseWarning(
            code="images_not_read",
            message=f"This {kind} has {which}; text shown inside images is not read, so it "
            "is not in the library (captions and the text around them are).",
            count=images,
        ),
    )


def unexpected_failure(exc: Exception) -> ParseError:
    """What a parser's unexpected exception means for a person: a library failing on bad input
    (the document is unreadable), or a document too large for the memory available."""
    if isinstance(exc, MemoryError):
        return ParseError(
            "too_large",
            "This document is too large to import with the memory available; split it into "
            "smaller files and import those.",
        )
    return ParseError(
        "corrupt",
        "This file could not be read because it is damaged or uses features Citewise "
        "does not understand; open it in the program that made it, save it again and "
        "import it again.",
    )


def unique_paths(titles: list[str], depths: list[int]) -> list[str]:
    """Full paths for a flat outline, made unique: a repeated path gets " (2)", " (3)" ...

    A component's own separator is replaced so that splitting a path on PATH_SEPARATOR always
    gives back the components.
    """
    paths: list[str] = []
    stack: list[tuple[int, str]] = []  # (depth, path)
    seen: dict[str, int] = {}
    for title, depth in zip(titles, depths, strict=True):
        while stack and stack[-1][0] >= depth:
            stack.pop()
        component = " ".join(title.replace(PATH_SEPARATOR, " ∕ ").split()) or "(untitled)"
        base = f"{stack[-1][1]}{PATH_SEPARATOR}{component}" if stack else component
        path = base
        n = seen.get(base, 0)
        while path in seen:
            n += 1
            path = f"{base} ({n + 1})"
        seen[base] = n
        seen[path] = 0
        paths.append(path)
        stack.append((depth, path))
    return paths
