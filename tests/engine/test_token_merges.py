"""Counting with DeepSeek's merges run in Python (engine.tokens.merges), as a process does before
it loads the tokenizer: every count equals the tokenizer's own, the tokenizer's vocabulary is
never built for text the pre-token counter splits, the merges are kept per data directory, and
a tokenizer.json that is not a plain byte-level BPE is counted by the tokenizer alone."""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
import tokenizers
from hypothesis import given, settings
from hypothesis import strategies as st

import engine.tokens.counter as tokens_module
from engine.tokens import TokenCounter, tokenizer_file
from engine.tokens.merges import MergeRanks, load_ranks, merged_count
from engine.tokens.pretokens import byte_level
from engine.tools.contracts import BlockItem, BlocksResult
from engine.tools.executor import finish
from tests.corpus import DOCS, REPO


@pytest.fixture(scope="module")
def tokenizer() -> tokenizers.Tokenizer:
    return tokenizers.Tokenizer.from_file(str(tokenizer_file()))


@pytest.fixture(scope="module")
def ranks() -> MergeRanks:
    loaded = MergeRanks.from_tokenizer_json(tokenizer_file().read_bytes())
    assert loaded is not None
    return loaded


@pytest.fixture
def merging(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """This process as a fresh one: no tokenizer loaded, none asked for, a data directory of
    its own."""
    monkeypatch.setenv("CITEWISE_HOME", str(tmp_path / "home"))
    (tmp_path / "home" / "cache").mkdir(parents=True)
    for name, value in (("_loaded", None), ("_preloading", None), ("_merging", None)):
        monkeypatch.setattr(tokens_module, name, value)
    monkeypatch.setattr(tokens_module, "_merging_tried", False)


def _corpus_texts() -> list[str]:
    texts = []
    for path in sorted(DOCS.rglob("*")):
        if path.suffix in (".md", ".txt") and path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            texts += [text[i : i + 3_000] for i in range(0, min(len(text), 60_000), 3_000)]
    assert len(texts) > 50
    return texts


def test_merges_count_every_corpus_word_as_the_tokenizers_model_does(
    tokenizer: tokenizers.Tokenizer, ranks: MergeRanks
) -> None:
    words = sorted({w for t in _corpus_texts() for w in re.findall(r"\S+|\s+", t)})
    model = tokenizer.model
    differ = [w for w in words if ranks.count(byte_level(w)) != len(model.tokenize(byte_level(w)))]
    assert len(words) > 5_000 and differ == []
    assert {ranks.count(byte_level(w)) for w in words} >= {1, 2, 3, 4, 5}  # merges did run


_SYMBOLS = [*"aaabbe tthhinng", "ing", "Ġ", *"中文字。，12 3\n", "é", "😀"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_SYMBOLS), min_size=1, max_size=40).map("".join))
def test_merges_agree_with_the_model_on_repeats_and_overlaps(text: str) -> None:
    # repeated letters make overlapping candidate pairs: the order and skipping of stale pairs
    ranks, model = _shared()
    word = byte_level(text)
    assert ranks.count(word) == len(model.tokenize(word))


@functools.cache
def _shared() -> tuple[MergeRanks, tokenizers.models.Model]:
    """The merges and the tokenizer's model, built once for all hypothesis examples."""
    ranks = MergeRanks.from_tokenizer_json(tokenizer_file().read_bytes())
    assert ranks is not None
    return ranks, tokenizers.Tokenizer.from_file(str(tokenizer_file())).model


def test_a_single_symbol_or_nothing_is_its_own_count() -> None:
    assert merged_count("", {}) == 0
    assert merged_count("a", {"a b": 0}) == 1
    assert merged_count("ab", {}) == 2
    # "a b" first (rank 0), then "ab c": one token; "b c" is stale once b is merged away
    assert merged_count("abc", {"a b": 0, "b c": 1, "ab c": 2}) == 1


@pytest.mark.usefixtures("merging")
def test_counts_before_the_tokenizer_loads_equal_the_tokenizers(
    tokenizer: tokenizers.Tokenizer,
) -> None:
    texts = _corpus_texts()
    counter = TokenCounter()
    counts = counter.count_many(texts)
    expected = [len(e.ids) for e in tokenizer.encode_batch(texts, add_special_tokens=False)]
    assert counts == expected
    assert [counter.count(t) for t in texts[:40]] == expected[:40]
    assert counter.break_increments(texts[:40]) == [
        len(tokenizer.encode(t + "\n\n", add_special_tokens=False).ids) - n
        for t, n in zip(texts[:40], expected[:40], strict=True)
    ]


@pytest.mark.usefixtures("merging")
def test_text_of_the_known_alphabet_is_counted_without_loading_the_tokenizer() -> None:
    counter = TokenCounter()
    assert counter.count("Hello world. This is a test.") == 8
    assert counter.count("你好，世界。这是一个测试！") > 0
    assert tokens_module._loaded is None  # the vocabulary was never built
    # an emoji is outside the alphabet: the tokenizer loads and counts that text
    assert counter.count("😀 émoji") == counter.count_many(["😀 émoji"])[0] > 0
    assert tokens_module._loaded is not None


@pytest.mark.usefixtures("merging")
def test_a_tool_results_estimate_is_the_same_before_and_after_the_tokenizer_loads() -> None:
    texts = _corpus_texts()[:30]
    result = BlocksResult(
        blocks=tuple(
            BlockItem(
                citation=f"d{i}#b{i}",
                doc_id=f"d{i}",
                block_id=f"b{i}",
                title=f"Doc {i}",
                source_label=f"doc-{i}.md",
                section=f"Section > {i}",
                page_start=None,
                page_end=None,
                text=text,
            )
            for i, text in enumerate(texts)
        ),
        total=len(texts),
        empty_reason=None,
        token_estimate=0,
        contract_version=1,
    )
    before = finish(result, TokenCounter())
    tokens_module._load()
    after = finish(result, TokenCounter())
    assert before == after
    assert json.loads(before[0])["token_estimate"] == before[1] > 1_000


def test_the_merges_are_kept_in_the_cache_and_a_damaged_copy_is_rebuilt(tmp_path: Path) -> None:
    source = tokenizer_file()
    cache = tmp_path / "deepseek-merges.marshal"
    first = load_ranks(source, cache)
    assert first is not None and cache.is_file()
    again = load_ranks(source, cache)
    assert again is not None and again.ranks == first.ranks and again.skeleton == first.skeleton
    cache.write_bytes(cache.read_bytes()[:1000])  # cut short
    rebuilt = load_ranks(source, cache)
    assert rebuilt is not None and rebuilt.ranks == first.ranks
    assert MergeRanks.from_bytes(cache.read_bytes()) is not None  # written again, whole
    missing_folder = tmp_path / "none" / "merges.marshal"
    assert load_ranks(source, missing_folder) is not None
    assert not missing_folder.parent.exists()  # a folder that does not exist is not made


@pytest.mark.parametrize(
    "change",
    [
        {"dropout": 0.1},
        {"byte_fallback": True},
        {"continuing_subword_prefix": "##"},
        {"ignore_merges": True},
        {"type": "WordPiece"},
    ],
)
def test_a_tokenizer_that_is_not_plain_byte_level_bpe_gets_no_merges(
    change: dict[str, object],
) -> None:
    spec = json.loads(tokenizer_file().read_bytes())
    spec["model"].update(change)
    assert MergeRanks.from_tokenizer_json(json.dumps(spec).encode()) is None


def test_merges_that_name_missing_symbols_get_no_merges() -> None:
    spec = json.loads(tokenizer_file().read_bytes())
    spec["model"]["merges"] = [*spec["model"]["merges"][:5], "nosuch symbol"]
    assert MergeRanks.from_tokenizer_json(json.dumps(spec).encode()) is None
    assert MergeRanks.from_tokenizer_json(b"{not json") is None


def _fresh(code: str, home: Path) -> subprocess.CompletedProcess[str]:
    """`python -c code` in a fresh process on data directory `home`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CITEWISE_")}
    env["CITEWISE_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True
    )


FRESH_TEXTS = ["Hello world. This is a test.", "事件监听器，被调用。", '{"a": 1}']


def test_a_fresh_process_counts_a_result_without_building_the_vocabulary(tmp_path: Path) -> None:
    # as `citewise tool` does: count, and never call the tokenizer's loader
    code = (
        "import tokenizers\n"
        "def refuse(*a, **k): raise AssertionError('the tokenizer was loaded')\n"
        "tokenizers.Tokenizer.from_file = refuse\n"
        "from engine.tokens import TokenCounter\n"
        "c = TokenCounter()\n"
        f"print(c.count_many({FRESH_TEXTS!r}))\n"
    )
    (tmp_path / "cache").mkdir()
    runs = [
        _fresh(code, tmp_path)
        for _ in range(2)  # the first writes the cache, the second reads it
    ]
    assert [r.returncode for r in runs] == [0, 0], runs[-1].stderr
    expected = msgspec.json.encode(TokenCounter().count_many(FRESH_TEXTS)).decode()
    assert [r.stdout.strip().replace(" ", "") for r in runs] == [expected, expected]
    assert len(list((tmp_path / "cache").glob("deepseek-merges-*.marshal"))) == 1


def test_preloading_the_tokenizer_keeps_the_merges_for_the_next_one_off_command(
    tmp_path: Path,
) -> None:
    (tmp_path / "cache").mkdir()
    code = (
        "import engine.tokens.counter as c\n"
        "c.preload()\n"
        "c._preloading.join()\n"
        "assert c._loaded is not None\n"
    )
    done = _fresh(code, tmp_path)
    assert done.returncode == 0, done.stderr
    kept = list((tmp_path / "cache").glob("deepseek-merges-*.marshal"))
    assert len(kept) == 1 and MergeRanks.from_bytes(kept[0].read_bytes()) is not None


def test_a_running_app_counts_with_the_tokenizer_itself(tmp_path: Path) -> None:
    # a long-lived app (serve, ask) counts many texts: the tokenizer, not the Python merges
    code = (
        "import anyio\n"
        "from actors.app import App\n"
        "import engine.tokens.counter as counter\n"
        "async def main():\n"
        "    async with App.open() as app:\n"
        "        await app.warm()\n"
        f"        print(app.counter().count_many({FRESH_TEXTS!r}), counter._loaded is not None)\n"
        "anyio.run(main, backend='trio')\n"
    )
    run = _fresh(code, tmp_path)
    assert run.returncode == 0, run.stderr
    expected = msgspec.json.encode(TokenCounter().count_many(FRESH_TEXTS)).decode()
    counts, loaded = run.stdout.strip().rsplit(" ", 1)
    assert (counts.replace(" ", ""), loaded) == (expected, "True")
