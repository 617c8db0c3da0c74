"""Fixtures of the evaluation tests: small real snapshots of the tool tests' library, a gold
item builder, and runs recorded the way the harness records them."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest

from engine.embedding import LocalEmbedding
from engine.evaluation import GoldItem, RunRecord, ToolUse, parse_gold
from engine.harness import Evidence, resolve
from engine.tools import default_retrieval_params
from index.records import FailedDocument, SnapshotManifest
from index.snapshot import Snapshot, build_snapshot
from tests.engine.tools.snapshots import library, write_snapshot

EVENTS = "nodejs-md/events.md"
FAQ = "python-faq/library.html"
QUOTE = "This is a useful default that helps finding"


@pytest.fixture(scope="module")
def searchable(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Snapshot]:
    """The library with vectors of the built-in embedding model, for search_blocks."""
    path = write_snapshot(tmp_path_factory.mktemp("search") / "snap", library(), LocalEmbedding())
    with Snapshot.open(path) as snap:
        yield snap


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Snapshot]:
    path = write_snapshot(tmp_path_factory.mktemp("answers") / "snap", library())
    with Snapshot.open(path) as snap:
        yield snap


@pytest.fixture(scope="module")
def partial(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Snapshot]:
    """The same documents in a ready_partial snapshot: one lecture failed to import."""
    docs = library()
    params = default_retrieval_params()
    manifest = SnapshotManifest(
        snapshot_id="partial-1",
        parent_id=None,
        collection="test",
        status="ready_partial",
        created_at="2026-01-01T00:00:00Z",
        failed_documents=(
            FailedDocument(source="scans/lecture-03.pdf", stage="parse", reason="no_text_layer"),
        ),
        retrieval=params,
    )
    path = tmp_path_factory.mktemp("partial") / "snap"
    build_snapshot(
        path,
        manifest,
        docs,
        [np.zeros((len(d.blocks), 0), dtype=np.float32) for d in docs],
        k1=params.bm25_k1,
        b=params.bm25_b,
        exact_search_max_blocks=params.exact_search_max_blocks,
    )
    with Snapshot.open(path) as snap:
        yield snap


def citation_of(snapshot: Snapshot, fragment: str) -> str:
    """The citation id of the block holding `fragment`."""
    for ordinal in range(snapshot.n_blocks):
        block = snapshot.block(ordinal)
        if fragment in block.text:
            return block.citation
    raise AssertionError(f"no block holds {fragment!r}")


def item(**fields: Any) -> GoldItem:
    base: dict[str, Any] = {
        "id": "q",
        "lang": "en",
        "kind": "fact",
        "question": "How many listeners before a warning, and why?",
        "documents": [EVENTS],
        "evidence": [{"document": EVENTS, "quote": QUOTE}],
        "answer_must_include": ["10", ["memory leak", "内存泄漏"]],
    }
    base.update(fields)
    return parse_gold(json.dumps(base, ensure_ascii=False).encode()).items[0]


def run(
    snapshot: Snapshot,
    answer: str | None,
    *,
    question: str = "q",
    number: int = 1,
    cost: float = 0.0,
    tokens: int = 0,
    returned: Sequence[str] = (),
    located: Sequence[str] = (),
    refused: Sequence[str] = (),
    finalized: str | None = None,
    tools: bool = True,
    termination: str = "finished",
) -> RunRecord:
    """A run as the harness records it: the answer's citations resolved against the blocks
    that tools returned (and the harness admitted) in this run."""
    evidence = Evidence()
    for citation in returned:
        doc_id, _, block_id = citation.partition("#")
        evidence.add(doc_id, block_id, "search_blocks")
    for citation in located:
        doc_id, _, block_id = citation.partition("#")
        evidence.add_located(doc_id, block_id, "scan_term")
    return RunRecord(
        question_id=question,
        run=number,
        cost=cost,
        total_tokens=tokens,
        prompt_tokens=tokens,
        request_id="0" * 32,
        trace_id="0" * 32,
        answer=answer,
        termination_reason=termination,
        citations=tuple(resolve(answer, evidence, snapshot)) if answer else (),
        tools=(ToolUse(tool="search_blocks", args={}, harness_status="ok", outcome="ok"),)
        if tools
        else (),
        seen=tuple(returned),
        refused=tuple(refused),
        finalized=finalized,
    )
