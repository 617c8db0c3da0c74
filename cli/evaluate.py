"""`citewise prompts …` and `citewise eval GOLD.jsonl`: prompt bundles and the evaluation runner
from the command line. An evaluation pins one snapshot, freezes the experiments it asks with,
traces every run and writes eval.json, report.md and report.png; --json prints one document on
stdout (progress goes to stderr). It never promotes without --yes or writes into prompts/.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from rich.table import Table

from actors import AppError, PromptBundleError
from cli.output import EXIT_FAIL, EXIT_OK, EXIT_PARTIAL, EXIT_USAGE, emit_json, err, out

if TYPE_CHECKING:  # the evaluation runner loads when `eval` runs, not for `--help`
    from actors import (
        AnswerCheck,
        App,
        BundleInfo,
        BundleRegistry,
        EvalResult,
        GoldItem,
        PromptBundle,
        RunRecord,
    )

PROMPT_ACTIONS = ("list", "show", "new", "diff", "freeze", "promote", "rollback")


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
    p.add_argument("--out", type=Path, metavar="DIR", help="results folder (default DATA/evals)")
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
    registry = app.prompt_registry()
    try:
        return await anyio.to_thread.run_sync(_prompts, registry, args)
    except PromptBundleError as exc:
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


async def cmd_eval(app: App, args: argparse.Namespace) -> int:
    from actors import INFRASTRUCTURE_REASONS, run_eval

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
        on_note=lambda note: err.print(f"[dim]{note}[/]"),
        collection=args.collection,
        bundles=bundles,
        snapshot_id=args.snapshot,
        runs=0 if args.retrieval_only else args.runs,
        out=args.out,
        on_run=on_run,
    )
    code = EXIT_PARTIAL if result.status == "partial" else EXIT_OK
    checks = result.checks()
    if checks and all(c.termination_reason in INFRASTRUCTURE_REASONS for c in checks):
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
