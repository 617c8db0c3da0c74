"""Markdown to sections: ATX and setext headings, paragraphs, code blocks kept verbatim.

One pass over the lines with no backtracking regexes, so time is linear in the file size.
Nothing inside fenced or indented code, front matter or HTML comments is ever taken for a
heading. Body text is kept as written; heading titles are shown without inline markup. A page's
<script> and <style> blocks and paragraphs of HTML tags alone hold no text and are not kept.
"""

from __future__ import annotations

import re
from pathlib import Path

from engine.parsing.lang import detect_lang
from engine.parsing.limits import ParseLimits
from engine.parsing.lines import clean_text, join_lines, short_title
from engine.parsing.model import ParsedDocument
from engine.parsing.sections import SectionBuilder
from engine.parsing.text import decode_text

_LIST_ITEM = re.compile(r"^ {0,3}(?:[*+-]|\d{1,9}[.)])(?:[ \t]|$)")
_LINK_DEF = re.compile(r"^ {0,3}\[[^\]\n]{1,999}\]:[ \t]*\S")
_TITLE_FIELD = re.compile(r"^title\s*[:=](.*)$")
_INLINE_TITLE_MAX = 300

# Applied only to heading titles, which are cut to _INLINE_TITLE_MAX characters first.
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\](?:\([^)]*\)|\[[^\]]*\])")
_AUTOLINK = re.compile(r"<((?:https?|ftp|mailto):[^>\s]+)>")
# An HTML start or end tag, and not an autolink ("<https://…>", "<a@b.org>").
_HTML_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^>]*)?/?>")
# The start of an HTML block whose content is no text a reader sees (CommonMark type 1, minus
# <pre> and <textarea>, which hold text).
_RAW_HTML_BLOCK = re.compile(r"<(script|style)(?:\s|>|$)", re.IGNORECASE)
_STRONG = re.compile(r"(\*{1,3})(\S(?:[^*]*?\S)?)\1")
_UNDERSCORE = re.compile(r"(?<!\w)(_{1,3})(\S(?:[^_]*?\S)?)\1(?!\w)")
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


def inline_text(text: str) -> str:
    """A heading's visible text: links, images, emphasis, code spans and tags unwrapped."""
    text = text[:_INLINE_TITLE_MAX]
    text = _IMAGE.sub(r"\1", text)
    text = _LINK.sub(r"\1", text)
    text = _AUTOLINK.sub(r"\1", text)
    text = _HTML_TAG.sub("", text)
    text = text.replace("`", "")
    text = _STRONG.sub(r"\2", text)
    text = _UNDERSCORE.sub(r"\2", text)
    return _ESCAPE.sub(r"\1", text)


def _indent(line: str) -> int:
    n = 0
    for ch in line:
        if ch == " ":
            n += 1
        elif ch == "\t":
            n += 4 - n % 4
        else:
            break
    return n


def _atx(stripped: str) -> tuple[int, str] | None:
    """(level, content) for an ATX heading line (leading spaces already removed)."""
    level = len(stripped) - len(stripped.lstrip("#"))
    if not 1 <= level <= 6:
        return None
    rest = stripped[level:]
    if rest and rest[0] not in " \t":
        return None
    content = rest.strip()
    if content.endswith("#"):
        trimmed = content.rstrip("#")
        if not trimmed:
            content = ""
        elif trimmed[-1] in " \t":
            content = trimmed.rstrip()
    return level, content


def _only(stripped: str, chars: str) -> bool:
    return bool(stripped) and not set(stripped) - set(chars)


def _front_matter(lines: list[str]) -> tuple[int, str | None]:
    """(lines to skip, title) for YAML (---) or TOML (+++) front matter at the very top."""
    if not lines or lines[0].strip() not in ("---", "+++"):
        return 0, None
    fence = lines[0].strip()
    ends = (fence, "...") if fence == "---" else (fence,)
    for i in range(1, min(len(lines), 1000)):
        if lines[i].strip() in ends:
            title = None
            for line in lines[1:i]:
                m = _TITLE_FIELD.match(line)
                if m:
                    title = m.group(1).strip().strip("'\"") or None
                    break
            return i + 1, title
    return 0, None


class _Reader:
    def __init__(self, builder: SectionBuilder) -> None:
        self.b = builder
        self.para: list[str] = []
        self.kind = "text"  # "text" | "item" | "table" | "defs"
        self.in_list = False

    def flush(self) -> None:
        if self.para:
            if self.kind in ("table", "defs"):
                self.b.paragraph("\n".join(line.strip() for line in self.para), preformatted=True)
            else:
                text = join_lines(self.para)
                # HTML tags and nothing else ("<div class=…>", "</details>"): no text to keep
                if _HTML_TAG.sub("", text).strip():
                    self.b.paragraph(text)
        self.para = []
        self.kind = "text"

    def add(self, line: str, kind: str) -> None:
        if self.para and (kind != self.kind or kind == "item") and kind != "cont":
            self.flush()
        if kind != "cont":
            self.kind = kind
        self.para.append(line)

    def heading(self, level: int, content: str) -> None:
        self.flush()
        self.b.heading(inline_text(content) or content, level, text=content)
        self.in_list = False

    def read(self, lines: list[str], start: int) -> None:
        i, n = start, len(lines)
        while i < n:
            line = lines[i]
            stripped = line.strip()
            indent = _indent(line)
            if not stripped:
                self.flush()
                i += 1
                continue
            fence = stripped[:3]
            if fence in ("```", "~~~"):
                i = self._fenced(lines, i)
                continue
            if stripped.startswith("<!--"):
                i = self._comment(lines, i)
                continue
            raw = _RAW_HTML_BLOCK.match(stripped) if indent <= 3 and not self.para else None
            if raw is not None:  # a script or style of the page the Markdown becomes
                i = self._raw_block(lines, i, raw.group(1).lower())
                continue
            if indent >= 4 and not self.para and not self.in_list:
                i = self._indented(lines, i)
                continue
            if indent <= 3 and stripped[0] == "#":
                atx = _atx(stripped)
                if atx is not None:
                    self.heading(*atx)
                    i += 1
                    continue
            setext = _only(stripped, "=") or _only(stripped, "-")
            if setext and indent <= 3 and self.para and self.kind == "text":
                content, self.para = join_lines(self.para), []
                self.heading(1 if stripped[0] == "=" else 2, content)
                i += 1
                continue
            if (
                indent <= 3
                and len(stripped) >= 3
                and any(_only(stripped.replace(" ", "").replace("\t", ""), c) for c in "*-_")
            ):
                self.flush()  # thematic break
                self.in_list = False
                i += 1
                continue
            if _LIST_ITEM.match(line):
                self.in_list = True
                self.add(line, "item")
            elif stripped.startswith("|"):
                self.add(line, "table")
            elif _LINK_DEF.match(line):
                self.add(line, "defs")
            elif self.para and self.kind in ("text", "item"):
                self.add(line, "cont")
            else:
                if indent == 0:
                    self.in_list = False
                self.add(line, "text")
            i += 1
        self.flush()

    def _fenced(self, lines: list[str], i: int) -> int:
        self.flush()
        opening = lines[i].strip()
        char = opening[0]
        width = len(opening) - len(opening.lstrip(char))
        indent = _indent(lines[i])
        body: list[str] = []
        j = i + 1
        while j < len(lines):
            s = lines[j].strip()
            if s and _only(s, char) and len(s) >= width:
                j += 1
                break
            line = lines[j]
            body.append(line[min(indent, _indent(line)) :] if indent else line)
            j += 1
        self.b.paragraph("\n".join(body), preformatted=True)
        return j

    def _comment(self, lines: list[str], i: int) -> int:
        self.flush()
        j = i
        first = lines[i].strip()[4:]
        if "-->" in first:
            return i + 1
        j += 1
        while j < len(lines) and "-->" not in lines[j]:
            j += 1
        return j + 1

    def _raw_block(self, lines: list[str], i: int, tag: str) -> int:
        """Skip a <script> or <style> block (CommonMark's HTML block of type 1): it ends on
        the line that holds its end tag."""
        self.flush()
        end = f"</{tag}>"
        j = i
        while j < len(lines) and end not in lines[j].lower():
            j += 1
        return j + 1

    def _indented(self, lines: list[str], i: int) -> int:
        body: list[str] = []
        j = i
        while j < len(lines) and (not lines[j].strip() or _indent(lines[j]) >= 4):
            body.append(lines[j][4:] if lines[j].startswith("    ") else lines[j].lstrip())
            j += 1
        self.b.paragraph("\n".join(body), preformatted=True)
        return j


def parse_markdown(path: Path, data: bytes, limits: ParseLimits) -> ParsedDocument:
    decoded = decode_text(data)
    lines = clean_text(decoded.text).split("\n")
    skip, front_title = _front_matter(lines)
    builder = SectionBuilder(limits.max_sections)
    _Reader(builder).read(lines, skip)
    title = short_title(front_title or "") or builder.first_heading or path.stem
    sections = builder.finish(title)
    return ParsedDocument(
        title=title,
        lang=detect_lang(builder.texts()),
        format="markdown",
        sections=sections,
        warnings=decoded.warnings,
    )
