"""`citewise trace list|show ID|replay ID|rerun ID -n N|bundle ID`: traces from the command line.

With --json exactly one JSON document goes to stdout (SPEC §15 field names for list and show);
progress and notices go to stderr. It reads the store and never changes a trace; only `rerun`
runs requests (and traces them like any other).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from actors import AppError
from cli.output import EXIT_FAIL, EXIT_OK, emit_json, err, out

if TYPE_CHECKING:  # the trace code loads when a trace command runs, not for `--help`
    from actors import App, RunOutcome

ACTIONS = ("list", "show", "replay", "rerun", "bundle")


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add `trace` to the `citewise` sub-commands (`sub` is add_subparsers()' result)."""
    p = sub.add_parser(
        "trace",
        parents=[common],
        help="list|show|replay|rerun|bundle: what a request did and whether it reproduces",
    )
    p.add_argument("action", nargs="?", choices=ACTIONS, default="list")
    p.add_argument("id", nargs="?", help="a trace id, or an unambiguous prefix of one")
    p.add_argument("-n", "--runs", type=int, default=3, help="rerun: how many runs (default 3)")
    p.add_argument("--limit", type=int, default=20, help="list: how many traces (newest first)")
    p.add_argument("--status", choices=["ok", "error", "running"], help="list: only this status")
    p.add_argument("--termination", help="list: only this termination reason (e.g. budget)")
    p.add_argument("--since-days", type=float, help="list: only the last N days")
    p.add_argument("--min-cost", type=float, help="list: only traces costing at least this")
    p.add_argument("--imports", action="store_true", help="list: import traces, not questions")
    p.add_argument("--evidence", action="store_true", help="replay: evidence replay only")
    p.add_argument("--retrieval", action="store_true", help="replay: retrieval replay only")
    p.add_argument("-o", "--output", type=Path, help="bundle: where to write the zip")
    p.set_defaults(func=cmd_trace)


async def cmd_trace(app: App, args: argparse.Namespace) -> int:
    from actors import render_trace, trace_document

    action = args.action or "list"
    if action == "list":
        return _list(app, args)
    if not args.id:
        raise AppError(f"`citewise trace {action}` needs a trace id; see `citewise trace list`")
    if action == "show":
        record = app.trace(args.id)
        if args.json:
            emit_json(trace_document(record))
        else:
            out.print(render_trace(record))
        return EXIT_OK
    if action == "replay":
        return await _replay(app, args)
    if action == "rerun":
        return await _rerun(app, args)
    if action == "bundle":
        report = await app.bundle_trace(args.id, args.output)
        if args.json:
            emit_json(report)
        else:
            out.print(
                f"diagnostic bundle written: {report.path} ({report.bytes:,} bytes, "
                f"{report.artifacts} artifacts; checked free of {report.secrets_checked} key(s))"
            )
        return EXIT_OK
    raise AppError(f"unknown trace action {action!r}; use {', '.join(ACTIONS)}")


def _list(app: App, args: argparse.Namespace) -> int:
    from actors import render_list

    summaries = app.traces(
        limit=args.limit,
        kind="ingest" if args.imports else "request",
        status=args.status,
        termination_reason=args.termination,
        since_days=args.since_days,
        min_cost=args.min_cost,
    )
    if args.json:
        emit_json({"traces": summaries})
    else:
        out.print(render_list(summaries))
    return EXIT_OK


async def _replay(app: App, args: argparse.Namespace) -> int:
    from actors import render_evidence, render_retrieval

    both = not args.evidence and not args.retrieval
    document: dict[str, Any] = {"trace_id": app.trace(args.id).summary.trace_id}
    code = EXIT_OK
    if args.evidence or both:
        replay = app.evidence_replay(args.id)
        document["evidence"] = replay
        if not replay.available or any(not i.verified for i in replay.model_inputs):
            code = EXIT_FAIL
        if not args.json:
            out.print(render_evidence(replay))
    if args.retrieval or both:
        result = await app.retrieval_replay(args.id)
        document["retrieval"] = result
        if not result.identical:
            code = EXIT_FAIL
        if not args.json:
            out.print(render_retrieval(result))
    if args.json:
        emit_json(document)
    return code


async def _rerun(app: App, args: argparse.Namespace) -> int:
    from actors import render_rerun

    async def progress(i: int, outcome: RunOutcome) -> None:
        verdict = "passed" if outcome.passed else "failed"
        err.print(f"[dim]run {i}/{args.runs}: {outcome.termination_reason} ({verdict})[/]")

    report = await app.rerun_trace(args.id, args.runs, on_run=progress)
    if args.json:
        emit_json(report)
    else:
        out.print(render_rerun(report))
    return EXIT_OK
