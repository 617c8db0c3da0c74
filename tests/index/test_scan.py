"""Exact scan equals a naive per-block fold(text).count(fold(term)), in and out of scope."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from index.scan import block_starts, scan, scan_form, snippet
from index.textnorm import fold

# Letters whose folding changes length or composition, CJK, emoji, full-width, marks, spaces.
ALPHABET = "aAbsSßẞiIİıΣσςﬁﬂeEéÉ\u0301\u0307\u0308ǅǆKk\u212a软件包锁管理🙂👍🏽ＡａＢ \n\t.-"


def store(texts: list[str]) -> tuple[bytes, list[int]]:
    """folded.bin and its block starts, laid out as the block store lays them out."""
    folded = [scan_form(t).encode("utf-8") for t in texts]
    offsets = np.array(
        [sum(len(f) + 1 for f in folded[:i]) for i in range(len(folded))], dtype=np.uint64
    )
    joined = b"\x00".join(folded)
    return joined, block_starts(offsets, len(joined))


def naive(texts: list[str], term: str, ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out = []
    for start, end in ranges:
        for i in range(start, end):
            count = fold(texts[i]).count(fold(term))
            if count:
                out.append((i, count))
    return out


@st.composite
def corpus_and_query(draw: st.DrawFn) -> tuple[list[str], str, list[tuple[int, int]]]:
    texts = draw(st.lists(st.text(ALPHABET, max_size=40), min_size=1, max_size=8))
    if draw(st.booleans()):
        source = draw(st.sampled_from(texts))
        start = draw(st.integers(0, len(source)))
        term = source[start : start + draw(st.integers(1, 4))]
    else:
        term = draw(st.text(ALPHABET, min_size=1, max_size=4))
    if not fold(term):
        term = "a"
    cuts = sorted(set(draw(st.lists(st.integers(0, len(texts)), max_size=4))) | {0, len(texts)})
    spans = list(itertools.pairwise(cuts))
    chosen = [s for s in spans if draw(st.booleans())] if len(spans) > 1 else spans
    return texts, term, chosen


@settings(max_examples=400, deadline=None)
@given(corpus_and_query())
def test_scan_equals_naive_fold_count_per_block(
    case: tuple[list[str], str, list[tuple[int, int]]],
) -> None:
    texts, term, ranges = case
    folded, starts = store(texts)
    assert scan(folded, starts, fold(term), ranges) == naive(texts, term, ranges)
    everything = [(0, len(texts))]
    assert scan(folded, starts, fold(term), everything) == naive(texts, term, everything)


def test_counts_are_non_overlapping() -> None:
    folded, starts = store(["aaaa", "aaa", "x"])
    assert scan(folded, starts, "aa", [(0, 3)]) == [(0, 2), (1, 1)]


def test_a_match_never_spans_two_blocks() -> None:
    folded, starts = store(["ends with ab", "cd starts", "abcd"])
    assert scan(folded, starts, "abcd", [(0, 3)]) == [(2, 1)]


def test_scope_excludes_hits_outside_it() -> None:
    folded, starts = store(["锁", "no", "锁锁", "锁"])
    assert scan(folded, starts, "锁", [(1, 3)]) == [(2, 2)]
    assert scan(folded, starts, "锁", [(0, 1), (3, 4)]) == [(0, 1), (3, 1)]
    assert scan(folded, starts, "锁", []) == []


def test_nul_in_block_text_does_not_split_the_block() -> None:
    texts = ["before\x00after x", "x"]
    folded, starts = store(texts)
    assert scan(folded, starts, "x", [(0, 2)]) == [(0, 1), (1, 1)]
    assert scan(folded, starts, "e\x00a", [(0, 2)]) == [(0, 1)]
    assert scan(folded, starts, "", [(0, 2)]) == []


def test_snippet_shows_the_original_text_around_the_first_hit() -> None:
    text = "Intro line.\nThen STRASSE and Straße, then İstanbul at the end of the line."
    assert snippet(text, fold(text), fold("straße"), 20) == "…ine. Then STRASSE and Straß…"
    around = snippet(text, fold(text), fold("İSTANBUL"), 10)
    assert "İstanbul" in around and around.startswith("…") and around.endswith("…")


def test_snippet_without_a_hit_is_the_start_of_the_text() -> None:
    assert snippet("abc def ghi", "abc def ghi", "zzz", 5) == "abc d…"


@settings(max_examples=300, deadline=None)
@given(st.text(ALPHABET.replace(" ", "").replace("\n", "").replace("\t", ""), min_size=1))
def test_snippet_contains_the_hit_in_original_form(text: str) -> None:
    start = len(text) // 3
    term = text[start : start + 3]
    if not fold(term) or fold(term) not in fold(text):
        return
    shown = snippet(text, fold(text), fold(term), 16).strip("…")
    assert fold(term) in fold(shown)
