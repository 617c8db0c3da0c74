"""The App's trace methods (the traces page and `citewise trace`), kept apart from the facade's
other concerns; actors/tracing.py does the work, actors/trace_*.py build the views."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from actors.app import App
    from actors.trace_compare import RerunEstimate, TraceComparison
    from actors.trace_story import TraceStory
    from engine.trace import (
        BundleReport,
        EvidenceReplay,
        RerunReport,
        RetrievalReplay,
        RunOutcome,
        TraceMode,
        TraceRecord,
        TraceSummary,
    )


class TraceMethods:
    """Mixed into App: every method takes the App as `self`."""

    def _as_app(self) -> App:
        return cast("App", self)

    def traces(self, limit: int = 100, **filters: Any) -> list[TraceSummary]:
        """The latest traces, newest first (none yet is an empty list); `filters` are
        actors.tracing.list_traces' (kind, status, text, since, until, min_cost, max_cost,
        order…)."""
        from actors.tracing import list_traces

        return list_traces(self._as_app(), limit=limit, **filters)

    def trace(self, trace_id: str) -> TraceRecord:
        from actors.tracing import get_trace

        return get_trace(self._as_app(), trace_id)

    async def trace_story(self, trace_id: str) -> TraceStory:
        """The answer's story turn by turn (decisions, tools, results, admissions, costs,
        which sentence cites which block)."""
        from actors.tracing import story

        return await story(self._as_app(), trace_id)

    async def trace_answer(self, trace_id: str) -> str | None:
        from actors.tracing import trace_answer

        return await trace_answer(self._as_app(), trace_id)

    async def compare_traces(self, first: str, second: str) -> TraceComparison:
        """Two traces side by side: manifest, tool calls, blocks, answers."""
        from actors.tracing import compare

        return await compare(self._as_app(), first, second)

    def rerun_estimate(self, trace_id: str, runs: int) -> RerunEstimate:
        from actors.tracing import estimate

        return estimate(self._as_app(), trace_id, runs)

    async def set_trace_mode(self, mode: TraceMode) -> TraceMode:
        """Keep full diagnostics (or metadata only) for the next questions; the mode in effect."""
        from actors.tracing import set_trace_mode

        return await set_trace_mode(self._as_app(), mode)

    def evidence_replay(self, trace_id: str) -> EvidenceReplay:
        """Exactly what the model saw, from the trace's artifacts (full mode only)."""
        from actors.tracing import evidence

        return evidence(self._as_app(), trace_id)

    async def retrieval_replay(self, trace_id: str) -> RetrievalReplay:
        """The request's tool calls run again on its pinned snapshot, diffed."""
        from actors.tracing import retrieval

        return await retrieval(self._as_app(), trace_id)

    async def rerun_trace(
        self,
        trace_id: str,
        runs: int,
        on_run: Callable[[int, RunOutcome], Awaitable[None]] | None = None,
    ) -> RerunReport:
        """The traced request run `runs` times again on its snapshot, each run traced too."""
        from actors.tracing import rerun, trace_writer

        app = self._as_app()
        async with trace_writer(app) as writer:
            return await rerun(app, trace_id, runs, writer=writer, on_run=on_run)

    async def bundle_trace(self, trace_id: str, dest: Path | None = None) -> BundleReport:
        """Write a trace's diagnostic bundle (a zip checked free of every key)."""
        from actors.tracing import bundle

        return await bundle(self._as_app(), trace_id, dest)
