"""The fast exact counter (engine.tokens.pretokens) against DeepSeek's tokenizer itself: every
paragraph of the corpus, every character of the alphabet it handles in the contexts that
decide pre-token edges, and random text mixing it with characters it hands back."""

from __future__ import annotations

from pathlib import Path

import pytest
import tokenizers
from hypothesis import given, settings
from hypothesis import strategies as st

import engine.tokens.counter as tokens_module
import engine.tokens.pretokens as pretokens
from engine.parsing import parse_file
from engine.tokens import TokenCounter
from engine.tokens.pretokens import SEGMENT_BOUNDARY, PreTokenCounter, byte_level, last_boundary

DOCS = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus" / "docs"
COUNTER = TokenCounter()


def tokenizer_counts(texts: list[str]) -> list[int]:
    """What the tokenizer itself says, with no help from engine.tokens.pretokens."""
    encodings = tokens_module._load().tokenizer.encode_batch(texts, add_special_tokens=False)
    return [len(e.ids) for e in encodings]


def fast_counter() -> PreTokenCounter:
    counter = tokens_module._load().pre_tokens
    assert counter is not None, "DeepSeek's tokenizer.json must get the fast counter"
    return counter


def test_the_shipped_tokenizer_gets_the_fast_counter() -> None:
    assert fast_counter() is not None


@pytest.fixture(scope="module")
def corpus_paragraphs() -> list[str]:
    texts: list[str] = []
    for path in sorted(DOCS.rglob("*")):
        if path.is_file() and path.suffix:
            parsed = parse_file(path)
            texts += [p.text for s in parsed.sections for p in s.paragraphs]
            if path.suffix in {".txt", ".md", ".html"}:  # raw lines, markup and all
                texts += path.read_text(encoding="utf-8").split("\n\n")
    return texts


def test_counts_equal_the_tokenizers_on_every_corpus_paragraph(
    corpus_paragraphs: list[str],
) -> None:
    assert len(corpus_paragraphs) > 10_000
    expected = tokenizer_counts(corpus_paragraphs)
    assert COUNTER.count_many(corpus_paragraphs) == expected
    assert fast_counter().count_many(corpus_paragraphs) == expected


def test_every_character_of_the_alphabet_splits_as_the_tokenizer_splits_it() -> None:
    counter = fast_counter()
    alphabet = [
        chr(code)
        for code in range(0x20000)
        if counter._fits(chr(code)) and (code < 0x3040 or code % 101 == 0 or code > 0x9FA5)
    ]
    assert 1_000 < len(alphabet) < 3_000
    contexts = [
        "{}", "a{}", "{}a", " {}", "{} ", "1{}", "{}1", "中{}", "{}中", ".{}", "{}.",
        "\n{}", "{}\n", "{}{}", "a{}b", "é{}\u0301", "  {}  x", "{}\n\n", ".{}a", "{}.a",
    ]  # fmt: skip
    texts = [c.replace("{}", ch) for ch in alphabet for c in contexts]
    assert counter.count_many(texts) == tokenizer_counts(texts)


# Pieces at every kind of pre-token edge, inside the alphabet and outside it (emoji, NBSP,
# the ideographic space, circled digits, zero-width and control characters, added tokens).
_PIECES = [
    *"aZé\u0301ñ中文字ひカー。，！？「」“”‘’•—–…⟨⟩→×§.,;:!?'\"()-_/#%$<>|09 \t\n\r\x0b\x0c",
    *"\u00a0\u3000①²\u200b\x1c\x00😀",
    "<think>", "</think>", "<|EOT|>", "<｜User｜>", "｜DSML｜", "\r\n", "   ", "\n\n", "1234567",
]  # fmt: skip
_texts = st.lists(st.sampled_from(_PIECES), min_size=1, max_size=24).map("".join)


@settings(max_examples=600, deadline=None)
@given(texts=st.lists(_texts, min_size=1, max_size=6))
def test_counts_equal_the_tokenizers_on_random_text(texts: list[str]) -> None:
    assert COUNTER.count_many(texts) == tokenizer_counts(texts)
    assert [COUNTER.count(t) for t in texts] == tokenizer_counts(texts)


@settings(max_examples=300, deadline=None)
@given(text=_texts, repeat=st.integers(1, 12))
def test_the_last_boundary_is_found_from_the_end_of_long_text(text: str, repeat: int) -> None:
    text = text * repeat
    boundaries = [m.start() for m in SEGMENT_BOUNDARY.finditer(text)]
    assert last_boundary(text) == (boundaries[-1] if boundaries else 0)


def test_byte_level_is_the_tokenizers_byte_alphabet() -> None:
    byte_level_step = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    for text in ["plain", " space\tand\nbreaks", "é中😀\x00\x7f\xa0\xad"]:
        ((mapped, _),) = byte_level_step.pre_tokenize_str(text)
        assert byte_level(text) == mapped


def test_added_tokens_are_counted_by_the_tokenizer() -> None:
    texts = ["a <think> b", "x<|EOT|>y", "<｜User｜>你好", "no tokens <thinking here>"]
    assert COUNTER.count_many(texts) == tokenizer_counts(texts)
    assert COUNTER.count("<think>") == 1


def test_each_distinct_pre_token_goes_to_the_model_once() -> None:
    seen: list[str] = []
    model = tokens_module._load().tokenizer.model

    def bpe_count(text: str) -> int:
        seen.append(text)
        return len(model.tokenize(text))

    counter = PreTokenCounter(bpe_count, tokenizer_counts, added_tokens=["<think>"])
    texts = ["the cat and the dog", "the dog and the cat"]
    assert counter.count_many(texts) == tokenizer_counts(texts)
    assert sorted(seen) == sorted(["the", "Ġcat", "Ġand", "Ġthe", "Ġdog"])  # as BPE sees them


def test_recent_counts_are_remembered_across_calls_in_two_generations(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pretokens, "MEMO_SIZE", 3)
    seen: list[str] = []
    model = tokens_module._load().tokenizer.model

    def bpe_count(text: str) -> int:
        seen.append(text)
        return len(model.tokenize(text))

    def count(text: str) -> list[str]:
        """The pre-tokens `text` made the counter run BPE on, its count checked."""
        before = len(seen)
        assert counter.count_many([text]) == tokenizer_counts([text])
        return seen[before:]

    counter = PreTokenCounter(bpe_count, tokenizer_counts, added_tokens=[])
    assert count("cat dog fox") == ["cat", "Ġdog", "Ġfox"]  # the memo's first generation, full
    words = [
        "apple",
        "bread",
        "chair",
        "dance",
        "eagle",
        "flute",
        "grape",
        "house",
        "igloo",
        "jelly",
        "kite",
        "lemon",
    ]
    for word in words:
        # "the" comes back with every text while a new word passes each time: it is counted
        # once and stays (keeping the first words for good had it counted every time).
        assert count(f"the {word}") == (["the"] if word == "apple" else []) + [f"Ġ{word}"]
        assert len(counter._memo) + len(counter._older) <= 2 * 3
    assert count("cat dog fox") == ["cat", "Ġdog", "Ġfox"]  # long aged out
