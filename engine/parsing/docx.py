"""DOCX (Word) to sections: body paragraphs and tables in order, headings from paragraph styles.

Footnotes, endnotes and comments follow the body as their own labelled sections; a text box
is read once (Word stores it twice); headers and footers are read only when nothing else holds
text. Reads word/document.xml, its notes, word/styles.xml and
docProps/core.xml through SafeArchive, so the archive is vetted before anything is inflated
and no XML part may declare a DTD. Headings come from outline levels (direct or through the
style chain) or Heading 1-9 / Title styles.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator
from pathlib import Path
from xml.etree import ElementTree as ET

from engine.errors import ParseError
from engine.parsing.archive import SafeArchive
from engine.parsing.html import strip_site_suffix
from engine.parsing.lang import detect_lang
from engine.parsing.limits import ParseLimits
from engine.parsing.lines import short_title
from engine.parsing.model import ParsedDocument, ParseWarning, images_not_read
from engine.parsing.sections import SectionBuilder

_KIND = "Word document"
_MAIN_NAMESPACES = (
    "http://schemas.openxmlformats.org/wordprocessingml/2006/main",
    "http://purl.oclc.org/ooxml/wordprocessingml/main",
)
_REL = "{http://schemas.openxmlformats.org/package/2006/relationships}Relationship"
_DC_TITLE = "{http://purl.org/dc/elements/1.1/}title"
_HEADING_NAME = re.compile(r"^heading\s*([1-9])$", re.IGNORECASE)
_CODE_STYLE = re.compile(r"code|verbatim|preformatted|source|plain\s*text", re.IGNORECASE)


class _Style:
    __slots__ = ("based_on", "code", "name", "outline")

    def __init__(self, name: str, outline: int | None, based_on: str | None) -> None:
        self.name = name
        self.outline = outline
        self.based_on = based_on
        self.code = bool(_CODE_STYLE.search(name))


class _Doc:
    def __init__(self, w: str, styles: dict[str, _Style]) -> None:
        self.w = w
        self.styles = styles
        self._depths: dict[str, int | None] = {}
        # The mark a reader sees for each note, in order of first reference in the body:
        # footnotes 1, 2, 3 and endnotes i, ii, iii (Word's default numbering).
        self.marks: dict[tuple[str, str], str] = {}
        # A drop cap's letters, a paragraph of their own in the file ("D" before "rop cap."),
        # waiting to open the paragraph that follows them.
        self.initial = ""

    def tag(self, local: str) -> str:
        return f"{{{self.w}}}{local}"

    def attr(self, el: ET.Element | None, local: str) -> str | None:
        return None if el is None else el.get(self.tag(local))

    def style_depth(self, style_id: str) -> int | None:
        if style_id not in self._depths:
            self._depths[style_id] = None  # guards a basedOn cycle
            self._depths[style_id] = self._resolve(style_id, 0)
        return self._depths[style_id]

    def _resolve(self, style_id: str, hops: int) -> int | None:
        style = self.styles.get(style_id)
        if hops > 20:
            return None
        if style is not None and style.outline is not None:
            return style.outline + 1 if style.outline < 9 else None
        name = style.name if style is not None else ""
        for candidate in (name, style_id):
            m = _HEADING_NAME.match(candidate) or re.match(r"^heading([1-9])$", candidate, re.I)
            if m:
                return int(m.group(1))
            if candidate.lower() == "title":
                return 1
        if style is not None and style.based_on:
            return self._resolve(style.based_on, hops + 1)
        return None

    def mark(self, kind: str, note_id: str) -> str:
        key = (kind, note_id)
        if key not in self.marks:
            n = 1 + sum(1 for k, _ in self.marks if k == kind)
            self.marks[key] = str(n) if kind == "footnotes" else _roman(n)
        return self.marks[key]

    def is_code(self, style_id: str | None) -> bool:
        hops = 0
        while style_id and hops < 20:
            style = self.styles.get(style_id)
            if style is None:
                return bool(_CODE_STYLE.search(style_id))
            if style.code:
                return True
            style_id, hops = style.based_on, hops + 1
        return False


_SKIP_LOCAL = frozenset({"pPr", "rPr", "del", "moveFrom", "instrText", "delText", "fldChar"})
_MC = "{http://schemas.openxmlformats.org/markup-compatibility/2006}"
# Notes Word draws itself (the separator lines above footnotes), not text anyone wrote.
_NOTE_CHROME = frozenset({"separator", "continuationSeparator", "continuationNotice"})
_NOTE_PARTS = (  # (relationship type suffix, default part, element, kind)
    ("/footnotes", "word/footnotes.xml", "footnote", "footnotes"),
    ("/endnotes", "word/endnotes.xml", "endnote", "endnotes"),
    ("/comments", "word/comments.xml", "comment", "comments"),
)
_ANCHOR_CHARS = 80  # a comment quotes at most this much of the text it is attached to
_NOTE_TITLES = {
    "en": {"footnotes": "Footnotes", "endnotes": "Endnotes", "comments": "Comments"},
    "zh": {"footnotes": "脚注", "endnotes": "尾注", "comments": "批注"},
}
# Headers and footers repeat on every page (a running title, a page number): not read, unless
# they hold all the text there is (a letterhead, a form whose body is still empty).
_RUNNING_RELS = ("/header", "/footer")
_RUNNING_TITLE = {"en": "Headers and footers", "zh": "页眉和页脚"}


def _text(doc: _Doc, el: ET.Element) -> str:
    """Visible text of a paragraph or cell, in order; w:tab -> tab, w:br/w:cr -> newline."""
    parts: list[str] = []
    stack: list[Iterator[ET.Element]] = [iter([el])]
    ns = f"{{{doc.w}}}"
    while stack:
        child = next(stack[-1], None)
        if child is None:
            stack.pop()
            continue
        tag = child.tag
        local = tag[len(ns) :] if isinstance(tag, str) and tag.startswith(ns) else None
        if local in _SKIP_LOCAL:
            continue
        if tag == f"{_MC}AlternateContent":
            # One content written two ways: read one of them, the first that holds text
            # (else the first, a Choice coming before the Fallback). Word writes a text box as
            # DrawingML (Choice) and VML (Fallback), both with the text; an emoji as a symbol
            # reference only Word 2016 reads (Choice, no text) and the character (Fallback).
            alternatives = [a for a in child if a.tag in (f"{_MC}Choice", f"{_MC}Fallback")]
            with_text = [a for a in alternatives if a.find(f".//{ns}t") is not None]
            chosen = (with_text or alternatives)[:1]
            stack.append(iter(list(chosen[0]) if chosen else []))
            continue
        if local in ("footnoteReference", "endnoteReference"):
            kind = "footnotes" if local == "footnoteReference" else "endnotes"
            mark = doc.mark(kind, doc.attr(child, "id") or "")
            parts.append(f"[{mark}]")
            continue
        if local == "t":
            parts.append(child.text or "")
        elif local == "tab":
            parts.append("\t")
        elif local in ("br", "cr"):
            parts.append("\n")
        elif local == "noBreakHyphen":
            parts.append("-")
        elif local == "p" and child is not el and parts:
            parts.append("\n")  # a paragraph nested in a text box or cell
        stack.append(iter(child))
    return "".join(parts)


def _paragraph(doc: _Doc, p: ET.Element, builder: SectionBuilder) -> None:
    ppr = p.find(doc.tag("pPr"))
    style_id = doc.attr(ppr.find(doc.tag("pStyle")) if ppr is not None else None, "val")
    depth: int | None = None
    direct = ppr.find(doc.tag("outlineLvl")) if ppr is not None else None
    level = doc.attr(direct, "val")
    if level is not None and level.isdigit():
        depth = int(level) + 1 if int(level) < 9 else None
    elif style_id:
        depth = doc.style_depth(style_id)
    text = _text(doc, p)
    frame = ppr.find(doc.tag("framePr")) if ppr is not None else None
    if doc.attr(frame, "dropCap") in ("drop", "margin") and text.strip():
        doc.initial += text.strip()
        return
    if doc.initial:
        text, doc.initial = doc.initial + text.lstrip(), ""
    if depth is not None and text.strip():
        builder.heading(" ".join(text.split()), depth)
    elif doc.is_code(style_id):
        builder.paragraph(text, preformatted=True)
    else:
        builder.paragraph(text)


def _within(doc: _Doc, parent: ET.Element, local: str) -> Iterator[ET.Element]:
    """The `local` children of `parent`, including those a content control (w:sdt) or a
    custom XML element wraps: a form's table may hold a row or a cell in one."""
    for child in parent:
        if child.tag == doc.tag(local):
            yield child
        elif child.tag == doc.tag("sdt"):
            content = child.find(doc.tag("sdtContent"))
            if content is not None:
                yield from _within(doc, content, local)
        elif child.tag == doc.tag("customXml"):
            yield from _within(doc, child, local)


def _table(doc: _Doc, tbl: ET.Element, builder: SectionBuilder) -> None:
    """Each row one paragraph, cells joined by " | "; nested tables flatten into their cell."""
    _flush_initial(doc, builder)
    for tr in _within(doc, tbl, "tr"):
        cells = [" ".join(_text(doc, tc).split()) for tc in _within(doc, tr, "tc")]
        row = " | ".join(c for c in cells if c)
        if row:
            builder.paragraph(row)


def _flush_initial(doc: _Doc, builder: SectionBuilder) -> None:
    """A drop cap with no paragraph after it to open stays a paragraph of its own."""
    if doc.initial:
        builder.paragraph(doc.initial)
        doc.initial = ""


def _walk(doc: _Doc, container: ET.Element, builder: SectionBuilder) -> None:
    for child in container:
        if child.tag == doc.tag("p"):
            _paragraph(doc, child, builder)
        elif child.tag == doc.tag("tbl"):
            _table(doc, child, builder)
        elif child.tag == doc.tag("sdt"):
            content = child.find(doc.tag("sdtContent"))
            if content is not None:
                _walk(doc, content, builder)
        elif child.tag in (doc.tag("customXml"), doc.tag("smartTag")):
            _walk(doc, child, builder)


# A picture: DrawingML's pic:pic, or (in older files and fallbacks) VML's v:imagedata.
_PICTURES = frozenset(
    {
        "{http://schemas.openxmlformats.org/drawingml/2006/picture}pic",
        "{urn:schemas-microsoft-com:vml}imagedata",
    }
)


def _images(root: ET.Element) -> int:
    """Pictures under `root` (a body or a notes part), each once: of Word's two copies of a drawing
    (mc:Choice and mc:Fallback), only the first is looked at."""
    count = 0
    stack = [root]
    while stack:
        el = stack.pop()
        if el.tag in _PICTURES:
            count += 1
        if el.tag == f"{_MC}AlternateContent":
            chosen = el.find(f"{_MC}Choice")
            stack.extend([] if chosen is None else list(chosen))
            continue
        stack.extend(list(el))
    return count


def _roman(n: int) -> str:
    out = ""
    for value, letters in (
        (1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"), (90, "xc"),
        (50, "l"), (40, "xl"), (10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i"),
    ):  # fmt: skip
        while n >= value:
            out, n = out + letters, n - value
    return out


def _linked_parts(zf: SafeArchive, main: str) -> Iterator[tuple[str, str]]:
    """(relationship type, part name) of every part in the archive the main part links to."""
    rels = posixpath.join(posixpath.dirname(main), "_rels", posixpath.basename(main) + ".rels")
    if zf.find(rels) is None:
        return
    for rel in zf.read_xml(rels).iter(_REL):
        rel_type, target = rel.get("Type") or "", rel.get("Target") or ""
        if not target or rel.get("TargetMode") == "External":
            continue
        base = "" if target.startswith("/") else posixpath.dirname(main)
        name = posixpath.normpath(posixpath.join(base, target.lstrip("/")))
        if zf.find(name) is not None:
            yield rel_type, name


def _note_parts(zf: SafeArchive, main: str) -> dict[str, str]:
    """kind -> part name of the footnotes, endnotes and comments the main part links to."""
    found: dict[str, str] = {}
    for rel_type, name in _linked_parts(zf, main):
        for suffix, _, _, kind in _NOTE_PARTS:
            if rel_type.endswith(suffix):
                found[kind] = name
    for _, default, _, kind in _NOTE_PARTS:
        if kind not in found and zf.find(default) is not None:
            found[kind] = default
    return found


def _comment_anchors(doc: _Doc, root: ET.Element) -> dict[str, str]:
    """comment id -> the body text it is attached to, shortened (ranges may span paragraphs)."""
    start, end, text = doc.tag("commentRangeStart"), doc.tag("commentRangeEnd"), doc.tag("t")
    open_ids: list[str] = []
    parts: dict[str, list[str]] = {}
    for el in root.iter():
        if el.tag == start:
            comment_id = doc.attr(el, "id") or ""
            open_ids.append(comment_id)
            parts.setdefault(comment_id, [])
        elif el.tag == end:
            comment_id = doc.attr(el, "id") or ""
            if comment_id in open_ids:
                open_ids.remove(comment_id)
        elif el.tag == text and open_ids:
            for comment_id in open_ids:
                parts[comment_id].append(el.text or "")
    anchors = {}
    for comment_id, texts in parts.items():
        quoted = " ".join("".join(texts).split())
        if quoted:
            anchors[comment_id] = short_title(quoted, _ANCHOR_CHARS)
    return anchors


def _notes(
    doc: _Doc,
    zf: SafeArchive,
    main: str,
    lang: str,
    anchors: dict[str, str],
    builder: SectionBuilder,
) -> int:
    """Footnotes, endnotes and comments, each kind its own top-level section after the body;
    every note one paragraph that starts with the mark it has in the body, a comment with
    its number, author and the text it is attached to. Returns the pictures they hold."""
    titles = _NOTE_TITLES.get(lang, _NOTE_TITLES["en"])
    parts = _note_parts(zf, main)
    images = 0
    for _, _, element, kind in _NOTE_PARTS:
        if kind not in parts:
            continue
        root = zf.read_xml(parts[kind])
        images += _images(root)
        notes: list[tuple[int, str]] = []  # (order, text)
        for i, note in enumerate(root.iter(doc.tag(element))):
            if doc.attr(note, "type") in _NOTE_CHROME:
                continue
            text = "\n".join(
                t for p in note.iter(doc.tag("p")) if (t := " ".join(_text(doc, p).split()))
            )
            if not text:
                continue
            if kind == "comments":
                author = " ".join((doc.attr(note, "author") or "").split())
                anchor = anchors.get(doc.attr(note, "id") or "")
                on = f"on “{anchor}”: " if anchor else ""
                notes.append((i, f"[{i + 1}{', ' + author if author else ''}] {on}{text}"))
                continue
            key = (kind, doc.attr(note, "id") or "")
            referenced = key in doc.marks  # else numbered after those the body refers to
            mark = doc.mark(*key)
            order = list(doc.marks).index(key) if referenced else len(doc.marks) + i
            notes.append((order, f"[{mark}] {text}"))
        if notes and builder.heading(titles[kind], 1):
            for _, text in sorted(notes):
                builder.paragraph(text)
    return images


def _running_parts(zf: SafeArchive, main: str) -> list[str]:
    """The header and footer parts the main part links to, headers first, in link order."""
    found: dict[str, list[str]] = {suffix: [] for suffix in _RUNNING_RELS}
    for rel_type, name in _linked_parts(zf, main):
        for suffix in _RUNNING_RELS:
            if rel_type.endswith(suffix) and name not in found[suffix]:
                found[suffix].append(name)
    return [name for suffix in _RUNNING_RELS for name in found[suffix]]


def _running_text(
    doc: _Doc, zf: SafeArchive, main: str, builder: SectionBuilder
) -> tuple[ParseWarning, ...]:
    """For a document with no other text: its headers' and footers' paragraphs, each text
    once (the first page's, even pages' and default header often say the same), as one
    labelled section, and the warning that says so."""
    seen: set[str] = set()
    texts: list[str] = []
    for name in _running_parts(zf, main):
        for p in zf.read_xml(name).iter(doc.tag("p")):
            text = " ".join(_text(doc, p).split())
            if text and text not in seen:
                seen.add(text)
                texts.append(text)
    if not texts:
        return ()
    lang = detect_lang(texts)
    if not builder.heading(_RUNNING_TITLE.get(lang, _RUNNING_TITLE["en"]), 1):
        return ()
    for text in texts:
        builder.paragraph(text)
    return (
        ParseWarning(
            code="running_text_only",
            message="The body of this document is empty; the text of its headers and footers "
            "was imported instead.",
        ),
    )


def _main_part(zf: SafeArchive) -> str:
    if zf.find("_rels/.rels") is not None:
        for rel in zf.read_xml("_rels/.rels").iter(_REL):
            if (rel.get("Type") or "").endswith("/officeDocument") and rel.get("Target"):
                target = posixpath.normpath((rel.get("Target") or "").lstrip("/"))
                if zf.find(target) is not None:
                    return target
    return "word/document.xml"


def _styles(zf: SafeArchive, w: str) -> dict[str, _Style]:
    name = "word/styles.xml"
    if zf.find(name) is None:
        return {}
    styles: dict[str, _Style] = {}
    q = f"{{{w}}}"
    for st in zf.read_xml(name).iter(f"{q}style"):
        style_id = st.get(f"{q}styleId")
        if not style_id or st.get(f"{q}type", "paragraph") != "paragraph":
            continue
        name_el = st.find(f"{q}name")
        based = st.find(f"{q}basedOn")
        outline_el = st.find(f"{q}pPr/{q}outlineLvl")
        outline_val = outline_el.get(f"{q}val") if outline_el is not None else None
        styles[style_id] = _Style(
            (name_el.get(f"{q}val") or "") if name_el is not None else "",
            int(outline_val) if outline_val and outline_val.isdigit() else None,
            based.get(f"{q}val") if based is not None else None,
        )
    return styles


def _core_title(zf: SafeArchive) -> str:
    if zf.find("docProps/core.xml") is None:
        return ""
    el = zf.read_xml("docProps/core.xml").find(_DC_TITLE)
    return strip_site_suffix(short_title(el.text or ""), any_site=False) if el is not None else ""


def parse_docx(path: Path, limits: ParseLimits) -> ParsedDocument:
    builder = SectionBuilder(limits.max_sections)
    with SafeArchive(path, limits, _KIND) as zf:
        main = _main_part(zf)
        root = zf.read_xml(main)
        w = next((ns for ns in _MAIN_NAMESPACES if root.tag == f"{{{ns}}}document"), None)
        # One body, as Word writes it; a file with several (a broken writer's) is read whole,
        # as Apache POI and Tika read it.
        bodies = root.findall(f"{{{w}}}body") if w else []
        if w is None or not bodies:
            raise ParseError(
                "corrupt",
                "This Word document has no document body Citewise can read; open and save it "
                "again in Word or LibreOffice and import it again.",
            )
        doc = _Doc(w, _styles(zf, w))
        title = _core_title(zf) or builder.first_heading or ""
        for body in bodies:
            _walk(doc, body, builder)
        _flush_initial(doc, builder)
        title = title or builder.first_heading or path.stem
        lang = detect_lang(builder.texts())
        images = sum(map(_images, bodies))
        images += _notes(doc, zf, main, lang, _comment_anchors(doc, root), builder)
        running: tuple[ParseWarning, ...] = ()
        if not any(builder.texts()):
            running = _running_text(doc, zf, main, builder)
            lang = detect_lang(builder.texts())
    sections = builder.finish(title)
    return ParsedDocument(
        title=title,
        lang=lang,
        format="docx",
        sections=sections,
        warnings=(*running, *images_not_read(images, "document")),
    )
