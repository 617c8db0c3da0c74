"""One of the five tools called by hand (`citewise tool`, the Library's look-up panel), on the
active or a named snapshot of a collection, exactly as the agent calls it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from actors.catalog import Catalog
from actors.errors import AppError, CatalogError
from engine.embedding import EmbeddingProvider
from engine.tokens import TokenCounter
from engine.tools import NO_SNAPSHOT, ToolContext, ToolOutcome, UnknownTool, run_tool


async def call_tool(
    catalog: Catalog,
    embedder: EmbeddingProvider,
    counter: TokenCounter,
    name: str,
    args: str | bytes | Mapping[str, Any],
    snapshot_id: str | None,
    max_query_chars: int,
) -> ToolOutcome:
    """The tool's result. Raises AppError for a name that is not one of the five or a snapshot
    that does not exist; every other problem is the tool's own error result (no snapshot at
    all, or one that cannot be opened → collection_unavailable, saying what is damaged and how
    to repair it)."""
    call_args = args if isinstance(args, str | bytes) else dict(args)
    sid = snapshot_id
    try:
        try:
            if snapshot_id is not None and catalog.manifest(snapshot_id) is None:
                raise AppError(
                    f"snapshot {snapshot_id} does not exist in collection "
                    f"{catalog.collection!r}; see `citewise snapshots list`"
                )
            sid = sid or catalog.active_id()
            if sid is not None:
                with catalog.pinned(sid) as snapshot:
                    ctx = ToolContext(snapshot, embedder, counter, max_query_chars=max_query_chars)
                    return await run_tool(ctx, name, call_args)
            reason = NO_SNAPSHOT
        except CatalogError as exc:  # damaged: every tool answers collection_unavailable
            active = snapshot_id is None
            reason = str(exc) if sid is None else catalog.unavailable(sid, exc, active=active)
        ctx = ToolContext(
            None, embedder, counter, unavailable=reason, max_query_chars=max_query_chars
        )
        return await run_tool(ctx, name, call_args)
    except UnknownTool as exc:
        raise AppError(str(exc)) from None
