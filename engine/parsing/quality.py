"""Whether a page's extracted text is text a person could read, or the debris of a font
without a Unicode mapping (control characters, private-use glyph codes, U+FFFD, C1-range
mojibake such as Shift-JIS bytes read as Latin-1, pdfminer's "(cid:N)" runs).

Pure and cheap (one pass over the page's characters); it only judges, never changes text.
"""

from __future__ import annotations

import re

import msgspec

from engine.parsing.lines import is_cjk

# A page is unreadable when at least this share of its visible characters is debris…
MAX_DEBRIS_SHARE = 0.2
# …or, once it has enough characters to judge, when letters and digits are this rare among
# them (runs of one repeated character, such as dot leaders, count once).
MIN_LETTER_SHARE = 0.25
MIN_CHARS_FOR_LETTER_SHARE = 20
# A document whose readable pages hold less than this share of its visible characters is
# unreadable as a whole.
MIN_READABLE_DOCUMENT_SHARE = 0.5
# A page of spaced script (not mostly Chinese or Japanese) whose text lost at least this many
# control characters, more than it has spaces, is unreadable however few they are: its words
# are joined by control codes. That is a font whose codes are glyph numbers: the classic
# TrueType one shifts every character down by 29, so each space becomes U+0003 and the letters
# stay letters ("Peníze" as "3HQČåQt"); only the spaces give it away.
MIN_CONTROLS_FOR_SPACES = 3

_CID = re.compile(r"\(cid:\d+\)")
_RUNS = re.compile(r"(\S)\1+")
_LETTER_RUNS = re.compile(r"[^\W_]+")  # the letters and digits of every script
# Never text: C0/C1 controls and DEL; private use (a glyph code, not a character) except
# U+F000..U+F0FF, where Symbol and Wingdings fonts put their bullets and signs (Word's list
# bullet is U+F0B7): a page of short bulleted items is not garbled; U+FFFD and noncharacters
# (U+FFFE, U+FFFF, U+FDD0..U+FDEF); lone surrogates.
_DEBRIS = re.compile(
    "[\x00-\x1f\x7f-\x9f\ud800-\udfff\ue000-\uefff\uf100-\uf8ff\ufdd0-\ufdef\ufffd-\uffff"
    "\U000f0000-\U0010ffff]+"
)


class PageQuality(msgspec.Struct, frozen=True):
    """The counts a verdict is made from, for one page."""

    chars: int  # visible characters, control characters included
    debris: int  # control, private-use, replacement and noncharacters, (cid:N) runs
    letters: int  # letters and digits (of `collapsed`)
    collapsed: int  # visible characters without controls; repeated runs collapsed when the
    # letter share of the plain text is too low (dot leaders are not a lack of letters)
    controls_for_spaces: bool = False  # see MIN_CONTROLS_FOR_SPACES

    @property
    def readable(self) -> bool:
        if self.chars == 0:
            return True  # nothing to judge: an empty page is not garbled
        if self.controls_for_spaces or self.debris >= MAX_DEBRIS_SHARE * self.chars:
            return False
        if self.collapsed >= MIN_CHARS_FOR_LETTER_SHARE:
            return self.letters >= MIN_LETTER_SHARE * self.collapsed
        return True


# Every byte but an ASCII letter or digit: what `bytes.translate` deletes to leave those.
_NOT_ALNUM_BYTES = bytes(b for b in range(256) if not chr(b).isalnum() or b > 0x7F)


def _letters(text: str) -> int:
    """How many letters and digits (of any script) `text` holds."""
    if text.isascii():  # the common case, counted by deleting bytes
        return len(text.encode("ascii").translate(None, _NOT_ALNUM_BYTES))
    return sum(map(len, _LETTER_RUNS.findall(text)))


def page_quality(texts: list[str], controls: int = 0) -> PageQuality:
    """The counts for a page whose lines are `texts`; `controls` are control characters the
    extraction already removed from them (they count as debris).

    Runs on every page, so it counts in C (deleting what is not counted and comparing
    lengths, or summing the lengths of runs); debris is sought only in text that is not
    printable or not ASCII, and repeated runs are collapsed only when the plain letter share
    would fail."""
    lines = "".join(texts)
    text = "".join(lines.split())
    spaces = len(lines) - len(text)
    controls_for_spaces = (
        controls >= MIN_CONTROLS_FOR_SPACES
        and controls > spaces
        and sum(map(is_cjk, text)) < len(text) / 2  # Chinese and Japanese need no spaces
    )
    chars = len(text) + controls
    debris = controls
    if "(cid:" in text:
        stripped = _CID.sub("", text)
        debris += len(text) - len(stripped)
        text = stripped
    if not text.isprintable():
        debris += len(text) - len(_DEBRIS.sub("", text))
    elif not text.isascii():  # of the debris, only U+FFFD is printable
        debris += text.count("\ufffd")
    letters = _letters(text)
    total = len(text)
    if total >= MIN_CHARS_FOR_LETTER_SHARE and letters < MIN_LETTER_SHARE * total:
        collapsed = _RUNS.sub(r"\1", text)
        letters = _letters(collapsed)
        total = len(collapsed)
    return PageQuality(
        chars=chars,
        debris=debris,
        letters=letters,
        collapsed=total,
        controls_for_spaces=controls_for_spaces,
    )
