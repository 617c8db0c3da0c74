"""Text normalisation shared by the exact scan and BM25: `fold` and the CJK-aware tokenizer.

`fold` is the one normalisation of exact scan (SPEC §4); tokens are always taken from folded text.
This module must never stem, drop stop words or fold punctuation: changing what it returns
changes every index built with it, so any change bumps TOKENIZER_VERSION.
"""

from __future__ import annotations

import re
import unicodedata

# v1: fold, then Latin/digit words split on anything that is not a letter, digit or combining mark
# (apostrophes, underscores, hyphens and dots split: "don't" -> don, t; "worker_threads" ->
# worker, threads); CJK runs as overlapping bigrams, a one-character run as its unigram.
# Documents index every CJK character as a unigram too (see document_tokens); no stemming.
TOKENIZER_VERSION = "citewise-tok-1"

_CJK = (
    "\u1100-\u11ff"  # Hangul Jamo
    "\u3040-\u309f"  # Hiragana
    "\u30a0-\u30ff"  # Katakana
    "\u3005\u3007"  # ideographic iteration mark and number zero
    "\u3130-\u318f"  # Hangul compatibility Jamo
    "\u31f0-\u31ff"  # Katakana phonetic extensions
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\ua960-\ua97f"  # Hangul Jamo extended A
    "\uac00-\ud7af"  # Hangul syllables
    "\ud7b0-\ud7ff"  # Hangul Jamo extended B
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\uff66-\uff9f"  # half-width Katakana
    "\U00020000-\U0003134f"  # CJK extensions B-G and compatibility supplement
)
_MARKS = "\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
# A word starts with a letter or digit that is not CJK and continues with letters, digits or
# combining marks that NFC could not compose (e.g. "q\u0301").
# That is a letter, then letters and marks in any order (`L(?:L|M)*`), matched possessively
# with each run as one repeat (nothing after a word could make it give characters back): a
# third fewer regex steps than the alternation, and the same words.
_WORD = rf"[^\W_{_CJK}]++(?:[{_MARKS}]++[^\W_{_CJK}]*+)*+"
_TOKEN = re.compile(rf"([{_CJK}]+)|({_WORD})")
_WORDS = re.compile(_WORD)
_CJK_RUNS = re.compile(rf"[{_CJK}]{{2,}}")  # the runs that hold bigrams
_CJK_CHARS = re.compile(rf"[{_CJK}]")


def fold(text: str) -> str:
    """NFC, casefold, NFC again: casefold can produce sequences NFC composes (e.g. "İ")."""
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", text).casefold())


def tokenize(text: str) -> list[str]:
    """BM25 tokens of `text`: folded words and CJK bigrams (a lone CJK character is a unigram)."""
    out: list[str] = []
    for match in _TOKEN.finditer(fold(text)):
        run = match.group(1)
        if run is None:
            out.append(match.group(2))
        elif len(run) == 1:
            out.append(run)
        else:
            out.extend([run[i : i + 2] for i in range(len(run) - 1)])
    return out


def document_tokens(text: str) -> list[str]:
    """What a block contributes to the BM25 index: `tokenize` plus every CJK character alone,
    in no particular order.

    Indexing unigrams makes a one-character query ("锁") an ordinary term lookup, scored like
    any other term, instead of a scan fallback. Measured on the shared corpus (~3,800 blocks,
    2.1 MB of text): postings 231k -> 313k, BM25 files 2.6 MB -> 3.0 MB (+14%).
    """
    return folded_tokens(fold(text))


def folded_tokens(folded: str) -> list[str]:
    """`document_tokens` of text that is already `fold`ed (NUL may stand as U+FFFD: neither is
    part of a token). Tokens never span a line break, so the bag of "title\ntext" is the bag
    of the title plus the bag of the text."""
    # A bag, not a sequence: C-level findall passes instead of a Python loop per token (the
    # build's hottest path). A lone character appears once, as in `tokenize`.
    chars = _CJK_CHARS.findall(folded)
    if len(chars) < 2:  # no bigram possible: skip the slowest pass (most Latin text)
        return _WORDS.findall(folded) + chars
    bigrams = [run[i : i + 2] for run in _CJK_RUNS.findall(folded) for i in range(len(run) - 1)]
    return _WORDS.findall(folded) + bigrams + chars


def query_tokens(text: str) -> list[str]:
    """Distinct `tokenize` tokens in first-occurrence order: a repeated query term counts once."""
    return list(dict.fromkeys(tokenize(text)))
