"""BM25 over roaring postings scores exactly like bm25s (method="lucene") on the same tokens."""

from __future__ import annotations

import contextlib
import re
import tempfile
from collections.abc import Generator, Iterator
from pathlib import Path

import bm25s
import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from index.bm25 import FILES, KEYS, Bm25Index, Bm25Stats, idf, top_k, write_bm25
from index.fsutil import close_map, map_file
from index.textnorm import document_tokens, query_tokens

DOCS = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus" / "docs"
K1, B = 1.2, 0.75


def paragraphs(relative: str, size: int = 300) -> list[str]:
    """Blank-line paragraphs of a corpus file, packed into blocks of about `size` characters."""
    blocks: list[str] = []
    current = ""
    for para in re.split(r"\n\s*\n", (DOCS / relative).read_text("utf-8")):
        para = para.strip()
        if not para:
            continue
        if current and len(current) + len(para) > size:
            blocks.append(current)
            current = ""
        current = f"{current}\n{para}" if current else para
    return [*blocks, current] if current else blocks


@pytest.fixture(scope="module")
def corpus() -> list[list[str]]:
    texts = [
        *paragraphs("nodejs-md/events.md"),
        *paragraphs("nodejs-md/worker_threads.md"),
        *paragraphs("nodejs-md/dns.md"),
        *paragraphs("debian-reference.zh-cn.txt"),
    ]
    assert len(texts) > 1700
    return [document_tokens(t) for t in texts]


def open_index(
    directory: Path, token_lists: list[list[str]], cache_bytes: int = 32 << 20
) -> Generator[Bm25Index, None, None]:
    if not (directory / FILES[0]).exists():
        _, stats = write_bm25(directory, token_lists, k1=K1, b=B)
        (directory / "stats").write_bytes(msgspec.msgpack.encode(stats))
    stats = msgspec.msgpack.decode((directory / "stats").read_bytes(), type=Bm25Stats)
    maps = [map_file(directory / name) for name in FILES]
    index = Bm25Index(stats, *maps, cache_bytes=cache_bytes)
    try:
        yield index
    finally:
        index.release()
        for m in maps:
            close_map(m)


@pytest.fixture(scope="module")
def index(corpus: list[list[str]], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bm25Index]:
    yield from open_index(tmp_path_factory.mktemp("bm25"), corpus)


@pytest.fixture(scope="module")
def reference(corpus: list[list[str]]) -> bm25s.BM25:
    retriever = bm25s.BM25(k1=K1, b=B, method="lucene", dtype="float64")
    retriever.index(corpus, show_progress=False)
    return retriever


QUERIES = [
    "How do I remove an event listener once it fired?",
    "worker thread MessagePort transferList",
    "dns.lookup resolve4 ttl",
    "软件包管理",
    "锁",
    "系统管理员 配置文件 权限",
    "apt-get 安装 软件包 upgrade",
    "emitter emitter emitter",  # repeated terms count once
]


@pytest.mark.parametrize("query", QUERIES)
def test_scores_equal_bm25s_lucene_on_the_same_tokens(
    query: str, corpus: list[list[str]], index: Bm25Index, reference: bm25s.BM25
) -> None:
    tokens = query_tokens(query)
    expected = reference.get_scores(tokens)
    got = index.search(tokens, k=len(corpus))
    assert got, "every query here matches something"
    assert {o for o, _ in got} == set(np.flatnonzero(expected).tolist())
    for ordinal, score in got:
        assert score == pytest.approx(expected[ordinal], abs=1e-5)
    assert got == sorted(got, key=lambda hit: (-hit[1], hit[0]))


def test_only_blocks_holding_a_query_term_are_returned(index: Bm25Index) -> None:
    assert index.search(query_tokens("zzzqqq 𪚥𪚥"), k=10) == []
    assert index.search([], k=10) == []
    hits = index.search(query_tokens("resolve4"), k=10_000)
    assert 0 < len(hits) < 50


def test_scoped_search_keeps_collection_scores_and_excludes_out_of_scope(
    index: Bm25Index,
) -> None:
    tokens = query_tokens("event listener 软件包")
    everything = dict(index.search(tokens, k=100_000))
    ranges = [(0, 100), (1000, 1400)]
    scoped = index.search(tokens, k=100_000, ranges=ranges)
    assert scoped
    assert all(any(a <= o < b for a, b in ranges) for o, _ in scoped)
    assert dict(scoped) == {
        o: s for o, s in everything.items() if any(a <= o < b for a, b in ranges)
    }


def test_ties_are_broken_by_ordinal_even_at_the_cut(tmp_path: Path) -> None:
    blocks = [["other"], ["same", "text"], ["x"], ["same", "text"], ["same", "text"], ["same"]]
    for idx in open_index(tmp_path, blocks):
        hits = idx.search(["same", "text"], k=2)
        assert [o for o, _ in hits] == [1, 3]
        assert hits[0][1] == hits[1][1]
        assert [o for o, _ in idx.search(["same", "text"], k=10)] == [1, 3, 4, 5]


def test_top_k_is_exact_with_ties_straddling_the_cut() -> None:
    ordinals = np.array([9, 2, 7, 4, 1], dtype=np.uint32)
    scores = np.array([1.0, 3.0, 2.0, 2.0, 2.0])
    assert top_k(ordinals, scores, 3) == [(2, 3.0), (1, 2.0), (4, 2.0)]


def test_an_empty_index_answers_nothing(tmp_path: Path) -> None:
    for idx in open_index(tmp_path, []):
        assert idx.search(["anything"], k=5) == []
        assert idx.term_id("anything") is None


def exact_scores(
    blocks: list[list[str]], tokens: list[str], ranges: list[tuple[int, int]] | None = None
) -> dict[int, float]:
    """BM25 per block the slow way: each token's contribution added in query-token order."""
    n = len(blocks)
    avgdl = sum(map(len, blocks)) / n
    df = {t: sum(t in b for b in blocks) for t in tokens}
    out: dict[int, float] = {}
    for ordinal, block in enumerate(blocks):
        if ranges is not None and not any(a <= ordinal < e for a, e in ranges):
            continue
        total, hit = 0.0, False
        for t in tokens:
            tf = float(block.count(t))
            if tf:
                norm = K1 * (1.0 - B + B * np.float64(len(block)) / avgdl)
                total += idf(df[t], n) * tf / (tf + norm)
                hit = True
        if hit:
            out[ordinal] = total
    return out


WORDS = [
    "a",
    "b",
    "docs",
    "document",
    "documents",
    "documentation",
    "documentary",
    "软件包",
    "软件",
]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=12), min_size=1, max_size=40),
    st.lists(st.sampled_from([*WORDS, "documentz", "doc", "absent"]), min_size=1, max_size=6),
    st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40)), max_size=3),
)
def test_scores_are_bit_identical_to_adding_term_contributions_in_order(
    blocks: list[list[str]], tokens: list[str], spans: list[tuple[int, int]]
) -> None:
    # Terms sharing their first 8 bytes exercise the prefix lookup; duplicates count twice.
    with tempfile.TemporaryDirectory() as tmp:
        for idx in open_index(Path(tmp), blocks):
            for ranges in (None, spans):
                ordinals, scores = idx.scores(tokens, ranges)
                assert ordinals.dtype == np.uint32
                assert dict(zip(ordinals.tolist(), scores.tolist(), strict=True)) == (
                    exact_scores(blocks, tokens, ranges)
                )
                assert ordinals.tolist() == sorted(set(ordinals.tolist()))


def test_term_lookup_finds_every_term_among_shared_prefixes(tmp_path: Path) -> None:
    terms = sorted(
        {"document", "documentation", "documentations", "documents", "docu", "软件包"}
        | {"软件包管理", "ab", "abcdefgh", "abcdefghi", "abcdefgg", "abcdefgi"}
    )
    for idx in open_index(tmp_path, [[t] for t in terms]):
        assert idx.term_ids(terms) == list(range(len(terms)))
        assert idx.term_ids(["documentatio", "abcdefghh", "软件", "", "zz", "a"]) == [None] * 6


def test_cached_hot_terms_score_exactly_like_a_cold_index_within_the_byte_budget(
    tmp_path: Path,
) -> None:
    rng = np.random.default_rng(3)
    vocab = ["common", "often", "rare", "mid"]
    blocks = [list(rng.choice(vocab, size=int(rng.integers(1, 9)), p=[0.5, 0.3, 0.05, 0.15]))
              for _ in range(3_000)]  # fmt: skip
    query = ["common", "often", "rare", "mid"]
    opened = [open_index(tmp_path, blocks, cache_bytes=size) for size in (0, 40_000)]
    cold, idx = (next(o) for o in opened)
    expected = cold.scores(query)
    for _ in range(3):  # first call fills the cache, later ones read it
        got = idx.scores(query)
        assert np.array_equal(got[0], expected[0]) and np.array_equal(got[1], expected[1])
        assert 0 < idx._hot.nbytes <= 40_000
        single = idx.scores(["common"], [(10, 20)])
        assert np.array_equal(single[1], cold.scores(["common"], [(10, 20)])[1])
    single[1][:] = 0.0  # a caller may scribble on what it gets without corrupting the cache
    assert np.array_equal(idx.scores(query)[1], expected[1])
    for o in opened:
        o.close()


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 30), st.integers(0, 3_000), st.integers(1, 8), st.integers(0, 2**32 - 1))
def test_top_k_equals_a_full_sort_with_many_ties(k: int, size: int, levels: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    ordinals = rng.permutation(size).astype(np.uint32)
    scores = rng.integers(0, levels, size).astype(np.float64) / levels
    expected = sorted(
        zip(ordinals.tolist(), scores.tolist(), strict=True), key=lambda h: (-h[1], h[0])
    )
    assert top_k(ordinals, scores, k) == expected[:k]


# A document of the test collection: `length` consecutive blocks of the corpus from `start`.
_DOCUMENT = st.tuples(st.integers(0, 1_650), st.integers(0, 25))


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_an_index_carried_over_through_adds_and_removes_equals_a_fresh_build(
    corpus: list[list[str]], data: st.DataObject
) -> None:
    # Each step removes some documents and inserts new ones anywhere; the kept documents'
    # postings come from the previous step's index (renumbered), never from their tokens.
    documents = data.draw(st.lists(_DOCUMENT, min_size=1, max_size=4), label="initial")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        parent = root / "step0"
        parent.mkdir()
        _, parent_stats = write_bm25(parent, blocks_of(corpus, documents), k1=K1, b=B)
        for step in range(1, data.draw(st.integers(1, 4), label="steps") + 1):
            kept = data.draw(st.lists(st.booleans(), min_size=len(documents),
                                      max_size=len(documents)), label="kept")  # fmt: skip
            starts = np.cumsum([0] + [length for _, length in documents]).tolist()
            layout: list[tuple[tuple[int, int], int | None]] = [
                (doc, start) for doc, start, keep in zip(documents, starts, kept, strict=False)
                if keep
            ]  # fmt: skip
            for at, doc in data.draw(
                st.lists(st.tuples(st.integers(0, len(layout)), _DOCUMENT), max_size=2),
                label="added",
            ):
                layout.insert(min(at, len(layout)), (doc, None))
            items: list[list[str] | int] = []
            for (first, length), parent_start in layout:
                if parent_start is None:
                    items.extend(corpus[first : first + length])
                else:
                    items.extend(range(parent_start, parent_start + length))
            documents = [doc for doc, _ in layout]
            carried, fresh = root / f"step{step}", root / f"fresh{step}"
            carried.mkdir()
            fresh.mkdir()
            with mapped(parent, parent_stats) as previous:
                _, carried_stats = write_bm25(carried, items, k1=K1, b=B, parent=previous)
            _, fresh_stats = write_bm25(fresh, blocks_of(corpus, documents), k1=K1, b=B)
            assert carried_stats == fresh_stats
            for name in FILES:
                assert (carried / name).read_bytes() == (fresh / name).read_bytes(), name
            with mapped(carried, carried_stats) as a, mapped(fresh, fresh_stats) as b:
                probes = [query_tokens(q) for q in QUERIES]
                probes += [corpus[first][:3] for first, length in documents if length]
                for tokens in probes:
                    got, expected = a.scores(tokens), b.scores(tokens)
                    assert np.array_equal(got[0], expected[0])
                    np.testing.assert_allclose(got[1], expected[1], rtol=0, atol=1e-9)
            parent, parent_stats = carried, carried_stats


def test_precomputed_term_keys_equal_the_derived_ones_and_answer_alike(
    corpus: list[list[str]], tmp_path: Path
) -> None:
    """bm25.keys (written at build time, so the first search after opening derives nothing)
    holds exactly the keys an index without it derives on its first query."""
    terms = sorted(
        {"document", "documents", "docu", "软件包", "软件包管理", "abcdefgh", "abcdefghi"}
    )
    blocks = [*corpus[:400], *([t] for t in terms)]
    _, stats = write_bm25(tmp_path, blocks, k1=K1, b=B)
    maps = [map_file(tmp_path / name) for name in (*FILES, KEYS)]
    with_keys, derived = Bm25Index(stats, *maps), Bm25Index(stats, *maps[:-1])
    try:
        assert with_keys._keys is not None and derived._keys is None  # read at open, not built
        assert np.array_equal(with_keys._prefix_keys(), derived._prefix_keys())
        every = [*terms, "documentatio", "abcdefghh", "软件", "zz", *corpus[3], *corpus[250]]
        assert with_keys.term_ids(every) == derived.term_ids(every)
        assert with_keys.term_ids(terms) != [None] * len(terms)
        for query in (corpus[7][:5], [*terms[:3], "zz"], corpus[399]):
            assert with_keys.search(query, 10) == derived.search(query, 10)
    finally:
        for index in (with_keys, derived):
            index.release()
        for m in maps:
            close_map(m)


def blocks_of(corpus: list[list[str]], documents: list[tuple[int, int]]) -> list[list[str]]:
    return [tokens for first, length in documents for tokens in corpus[first : first + length]]


@contextlib.contextmanager
def mapped(directory: Path, stats: Bm25Stats) -> Iterator[Bm25Index]:
    maps = [map_file(directory / name) for name in FILES]
    index = Bm25Index(stats, *maps)
    try:
        yield index
    finally:
        index.release()
        for m in maps:
            close_map(m)


def test_carrying_blocks_needs_their_parent_and_each_parent_block_once(tmp_path: Path) -> None:
    (tmp_path / "p").mkdir()
    _, stats = write_bm25(tmp_path / "p", [["a", "b"], ["b"]], k1=K1, b=B)
    with pytest.raises(ValueError, match="no parent"):
        write_bm25(tmp_path, [0, ["c"]], k1=K1, b=B)
    with mapped(tmp_path / "p", stats) as parent:
        for items in ([0, 0], [2], [-1]):
            with pytest.raises(ValueError):
                write_bm25(tmp_path, items, k1=K1, b=B, parent=parent)
    assert not any((tmp_path / name).exists() for name in FILES)
