"""bench scan_throughput's peer (bytes.find over the NUL-joined folded buffer) counts what a
naive per-block `str.count` counts, so the benchmark's asserted equality with the index's scan
means something: overlapping needles, hits at block edges, multi-byte text and absent terms."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from bench.bench_retrieval import _find_all


def _peer(texts: list[str], term: str) -> list[tuple[int, int]]:
    encoded = [t.encode("utf-8") for t in texts]
    starts = list(itertools.accumulate((len(t) + 1 for t in encoded[:-1]), initial=0))
    return _find_all(b"\x00".join(encoded), starts, term.encode("utf-8"))


def _naive(texts: list[str], term: str) -> list[tuple[int, int]]:
    return [(i, t.count(term)) for i, t in enumerate(texts) if term in t]


def test_overlapping_needle_and_block_edges() -> None:
    texts = ["aaaa", "a", "", "baaab", "软件包软件包"]
    assert _peer(texts, "aa") == [(0, 2), (3, 1)]
    assert _peer(texts, "a") == _naive(texts, "a")
    assert _peer(texts, "软件包") == [(4, 2)]
    assert _peer(texts, "zyzzyva") == []


@given(
    st.lists(st.text(alphabet="ab软\n ", max_size=12), min_size=1, max_size=8),
    st.text(alphabet="ab软", min_size=1, max_size=3),
)
def test_equals_per_block_count(texts: list[str], term: str) -> None:
    assert _peer(texts, term) == _naive(texts, term)
