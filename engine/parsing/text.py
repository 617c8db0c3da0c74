"""Plain text to sections: strict decoding, numbered and underlined headings, paragraphs.

Decoding never guesses silently: BOM, then strict UTF-8, then GB18030 or Big5 only when the
result reads as Chinese, then UTF-8 with a few bad bytes replaced or mostly-ASCII Windows-1252,
each with a warning; anything else fails with "invalid_encoding". A run of heading-like lines
with no text between them (a table of contents) stays body text.
"""

from __future__ import annotations

import codecs
import itertools
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from engine.errors import ParseError
from engine.parsing.lang import detect_lang
from engine.parsing.limits import ParseLimits
from engine.parsing.lines import clean_text, display_width, is_cjk, join_lines
from engine.parsing.model import ParsedDocument, ParseWarning
from engine.parsing.sections import SectionBuilder

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_BINARY_CONTROL = re.compile("[\x00-\x08\x0e-\x1a\x1c-\x1f]")
_MAX_BAD_SEQUENCES = 1000
# Windows-1252's printable characters in the C1 range; its five unassigned bytes stay Latin-1.
_CP1252 = {
    b: bytes([b]).decode("cp1252") for b in range(0x80, 0xA0) if b not in b"\x81\x8d\x8f\x90\x9d"
}
_WESTERN_PUNCT = frozenset("‘’‚“”„–—…•·«»¡¿°©®™€£¥§¶×÷±ªº¹²³¼½¾\xa0´¨¸¯¦¤¢")

_CN_NUM = "0-9零〇一二三四五六七八九十百千两"
_CHAPTER = re.compile(rf"^第\s*[{_CN_NUM}]+\s*([章篇部卷节])\s*\S")
_APPENDIX = re.compile(
    r"^(附录\s*[A-Z]\b\.?|(?i:appendix)\s+[A-Z]\b[.:]?|(?i:chapter)\s+\d+\b[.:]?)\s*\S"
)
_NUMBERED = re.compile(r"^(\d{1,3}|[A-Z])((?:\.\d{1,3})*)(\.?)\s+\S")
_UNDERLINE = re.compile(r"^(=+|-+)\s*$")
_RULE = re.compile(r"^\s*([-=*_~#])\1{2,}\s*$")
_BULLET = re.compile(r"^\s*([*+•·◦▪‣-]|\d{1,3}[.)])\s+\S")
_PROMPT = re.compile(r"^\s*(\$|#|%|>>>|C:\\>)\s")
_TABLE_RULE = re.compile(r"^\s*[|+].*[|+]\s*$")
_NO_HEADING_END = frozenset("。．.！!；;，,、：:")
_MAX_HEADING_WIDTH = 100


class DecodedText(NamedTuple):
    text: str
    warnings: tuple[ParseWarning, ...] = ()


def decode_text(data: bytes) -> DecodedText:
    """Decode a text file or fail with ParseError("invalid_encoding").

    Strict UTF-8 (BOM or not), UTF-16/32, Chinese GB18030 or Big5; then UTF-8 whose few bad bytes
    become U+FFFD; then Windows-1252/Latin-1 for mostly-ASCII Western text. Both of the last
    two carry a warning, since they are a judgement rather than a certainty."""
    for bom, codec in _BOMS:
        if data.startswith(bom):
            if codec == "utf-8-sig":
                return _decode_utf8(data[len(bom) :])
            try:
                return DecodedText(check_not_binary(data.decode(codec)))
            except UnicodeDecodeError:
                raise _encoding_error() from None
    utf16 = _utf16_without_bom(data)
    if utf16 is not None:
        return DecodedText(check_not_binary(utf16))
    return _decode_utf8(data)


def _decode_utf8(data: bytes) -> DecodedText:
    try:
        return DecodedText(check_not_binary(data.decode("utf-8")))
    except UnicodeDecodeError:
        pass
    try:
        text = data.decode("gb18030")
    except UnicodeDecodeError:
        text = ""
    if text and _reads_as_chinese(text):
        return DecodedText(text)
    big5 = _big5(data)
    if big5 is not None:
        return DecodedText(big5)
    replaced, bad = utf8_replacing(data)
    multibyte = sum(1 for ch in replaced if ord(ch) > 0x7F and ch != "\ufffd")
    if len(bad) <= _MAX_BAD_SEQUENCES and 4 * len(bad) <= multibyte:
        return with_replacements(data, replaced, bad)
    western = _western(data)
    if western is not None:
        return DecodedText(
            check_not_binary(western),
            (
                ParseWarning(
                    code="legacy_encoding",
                    message="This file is not UTF-8; it was read as Western European text "
                    "(Windows-1252/Latin-1). If accented letters look wrong, save it as "
                    "UTF-8 and import it again.",
                ),
            ),
        )
    bad_bytes = sum(end - start for start, end in bad)
    if len(bad) <= _MAX_BAD_SEQUENCES and bad_bytes <= max(4, len(data) // 1000):
        return with_replacements(data, replaced, bad)
    raise _encoding_error()


def utf8_replacing(data: bytes) -> tuple[str, list[tuple[int, int]]]:
    """UTF-8 with each invalid sequence as U+FFFD (as errors="replace" does), and where the
    invalid sequences were (byte offsets); stops listing after a hopeless number of them."""
    view = memoryview(data)
    parts: list[str] = []
    bad: list[tuple[int, int]] = []
    pos = 0
    while pos < len(data):
        try:
            parts.append(codecs.utf_8_decode(view[pos:], "strict", True)[0])
            break
        except UnicodeDecodeError as exc:
            parts.append(codecs.utf_8_decode(view[pos : pos + exc.start], "strict", True)[0])
            parts.append("\ufffd")
            bad.append((pos + exc.start, pos + exc.end))
            pos += exc.end
            if len(bad) > _MAX_BAD_SEQUENCES:
                return data.decode("utf-8", errors="replace"), bad
    return "".join(parts), bad


def with_replacements(data: bytes, text: str, bad: list[tuple[int, int]]) -> DecodedText:
    count = sum(end - start for start, end in bad)
    lines = sorted({data.count(b"\n", 0, start) + 1 for start, _ in bad})
    shown = ", ".join(str(n) for n in lines[:10]) + (" …" if len(lines) > 10 else "")
    where = f"line {shown}" if len(lines) == 1 else f"lines {shown}"
    noun = (
        "byte that is not valid UTF-8 was" if count == 1 else "bytes that are not valid UTF-8 were"
    )
    return DecodedText(
        check_not_binary(text),
        (
            ParseWarning(
                code="replaced_bytes",
                message=f"{count} {noun} replaced with \ufffd ({where}); "
                "the rest of the text was read as written.",
                count=count,
            ),
        ),
    )


def _western(data: bytes) -> str | None:
    """Windows-1252 (Latin-1 for its five unassigned bytes) when the result reads as Western
    text: mostly ASCII letters, and the others letters or ordinary typography."""
    text = data.decode("latin-1").translate(_CP1252)
    non_ascii = [ch for ch in text[:500_000] if ord(ch) > 0x7F]
    letters = sum(1 for ch in text[:500_000] if ch.isalpha())
    if not non_ascii or not letters:
        return None
    plausible = sum(1 for ch in non_ascii if ch.isalpha() or ch in _WESTERN_PUNCT)
    if plausible < 0.9 * len(non_ascii) or len(non_ascii) > 0.3 * letters:
        return None
    return text


def _utf16_without_bom(data: bytes) -> str | None:
    """ASCII-heavy UTF-16 without a BOM: every other byte is NUL."""
    sample = data[:4096]
    if len(sample) < 8 or len(sample) % 2:
        return None
    even = sample[0::2].count(0) / (len(sample) / 2)
    odd = sample[1::2].count(0) / (len(sample) / 2)
    codec = "utf-16-le" if odd > 0.4 and even < 0.05 else None
    codec = "utf-16-be" if even > 0.4 and odd < 0.05 else codec
    if codec is None or len(data) % 2:
        return None
    try:
        return data.decode(codec)
    except UnicodeDecodeError:
        return None


def _non_ascii(text: str) -> Counter[str] | None:
    """The non-ASCII characters of the text's first 500,000, with their counts (a document
    repeats its characters, so each is looked up once); None when there are none or the text
    holds controls that mark binary data."""
    if _BINARY_CONTROL.search(text):
        return None
    counts = Counter(ch for ch in text[:500_000] if ord(ch) > 0x7F)
    return counts or None


def _reads_as_chinese(text: str) -> bool:
    """GB18030 decodes almost any byte soup into Han characters, so demand real Chinese:
    mostly CJK among the non-ASCII characters, and mostly the common GB2312 ones (UTF-8 bytes
    misread as GB18030 give rare characters). Two other encodings share GB2312's byte layout:
    Japanese EUC-JP reads with its kana right and its kanji wrong (a tenth of kana is Japanese,
    not Chinese), and Korean EUC-KR reads as the Hanzi of GB2312's rows 16-40, where KS X 1001
    keeps its Hangul (Chinese text takes most of its characters from the other rows)."""
    counts = _non_ascii(text)
    if counts is None:
        return False
    total = counts.total()
    lead = {ch: _gb2312_lead(ch) for ch in counts}
    cjk = sum(n for ch, n in counts.items() if is_cjk(ch))
    kana = sum(n for ch, n in counts.items() if "\u3041" <= ch <= "\u30fa")
    common = sum(1 for ch in counts if lead[ch])
    han = {ch: n for ch, n in counts.items() if "\u4e00" <= ch <= "\u9fff"}
    hangul_rows = sum(n for ch, n in han.items() if lead[ch] in _HANGUL_ROWS)
    return (
        cjk >= 0.8 * total
        and kana < 0.1 * total
        and common >= 0.8 * len(counts)
        and not (sum(han.values()) >= 20 and hangul_rows >= 0.9 * sum(han.values()))
    )


# GB2312 lead bytes of the rows where EUC-KR (KS X 1001) has its Hangul syllables.
_HANGUL_ROWS = range(0xB0, 0xC9)


def _gb2312_lead(ch: str) -> int:
    """The first byte of `ch` in GB2312, 0 when GB2312 has no such character."""
    try:
        return ch.encode("gb2312")[0]
    except UnicodeEncodeError:
        return 0


def _big5(data: bytes) -> str | None:
    """Traditional Chinese in Big5 (as Windows code page 950 extends it), when it reads as
    Chinese: mostly CJK, mostly Big5's frequent characters (its first level, lead bytes
    0xA4-0xC6) and punctuation (0xA1-0xA3), and some second bytes under 0x80, which Big5 has
    (63 of its 157) and the EUC encodings never do. Tried after GB18030, whose reading of
    Big5 bytes gives kana, Greek and rare characters and is refused."""
    try:
        text = data.decode("cp950")
    except UnicodeDecodeError:
        return None
    counts = _non_ascii(text)
    if counts is None:
        return None
    total = counts.total()
    code = {ch: ch.encode("cp950") for ch in counts}
    cjk = sum(n for ch, n in counts.items() if is_cjk(ch))
    frequent = sum(1 for ch in counts if 0xA1 <= code[ch][0] <= 0xC6)
    low_trail = sum(n for ch, n in counts.items() if len(code[ch]) == 2 and code[ch][1] < 0x80)
    if cjk >= 0.8 * total and frequent >= 0.8 * len(counts) and low_trail >= 0.1 * total:
        return text  # free of binary controls: _non_ascii found none
    return None


def check_not_binary(text: str) -> str:
    """The text itself, unless control characters show it is binary data misnamed as text."""
    controls = len(_BINARY_CONTROL.findall(text[:100_000]))
    if controls > 8 and controls > 0.02 * min(len(text), 100_000):
        raise ParseError(
            "invalid_encoding",
            "This file looks like binary data rather than text; check that it is the document "
            "you meant, or save it as UTF-8 text and import it again.",
        )
    return text


def _encoding_error() -> ParseError:
    return ParseError(
        "invalid_encoding",
        "This text file is not in an encoding Citewise can read reliably (UTF-8, UTF-16, "
        "Chinese GB18030 or Big5, or Western European Windows-1252); save it as UTF-8 in a "
        "text editor and import it again.",
    )


def heading_depth(line: str) -> int | None:
    """Depth of a heading-like line (already stripped), or None if it does not look like one."""
    if not line or display_width(line) > _MAX_HEADING_WIDTH or line[-1] in _NO_HEADING_END:
        return None
    m = _CHAPTER.match(line)
    if m:
        return 2 if m.group(1) == "节" else 1
    if _APPENDIX.match(line):
        return 1
    m = _NUMBERED.match(line)
    if m:
        first, rest, dot = m.groups()
        components = 1 + rest.count(".")
        if components == 1 and not dot:
            return None  # "3 apples" is a sentence; "3. Setup" is a heading
        if first.isalpha() and not dot and not rest:
            return None
        return components
    return None


@dataclass
class _Heading:
    line: int
    depth: int
    underline: bool = False


def _find_headings(lines: list[str]) -> list[_Heading]:
    n = len(lines)
    blank = [not line.strip() for line in lines]
    like = [None if blank[i] else heading_depth(lines[i].strip()) for i in range(n)]
    headings: list[_Heading] = []
    i = 0
    while i < n:
        if _underlined(lines, blank, i):
            depth = 1 if lines[i + 1].lstrip()[0] == "=" else 2
            headings.append(_Heading(i, depth, underline=True))
            i += 2
            continue
        if like[i] is None:
            i += 1
            continue
        # A run: heading-like lines with no body text between them. An indented one only
        # continues a run on the very next line (a contents listing), never after a blank.
        run = [i]
        j = i + 1
        while j < n and (blank[j] or like[j] is not None):
            if not blank[j]:
                if lines[j][0].isspace() and j != run[-1] + 1:
                    break
                run.append(j)
            j += 1
        if _is_heading_run(run, lines, like):
            for k in run:
                if not lines[k][0].isspace() and (k == 0 or blank[k - 1]):
                    level = like[k]
                    assert level is not None
                    headings.append(_Heading(k, level))
        i = run[-1] + 1
    return headings


def _underlined(lines: list[str], blank: list[bool], i: int) -> bool:
    """A short unindented line set off above, with a line of === or --- right under it."""
    if i + 1 >= len(lines) or blank[i] or lines[i][0].isspace() or (i > 0 and not blank[i - 1]):
        return False
    rule = lines[i + 1].strip()
    return (
        _UNDERLINE.match(rule) is not None
        and len(rule) >= 3
        and display_width(rule) * 2 >= display_width(lines[i].strip())
        and display_width(lines[i]) <= _MAX_HEADING_WIDTH
    )


def _is_heading_run(run: list[int], lines: list[str], like: list[int | None]) -> bool:
    """Short runs are headings; 3+ are a table of contents unless they step strictly deeper
    (chapter, section, subsection), each set off by a blank line and unindented."""
    if len(run) < 3:
        return all(b - a > 1 for a, b in itertools.pairwise(run))
    for a, b in itertools.pairwise(run):
        da, db = like[a], like[b]
        if b - a < 2 or da is None or db is None or db <= da:
            return False
    return all(not lines[k][0].isspace() for k in run)


def _wrap_width(lines: list[str]) -> int:
    widths = sorted(display_width(line) for line in lines if line.strip())
    if not widths:
        return 80
    return max(20, widths[int(len(widths) * 0.9)])


def _first_token_width(line: str) -> int:
    stripped = line.strip()
    if not stripped:
        return 0
    if is_cjk(stripped[0]):
        return display_width(stripped[0])  # CJK text may break before any character
    return display_width(stripped.split()[0])


def _wrapped(line: str, nxt: str, wrap: int) -> bool:
    """The line ended only because the next line's first word would not fit on it."""
    return display_width(line) + 1 + _first_token_width(nxt) > 0.92 * wrap


def _emit_block(block: list[str], wrap: int, builder: SectionBuilder) -> None:
    """One blank-line-separated block: split at list bullets, then prose or preformatted."""
    if len(block) == 1 and _RULE.match(block[0]):
        return  # a decorative line of ---- or ====
    items: list[list[str]] = []
    for line in block:
        if not items or _BULLET.match(line):
            items.append([line])
        else:
            items[-1].append(line)
    for item in items:
        prose = all(_wrapped(a, b, wrap) for a, b in itertools.pairwise(item)) and not any(
            _PROMPT.match(line) or _TABLE_RULE.match(line) for line in item
        )
        if prose:
            builder.paragraph(join_lines(item))
        else:
            indent = min(len(line) - len(line.lstrip()) for line in item)
            builder.paragraph("\n".join(line[indent:] for line in item), preformatted=True)


def parse_text(path: Path, data: bytes, limits: ParseLimits) -> ParsedDocument:
    decoded = decode_text(data)
    text = clean_text(decoded.text)
    lines = [line.rstrip() for line in text.split("\n")]
    headings = _find_headings(lines)
    wrap = _wrap_width(lines)
    builder = SectionBuilder(limits.max_sections)
    at = {h.line: h for h in headings}
    block: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        heading = at.get(i)
        if heading is not None or not line.strip():
            if block:
                _emit_block(block, wrap, builder)
                block = []
            if heading is not None:
                builder.heading(line.strip(), heading.depth)
                i += 2 if heading.underline else 1
                continue
        else:
            block.append(line)
        i += 1
    if block:
        _emit_block(block, wrap, builder)
    title = _first_line_title(lines) or builder.first_heading or path.stem
    sections = builder.finish(title)
    return ParsedDocument(
        title=title,
        lang=detect_lang(builder.texts()),
        format="text",
        sections=sections,
        warnings=decoded.warnings,
    )


def _first_line_title(lines: list[str]) -> str | None:
    """A short first line set off by a blank line (or an underline) names the document."""
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        stripped = line.strip()
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if display_width(stripped) > 80 or heading_depth(stripped) is not None:
            return None
        if not nxt.strip() or _UNDERLINE.match(nxt):
            return stripped
        return None
    return None
