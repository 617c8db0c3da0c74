"""Honest no_match over the whole shared corpus: the snapshot's similarity floor, calibrated at
build time from nonsense probes, turns nonsense, punctuation-only and out-of-vocabulary queries
into no_match, while the gold questions keep vector candidates above it and are still found.
The corpus is the session's (tests/conftest.py), imported once with sentence-window vectors.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from actors.catalog import Catalog
from engine.embedding import LocalEmbedding
from engine.embedding.probes import PROBES_VERSION, carries_content, probe_texts
from engine.evaluation.gold import contains_quote, normalize
from engine.paths import DataDir
from engine.tools import BlocksResult, run_tool
from engine.tools.retrieval import search
from index.snapshot import Snapshot
from tests.corpus import GOLD
from tests.engine.tools.snapshots import context

# None of these is a word of the corpus, so neither list has a reason to return a block.
NONSENSE = [
    "qwzx blorft vindle sporq",
    "florbix quandrel mishtovar",
    "xkcdq vbnmz plokij",
    "vrozzle kwimbat jaxtoo",
    "??? !!! ...",
    "—— ** ##",
    "。。。，，，",
    "🙂🙃🙂",
]


@pytest.fixture(scope="module")
def corpus(corpus_home: Path) -> Iterator[Snapshot]:
    with Catalog(DataDir(corpus_home), "default").pin_active() as snap:
        assert snap is not None
        yield snap


def test_the_corpus_snapshot_records_its_layout_and_calibrated_floor(corpus: Snapshot) -> None:
    layout, floor = corpus.manifest.vector_layout, corpus.manifest.similarity_floor
    assert layout is not None and layout.granularity == "sentence"
    assert corpus.header.n_vectors > corpus.n_blocks  # several vectors per block
    assert floor is not None and floor.probes == len(probe_texts())
    assert floor.probes_version == PROBES_VERSION
    assert floor.mean < floor.p95 < floor.threshold


def test_nonsense_over_the_whole_collection_is_no_match_with_the_floor_in_the_trace(
    corpus: Snapshot,
) -> None:
    ctx = context(corpus, LocalEmbedding())
    floor = corpus.manifest.similarity_floor
    assert floor is not None

    async def run_all() -> list[Any]:
        return [await run_tool(ctx, "search_blocks", {"query": q}) for q in NONSENSE]

    for query, outcome in zip(NONSENSE, anyio.run(run_all), strict=True):
        assert isinstance(outcome.result, BlocksResult), query
        assert outcome.result.empty_reason == "no_match", (query, outcome.result.blocks)
        trace = outcome.internal.search
        assert trace is not None and trace.similarity_floor == floor.threshold
        assert trace.vector_candidates == 0 and trace.vector_read  # read, all under the floor
        if carries_content(query):  # punctuation alone is no match by rule, whatever its vector
            assert all(s < floor.threshold for _, s in trace.vector_read), query


def test_gold_questions_stay_above_the_floor_and_are_found(corpus: Snapshot) -> None:
    items = [json.loads(line) for line in GOLD.read_text(encoding="utf-8").splitlines()]
    items = [i for i in items if i["evidence"] and i["kind"] not in ("absent", "out_of_scope")]
    vectors = anyio.run(LocalEmbedding().embed, [i["question"] for i in items]).vectors
    params = corpus.manifest.retrieval
    assert params is not None
    above = found = 0
    for item, vector in zip(items, vectors, strict=True):
        outcome = search(corpus, item["question"], vector, None, params, "vector")
        above += bool(outcome.ordinals)
        quotes = [normalize(e["quote"]) for e in item["evidence"]]
        found += any(contains_quote(corpus.block(o).text, quotes) for o in outcome.ordinals)
    assert above == len(items)  # every real question keeps vector candidates
    # The vector list alone, floor applied, found 19 of 28 here (0.68, as without the floor;
    # 0.50 with one vector per block): a guard against losing that, not the goal of 0.70.
    assert found / len(items) >= 0.6
