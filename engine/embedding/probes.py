"""Fixed nonsense texts that calibrate a snapshot's vector similarity floor: letter salad,
made-up syllables, digits, punctuation, symbol runs and random Chinese characters. Embedded
with the snapshot's own model, each one's best block score is a sample of what a query that
means nothing reaches in this collection. Made from a hash stream, never from `random`, so
the texts are the same on every machine and Python; change them only with PROBES_VERSION.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

PROBES_VERSION = "probes-1"
_LETTERS = "abcdefghijklmnopqrstuvwxyz"
_CONSONANTS = "bcdfghjklmnprstvwxz"
_VOWELS = "aeiouy"
_PUNCTUATION = [
    "?", "!!!", "...", "?!?!", "—", "###", "* * *", "()", "[]{}", "//", ";;", "~~~",
    "。。。", "？？", "！", "、、", "……", "《》", "「」", "；：",
]  # fmt: skip
_SYMBOLS = "@#$%^&*+=<>|\\~`_-"


def _stream(label: str) -> Iterator[int]:
    """Bytes of blake2b(PROBES_VERSION, label, counter), forever."""
    counter = 0
    while True:
        digest = hashlib.blake2b(f"{PROBES_VERSION}\0{label}\0{counter}".encode()).digest()
        yield from digest
        counter += 1


def _pick(stream: Iterator[int], alphabet: str) -> str:
    return alphabet[next(stream) % len(alphabet)]


def _salad(i: int) -> str:
    s = _stream(f"salad{i}")
    words = 2 + next(s) % 4
    return " ".join(
        "".join(_pick(s, _LETTERS) for _ in range(3 + next(s) % 7)) for _ in range(words)
    )


def _syllables(i: int) -> str:
    s = _stream(f"syllables{i}")
    words = 1 + next(s) % 4
    return " ".join(
        "".join(_pick(s, _CONSONANTS) + _pick(s, _VOWELS) for _ in range(2 + next(s) % 3))
        for _ in range(words)
    )


def _digits(i: int) -> str:
    s = _stream(f"digits{i}")
    return " ".join(str(next(s) * 256 + next(s)) for _ in range(1 + next(s) % 3))


def _symbols(i: int) -> str:
    s = _stream(f"symbols{i}")
    return "".join(_pick(s, _SYMBOLS) for _ in range(2 + next(s) % 6))


def _hanzi(i: int) -> str:
    s = _stream(f"hanzi{i}")
    # CJK Unified Ideographs U+4E00..U+9FA5: mostly rare characters in random order.
    return "".join(chr(0x4E00 + (next(s) * 256 + next(s)) % 0x51A6) for _ in range(2 + next(s) % 5))


def probe_texts() -> list[str]:
    """The probes, in a fixed order (64 texts)."""
    out = [_salad(i) for i in range(14)]
    out += [_syllables(i) for i in range(12)]
    out += [_digits(i) for i in range(6)]
    out += [_symbols(i) for i in range(6)]
    out += [_hanzi(i) for i in range(6)]
    out += _PUNCTUATION
    return out
