"""fold and the BM25 tokenizer: the normalisation every index and scan depends on."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from index.scan import scan_form
from index.textnorm import (
    _CJK,
    _MARKS,
    _WORDS,
    document_tokens,
    fold,
    folded_tokens,
    query_tokens,
    tokenize,
)


def test_fold_casefolds_beyond_ascii() -> None:
    assert fold("Straße") == "strasse"
    assert fold("ΣΟΦΟΣ") == fold("σοφος") == "σοφοσ"  # final sigma folds like sigma
    assert fold("ﬁle") == "file"
    assert fold("ＡＢＣ") == "ａｂｃ"  # full-width stays full-width: NFC, not NFKC


def test_fold_renormalises_after_casefold() -> None:
    # "İ".casefold() is "i" + combining dot; decomposed input must fold to the same thing.
    assert fold("İ") == fold("I\u0307") == unicodedata.normalize("NFC", "i\u0307")
    assert fold("E\u0301") == fold("É") == "é"


@given(st.text())
def test_fold_is_idempotent_and_nfc(text: str) -> None:
    once = fold(text)
    assert fold(once) == once
    assert unicodedata.is_normalized("NFC", once)


def test_latin_words_split_on_punctuation_apostrophes_and_underscores() -> None:
    assert tokenize("Run apt-get, don't use worker_threads in Python 3.11!") == [
        "run",
        "apt",
        "get",
        "don",
        "t",
        "use",
        "worker",
        "threads",
        "in",
        "python",
        "3",
        "11",
    ]


def test_combining_mark_that_nfc_cannot_compose_stays_in_the_word() -> None:
    assert tokenize("q\u0301x") == ["q\u0301x"]


# The word as first written: a letter or digit (not CJK), then letters, digits and marks.
_PLAIN_WORD = re.compile(rf"[^\W_{_CJK}](?:[^\W_{_CJK}]|[{_MARKS}])*")


@given(st.text("aZ9ß_ \u0301\u0302\u20d0é软한\n.-'İ\x00"))
def test_the_possessive_word_pattern_finds_exactly_the_plain_words(text: str) -> None:
    assert _WORDS.findall(text) == _PLAIN_WORD.findall(text)


def test_cjk_runs_become_overlapping_bigrams_and_lone_characters_unigrams() -> None:
    assert tokenize("软件包管理") == ["软件", "件包", "包管", "管理"]
    assert tokenize("用C写") == ["用", "c", "写"]
    assert tokenize("カタカナ と 한국어") == ["カタ", "タカ", "カナ", "と", "한국", "국어"]
    assert tokenize("Debian 的 apt") == ["debian", "的", "apt"]


def test_punctuation_and_emoji_are_separators() -> None:
    assert tokenize("锁。机制🙂ok") == ["锁", "机制", "ok"]


def test_document_tokens_add_every_cjk_character_once() -> None:
    assert Counter(document_tokens("软件包 锁 apt")) == Counter(
        ["软件", "件包", "软", "件", "包", "锁", "apt"]
    )
    assert document_tokens("锁") == tokenize("锁") == ["锁"]


@given(st.text("ab Zß软件包锁한국カナ\u0301 ,。"))
def test_document_tokens_are_tokenize_plus_the_characters_of_longer_cjk_runs(text: str) -> None:
    runs = re.findall("[软件包锁한국カナ]{2,}", fold(text))
    assert Counter(document_tokens(text)) == Counter(tokenize(text)) + Counter("".join(runs))


_MIXED = st.text("ab Zß软件包锁한국カナ\u0301\u1100\u1161İ\x00\n ,。")


@given(_MIXED, _MIXED)
def test_tokens_of_title_and_text_are_the_title_bag_plus_the_text_bag(
    title: str, text: str
) -> None:
    # The build folds a section title once and a block's text once (stored NUL as U+FFFD)
    # instead of folding "title\ntext" for every block.
    joined = document_tokens(f"{title}\n{text}")
    apart = folded_tokens(fold(title)) + folded_tokens(scan_form(text))
    assert Counter(joined) == Counter(apart)


def test_query_tokens_are_distinct_in_first_occurrence_order() -> None:
    assert query_tokens("Apt apt APT-get 软件软件") == ["apt", "get", "软件", "件软"]
    assert query_tokens("锁") == ["锁"]
    assert query_tokens("  ，。 ") == []
