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
    sizes = np.array([len(f) + 1 for f in folded], dtype=np.uint64)
    offsets = np.cumsum(sizes) - sizes
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


@settings(max_examples=300, deadline=None)
@given(corpus_and_query(), st.booleans())
def test_numpy_and_find_methods_both_equal_the_naive_count(
    case: tuple[list[str], str, list[tuple[int, int]]], vectorised: bool
) -> None:
    texts, term, ranges = case
    folded, starts = store(texts)
    got = scan(folded, starts, fold(term), ranges, vectorised=vectorised)
    assert got == naive(texts, term, ranges)


def test_forcing_numpy_on_a_self_overlapping_term_still_counts_non_overlapping() -> None:
    folded, starts = store(["aaaaa", "abababa", "x"])
    assert scan(folded, starts, "aa", [(0, 3)], vectorised=True) == [(0, 2)]
    assert scan(folded, starts, "aba", [(0, 3)], vectorised=True) == [(1, 2)]


def test_scan_across_many_numpy_chunks_equals_the_naive_count() -> None:
    # ~5 MB of folded text: more than two 2 MiB passes, with hits straddling chunk edges.
    rng = np.random.default_rng(7)
    words = ["the", "other", "软件包", "lock", "锁", "theme", "ſ", "x"]
    texts = [" ".join(rng.choice(words, size=int(rng.integers(20, 80)))) for _ in range(20_000)]
    folded, starts = store(texts)
    assert len(folded) > 2 * (1 << 21) + 1
    everything = [(0, len(texts))]
    for term in ("the", "软件包", "锁 lock", "ſ x"):
        expected = naive(texts, term, everything)
        assert expected
        assert scan(folded, starts, fold(term), everything) == expected
    scoped = [(5, 6_000), (12_000, 19_999)]
    assert scan(folded, starts, "other", scoped) == naive(texts, "other", scoped)


def test_a_list_of_starts_works_like_block_starts() -> None:
    texts = ["the cat", "no", "then the"]
    folded, starts = store(texts)
    assert scan(folded, list(starts), "the", [(0, 3)], vectorised=True) == [(0, 1), (2, 2)]


def test_matches_starting_on_every_byte_around_numpy_chunk_edges_are_counted() -> None:
    # One ~4.5 MB block of back-to-back "the": with shifts 0, 1, 2 some match starts on each
    # byte next to the 2 MiB pass boundaries, and a match may straddle them.
    for shift in range(3):
        texts = ["a", "x" * shift + "the" * 1_500_000 + " the", "the"]
        folded, starts = store(texts)
        assert scan(folded, starts, "the", [(0, 3)]) == [(1, 1_500_001), (2, 1)]
        assert scan(folded, starts, "xthe", [(1, 2)]) == ([(1, 1)] if shift else [])
