"""Retrieval quality on the shared corpus and its gold set: recall@5 and MRR of the keyword list
alone, the vector list alone and the hybrid search_blocks ranks with — hybrid must do at least
as well as either list on the shared set, and find the evidence of at least 85% of its questions
and 80% of the project's second set (tests/fixtures/gold/second.jsonl, written before tuning,
on corpus documents the shared set does not use). The shared bar was 80% with one vector per
block and no similarity floor; sentence vectors and the floor cost it one question and gain
three on the second set; weighting vectors for cross-language blocks won one back (0.786), and
scoring a Chinese query's characters in the blocks that match its terms one more (0.857).

A question counts when any of its evidence quotes (NFC, casefold, whitespace removed, as
GOLD-FORMAT.md says) lies inside one of the top 5 blocks of a search over the whole collection
(SPEC §15). Questions without evidence (scan, absent, out_of_scope) are not retrieval questions;
coverage and compare questions count like the others, on any one of their quotes.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest

from actors.catalog import Catalog
from engine.embedding import LocalEmbedding
from engine.paths import DataDir
from engine.tools import BlocksResult, run_tool
from engine.tools.retrieval import Mode, search
from index.snapshot import Snapshot
from tests.engine.tools.snapshots import context

GOLD = Path(__file__).resolve().parents[3] / ".." / "shared" / "corpus" / "gold.jsonl"
SECOND = Path(__file__).resolve().parents[2] / "fixtures" / "gold" / "second.jsonl"
TOP = 5


def norm(text: str) -> str:
    return "".join(unicodedata.normalize("NFC", text).casefold().split())


def retrieval_questions(gold: Path = GOLD) -> list[dict[str, Any]]:
    lines = gold.read_text(encoding="utf-8").splitlines()
    items = [json.loads(line) for line in lines if line.strip()]
    return [i for i in items if i["evidence"] and i["kind"] not in ("absent", "out_of_scope")]


@pytest.fixture(scope="module")
def corpus(corpus_home: Path) -> Iterator[Snapshot]:
    with Catalog(DataDir(corpus_home), "default").pin_active() as snap:
        assert snap is not None
        yield snap


@pytest.fixture(scope="module")
def questions(corpus: Snapshot) -> list[tuple[dict[str, Any], np.ndarray]]:
    """Each question with its query vector, embedded once by the snapshot's own model."""
    items = retrieval_questions()
    embedder = LocalEmbedding()
    assert embedder.spec == corpus.manifest.embedding
    vectors = anyio.run(embedder.embed, [i["question"] for i in items]).vectors
    return list(zip(items, vectors, strict=True))


def first_hit(snap: Snapshot, ordinals: tuple[int, ...], quotes: list[str]) -> int | None:
    for rank, ordinal in enumerate(ordinals[:TOP]):
        text = norm(snap.block(ordinal).text)
        if any(q in text for q in quotes):
            return rank
    return None


def measure(
    snap: Snapshot, questions: list[tuple[dict[str, Any], np.ndarray]], mode: Mode
) -> tuple[float, float, list[str]]:
    params = snap.manifest.retrieval
    assert params is not None and params.top_k == TOP
    hits, reciprocal, missed = 0, 0.0, []
    for item, vector in questions:
        ordinals = search(snap, item["question"], vector, None, params, mode).ordinals
        rank = first_hit(snap, ordinals, [norm(e["quote"]) for e in item["evidence"]])
        if rank is None:
            missed.append(item["id"])
        else:
            hits += 1
            reciprocal += 1.0 / (rank + 1)
    return hits / len(questions), reciprocal / len(questions), missed


@pytest.mark.slow
def test_hybrid_search_beats_each_list_alone_and_finds_most_gold_evidence(
    corpus: Snapshot, questions: list[tuple[dict[str, Any], np.ndarray]]
) -> None:
    table = {mode: measure(corpus, questions, mode) for mode in ("keyword", "vector", "hybrid")}
    lines = [f"{'list':10} recall@{TOP}   MRR    missed ({len(questions)} questions)"]
    for mode, (recall, mrr, missed) in table.items():
        lines.append(f"{mode:10} {recall:8.3f} {mrr:6.3f}   {' '.join(missed)}")
    print("\n" + "\n".join(lines))
    keyword, vector, hybrid = (table[m][0] for m in ("keyword", "vector", "hybrid"))
    assert hybrid >= max(keyword, vector)
    assert table["hybrid"][1] >= max(table["keyword"][1], table["vector"][1]) - 0.05
    assert hybrid >= 0.85


@pytest.mark.slow
def test_hybrid_search_finds_most_evidence_of_the_second_question_set(corpus: Snapshot) -> None:
    items = retrieval_questions(SECOND)
    vectors = anyio.run(LocalEmbedding().embed, [i["question"] for i in items]).vectors
    recall, _, missed = measure(corpus, list(zip(items, vectors, strict=True)), "hybrid")
    print(f"\nsecond set: hybrid recall@{TOP} {recall:.3f}, missed {' '.join(missed)}")
    assert recall >= 0.80


@pytest.mark.slow
def test_search_blocks_on_the_corpus_repeats_itself_exactly(corpus: Snapshot) -> None:
    ctx = context(corpus, LocalEmbedding())

    async def fifty() -> set[bytes]:
        args = {"query": "apt 和 apt-get 该怎么选？ interactive usage"}
        outcomes = [await run_tool(ctx, "search_blocks", args) for _ in range(50)]
        assert all(isinstance(o.result, BlocksResult) and o.result.total for o in outcomes)
        return {o.json for o in outcomes}

    assert len(anyio.run(fifty)) == 1
