"""Fixed nonsense texts that calibrate a snapshot's vector similarity floor: letter salad,
made-up syllables, digit runs, letter-digit codes and random Chinese characters. Embedded
with the snapshot's own model, each one's best block score is a sample of what a query that
means nothing reaches in this collection. Made from a hash stream, never from `random`, so
the texts are the same on every machine and Python; change them only with PROBES_VERSION.

Punctuation and symbols alone are not probes: such a query carries no content and is no match
by rule (`carries_content`), whatever its vector; measured on the shared corpus, "..." came
within 0.50 of a sentence window of dots, which would lift the floor above real questions.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

PROBES_VERSION = "probes-2"
_LETTERS = "abcdefghijklmnopqrstuvwxyz"
_CONSONANTS = "bcdfghjklmnprstvwxz"
_VOWELS = "aeiouy"
_ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"


def carries_content(text: str) -> bool:
    """Whether a text holds a letter or digit of any script: a query of punctuation, symbols
    and emoji alone has nothing to search for."""
    return any(ch.isalnum() for ch in text)


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


def _codes(i: int) -> str:
    s = _stream(f"codes{i}")
    return " ".join(
        "".join(_pick(s, _ALNUM) for _ in range(3 + next(s) % 5)) for _ in range(1 + next(s) % 3)
    )


def _hanzi(i: int) -> str:
    s = _stream(f"hanzi{i}")
    # CJK Unified Ideographs U+4E00..U+9FA5: mostly rare characters in random order.
    return "".join(chr(0x4E00 + (next(s) * 256 + next(s)) % 0x51A6) for _ in range(2 + next(s) % 5))


def probe_texts() -> list[str]:
    """The probes, in a fixed order (64 texts, each carrying content)."""
    out = [_salad(i) for i in range(20)]
    out += [_syllables(i) for i in range(16)]
    out += [_digits(i) for i in range(8)]
    out += [_codes(i) for i in range(10)]
    out += [_hanzi(i) for i in range(10)]
    return out
