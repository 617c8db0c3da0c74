"""The evaluation runner: a gold set on one pinned snapshot, retrieval always and answers with
one or two frozen prompt bundles, every run traced, the report files written. It never promotes
a bundle and never writes into prompts/; the command line (cli/evaluate.py) renders the result.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio.to_thread
import msgspec

from actors.app import App
from actors.asking import chat_client, deps_for
from actors.errors import AppError, CatalogError
from actors.harness import open_request
from actors.spending import spending_for
from actors.trace_writer import TraceWriter
from actors.tracing import trace_writer
from engine.chat import ChatClient
from engine.clock import utc_timestamp
from engine.errors import GoldError, PromptBundleError
from engine.evaluation import (
    MAX_RUNS,
    AnswerCheck,
    AnswerSummary,
    BundleRef,
    CompareResult,
    EvalManifest,
    EvalResult,
    GoldItem,
    GoldRef,
    GoldSet,
    RunRecord,
    RunRecorder,
    SnapshotRef,
    compare_answers,
    earlier_manifests,
    evaluate_answers,
    evaluate_retrieval,
    invalidations,
    load_gold,
    new_eval_id,
    skipped_note,
    write_report,
)
from engine.harness import PROTOCOL_VERSION, Request
from engine.prompts.bundle import PromptBundle
from engine.prompts.registry import BundleRegistry
from engine.tools import RETRIEVAL_VERSION, TOOL_CONTRACT_VERSION, ToolContext
from engine.trace import app_build, behaviour_settings
from engine.versions import app_version
from index.snapshot import Snapshot

EVALS_DIR = "evals"  # DATA/evals/<eval id>/ unless the caller names another folder
# Runs that ended for reasons outside the answer checks: the evaluation is partial.
INFRASTRUCTURE_REASONS = frozenset(
    {"model_error", "internal_error", "cancelled", "collection_unavailable"}
)

OnRun = Callable[[GoldItem, RunRecord, AnswerCheck], Awaitable[None]]


def _bundle_ref(bundle: PromptBundle) -> BundleRef:
    return BundleRef(
        id=bundle.id,
        version=bundle.version,
        hash=bundle.hash,
        source=bundle.source,
        parent=bundle.parent,
    )


def _bundles_for(
    registry: BundleRegistry, refs: list[str], freeze: bool
) -> tuple[list[PromptBundle], list[str]]:
    """The bundles to ask with (the baseline when none is named); experiments are frozen
    first when answers will run, so the figures belong to a fixed identity."""
    notes: list[str] = []
    if not refs:
        return [registry.active()], notes
    bundles: list[PromptBundle] = []
    for ref in refs:
        bundle = registry.get(ref)
        if freeze and not bundle.manifest.hash:
            bundle = registry.freeze(ref)
            notes.append(
                f"froze {bundle.id}@{bundle.version} (hash {bundle.hash[:12]}): a "
                "bundle used for an evaluation cannot change afterwards"
            )
        bundles.append(bundle)
    return bundles, notes


async def run_eval(
    app: App,
    gold_path: Path,
    *,
    collection: str | None = None,
    bundles: list[str] | None = None,
    snapshot_id: str | None = None,
    runs: int = 1,
    out: Path | None = None,
    chat: ChatClient | None = None,
    on_run: OnRun | None = None,
    on_note: Callable[[str], None] | None = None,
) -> EvalResult:
    """Evaluate a gold set on one snapshot: retrieval always, answers `runs` times with each
    bundle (runs=0: retrieval only; two bundles: a comparison). Writes the report files."""
    if not 0 <= runs <= MAX_RUNS:
        raise AppError(f"the number of runs must be between 1 and {MAX_RUNS}")
    refs = bundles or []
    if len(refs) > 2:
        raise AppError("at most two bundles can be compared")
    try:
        gold = await anyio.to_thread.run_sync(load_gold, gold_path)
    except GoldError as exc:
        raise AppError(str(exc)) from None
    catalog = app.catalog(collection)
    sid = snapshot_id or catalog.active_id()
    if sid is None:
        raise AppError(
            f"collection {catalog.collection!r} has no usable snapshot to evaluate; import the "
            "documents first (`citewise import PATH`)"
        )
    if catalog.manifest(sid) is None:
        raise AppError(f"there is no snapshot {sid!r} in collection {catalog.collection!r}")
    client = (chat or chat_client(app)) if runs > 0 else None
    registry = BundleRegistry.of(app.data)
    warnings: list[str] = []
    try:
        chosen, notes = await anyio.to_thread.run_sync(_bundles_for, registry, refs, runs > 0)
    except PromptBundleError as exc:
        if client is not None and chat is None:
            await client.aclose()
        if runs > 0 or refs:
            raise AppError(str(exc)) from None
        chosen, notes = [], []  # retrieval does not use the bundle: record none and say why
        warnings.append(f"no bundle recorded: {exc}")
    for note in notes:
        if on_note is not None:
            on_note(note)
    unknown = skipped_note(gold)
    if unknown is not None:
        warnings.append(unknown)
    eval_id = new_eval_id()
    created = utc_timestamp()
    try:
        with catalog.pinned(sid) as snapshot:
            ctx = ToolContext(
                snapshot=snapshot,
                embedder=app.embedder(),
                counter=app.counter(),
                max_query_chars=app.config.retrieval.max_query_chars,
            )
            retrieval = await evaluate_retrieval(ctx, gold)
            summaries: list[AnswerSummary] = []
            if client is not None:
                async with trace_writer(app) as writer:
                    for bundle in chosen:
                        summaries.append(
                            await _answers(
                                app, snapshot, client, bundle, gold, runs, writer, on_run
                            )
                        )
                    await writer.flush()  # so health() counts every event of this evaluation
                    health = writer.health()
                if health.dropped or not health.available:
                    warnings.append(
                        f"tracing lost {health.dropped} event(s)"
                        + (f" ({health.last_error})" if health.last_error else "")
                        + "; some report rows link to partial traces"
                    )
            manifest = _manifest(app, eval_id, created, gold, snapshot, chosen, runs)
    except CatalogError as exc:
        raise AppError(str(exc)) from None
    finally:
        if client is not None and chat is None:
            await client.aclose()
    missing = sorted({d for row in retrieval.rows for d in row.missing_documents})
    if missing:
        warnings.append(f"gold documents not in this snapshot: {', '.join(missing)}")
    errors = [row.id for row in retrieval.rows if row.error]
    if errors:
        warnings.append(f"search_blocks failed for {', '.join(errors)} (see the rows)")
    root = out if out is not None else app.data.root / EVALS_DIR
    earlier = await anyio.to_thread.run_sync(earlier_manifests, root, eval_id)
    invalid, valid = invalidations(manifest, earlier)
    answers = summaries[0] if summaries else None
    compare = None
    if len(summaries) == 2:
        compare = CompareResult(
            comparison=compare_answers(summaries[0], summaries[1]), answers_b=summaries[1]
        )
    infrastructure = [
        c
        for s in summaries
        for row in s.rows
        for c in row.checks
        if c.termination_reason in INFRASTRUCTURE_REASONS
    ]
    result = EvalResult(
        retrieval=retrieval,
        answers=answers,
        runs=runs,
        eval_id=eval_id,
        status="partial" if infrastructure else "complete",
        manifest=manifest,
        compare=compare,
        invalidates=tuple(invalid),
        still_valid=tuple(valid),
        warnings=tuple(warnings),
    )
    return await anyio.to_thread.run_sync(write_report, result, root / eval_id)


async def _answers(
    app: App,
    snapshot: Snapshot,
    client: ChatClient,
    bundle: PromptBundle,
    gold: GoldSet,
    runs: int,
    writer: TraceWriter | None,
    on_run: OnRun | None,
) -> AnswerSummary:
    deps = deps_for(app, snapshot, client, bundle=bundle)

    async def ask(item: GoldItem, run: int) -> RunRecord:
        recorder = RunRecorder()
        request = Request(question=item.question)
        async with open_request(deps, request, spending=spending_for(app)) as running:
            async for event in running.events:
                if writer is not None:
                    writer.submit(event)
                recorder.add(event)
            await running.wait()
        return recorder.record(item.id, run)

    summary, _ = await evaluate_answers(
        gold,
        snapshot,
        ask,
        runs=runs,
        bundle=f"{bundle.id}@{bundle.version}",
        bundle_hash=bundle.hash,
        on_run=on_run,
    )
    return summary


def _manifest(
    app: App,
    eval_id: str,
    created: str,
    gold: GoldSet,
    snapshot: Snapshot,
    bundles: list[PromptBundle],
    runs: int,
) -> EvalManifest:
    m = snapshot.manifest
    return EvalManifest(
        eval_id=eval_id,
        created_at=created,
        app_version=app_version(),
        app_build=app_build(),
        gold=GoldRef(path=gold.path, sha256=gold.sha256, questions=len(gold.items)),
        snapshot=SnapshotRef(
            collection=m.collection, id=m.snapshot_id, content_hash=m.content_hash, status=m.status
        ),
        embedding=msgspec.to_builtins(m.embedding) if m.embedding else None,
        retrieval_params=msgspec.to_builtins(m.retrieval) if m.retrieval else None,
        retrieval_version=RETRIEVAL_VERSION,
        tool_contract_version=TOOL_CONTRACT_VERSION,
        protocol_version=PROTOCOL_VERSION,
        bundles=tuple(_bundle_ref(b) for b in bundles),
        chat={"base_url": app.config.chat.base_url, "model": app.config.chat.model},
        settings=behaviour_settings(app.config),
        runs=runs,
        retrieval_only=runs == 0,
    )
