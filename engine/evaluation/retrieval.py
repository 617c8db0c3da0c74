"""Retrieval metrics of a gold set on one snapshot with no chat model: recall@5, recall@10 and
MRR of search_blocks over the whole collection, per question and by kind (SPEC §15: a hit is any
evidence quote inside one of the top k blocks, normalised as GOLD-FORMAT.md says). It only
reads the snapshot: it never tunes a parameter and never skips a question it missed.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from engine.evaluation.gold import GoldItem, GoldSet, contains_quote, normalize
from engine.tools import (
    SearchBlocksArgs,
    ToolContext,
    ToolResult,
    error_of,
    returned_items,
    shown_text,
)
from engine.tools.search_blocks import search_blocks
from index.snapshot import Snapshot

# recall@5 and MRR rank the search the model sees (top_k 5, the shipped setting); recall@10
# runs the same search asking for 10 blocks.
RECALL_AT = (5, 10)


class RetrievalRow(msgspec.Struct, frozen=True, kw_only=True):
    """One question: where its evidence first appeared (1-based rank, None = not found)."""

    id: str
    kind: str
    lang: str
    rank: int | None  # in the top-5 search_blocks result (the one the model sees)
    rank10: int | None  # in the top-10 result of the same search
    hit: str | None = None  # citation of the first block holding a quote
    returned: tuple[str, ...] = ()  # citations of the top-5 result, best first
    missing_documents: tuple[str, ...] = ()  # gold documents this snapshot does not hold
    error: str | None = None  # search_blocks returned an error instead of blocks


class KindRecall(msgspec.Struct, frozen=True, kw_only=True):
    questions: int
    recall_at_5: float = msgspec.field(name="recall@5")
    recall_at_10: float = msgspec.field(name="recall@10")
    mrr: float


class RecallSummary(msgspec.Struct, frozen=True, kw_only=True):
    questions: int
    recall_at_5: float = msgspec.field(name="recall@5")
    recall_at_10: float = msgspec.field(name="recall@10")
    mrr: float  # mean of 1/rank over the top-5 result, 0 for a miss
    by_kind: dict[str, KindRecall]
    rows: tuple[RetrievalRow, ...]


def source_index(snapshot: Snapshot) -> dict[str, str]:
    """doc_id by the names gold files use: source_label (and source) of every document."""
    index: dict[str, str] = {}
    for info in snapshot.documents:
        index.setdefault(info.source, info.doc_id)
        index[info.source_label] = info.doc_id
    return index


def first_rank(blocks: Sequence[tuple[str, str]], quotes: Sequence[str]) -> tuple[int, str] | None:
    """(1-based rank, citation) of the first (citation, text) block holding a quote."""
    for rank, (citation, text) in enumerate(blocks, start=1):
        if contains_quote(text, quotes):
            return rank, citation
    return None


def _blocks(result: ToolResult) -> tuple[list[tuple[str, str]], str | None]:
    error = error_of(result)
    if error is not None:
        return [], f"{error.code}: {error.message}"
    return [(b.citation, shown_text(b)) for b in returned_items(result)], None


async def question_recall(ctx: ToolContext, item: GoldItem, known: dict[str, str]) -> RetrievalRow:
    snapshot = ctx.snapshot
    assert snapshot is not None
    quotes = [normalize(e.quote) for e in item.evidence]
    args = SearchBlocksArgs(query=item.question)
    ranked: list[tuple[list[tuple[str, str]], str | None]] = []
    for k in RECALL_AT:
        params = msgspec.structs.replace(ctx.params, top_k=k)
        run = await search_blocks(snapshot, ctx.embedder, params, args)
        ranked.append(_blocks(run.result))
    (blocks, error), (blocks10, error10) = ranked
    found = first_rank(blocks, quotes)
    found10 = first_rank(blocks10, quotes)
    return RetrievalRow(
        id=item.id,
        kind=item.kind,
        lang=item.lang,
        rank=found[0] if found else None,
        rank10=found10[0] if found10 else None,
        hit=found[1] if found else None,
        returned=tuple(c for c, _ in blocks),
        missing_documents=tuple(d for d in item.documents if d not in known),
        error=error or error10,
    )


def _rates(rows: Sequence[RetrievalRow]) -> tuple[float, float, float]:
    if not rows:
        return 0.0, 0.0, 0.0
    n = len(rows)
    at5 = sum(1 for r in rows if r.rank is not None and r.rank <= 5) / n
    at10 = sum(1 for r in rows if r.rank10 is not None) / n
    mrr = sum(1.0 / r.rank for r in rows if r.rank is not None) / n
    return at5, at10, mrr


def summarize_recall(rows: Sequence[RetrievalRow]) -> RecallSummary:
    at5, at10, mrr = _rates(rows)
    by_kind: dict[str, KindRecall] = {}
    for kind in dict.fromkeys(r.kind for r in rows):
        mine = [r for r in rows if r.kind == kind]
        k5, k10, kmrr = _rates(mine)
        by_kind[kind] = KindRecall(questions=len(mine), recall_at_5=k5, recall_at_10=k10, mrr=kmrr)
    return RecallSummary(
        questions=len(rows),
        recall_at_5=at5,
        recall_at_10=at10,
        mrr=mrr,
        by_kind=by_kind,
        rows=tuple(rows),
    )


async def evaluate_recall(ctx: ToolContext, gold: GoldSet) -> RecallSummary:
    """Recall and MRR of every retrieval question of `gold` on `ctx.snapshot`."""
    if ctx.snapshot is None:
        raise ValueError("retrieval needs a snapshot")
    known = source_index(ctx.snapshot)
    rows = [await question_recall(ctx, item, known) for item in gold.items if item.is_retrieval]
    return summarize_recall(rows)
