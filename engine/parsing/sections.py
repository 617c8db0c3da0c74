"""Assembles a parser's stream of headings and paragraphs into ParsedDocument sections.

Keeps each heading as the first paragraph of its section (an unprinted heading, such as a PDF
bookmark, contributes its title), files text before the first heading under the document
title, and never invents other text: an empty document fails with ParseError("no_text").
"""

from __future__ import annotations

from engine.errors import ParseError
from engine.parsing.lines import clean_text, short_title, tidy_block
from engine.parsing.model import LineBox, Paragraph, ParsedSection


class SectionBuilder:
    def __init__(self, max_sections: int) -> None:
        self._max_sections = max_sections
        self._preamble: list[Paragraph] = []
        self._sections: list[tuple[str, int, int | None, list[Paragraph]]] = []
        self._paragraphs = self._preamble
        self.first_heading: str | None = None

    def heading(
        self,
        title: str,
        depth: int,
        text: str | None = None,
        page: int | None = None,
        lines: tuple[LineBox, ...] = (),
    ) -> bool:
        """Start a section. `text` is the heading as it reads in the body (defaults to the
        title). Returns False, adding nothing, when the title is blank."""
        clean = short_title(clean_text(title)).rstrip("¶ ")
        if not clean:
            return False
        if len(self._sections) + 1 > self._max_sections:
            raise ParseError(
                "too_large",
                f"This document has more than {self._max_sections:,} headings, more than "
                "Citewise can import; split it into smaller files and import those.",
            )
        body = " ".join(clean_text(text).split()).rstrip("¶ ") if text is not None else ""
        self._paragraphs = [Paragraph(body or clean, page, lines if body else ())]
        self._sections.append((clean, max(1, depth), page, self._paragraphs))
        if self.first_heading is None:
            self.first_heading = clean
        return True

    def paragraph(
        self,
        text: str,
        page: int | None = None,
        preformatted: bool = False,
        lines: tuple[LineBox, ...] = (),
    ) -> None:
        """Add a paragraph to the current section; blank text is ignored. `lines` are where
        it is printed (PDF)."""
        clean = clean_text(text)
        clean = tidy_block(clean) if preformatted else clean.strip()
        if clean:
            self._paragraphs.append(Paragraph(clean, page, lines))

    @property
    def section_count(self) -> int:
        return len(self._sections) + (1 if self._preamble else 0)

    def texts(self) -> list[str]:
        """Every paragraph so far, in order (for language detection)."""
        out = [p.text for p in self._preamble]
        for _, _, _, paragraphs in self._sections:
            out.extend(p.text for p in paragraphs)
        return out

    def finish(self, doc_title: str) -> tuple[ParsedSection, ...]:
        sections = [
            ParsedSection(title=title, depth=depth, paragraphs=tuple(paragraphs), page=page)
            for title, depth, page, paragraphs in self._sections
        ]
        if self._preamble:
            first_page = self._preamble[0].page
            sections.insert(
                0,
                ParsedSection(
                    title=short_title(doc_title) or "(untitled)",
                    depth=1,
                    paragraphs=tuple(self._preamble),
                    page=first_page,
                ),
            )
        if not sections:
            raise ParseError(
                "no_text",
                "This document contains no text to import; open it to check that it is the "
                "file you meant.",
            )
        return tuple(sections)
