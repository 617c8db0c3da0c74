"""HTML (and EPUB XHTML) to sections: headings h1-h6, paragraphs from block elements.

A web page is first cut to its main content (main_content.py). Skips page chrome that is not
the document: scripts, styles, navigation, footers, Sphinx sidebars and "related" bars,
headerlink anchors. Sections come from the stdlib html.parser, which never fetches anything
and never expands declared entities; lxml (for the cut) fetches nothing either.
"""

from __future__ import annotations

import codecs
import re
from html.parser import HTMLParser
from pathlib import Path

from engine.parsing.lang import detect_lang
from engine.parsing.limits import ParseLimits
from engine.parsing.lines import clean_text, collapse_whitespace, join_lines, short_title
from engine.parsing.main_content import link_density_cut, page_title
from engine.parsing.model import ParsedDocument, ParseWarning
from engine.parsing.sections import SectionBuilder
from engine.parsing.text import DecodedText, check_not_binary, utf8_replacing, with_replacements

_SKIP_TAGS = frozenset(
    {
        "script",
        "style",
        "head",
        "nav",
        "footer",
        "noscript",
        "template",
        "svg",
        "button",
        "select",
        "textarea",
        "iframe",
        "object",
        "canvas",
    }
)
# A book's own markup: inline SVG carries text in <text>, <object> holds its fallback content,
# and a <footer> inside a chapter is part of the chapter (notes, attributions).
_BOOK_KEEPS = frozenset({"svg", "object", "footer"})
_BOOK_SKIP_TAGS = _SKIP_TAGS - _BOOK_KEEPS
_SKIP_CLASSES = frozenset(
    {
        "sphinxsidebar",
        "related",
        "footer",
        "headerlink",
        "mobile-nav",
        "menu-wrapper",
        "inline-search",
        "toc",
        "navheader",
        "navfooter",
        "breadcrumbs",
        "skip-link",
    }
)
_SKIP_ROLES = frozenset({"navigation", "search", "banner", "contentinfo"})
_VOID = frozenset(
    {
        "area",
        "base",
        "br",
        "col",
        "embed",
        "hr",
        "img",
        "input",
        "link",
        "meta",
        "param",
        "source",
        "track",
        "wbr",
    }
)
_BLOCKS = frozenset(
    {
        "p",
        "div",
        "li",
        "ul",
        "ol",
        "dl",
        "dd",
        "dt",
        "blockquote",
        "section",
        "article",
        "aside",
        "header",
        "main",
        "body",
        "figure",
        "figcaption",
        "caption",
        "address",
        "hr",
        "table",
        "thead",
        "tbody",
        "tfoot",
        "details",
        "summary",
        "center",
        "fieldset",
        "legend",
        "form",
    }
)
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_TITLE_SEPARATORS = (" — ", " – ", " | ", " · ")
_SITE_SUFFIX = re.compile(r"(?i)\b(documentation|docs|manual|wiki(pedia)?|blog)\b|\.\w{2,4}$")
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)
_XML_ENCODING = re.compile(rb"""^<\?xml[^>]+encoding\s*=\s*["']([A-Za-z0-9_.:-]+)""")
_BR = "\x00br\x00"  # placeholder for <br> inside a paragraph; C0 is stripped from real text


class HtmlExtractor(HTMLParser):
    """Feeds one SectionBuilder; can be fed several documents in turn (EPUB spine)."""

    def __init__(self, builder: SectionBuilder, book: bool = False) -> None:
        super().__init__(convert_charrefs=True)
        self.builder = builder
        self._skip_tags = _BOOK_SKIP_TAGS if book else _SKIP_TAGS
        self._svg = 0  # depth inside inline <svg> (books only)
        self._svg_lines: list[str] | None = None  # the <tspan> lines of the current <text>
        self.title = ""
        self._in_title = False
        self._title_parts: list[str] = []
        self._skip_tag: str | None = None
        self._skip_nest = 0
        self._buf: list[str] = []
        self._heading: int | None = None
        self._heading_parts: list[str] = []
        self._pre = 0
        self._pre_parts: list[str] = []
        self._table = 0
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self.images = 0  # pictures in the text (<img>, SVG <image>): their content is not read

    def reset_document(self) -> None:
        """Forget the previous document's parser state (EPUB feeds one per spine entry)."""
        self.reset()
        self._skip_tag, self._skip_nest = None, 0
        self._in_title = False
        self._svg, self._svg_lines = 0, None

    def _skips(self, tag: str, attrs: list[tuple[str, str | None]]) -> bool:
        if tag in self._skip_tags:
            return True
        for name, value in attrs:
            if name == "class" and value and not _SKIP_CLASSES.isdisjoint(value.split()):
                return True
            if name == "role" and value and value.strip().lower() in _SKIP_ROLES:
                return True
            if name == "hidden":
                return True
        return False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title" and not self.title and self._skip_tag in (None, "head") and not self._svg:
            self._in_title = True
            self._title_parts = []
            return
        if self._skip_tag is not None:
            if tag == self._skip_tag:
                self._skip_nest += 1
            elif tag == "body" and self._skip_tag == "head":  # </head> left out
                self._skip_tag, self._skip_nest = None, 0
            return
        if tag not in _VOID and self._skips(tag, attrs):
            self._skip_tag, self._skip_nest = tag, 1
            return
        if tag in ("img", "image"):
            self.images += 1
        if tag == "svg" and "svg" not in self._skip_tags:
            if not self._svg:
                self._flush()
            self._svg += 1
            return
        if self._svg:
            if tag == "text":
                self._svg_lines = [""]
            elif (
                tag == "tspan"
                and self._svg_lines is not None
                and self._svg_lines[-1].strip()
                and any(name in ("y", "dy") for name, _ in attrs)  # a new printed line
            ):
                self._svg_lines.append("")
            return
        if tag in _HEADINGS and self._cell is None:
            self._flush()
            self._heading = _HEADINGS[tag]
            self._heading_parts = []
        elif tag == "pre":
            if self._pre == 0 and self._cell is None:
                self._flush()
                self._pre_parts = []
            self._pre += 1
        elif tag == "br":
            if self._heading is not None or self._cell is not None:
                self._text(" ")
            else:
                self._text("\n" if self._pre else _BR)
        elif tag == "table":
            self._table += 1
            if self._table == 1:
                self._flush()
            else:
                self._text(" ")
        elif tag == "tr" and self._table == 1:
            self._flush()
            self._row = []
        elif tag in ("td", "th") and self._table == 1:
            if self._row is None:
                self._row = []
            self._cell = []
        elif tag in _BLOCKS or tag in ("tr", "td", "th"):
            if self._cell is not None or self._heading is not None:
                self._text(" ")
            elif not self._pre:
                self._flush()

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        # <br/>, <div/> in XHTML: an element with no content
        if self._skip_tag is None and not (tag not in _VOID and self._skips(tag, attrs)):
            self.handle_starttag(tag, attrs)
            if tag not in _VOID:
                self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "title" and self._in_title:
            self._in_title = False
            self.title = " ".join("".join(self._title_parts).split())
            return
        if self._skip_tag is not None:
            if tag == self._skip_tag:
                self._skip_nest -= 1
                if self._skip_nest == 0:
                    self._skip_tag = None
            return
        if self._svg:
            if tag == "svg":
                self._svg -= 1
            elif tag == "text" and self._svg_lines is not None:
                lines = [collapse_whitespace(clean_text(line)) for line in self._svg_lines]
                self._svg_lines = None
                text = join_lines(lines)
                if text:
                    self.builder.paragraph(text)
            return
        if tag in _HEADINGS and self._heading is not None:
            text = collapse_whitespace(clean_text("".join(self._heading_parts)))
            level, self._heading = self._heading, None
            if not self.builder.heading(text, level):
                return
        elif tag == "pre" and self._pre:
            self._pre -= 1
            if self._pre == 0 and self._cell is None:
                self.builder.paragraph("".join(self._pre_parts), preformatted=True)
                self._pre_parts = []
        elif tag == "table" and self._table:
            self._table -= 1
            if self._table == 0:
                self._end_row()
        elif tag in ("td", "th") and self._table == 1 and self._cell is not None:
            assert self._row is not None
            self._row.append(collapse_whitespace(clean_text("".join(self._cell))))
            self._cell = None
        elif tag == "tr" and self._table == 1:
            self._end_row()
        elif tag in _BLOCKS:
            if self._cell is not None or self._heading is not None:
                self._text(" ")
            elif not self._pre:
                self._flush()

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self._title_parts.append(data)
        elif self._svg:
            if self._svg_lines is not None:
                self._svg_lines[-1] += data
        elif self._skip_tag is None:
            self._text(data)

    def _text(self, data: str) -> None:
        if self._heading is not None:
            self._heading_parts.append(data)
        elif self._cell is not None:
            self._cell.append(data)
        elif self._pre:
            self._pre_parts.append(data)
        else:
            self._buf.append(data)

    def _end_row(self) -> None:
        if self._cell is not None and self._row is not None:
            self._row.append(collapse_whitespace(clean_text("".join(self._cell))))
        self._cell = None
        if self._row is not None:
            cells = [c for c in self._row if c]
            if cells:
                self.builder.paragraph(" | ".join(cells))
        self._row = None

    def _flush(self) -> None:
        if not self._buf:
            return
        raw = "".join(self._buf)
        self._buf = []
        lines = [collapse_whitespace(clean_text(part)) for part in raw.split(_BR)]
        text = "\n".join(line for line in lines if line)
        if text:
            self.builder.paragraph(text)

    def finish_document(self) -> None:
        self.close()
        if self._heading is not None:  # unclosed heading at the end of the file
            self._heading = None
        if self._pre_parts:
            self.builder.paragraph("".join(self._pre_parts), preformatted=True)
            self._pre_parts, self._pre = [], 0
        self._end_row()
        self._table = 0
        self._flush()


def decode_html(data: bytes) -> str:
    """Decode by BOM, then <meta charset> / XML declaration, then UTF-8; never fails."""
    return decode_html_reporting(data).text


def decode_html_reporting(data: bytes) -> DecodedText:
    """decode_html, with a warning saying how many bytes were replaced, if any were."""
    for bom, codec in (
        (codecs.BOM_UTF32_LE, "utf-32"),
        (codecs.BOM_UTF32_BE, "utf-32"),
        (codecs.BOM_UTF8, "utf-8-sig"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if data.startswith(bom):
            if codec == "utf-8-sig":
                return _utf8_reporting(data[len(bom) :])
            return _reporting(data, codec)
    head = data[:4096]
    m = _META_CHARSET.search(head) or _XML_ENCODING.search(head)
    declared = "utf-8"
    if m:
        try:
            declared = codecs.lookup(m.group(1).decode("ascii")).name
        except (LookupError, UnicodeDecodeError):
            declared = "utf-8"
    try:
        return DecodedText(data.decode(declared))
    except UnicodeDecodeError:
        pass
    if declared != "utf-8":
        try:
            return DecodedText(data.decode("utf-8"))
        except UnicodeDecodeError:
            return _reporting(data, declared)
    return _utf8_reporting(data)


def _utf8_reporting(data: bytes) -> DecodedText:
    text, bad = utf8_replacing(data)
    return with_replacements(data, text, bad) if bad else DecodedText(text)


def _reporting(data: bytes, codec: str) -> DecodedText:
    try:
        return DecodedText(data.decode(codec))
    except UnicodeDecodeError:
        pass
    text = data.decode(codec, errors="replace")
    count = text.count("\ufffd")
    return DecodedText(
        text,
        (
            ParseWarning(
                code="replaced_bytes",
                message=f"Some bytes of this page are not valid {codec}; {count} places were "
                "replaced with \ufffd, the rest was read as written.",
                count=count,
            ),
        ),
    )


def strip_site_suffix(title: str, any_site: bool = True) -> str:
    """'General Python FAQ — Python 3.11.2 documentation' -> 'General Python FAQ'.

    A web page's <title> usually ends in its site's name (any_site); a document's own title
    loses a suffix only when the suffix plainly names documentation."""
    for sep in _TITLE_SEPARATORS:
        head, found, tail = title.rpartition(sep)
        if found and head.strip() and (any_site or _SITE_SUFFIX.search(tail)):
            return head.strip()
    head, found, tail = title.rpartition(" - ")
    if found and head.strip() and _SITE_SUFFIX.search(tail):
        return head.strip()
    return title


def feed_html(extractor: HtmlExtractor, text: str) -> None:
    """Extract one whole HTML document into the extractor's sections."""
    extractor.reset_document()
    extractor.feed(text)
    extractor.finish_document()


def new_extractor(limits: ParseLimits, book: bool = False) -> HtmlExtractor:
    """An extractor for web pages, or (book) for EPUB chapters, which keep inline SVG text,
    <object> fallbacks and in-chapter footers."""
    return HtmlExtractor(SectionBuilder(limits.max_sections), book=book)


def _extract(html: str, limits: ParseLimits) -> HtmlExtractor:
    extractor = new_extractor(limits)
    feed_html(extractor, html)
    return extractor


def _chars(extractor: HtmlExtractor) -> int:
    return sum(len(text) for text in extractor.builder.texts())


def main_content(html: str, limits: ParseLimits) -> HtmlExtractor:
    """The page's article through the extractor; the whole page when the cut leaves no text
    (the cut must never turn a page with text into "no_text")."""
    cut = link_density_cut(html)
    if cut is not None:
        article = _extract(cut, limits)
        if _chars(article):
            return article
    return _extract(html, limits)


def parse_html(path: Path, data: bytes, limits: ParseLimits) -> ParsedDocument:
    decoded = decode_html_reporting(data)
    html = check_not_binary(decoded.text)
    extractor = main_content(html, limits)
    builder = extractor.builder
    page = page_title(html)
    title = short_title(strip_site_suffix(page)) or builder.first_heading or path.stem
    sections = builder.finish(title)
    return ParsedDocument(
        title=title,
        lang=detect_lang(builder.texts()),
        format="html",
        sections=sections,
        warnings=decoded.warnings,
    )
