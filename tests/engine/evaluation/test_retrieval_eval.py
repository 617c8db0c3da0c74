"""Retrieval metrics without a model: recall, MRR, coverage completeness and scan counts, on a
small library and (slow) on the shared corpus, where they must reproduce the recall table of
tests/engine/tools/test_retrieval_quality.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest

from actors.catalog import Catalog
from engine.embedding import LocalEmbedding
from engine.evaluation import GoldSet, RetrievalResult, evaluate_retrieval, load_gold, parse_gold
from engine.paths import DataDir
from index.snapshot import Snapshot
from tests.engine.evaluation.conftest import EVENTS, FAQ, QUOTE
from tests.engine.tools.snapshots import context
from tests.engine.tools.test_retrieval_quality import GOLD, measure, retrieval_questions

HANDBOOK = "debian-reference.zh-cn.txt"


def gold(*items: dict[str, Any]) -> GoldSet:
    lines = []
    for n, fields in enumerate(items):
        base: dict[str, Any] = {"id": f"q{n}", "lang": "en", "kind": "fact", "question": "?"}
        lines.append(json.dumps({**base, **fields}, ensure_ascii=False))
    return parse_gold("\n".join(lines).encode())


def evaluate(snapshot: Snapshot, g: GoldSet) -> RetrievalResult:
    return anyio.run(evaluate_retrieval, context(snapshot, LocalEmbedding()), g)


def test_recall_and_mrr_rank_each_questions_evidence(searchable: Snapshot) -> None:
    g = gold(
        {
            "question": "How many listeners before EventEmitter prints a warning?",
            "documents": [EVENTS],
            "evidence": [{"document": EVENTS, "quote": QUOTE}],
        },
        {
            "kind": "paraphrase",
            "lang": "zh",
            "question": "怎样用命令行关闭系统？",
            "documents": [HANDBOOK],
            "evidence": [{"document": HANDBOOK, "quote": "可以使用命令行关闭系统。# shutdown"}],
        },
        {
            "question": "How do I compile a kernel module?",
            "documents": ["kernel.md"],
            "evidence": [{"document": "kernel.md", "quote": "make -C /lib/modules/build"}],
        },
        {"kind": "absent", "question": "How do I pin a CPU core?", "documents": [EVENTS]},
    )
    result = evaluate(searchable, g)
    hit, zh, miss = result.rows
    assert result.questions == 3  # the absent question has no evidence to find
    assert hit.rank is not None and zh.rank is not None and miss.rank is None
    assert (
        hit.hit is not None
        and QUOTE in searchable.block(searchable.block_ordinal(*hit.hit.split("#")) or 0).text
    )
    assert miss.missing_documents == ("kernel.md",)
    assert result.recall_at_5 == pytest.approx(2 / 3)
    assert result.mrr == pytest.approx((1 / hit.rank + 1 / zh.rank) / 3)
    assert result.by_kind["paraphrase"].recall_at_5 == 1.0
    assert result.by_kind["fact"].recall_at_5 == 0.5
    assert len(hit.returned) == min(5, searchable.n_blocks)


def test_coverage_lists_the_sections_scope_and_notices_a_section_the_outline_lacks(
    searchable: Snapshot,
) -> None:
    threads = [
        "How do I program using threads?",
        "Can’t we get rid of the Global Interpreter Lock?",
    ]
    evidence = [{"document": FAQ, "quote": "Be sure to use the threading module"}]
    base = {"kind": "coverage", "documents": [FAQ], "evidence": evidence}
    result = evaluate(
        searchable,
        gold(
            {**base, "expected_sections": threads},
            {**base, "expected_sections": [*threads, "How do I fork a process?"]},
        ),
    )
    complete, lacking = result.coverage
    assert complete.complete and complete.scope == "Library and Extension FAQ / Threads"
    assert complete.found == tuple(threads) and complete.blocks == complete.total == 3
    assert complete.evidence_found == 1
    assert not lacking.complete and lacking.not_in_outline == ("How do I fork a process?",)
    assert result.coverage_complete == 0.5


def test_scan_counts_are_exact_and_judged_against_the_gold_minimum(searchable: Snapshot) -> None:
    scan = {"kind": "scan", "term": " EVENTEMITTER ", "documents": [EVENTS]}
    result = evaluate(searchable, gold({**scan, "min_count": 4}, {**scan, "min_count": 8}))
    enough, short = result.scan
    assert (enough.count, enough.naive_count, enough.exact, enough.passed) == (4, 4, True, True)
    assert short.ratio == 0.5 and not short.passed and "50%" in short.problem
    assert result.scan_ok == 0.5


@pytest.fixture(scope="module")
def corpus(corpus_home: Path) -> Iterator[Snapshot]:
    with Catalog(DataDir(corpus_home), "default").pin_active() as snap:
        assert snap is not None
        yield snap


@pytest.mark.slow
def test_the_shared_corpus_reproduces_the_retrieval_quality_table(corpus: Snapshot) -> None:
    embedder = LocalEmbedding()
    items = retrieval_questions()
    vectors = anyio.run(embedder.embed, [i["question"] for i in items]).vectors
    recall, mrr, missed = measure(
        corpus, list(zip(items, np.asarray(vectors), strict=True)), "hybrid"
    )
    result = anyio.run(evaluate_retrieval, context(corpus, embedder), load_gold(GOLD))
    assert result.questions == len(items) == 28
    assert result.recall_at_5 == pytest.approx(recall)
    assert result.mrr == pytest.approx(mrr)
    assert result.missed == missed
    assert result.coverage_complete == 1.0
    assert [(s.id, s.exact) for s in result.scan] == [(f"scan-0{n}", True) for n in range(1, 5)]
    assert all(s.ratio >= 0.75 for s in result.scan) and result.scan_ok == 1.0
