"""Text helpers every parser shares: control-character cleanup, CJK-aware line joining,
HTML-style whitespace collapsing and display width.

Pure functions that never drop a visible character: only C0 controls (except \\n and \\t)
are removed, and joining only decides between "", " " and "\\n".
"""

from __future__ import annotations

import re
import unicodedata

# C0 controls except \t (09) and \n (0A), plus DEL. \r, \v and \f are turned into \n first.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")
_WS = re.compile(r"\s+")
_HYPHEN_END = re.compile(r"[^\W\d_]-$")


def is_cjk(ch: str) -> bool:
    """Han, kana, CJK punctuation and full-width forms: scripts written without spaces."""
    o = ord(ch)
    return (
        0x4E00 <= o <= 0x9FFF  # CJK unified ideographs
        or 0x3400 <= o <= 0x4DBF  # extension A
        or 0x3000 <= o <= 0x30FF  # CJK punctuation, hiragana, katakana
        or 0xFF00 <= o <= 0xFFEF  # full-width forms (，：（）)
        or 0xF900 <= o <= 0xFAFF  # compatibility ideographs
        or 0x20000 <= o <= 0x2FA1F  # extensions B..F, compatibility supplement
        or 0x31C0 <= o <= 0x31FF  # CJK strokes
        or 0xFE30 <= o <= 0xFE4F  # CJK compatibility forms
    )


def clean_text(text: str) -> str:
    """Normalise line ends and strip NUL and other C0 control characters except \\n and \\t."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\x0b" in text or "\x0c" in text:
        text = text.replace("\x0b", "\n").replace("\x0c", "\n")
    return _CONTROL.sub("", text)


def glue(left: str, right: str) -> str:
    """What goes between the end of one wrapped line and the start of the next."""
    if not left or not right:
        return ""
    a, b = left[-1], right[0]
    if is_cjk(a) and is_cjk(b):
        return ""
    if a == "-" and b.islower() and _HYPHEN_END.search(left[-2:]):
        return ""  # a word broken at a hyphen: keep the hyphen, drop the break
    return " "


def join_lines(lines: list[str]) -> str:
    """Join the hard-wrapped lines of one paragraph into one line of text."""
    out = ""
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        out = line if not out else out + glue(out, line) + line
    return out


def collapse_whitespace(text: str) -> str:
    """HTML-style: every whitespace run becomes one space, except that a run containing a
    line break between two CJK characters disappears (a source line wrap, not a space)."""

    def repl(m: re.Match[str]) -> str:
        s, e = m.start(), m.end()
        joins_cjk = s > 0 and e < len(text) and is_cjk(text[s - 1]) and is_cjk(text[e])
        return "" if joins_cjk and "\n" in m.group(0) else " "

    return _WS.sub(repl, text).strip()


def tidy_block(text: str) -> str:
    """A preformatted block (code, listing): keep its lines, drop trailing spaces and the
    blank lines around it."""
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines)


def display_width(text: str) -> int:
    """Columns the text takes in a monospaced terminal: wide East Asian characters count 2."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def short_title(text: str, limit: int = 300) -> str:
    """A heading as a one-line title, cut at `limit` characters."""
    title = " ".join(text.split())
    if len(title) > limit:
        title = title[: limit - 1].rstrip() + "…"
    return title
