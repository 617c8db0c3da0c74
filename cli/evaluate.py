"""`citewise prompts …` and `citewise eval GOLD.jsonl`: prompt bundles and the evaluation runner
from the command line. An evaluation pins one snapshot, freezes the experiments it asks with,
traces every run and writes eval.json, report.md and report.png; --json prints one document on
stdout (progress goes to stderr). It never promotes without --yes or writes into prompts/.
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio.to_thread
import msgspec
from rich.table import Table

from actors.app import App, AppError
from actors.asking import chat_client, deps_for
from actors.catalog import CatalogError
from actors.harness import open_request
from actors.spending import spending_for
from actors.trace_writer import TraceWriter
from actors.tracing import trace_writer
from cli.output import EXIT_FAIL, EXIT_OK, EXIT_PARTIAL, EXIT_USAGE, emit_json, err, out
from engine.chat import ChatClient
from engine.clock import utc_timestamp
from engine.evaluation import (
    MAX_RUNS,
    AnswerCheck,
    AnswerSummary,
    BundleRef,
    CompareResult,
    EvalManifest,
    EvalResult,
    GoldError,
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
    write_report,
)
from engine.harness import PROTOCOL_VERSION, Request
from engine.prompts.bundle import BundleError, PromptBundle
from engine.prompts.registry import BundleInfo, BundleRegistry
from engine.tools import RETRIEVAL_VERSION, TOOL_CONTRACT_VERSION, ToolContext
from engine.trace import app_build, behaviour_settings
from engine.versions import app_version
from index.snapshot import Snapshot

EVALS_DIR = "evals"  # DATA/evals/<eval id>/ unless --out names another folder
PROMPT_ACTIONS = ("list", "show", "new", "diff", "freeze", "promote", "rollback")
# Runs that ended for reasons outside the answer checks: the evaluation is partial.
_INFRASTRUCTURE = frozenset(
    {"model_error", "internal_error", "cancelled", "collection_unavailable"}
)


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add `prompts` and `eval` to the `citewise` sub-commands (`sub` from add_subparsers)."""
    p = sub.add_parser(
        "prompts",
        parents=[common],
        help="prompt bundles: list|show ID|new --from ID|diff A B|freeze ID|promote ID --yes|"
        "rollback",
    )
    p.add_argument("action", nargs="?", choices=PROMPT_ACTIONS, default="list")
    p.add_argument("ids", nargs="*", metavar="ID", help="ID or ID@VERSION (see prompts list)")
    p.add_argument("--from", dest="source", metavar="ID", help="new: the bundle to copy")
    p.add_argument("--id", dest="new_id", metavar="NAME", help="new: the experiment's id")
    p.add_argument("--description", default="", help="new: what the experiment tries")
    p.add_argument("--yes", action="store_true", help="promote: confirm the new baseline")
    p.set_defaults(func=cmd_prompts)

    p = sub.add_parser(
        "eval",
        parents=[common],
        help="evaluate a gold set: retrieval without a model, answers N times with one",
    )
    p.add_argument("gold", type=Path, metavar="GOLD.jsonl")
    p.add_argument("--bundle", metavar="ID", help="prompt bundle (default: the baseline)")
    p.add_argument("--snapshot", metavar="ID", help="snapshot (default: the active one)")
    p.add_argument("-n", "--runs", type=int, default=1, help="runs per question (default 1)")
    p.add_argument(
        "--retrieval-only", action="store_true", help="only the model-free retrieval metrics"
    )
    p.add_argument("--compare", nargs=2, metavar=("A", "B"), help="two bundles side by side")
    p.add_argument(
        "--out", type=Path, metavar="DIR", help=f"results folder (default DATA/{EVALS_DIR})"
    )
    p.set_defaults(func=cmd_eval)


# -- prompts ----------------------------------------------------------------------------------


def _one(args: argparse.Namespace, what: str) -> str:
    if len(args.ids) != 1:
        raise AppError(f"`citewise prompts {args.action}` takes one {what}")
    return str(args.ids[0])


def _bundle_json(bundle: PromptBundle) -> dict[str, Any]:
    return {
        "ref": f"{bundle.id}@{bundle.version}",
        "id": bundle.id,
        "version": bundle.version,
        "source": bundle.source,
        "hash": bundle.hash,
        "frozen": bool(bundle.manifest.hash),
        "parent": bundle.parent,
        "path": bundle.path,
    }


async def cmd_prompts(app: App, args: argparse.Namespace) -> int:
    registry = BundleRegistry.of(app.data)
    try:
        return await anyio.to_thread.run_sync(_prompts, registry, args)
    except BundleError as exc:
        raise AppError(str(exc)) from None


def _prompts(registry: BundleRegistry, args: argparse.Namespace) -> int:
    action = args.action
    if action == "list":
        infos = registry.list()
        if args.json:
            active = next((i.ref for i in infos if i.active), None)
            emit_json({"bundles": infos, "active": active})
        else:
            _print_list(infos)
        return EXIT_OK
    if action == "show":
        ref = _one(args, "bundle")
        info = registry.info(ref)
        bundle = registry.get(ref) if info.status in ("frozen", "draft") else None
        if args.json:
            emit_json({"bundle": info, "templates": bundle.templates if bundle else None})
            return EXIT_OK
        _print_list([info])
        if info.problem:
            err.print(f"[yellow]{info.problem}[/]")
        if bundle is not None:
            for name, text in bundle.templates.items():
                out.print(f"\n[bold]── {name} ({bundle.manifest.templates[name]}) ──[/]")
                out.print(text, markup=False)
        return EXIT_OK
    if action == "new":
        if not args.source or args.ids:
            raise AppError("say which bundle to start from: `citewise prompts new --from ID`")
        bundle = registry.new(args.source, ident=args.new_id, description=args.description)
        if args.json:
            emit_json({"created": _bundle_json(bundle)})
        else:
            out.print(
                f"created {bundle.id}@{bundle.version} (parent {bundle.parent}, not frozen) in "
                f"{bundle.path}; edit its files, then `citewise eval GOLD.jsonl --bundle "
                f"{bundle.id}@{bundle.version}` (which freezes it)"
            )
        return EXIT_OK
    if action == "diff":
        if len(args.ids) != 2:
            raise AppError("`citewise prompts diff A B` takes two bundles")
        diff = registry.diff(args.ids[0], args.ids[1])
        if args.json:
            emit_json(diff)
        else:
            out.print(diff.text(), markup=False)
        return EXIT_OK
    if action == "freeze":
        bundle = registry.freeze(_one(args, "bundle"))
        if args.json:
            emit_json({"frozen": _bundle_json(bundle)})
        else:
            out.print(f"{bundle.id}@{bundle.version} is frozen (hash {bundle.hash})")
        return EXIT_OK
    if action == "promote":
        ref = _one(args, "bundle")
        before = registry.active()
        if not args.yes:
            candidate = registry.get(ref)
            err.print(registry.diff(f"{before.id}@{before.version}", ref).text(), markup=False)
            err.print(
                f"\n[yellow]not promoted:[/] {candidate.id}@{candidate.version} would replace "
                f"{before.id}@{before.version} for every new question; add --yes to confirm"
            )
            return EXIT_USAGE
        bundle = registry.promote(ref, confirm=True)
        return _baseline_changed(bundle, before, args.json, "promoted")
    if action == "rollback":
        if args.ids:
            raise AppError(
                "`citewise prompts rollback` takes no bundle: it returns to the "
                "baseline that was active before the last promotion"
            )
        before = registry.active()
        bundle = registry.rollback()
        return _baseline_changed(bundle, before, args.json, "rolled back")
    raise AppError(f"unknown prompts action {action!r}; use {', '.join(PROMPT_ACTIONS)}")


def _baseline_changed(bundle: PromptBundle, before: PromptBundle, as_json: bool, verb: str) -> int:
    previous = f"{before.id}@{before.version}"
    if as_json:
        emit_json({"active": _bundle_json(bundle), "previous": previous})
    else:
        out.print(
            f"{verb}: {bundle.id}@{bundle.version} ({bundle.source}) is the baseline for new "
            f"questions; it was {previous}"
        )
    return EXIT_OK


def _print_list(infos: list[BundleInfo]) -> None:
    table = Table("", "bundle", "source", "status", "hash", "parent", "description")
    for i in infos:
        table.add_row(
            "*" if i.active else "",
            i.ref,
            i.source,
            i.status,
            (i.frozen_hash or i.hash)[:12],
            i.parent or "",
            i.problem or i.description,
        )
    out.print(table)


# -- eval -------------------------------------------------------------------------------------

OnRun = Callable[[GoldItem, RunRecord, AnswerCheck], Awaitable[None]]


async def cmd_eval(app: App, args: argparse.Namespace) -> int:
    on_run = None if args.json else _progress
    bundles = list(args.compare) if args.compare else [args.bundle] if args.bundle else []
    if args.compare and args.bundle:
        raise AppError("use either --bundle ID or --compare A B, not both")
    if args.compare and args.retrieval_only:
        raise AppError("--compare runs answers with two bundles; it cannot be --retrieval-only")
    if args.snapshot is None and app.catalog(args.collection).active_id() is None:
        err.print(
            f"[red]nothing to evaluate:[/] collection {app.resolve_collection(args.collection)!r} "
            "has no usable snapshot yet; import the documents first (`citewise import PATH`)"
        )
        return EXIT_FAIL
    result = await run_eval(
        app,
        args.gold,
        collection=args.collection,
        bundles=bundles,
        snapshot_id=args.snapshot,
        runs=0 if args.retrieval_only else args.runs,
        out=args.out,
        on_run=on_run,
    )
    code = EXIT_PARTIAL if result.status == "partial" else EXIT_OK
    checks = result.checks()
    if checks and all(c.termination_reason in _INFRASTRUCTURE for c in checks):
        code = EXIT_FAIL
    if args.json:
        emit_json(result)
    else:
        _print_result(result)
    return code


async def _progress(item: GoldItem, record: RunRecord, check: AnswerCheck) -> None:
    verdict = "[green]pass[/]" if check.passed else f"[red]fail[/] ({', '.join(check.failures)})"
    err.print(
        f"[dim]{item.id} run {record.run}:[/] {verdict} [dim]{record.termination_reason} · "
        f"{record.total_tokens} tokens · trace {record.trace_id}[/]"
    )


def _print_result(result: EvalResult) -> None:
    r = result.retrieval
    out.print(
        f"retrieval ({r.questions} questions): recall@5 {r.recall_at_5:.3f} · recall@10 "
        f"{r.recall_at_10:.3f} · MRR {r.mrr:.3f} · coverage complete "
        f"{_share(r.coverage_complete)} · scan ok {_share(r.scan_ok)}"
    )
    summaries = [result.answers] if result.answers else []
    if result.compare is not None:
        summaries.append(result.compare.answers_b)
    for a in summaries:
        out.print(
            f"answers {a.bundle} ({a.runs} run(s) per question): pass rate {a.pass_rate:.3f} · "
            f"flips {len(a.flips)} · cost {a.cost:.4f} {a.currency} · {a.tokens.total} tokens"
        )
    if result.compare is not None:
        c = result.compare.comparison
        for q in c.changed:
            out.print(f"  changed {q.id} ({q.kind}): {c.a} {q.a} → {c.b} {q.b}")
    for inv in result.invalidates:
        out.print(
            f"[yellow]invalidates[/] {inv.eval_id}: {'; '.join(inv.answers or inv.retrieval)}"
        )
    for w in result.warnings:
        err.print(f"[yellow]{w}[/]")
    for f in result.report_files:
        out.print(f"report: {f}")


def _share(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


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
    except BundleError as exc:
        if client is not None and chat is None:
            await client.aclose()
        if runs > 0 or refs:
            raise AppError(str(exc)) from None
        chosen, notes = [], []  # retrieval does not use the bundle: record none and say why
        warnings.append(f"no bundle recorded: {exc}")
    for note in notes:
        err.print(f"[dim]{note}[/]")
    eval_id = new_eval_id()
    created = utc_timestamp()
    try:
        with catalog.pinned(sid) as snapshot:
            ctx = ToolContext(snapshot=snapshot, embedder=app.embedder(), counter=app.counter())
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
        if c.termination_reason in _INFRASTRUCTURE
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
