"""search_blocks: the best few blocks for a query by hybrid search (keyword + vector, RRF).

The query is embedded with the snapshot's own embedding model. If that model is not the one
configured, or embedding fails, the call fails with upstream_unavailable: it never searches a
mismatched vector space and never degrades silently to keywords only. Results are candidates,
not the full set; scores and ranks go to the trace, not to the model. A query longer than
retrieval.max_query_chars is invalid_argument before anything is embedded or searched.
"""

from __future__ import annotations

from collections.abc import Sequence

import anyio.to_thread
import msgspec
import numpy as np
import numpy.typing as npt

from engine.config import DEFAULT_MAX_QUERY_CHARS
from engine.embedding import EmbeddingError, EmbeddingProvider
from engine.tools.contracts import (
    TOOL_CONTRACT_VERSION,
    BlockItem,
    BlocksResult,
    EmptyReason,
    ErrorResult,
    SearchBlocksArgs,
    ToolInternals,
    tool_error,
)
from engine.tools.retrieval import SearchOutcome, search
from engine.tools.scope import block_count, block_item, resolve_documents
from index.records import RetrievalParams
from index.snapshot import Snapshot


class SearchRun(msgspec.Struct, frozen=True, kw_only=True):
    """A search_blocks result and what the trace keeps about it."""

    result: BlocksResult | ErrorResult
    internal: ToolInternals = ToolInternals()


def _empty(reason: EmptyReason) -> BlocksResult:
    return BlocksResult(
        blocks=(),
        total=0,
        empty_reason=reason,
        token_estimate=0,
        contract_version=TOOL_CONTRACT_VERSION,
    )


async def search_blocks(
    snapshot: Snapshot,
    embedder: EmbeddingProvider,
    params: RetrievalParams,
    args: SearchBlocksArgs,
    *,
    max_query_chars: int = DEFAULT_MAX_QUERY_CHARS,
) -> SearchRun:
    query = args.query.strip()
    if len(query) > max_query_chars:
        return SearchRun(
            result=tool_error(
                "invalid_argument",
                f"search_blocks: `query` has {len(query):,} characters; the limit is "
                f"{max_query_chars:,} (retrieval.max_query_chars). Search for the few words "
                "that matter; to find an exact passage use scan_term with a short part of it.",
            )
        )
    docs = resolve_documents(snapshot, args.doc_ids)
    if isinstance(docs, ErrorResult):
        return SearchRun(result=docs)
    if docs is None and not snapshot.documents:
        return SearchRun(result=_empty("collection_empty"))
    if block_count(snapshot, docs) == 0:
        return SearchRun(result=_empty("scope_empty"))

    wanted = snapshot.manifest.embedding
    if wanted is None or embedder.spec != wanted:
        have = f"{embedder.spec.provider}/{embedder.spec.model} ({embedder.spec.dimensions}-d)"
        built = (
            "no embedding model"
            if wanted is None
            else f"{wanted.provider}/{wanted.model} ({wanted.dimensions}-d)"
        )
        return SearchRun(
            result=tool_error(
                "upstream_unavailable",
                f"this knowledge base was built with {built} but the configured embedding model "
                f"is {have}; search_blocks cannot compare across models. scan_term and "
                "list_blocks still work; re-import or switch the embedding setting back.",
                retryable=False,
            ),
            internal=ToolInternals(snapshot_embedding=wanted, provider_embedding=embedder.spec),
        )
    try:
        embedded = await embedder.embed([query])
    except EmbeddingError as exc:
        return SearchRun(
            result=tool_error(
                "upstream_unavailable",
                f"the query could not be embedded ({exc.code}: {exc.message}); nothing was "
                "searched. "
                + (
                    "Trying again may work."
                    if exc.retryable
                    else "scan_term and list_blocks still work."
                ),
                retryable=exc.retryable,
            ),
            # The harness waits this long before its one automatic retry (None: its default).
            internal=ToolInternals(embedding_error=exc.code, retry_after=exc.retry_after),
        )
    vector = np.asarray(embedded.vectors[0], dtype=np.float32)
    outcome, blocks = await anyio.to_thread.run_sync(_run, snapshot, query, vector, docs, params)
    result = BlocksResult(
        blocks=blocks,
        total=len(blocks),
        empty_reason=None if blocks else "no_match",
        token_estimate=0,
        contract_version=TOOL_CONTRACT_VERSION,
    )
    internal = ToolInternals(search=outcome.trace, embedding_tokens=embedded.tokens)
    return SearchRun(result=result, internal=internal)


def _run(
    snapshot: Snapshot,
    query: str,
    vector: npt.NDArray[np.float32],
    docs: Sequence[int] | None,
    params: RetrievalParams,
) -> tuple[SearchOutcome, tuple[BlockItem, ...]]:
    """The CPU part, for a worker thread: rank, then read the chosen blocks."""
    outcome = search(snapshot, query, vector, docs, params)
    return outcome, tuple(block_item(snapshot, o) for o in outcome.ordinals)
