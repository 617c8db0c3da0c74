r"""Counting DeepSeek tokens without the tokenizer's regex engine, exactly.

Profiling an import showed that most of the tokenizer's time goes to its pre-tokenizer: three
regex splits run by Oniguruma, about half a microsecond per character. The byte-pair merges
after it are cheap, and a document repeats its words thousands of times. So for text made of
characters whose Unicode classes are settled (ASCII, Latin letters and marks, CJK and kana,
common punctuation and symbols), this module splits the text into the very pre-tokens the
tokenizer would, with Python's `re` (one pattern, one pass), and counts each distinct
pre-token once with the tokenizer's own BPE model. Any other text, and any text holding an
added token, is cut at word boundaries that every pre-tokenization shares; pieces of the
known alphabet are counted here, the rest by the tokenizer itself.

The pre-tokenizer it reproduces is DeepSeek's (engine.tokens checks the tokenizer.json's
pre-tokenizer by hash before using this), applied in sequence to each piece of the one before:

1. `\p{N}{1,3}` (digit runs cut into threes),
2. `[一-龥぀-ゟ゠-ヿ]+` (CJK and kana runs),
3. six alternatives: `[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+`,
   `[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+`, ` ?[\p{P}\p{S}]+[\r\n]*`, `\s*[\r\n]+`,
   `\s+(?!\S)` and `\s+`;

then ByteLevel (bytes to printable characters) and BPE. `_pattern` below builds those
three splits as one pattern over the alphabet: a digit or CJK run is matched before anything else
can reach it, no other alternative consumes a digit or CJK character, and `(?!\S)` also holds
before a digit or CJK character, where the tokenizer's piece ends.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable

# -- the alphabet -------------------------------------------------------------------------------

# Blocks whose characters have had the same general category (at the level of L, M, P, S) for
# many Unicode versions; only the letters, marks, punctuation and symbols among them are used.
_BLOCKS = (
    (0x00A1, 0x00FF),  # Latin-1 punctuation, symbols and letters
    (0x0100, 0x017F),  # Latin Extended-A
    (0x0300, 0x036F),  # combining diacritical marks
    (0x2010, 0x2027),  # dashes, quotation marks, bullets, ellipsis
    (0x2030, 0x205E),  # per mille, primes, angle quotes
    (0x2190, 0x22FF),  # arrows, mathematical operators
    (0x2500, 0x25FF),  # box drawing, block elements, geometric shapes
    (0x27E8, 0x27EF),  # mathematical angle brackets
    (0x3001, 0x3003),  # 、。〃
    (0x3008, 0x3011),  # 〈〉《》「」『』【】
    (0x3014, 0x301F),  # 〔〕〖〗〘〙〚〛〜〝〞〟
    (0xFF01, 0xFF65),  # fullwidth punctuation and letters
)

# The pre-tokenizer's second split, as re set ranges (CJK ideographs, hiragana, katakana).
CJK_RUN_RANGES = "\u3040-\u30ff\u4e00-\u9fa5"
_ASCII_PUNCT = r"!-/:-@\[-`{-~"  # the 32 ASCII punctuation characters and symbols (P or S)
_SPACE = r"\t-\r "  # ASCII whitespace (Unicode White_Space; not \x1c-\x1f, which Python's \s has)


def _classes(excluded: set[str]) -> tuple[str, str, str]:
    """Letters, marks, punctuation-and-symbols of `_BLOCKS` (as re set contents), leaving out
    `excluded` (characters of added tokens) and CJK-run characters."""
    letters: list[str] = []
    marks: list[str] = []
    punct: list[str] = []
    for lo, hi in _BLOCKS:
        for code in range(lo, hi + 1):
            ch = chr(code)
            if ch in excluded or re.match(f"[{CJK_RUN_RANGES}]", ch):
                continue
            kind = unicodedata.category(ch)[0]
            {"L": letters, "M": marks, "P": punct, "S": punct}.get(kind, []).append(re.escape(ch))
    return "".join(letters), "".join(marks), "".join(punct)


def _pattern(excluded: set[str]) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The pattern that splits text of the alphabet into pre-tokens, and one that finds any
    character outside that alphabet."""
    letters, marks, punct = _classes(excluded)
    letter = f"A-Za-z{letters}{marks}"  # \p{L}\p{M}
    p_or_s = f"{_ASCII_PUNCT}{punct}"  # \p{P}\p{S}
    # [^\r\n\p{L}\p{P}\p{S}] within the alphabet, digits aside (they never reach split 3)
    prefix = f"\t\x0b\x0c {marks}"
    pre_token = re.compile(
        rf"[0-9]{{1,3}}"  # split 1
        rf"|[{CJK_RUN_RANGES}]+"  # split 2
        rf"|[{_ASCII_PUNCT}][A-Za-z]+"  # split 3, alternative by alternative
        rf"|[{prefix}]?[{letter}]+"
        rf"| ?[{p_or_s}]+[\r\n]*"
        rf"|[{_SPACE}]*[\r\n]+"
        rf"|[{_SPACE}]+(?![^{_SPACE}0-9{CJK_RUN_RANGES}])"
        rf"|[{_SPACE}]+"
    )
    outside = re.compile(rf"[^{_SPACE}\x20-\x7e{CJK_RUN_RANGES}{letter}{p_or_s}]")
    return pre_token, outside


# Word boundaries: positions where every pre-tokenization of a text (and of the text followed
# by anything) has a boundary, and from which either side alone pre-tokenizes into the same
# words. They are: either edge of a CJK run (the second split isolates runs); a space or tab
# after a non-space (no alternative holds a non-space followed by a space); and a non-space
# after a newline (every alternative that takes a newline ends at the last one). No added token
# holds a space, newline or CJK character (engine.tokens checks), so none straddles one either.
SEGMENT_BOUNDARY = re.compile(
    rf"(?<=\S)(?=[ \t])|(?<=\n)(?=\S)"
    rf"|(?<=[{CJK_RUN_RANGES}])(?=[^{CJK_RUN_RANGES}])|(?<=[^{CJK_RUN_RANGES}])(?=[{CJK_RUN_RANGES}])"
)
_TAIL = 64  # characters `last_boundary` looks at first


def last_boundary(text: str) -> int:
    """The last word boundary in `text` (see SEGMENT_BOUNDARY), or 0 if it has none."""
    start = max(0, len(text) - _TAIL)
    while True:
        last = 0
        for match in SEGMENT_BOUNDARY.finditer(text, start):  # lookbehinds see before `start`
            last = match.start()
        if last or start == 0:
            return last
        start = 0


# UTF-8 bytes as the characters ByteLevel maps them to (GPT-2's table): printable bytes stand
# for themselves, the rest for U+0100 onwards in byte order.
_PRINTABLE = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
_OTHERS = [b for b in range(256) if b not in _PRINTABLE]
_BYTE_LEVEL = {
    **{b: chr(b) for b in _PRINTABLE},
    **{b: chr(0x100 + i) for i, b in enumerate(_OTHERS)},
}
BYTE_SYMBOLS = frozenset(_BYTE_LEVEL.values())  # the 256 characters byte-level text is made of


def byte_level(text: str) -> str:
    """`text` as the BPE model sees it: its UTF-8 bytes, one character each."""
    return text.encode("utf-8").decode("latin-1").translate(_BYTE_LEVEL)


# Pre-tokens whose counts a counter remembers across calls, in two generations of up to
# MEMO_SIZE each: when the newer one fills, the older is dropped and the newer takes its place,
# so the words a counter keeps meeting stay while those of one past document age out. (Keeping
# the first 10,000 for good, as before, filled the memo with the Debian manual's first
# 10,000 words: every later document in a long-lived parse worker missed it, and chunking
# lshort-zh-cn there took 0.19-0.21 s CPU instead of 0.07-0.10 s.) At most 2 * MEMO_SIZE short
# strings: ~12 MB.
MEMO_SIZE = 50_000


class PreTokenCounter:
    """Exact token counts of many texts, each distinct pre-token's BPE run once (and the
    recent ones remembered across calls, see MEMO_SIZE).

    `bpe_count(byte_level_text)` counts one pre-token with the tokenizer's model;
    `encode_counts(texts)` counts whole texts with the tokenizer (for what this cannot);
    `added_tokens` are the tokenizer's added tokens, which it finds before pre-tokenizing
    (none may hold a space, a line break or a CJK character; engine.tokens checks).
    """

    def __init__(
        self,
        bpe_count: Callable[[str], int],
        encode_counts: Callable[[list[str]], list[int]],
        added_tokens: Iterable[str],
    ) -> None:
        added = sorted(set(added_tokens), key=len, reverse=True)
        self._bpe_count = bpe_count
        self._encode_counts = encode_counts
        self._pre_token, self._outside = _pattern({ch for token in added for ch in token})
        # Added tokens made of alphabet characters only are the ones to look for in text.
        self._known = [t for t in added if not self._outside.search(t)]
        self._added: re.Pattern[str] | None = None  # compiled when a text may hold one (30 ms)
        self._added_first = {t[0] for t in self._known}
        self._memo: dict[str, int] = {}  # the newer generation
        self._older: dict[str, int] = {}

    def _fits(self, text: str) -> bool:
        """Whether `text` is all alphabet and free of added tokens."""
        if self._outside.search(text):
            return False
        if not any(ch in text for ch in self._added_first):
            return True
        if self._added is None:  # a race compiles it twice, to the same pattern
            self._added = re.compile("|".join(map(re.escape, self._known)))
        return self._added.search(text) is None

    def count_many(self, texts: list[str]) -> list[int]:
        of_pre_token = _PreTokenCounts(self).__getitem__
        findall = self._pre_token.findall
        counts = [0] * len(texts)
        mixed: list[tuple[int, list[str]]] = []  # texts cut into segments
        of_segment: dict[str, int] = {}
        unknown: list[str] = []  # segments the tokenizer counts
        for i, text in enumerate(texts):
            if self._fits(text):
                counts[i] = sum(map(of_pre_token, findall(text)))
                continue
            segments = SEGMENT_BOUNDARY.split(text)
            mixed.append((i, segments))
            for segment in segments:
                if segment not in of_segment:
                    if self._fits(segment):
                        of_segment[segment] = sum(map(of_pre_token, findall(segment)))
                    else:
                        of_segment[segment] = 0
                        unknown.append(segment)
        of_segment.update(zip(unknown, self._encode_counts(unknown), strict=True))
        for i, segments in mixed:
            counts[i] = sum(map(of_segment.__getitem__, segments))
        return counts

    def counted(self, pre_token: str) -> int:
        """The BPE count of one pre-token, from the memo or counted and remembered. (Two
        threads may count one pre-token twice, or a generation may lose an entry: never a
        wrong count.)"""
        n = self._memo.get(pre_token)
        if n is not None:
            return n
        n = self._older.get(pre_token)
        if n is None:
            n = self._bpe_count(byte_level(pre_token))
        if len(self._memo) >= MEMO_SIZE:
            self._older, self._memo = self._memo, {}
        self._memo[pre_token] = n
        return n


class _PreTokenCounts(dict[str, int]):
    """Pre-token -> BPE token count for one call, each distinct pre-token looked up in the
    counter's memo once."""

    def __init__(self, counter: PreTokenCounter) -> None:
        super().__init__()
        self._counted = counter.counted

    def __missing__(self, pre_token: str) -> int:
        n = self[pre_token] = self._counted(pre_token)
        return n
