"""Document language: "zh" when Chinese characters are a substantial share of the letters,
else "en". Counts characters only; it never looks at metadata, which is often wrong.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# Counted by deleting runs in C (no list of one string per match): what is left of the text
# without everything but Han characters, and what the Latin letters' runs take away from it.
_NOT_HAN = re.compile(r"[^\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f]+")
_LATIN = re.compile(r"[A-Za-z\u00c0-\u024f]+")

# One Han character carries about as much as a short Latin word, and Chinese technical text
# is full of Latin commands and names, so a fifth of the letters being Han is already Chinese.
ZH_SHARE = 0.2
_SAMPLE_CHARS = 2_000_000


def han_share(texts: Iterable[str]) -> float:
    """Han characters / (Han characters + Latin letters), over at most the first 2M chars."""
    chunks: list[str] = []
    seen = 0
    for text in texts:
        if seen >= _SAMPLE_CHARS:
            break
        chunk = text[: _SAMPLE_CHARS - seen]
        seen += len(chunk)
        chunks.append(chunk)
    sample = "".join(chunks)
    han = 0 if sample.isascii() else len(_NOT_HAN.sub("", sample))
    latin = len(sample) - len(_LATIN.sub("", sample))
    total = han + latin
    return han / total if total else 0.0


def detect_lang(texts: Iterable[str]) -> str:
    return "zh" if han_share(texts) >= ZH_SHARE else "en"
