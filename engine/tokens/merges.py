"""DeepSeek's byte-pair merges run in Python, for a process that counts only a few texts.

Building the tokenizer with `tokenizers` turns 128k vocabulary entries and 128k merges into
Rust tables: a quarter to a whole second of a one-off `citewise tool` call that counts one
JSON result. A count needs only the merges' ranks: a pre-token's count is the number of
symbols left once its byte-level characters are merged the way tokenizers' `Word::merge_all`
merges them (lowest rank first, leftmost on ties, stale pairs skipped), which `merged_count`
does step for step. The merges (and the tokenizer.json without its vocabulary and merges, from
which the pre-tokenizer and added tokens are built in milliseconds) are kept in HOME/cache/ with
`marshal` (data only, never code). It never serves a model that is not a plain byte-level BPE:
`MergeRanks.from_tokenizer_json` returns None and the tokenizer itself counts.
"""

from __future__ import annotations

import heapq
import json
import logging
import marshal
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from engine.tokens.pretokens import BYTE_SYMBOLS
from index.fsutil import atomic_write

CACHE_FORMAT = 1
_SEPARATOR = " "  # between a merge's two parts; byte-level symbols never hold a space
# BPE settings under which counting is merging alone (any other value: the tokenizer counts)
_PLAIN_BPE: dict[str, Any] = {
    "type": "BPE",
    "dropout": None,
    "unk_token": None,
    "continuing_subword_prefix": None,
    "end_of_word_suffix": None,
    "byte_fallback": False,
    "ignore_merges": False,
}

log = logging.getLogger(__name__)


def merged_count(word: str, ranks: Mapping[str, int]) -> int:
    """How many tokens BPE makes of `word` (byte-level characters), merging by `ranks`
    ("left right" -> rank) exactly as tokenizers' `Word::merge_all` does without dropout."""
    n = len(word)
    if n < 2:
        return n
    symbols = list(word)
    after = [*range(1, n), -1]
    before = list(range(-1, n - 1))
    get = ranks.get
    queue: list[tuple[int, int, str]] = []
    for i in range(n - 1):
        rank = get(symbols[i] + _SEPARATOR + symbols[i + 1])
        if rank is not None:
            queue.append((rank, i, symbols[i] + symbols[i + 1]))
    heapq.heapify(queue)
    count = n
    while queue:
        _, pos, new = heapq.heappop(queue)
        left = symbols[pos]
        nxt = after[pos]
        if not left or nxt == -1:
            continue  # merged into its left neighbour, or now the last symbol
        right = symbols[nxt]
        if left + right != new or get(left + _SEPARATOR + right) is None:
            continue  # an entry for a pair that no longer exists
        symbols[pos], symbols[nxt] = new, ""
        following = after[pos] = after[nxt]
        if following != -1:
            before[following] = pos
        count -= 1
        previous = before[pos]
        if previous >= 0:
            rank = get(symbols[previous] + _SEPARATOR + new)
            if rank is not None:
                heapq.heappush(queue, (rank, previous, symbols[previous] + new))
        if following != -1:
            rank = get(new + _SEPARATOR + symbols[following])
            if rank is not None:
                heapq.heappush(queue, (rank, pos, new + symbols[following]))
    return count


class MergeRanks:
    """A tokenizer.json's merges by rank, and the same file without its vocabulary and merges
    (`skeleton`: enough for `tokenizers` to build its pre-tokenizer and added tokens)."""

    def __init__(self, skeleton: str, merges: list[str]) -> None:
        self.skeleton = skeleton
        self.merges = merges
        # a merge listed twice keeps its last rank, as the tokenizer's own map does
        self.ranks: dict[str, int] = dict(zip(merges, range(len(merges)), strict=True))

    def count(self, word: str) -> int:
        return merged_count(word, self.ranks)

    @classmethod
    def from_tokenizer_json(cls, data: bytes) -> MergeRanks | None:
        """The ranks of a plain byte-level BPE tokenizer.json, else None."""
        try:
            spec = json.loads(data)
            model = spec["model"]
            vocab, raw = model["vocab"], model["merges"]
        except (ValueError, TypeError, KeyError):
            return None
        settings = {key: model.get(key, plain) for key, plain in _PLAIN_BPE.items()}
        if (
            settings != _PLAIN_BPE
            or not isinstance(vocab, dict)
            or len(set(vocab.values())) != len(vocab)
            or not vocab.keys() >= BYTE_SYMBOLS
        ):
            return None
        merges: list[str] = []
        for merge in raw:
            parts = merge.split(_SEPARATOR) if isinstance(merge, str) else merge
            if (
                not isinstance(parts, list)
                or len(parts) != 2
                or not all(isinstance(p, str) and p and _SEPARATOR not in p for p in parts)
                or not (parts[0] in vocab and parts[1] in vocab and parts[0] + parts[1] in vocab)
            ):
                return None
            merges.append(parts[0] + _SEPARATOR + parts[1])
        skeleton = dict(spec, model={**model, "vocab": {}, "merges": []})
        return cls(json.dumps(skeleton, ensure_ascii=False), merges)

    def to_bytes(self) -> bytes:
        return marshal.dumps(
            {"format": CACHE_FORMAT, "skeleton": self.skeleton, "merges": "\n".join(self.merges)}
        )

    @classmethod
    def from_bytes(cls, data: bytes) -> MergeRanks | None:
        try:
            state = marshal.loads(data)
        except (EOFError, ValueError, TypeError):
            return None
        if not isinstance(state, dict) or state.get("format") != CACHE_FORMAT:
            return None
        skeleton, merges = state.get("skeleton"), state.get("merges")
        if not isinstance(skeleton, str) or not isinstance(merges, str):
            return None
        return cls(skeleton, merges.split("\n") if merges else [])


def load_ranks(source: Path, cache_file: Path | None) -> MergeRanks | None:
    """The ranks of tokenizer.json `source`: from `cache_file` when it holds them, else read
    from the source (and kept in `cache_file` when its folder exists and can be written)."""
    if cache_file is not None:
        try:
            cached = MergeRanks.from_bytes(cache_file.read_bytes())
        except OSError:
            cached = None
        if cached is not None:
            return cached
    ranks = MergeRanks.from_tokenizer_json(source.read_bytes())
    if ranks is not None and cache_file is not None and cache_file.parent.is_dir():
        try:
            atomic_write(cache_file, ranks.to_bytes())
        except OSError as exc:  # read-only or full: the next process reads the source again
            log.debug("token merges cache not written: %s", exc)
    return ranks
