"""The `citewise` commands: every capability scriptable, one JSON document with --json.

Runs the app on trio (a one-off tool call, which starts no actors, on asyncio). Progress and
notices go to stderr; results to stdout. Exit codes (SPEC §12): 0 success, 1 failure, 2 invalid
usage or a tool error, 3 partial success.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
from rich.markup import escape

from actors import AppError, app_version, redact
from cli.ask import add_parsers as add_ask_parsers
from cli.evaluate import add_parsers as add_eval_parsers
from cli.output import (
    EXIT_FAIL,
    EXIT_OK,
    EXIT_PARTIAL,
    EXIT_USAGE,
    emit_json,
    err,
    exit_code_for,
    out,
)
from cli.serve import add_parsers as add_serve_parsers
from cli.tool import add_parsers as add_tool_parsers
from cli.trace import add_parsers as add_trace_parsers
from cli.upgrade import add_parsers as add_upgrade_parsers
from cli.upgrade import gate as data_gate

if TYPE_CHECKING:  # `--version` and `--help` load no app: each command imports what it runs
    from actors import App, ImportProgress, ImportResult


# -- import -----------------------------------------------------------------------------------
class _ProgressView:
    """A rich progress bar on stderr, fed by the pipeline's progress events: the import's share
    done, documents, pages read, blocks embedded, embedding tokens and the time left at the
    measured pace; each failure is printed above the bar, with its reason, as it happens."""

    def __init__(self, enabled: bool) -> None:
        from rich.progress import (
            BarColumn,
            Progress,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        self.enabled = enabled
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            TaskProgressColumn(),
            TextColumn("{task.fields[detail]}"),
            TimeElapsedColumn(),
            TextColumn("{task.fields[eta]}"),
            console=err,
            disable=not enabled,
            transient=False,
        )
        self.task = self.progress.add_task("importing", total=1.0, detail="", eta="")
        self._failures_shown = 0

    def update(self, p: ImportProgress) -> None:
        self.progress.update(
            self.task,
            completed=p.fraction,
            description=p.state,
            detail=escape(_progress_detail(p)),
            eta=escape(_eta_detail(p)),
        )
        if self.enabled:
            for f in p.failures[self._failures_shown :]:
                line = _failure_line(f.source, f.stage, f.reason, f.message)
                self.progress.console.print(f"[red]✗[/] {escape(line)}")
        self._failures_shown = len(p.failures)


def _progress_detail(p: ImportProgress) -> str:
    done = p.documents_done + p.documents_failed
    parts = [f"{done}/{p.documents_total} docs"]
    if p.documents_failed:
        parts[0] += f" ({p.documents_failed} failed)"
    if p.pages_total:
        parts.append(f"{p.pages:,}/{p.pages_total:,} pages read")
    if p.blocks_to_embed or len(parts) == 1:  # no "0/0 blocks" before any is chunked
        parts.append(f"{p.blocks_embedded:,}/{p.blocks_to_embed:,} blocks embedded")
        parts.append(f"{p.embedding_tokens:,} emb tokens")
    if p.blocks_cached:
        parts.append(f"{p.blocks_cached:,} already embedded")
    if p.ocr_pages_total:  # after the blocks: a scan is a part of the pages read
        parts.append(f"{p.ocr_pages:,}/{p.ocr_pages_total:,} scanned pages recognised")
        if p.ocr_pages_cached:
            parts.append(f"{p.ocr_pages_cached:,} recognised before")
    return " · ".join(parts)


def _eta_detail(p: ImportProgress) -> str:
    if p.state != "running":
        return ""
    if p.eta_s is None:
        return "ETA estimating…"
    if p.ocr_pages_per_s and p.ocr_pages < p.ocr_pages_total:
        pace = f" at {_rate(p.ocr_pages_per_s)} scanned pages/s"
    elif p.blocks_per_s:
        pace = f" at {_rate(p.blocks_per_s)} blocks/s"
    elif p.pages_per_s:
        pace = f" at {_rate(p.pages_per_s)} pages/s"
    else:
        pace = ""
    return f"ETA {_duration(p.eta_s)}{pace}"


def _rate(per_s: float) -> str:
    """Whole numbers from 10 a second up, one decimal below (0.3 pages/s, never 0)."""
    return f"{per_s:,.0f}" if per_s >= 10 else f"{per_s:.1f}"


def _duration(seconds: float) -> str:
    s = max(0, round(seconds))
    if s < 60:
        return f"{s}s"
    m, s = divmod(s, 60)
    if m < 60:
        return f"{m}m{s:02d}s"
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m"


def _failure_line(source: str, stage: str, reason: str, message: str) -> str:
    because = f": {message}" if message else ""
    return f"{source} could not be imported ({stage}: {reason}){because}"


def _plural(n: int, one: str, other: str) -> str:
    return f"{n:,} {one if n == 1 else other}"


def closing_line(result: ImportResult) -> str:
    """The whole library's count, then what this import added, kept, failed and skipped."""
    c = result.counts()
    parts = [_plural(c.library, "document", "documents") + " in the library"]
    if c.read_again:  # what "recognise all pages" did to the documents it read again
        parts.append(
            "pages recognised again in "
            + _plural(c.read_again, "document", "documents")
            + ", "
            + _plural(c.blocks_changed, "block", "blocks")
            + " changed"
        )
    elif c.re_read:
        parts.append(
            _plural(c.re_read, "document", "documents")
            + " read again as this version of Citewise reads them, "
            + _plural(c.blocks_changed, "block", "blocks")
            + " changed"
        )
    if c.added:
        parts.append(f"{c.added:,} added")
    if c.re_embedded:
        parts.append(
            _plural(c.re_embedded, "document", "documents")
            + " embedded again for the new embedding model or vector layout"
        )
    if c.unchanged:
        parts.append(f"{c.unchanged:,} unchanged")
    if c.failed:
        parts.append(f"{c.failed:,} could not be imported — see why below")
    if c.skipped:
        parts.append(_plural(c.skipped, "file", "files") + " skipped (not a supported type)")
    if c.resumed:
        parts.append(
            _plural(c.resumed, "document", "documents") + " finished before the interruption kept"
        )
    if c.vectors_reused:
        parts.append(_plural(c.vectors_reused, "block", "blocks") + " not embedded again")
    return "; ".join(parts) + "."


async def cmd_import(app: App, args: argparse.Namespace) -> int:
    paths = [Path(p) for p in args.paths]
    for raw in args.paths:
        if not _is_text(raw):
            shown = os.fsencode(raw).decode("utf-8", "backslashreplace")
            raise AppError(
                f"the path {shown} is not valid UTF-8 text, which Citewise cannot record; "
                "rename it (or the folder it is in) and import again"
            )
    if not paths and not app.pending_import(args.collection):
        err.print(
            "nothing to import: name files or folders, e.g. `citewise import ~/Documents/notes`"
        )
        return EXIT_USAGE
    if not paths:
        err.print("resuming the interrupted import…")
    if args.ocr_all_pages:
        app.recognise_all_pages_of(paths, args.collection)
    view = _ProgressView(enabled=(not args.json and err.is_terminal) or args.progress)
    with view.progress:
        job = app.start_import(paths, args.collection, wait_for_writer_s=args.wait)
        async for progress in job.progress_events():
            view.update(progress)
        result = await job.wait()
    return _report_import(result, args.json)


def _is_text(value: str) -> bool:
    """False when argv held bytes that are not UTF-8 (Python keeps them as lone surrogates)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _report_import(result: ImportResult, as_json: bool) -> int:
    code = {
        "ready": EXIT_OK,
        "ready_partial": EXIT_PARTIAL,
        "failed": EXIT_FAIL,
        None: EXIT_PARTIAL if result.failed_documents else EXIT_OK,
    }[result.status]
    if as_json:
        emit_json(result)
        return code
    s = result.stats
    out.print(escape(closing_line(result)))
    if result.status is None:
        out.print(f"{escape(result.message)} (snapshot {result.snapshot_id})")
    elif result.status == "failed":
        out.print(f"[red]import failed:[/] {escape(result.message)}")
    else:
        out.print(
            f"snapshot {result.snapshot_id} is active ({result.status}): "
            f"{s.documents_succeeded} imported ({s.documents_reused} unchanged), "
            f"{s.documents_failed} failed, {len(result.skipped)} skipped; "
            f"{s.blocks_chunked} blocks, {s.blocks_embedded} newly embedded"
        )
    for f in result.failed_documents:
        out.print(f"  [red]✗[/] {escape(_failure_line(f.source, f.stage, f.reason, f.message))}")
    if result.skipped:
        names = ", ".join(x.source for x in result.skipped[:8])
        more = f" and {len(result.skipped) - 8} more" if len(result.skipped) > 8 else ""
        out.print(f"  skipped (not a supported type): {escape(names)}{more}")
    return code


async def cmd_remove(app: App, args: argparse.Namespace) -> int:
    result = await app.remove(args.items, collection=args.collection)
    code = _report_import(result, args.json)
    if result.already_removed and result.status is not None and not args.json:
        out.print(f"already removed before: {escape(', '.join(result.already_removed))}")
    return code


# -- status and snapshots ---------------------------------------------------------------------
async def cmd_status(app: App, args: argparse.Namespace) -> int:
    return _print_status(app, args)


def status_now(args: argparse.Namespace) -> int:
    """`status` reads a few small files: it runs with no event loop and no actors (no trace
    writer, no workers), after the same start gate as every command."""
    from actors import App

    data_gate(args.command)
    return _print_status(App.from_environment(), args)


def _print_status(app: App, args: argparse.Namespace) -> int:
    report = app.status(args.collection)
    if args.json:
        emit_json(report)
        return EXIT_OK
    out.print(
        f"collection [bold]{escape(report.collection)}[/]  (data: {escape(str(report.data_dir))})"
    )
    a = report.active_snapshot
    if a is None:
        out.print("no active snapshot yet: import documents with `citewise import PATH`")
    else:
        out.print(
            f"active snapshot {a.id} · {a.status} · {a.documents} documents · {a.blocks} blocks"
            f" · created {a.created_at}"
        )
        out.print(f"content hash {a.content_hash} · embedding {a.embedding}")
        for f in a.failed_documents:
            line = f"{f['source']} ({f['stage']}: {f['reason']}) {f['message']}"
            out.print(f"  [red]missing[/] {escape(line)}")
        if a.skipped:
            out.print(f"  {len(a.skipped)} files skipped (unsupported type)")
        if a.documents_with_warnings:
            n = a.documents_with_warnings
            out.print(
                f"  {_plural(n, 'document', 'documents')} imported with warnings: see "
                "`citewise documents show DOC`"
            )
    if report.import_:
        p = report.import_
        out.print(
            f"import {p.get('state')}: {p.get('documents_done', 0)}/{p.get('documents_total', 0)} "
            f"documents, {p.get('documents_failed', 0)} failed"
            + (f" — {p['hint']}" if "hint" in p else "")
        )
    return EXIT_OK


async def cmd_snapshots(app: App, args: argparse.Namespace) -> int:
    action = args.action or "list"
    if action == "list":
        active, manifests = app.snapshot_manifests(args.collection)
        if args.json:
            emit_json(
                {
                    "collection": app.resolve_collection(args.collection),
                    "active": active,
                    "snapshots": [
                        {
                            "id": m.snapshot_id,
                            "parent_id": m.parent_id,
                            "status": m.status,
                            "created_at": m.created_at,
                            "documents": len(m.documents),
                            "blocks": sum(d.blocks for d in m.documents),
                            "failed_documents": len(m.failed_documents),
                            "content_hash": m.content_hash,
                            "active": m.snapshot_id == active,
                        }
                        for m in manifests
                    ],
                }
            )
            return EXIT_OK
        from rich.table import Table

        table = Table("", "id", "status", "created", "docs", "blocks", "failed", "content hash")
        for m in manifests:
            table.add_row(
                "*" if m.snapshot_id == active else "",
                m.snapshot_id,
                m.status,
                m.created_at,
                str(len(m.documents)),
                str(sum(d.blocks for d in m.documents)),
                str(len(m.failed_documents)),
                m.content_hash[:16],
            )
        out.print(table)
        return EXIT_OK
    if action == "activate":
        m = app.activate(_one_id(args), args.collection)
        if args.json:
            emit_json({"active": m.snapshot_id, "status": m.status})
        else:
            out.print(f"snapshot {m.snapshot_id} is now active ({m.status})")
        return EXIT_OK
    if action == "verify":
        result = await app.verify(_one_id(args), args.collection)
        if args.json:
            emit_json(result)
        else:
            verdict = "[green]ok[/]" if result.ok else "[red]DAMAGED[/]"
            out.print(f"snapshot {_one_id(args)}: {verdict} (content hash {result.actual})")
            for p in result.problems:
                out.print(f"  {p}", markup=False)
        return EXIT_OK if result.ok else EXIT_FAIL
    if action == "gc":
        report = await app.gc(args.collection)
        if args.json:
            emit_json(report.__dict__)
        else:
            out.print(
                f"deleted {len(report.deleted)}, kept {len(report.kept)}, pinned "
                f"{len(report.pinned)}, to retry {len(report.retry_later)}"
            )
        return EXIT_OK
    raise AppError(f"unknown snapshots action {action!r}")


def _megabytes(n: int) -> str:
    return f"{n / 1_048_576:,.1f} MB"


async def cmd_cache(app: App, args: argparse.Namespace) -> int:
    """What the caches take; with --clear, empty them (only time is lost: the next import of
    a document reads and embeds it again)."""
    usage = await app.clear_caches() if args.clear else app.cache_usage()
    if args.json:
        emit_json({**msgspec.structs.asdict(usage), "total": usage.total, "cleared": args.clear})
        return EXIT_OK
    rows = (
        ("embeddings", usage.embeddings),
        ("recognised pages", usage.recognised_pages),
        ("read documents", usage.documents),
    )
    for name, size in rows:
        out.print(f"{name:>17}  {_megabytes(size):>10}")
    verb = "cleared" if args.clear else "in all"
    out.print(f"{verb:>17}  {_megabytes(usage.total):>10}")
    return EXIT_OK


def _one_id(args: argparse.Namespace) -> str:
    if not args.id:
        raise AppError(f"`citewise snapshots {args.action}` needs a snapshot id")
    return str(args.id)


async def cmd_collections(app: App, args: argparse.Namespace) -> int:
    action = args.action or "list"
    names = args.names
    need = {"list": 0, "create": 1, "use": 1, "delete": 1, "rename": 2}
    if action not in need:
        raise AppError(
            f"unknown collections action {action!r}; use list, create, rename, delete, use"
        )
    if len(names) != need[action]:
        raise AppError(f"`citewise collections {action}` takes {need[action]} name(s)")
    if action == "create":
        app.create_collection(names[0])
    elif action == "use":
        app.use_collection(names[0])
    elif action == "rename":
        app.rename_collection(names[0], names[1])
    elif action == "delete":
        if not args.yes:
            raise AppError(
                f"deleting collection {names[0]!r} removes all its snapshots; add --yes to confirm"
            )
        app.delete_collection(names[0])
    current = app.current_collection()
    if args.json:
        emit_json({"collections": app.collections(), "current": current})
    else:
        for name in app.collections():
            out.print(f"{'*' if name == current else ' '} {name}", markup=False)
    return EXIT_OK


async def cmd_documents(app: App, args: argparse.Namespace) -> int:
    """`documents list`, `documents show DOC` (its import report), and `documents edit DOC`
    (title, source label, aliases)."""
    if args.action == "show":
        from cli.report import show_document

        return show_document(app, args)
    if args.action == "list":
        if args.doc is not None:
            raise AppError("`citewise documents list` takes no document")
        outcome = await app.run_tool("list_documents", "{}", collection=args.collection)
        listed = msgspec.json.decode(outcome.json)
        if args.json:
            emit_json({"documents": listed.get("documents", []), "total": listed.get("total", 0)})
            return EXIT_OK
        for d in listed.get("documents", []):
            aliases = f"  (aliases: {', '.join(d['aliases'])})" if d["aliases"] else ""
            line = f"{d['doc_id']}  {d['source_label']}  {d['title']}{aliases}"
            out.print(escape(line))
        return EXIT_OK
    if args.doc is None:
        raise AppError("say which document: `citewise documents edit DOC_ID|SOURCE --title …`")
    aliases = [] if args.clear_aliases else args.aliases
    result = await app.edit_document(
        args.doc,
        title=args.title,
        source_label=args.label,
        aliases=aliases,
        collection=args.collection,
    )
    if args.json:
        emit_json(result)
    elif result.changed:
        aliases = f"; aliases: {', '.join(result.aliases)}" if result.aliases else ""
        out.print(
            escape(
                f"{result.doc_id} is now “{result.title}” ({result.source_label}{aliases}); "
                f"snapshot {result.snapshot_id} is active (was {result.previous_snapshot_id})"
            )
        )
    else:
        out.print(f"{result.doc_id} already reads like that; no new snapshot")
    return EXIT_OK


async def cmd_bench(app: App, args: argparse.Namespace) -> int:
    import anyio.to_thread

    from bench.runner import run_benchmarks

    return await anyio.to_thread.run_sync(lambda: run_benchmarks(args.names, quick=args.quick))


# -- parser -----------------------------------------------------------------------------------
Command = Callable[["App", argparse.Namespace], Coroutine[Any, Any, int]]
# A tool call by hand is not traced and starts no job: it runs without the app's actors (no
# trace writer, no parse workers), which a one-off process would only start and stop.
WITHOUT_ACTORS = frozenset({"tool"})


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--collection", "-c", help="collection to use (default: the current one)")
    common.add_argument("--json", action="store_true", help="print one JSON document on stdout")

    parser = argparse.ArgumentParser(
        prog="citewise",
        description="Learn from your own documents, with answers that cite their sources.",
    )
    parser.add_argument("--version", action="version", version=f"citewise {app_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("import", parents=[common], help="import files or folders")
    p.add_argument("paths", nargs="*", help="files or folders (folders are searched recursively)")
    p.add_argument("--wait", type=float, default=0.0, help="seconds to wait for another writer")
    p.add_argument("--progress", action="store_true", help="show the progress bar even when piped")
    p.add_argument(
        "--ocr-all-pages",
        action="store_true",
        help="recognise every scanned page of these documents, past ingest.ocr_max_pages "
        "(kept for their later imports)",
    )
    p.set_defaults(func=cmd_import)

    p = sub.add_parser("status", parents=[common], help="the active snapshot and any import")
    p.set_defaults(func=cmd_status, plain_func=status_now)

    p = sub.add_parser("snapshots", parents=[common], help="list, activate, verify, gc")
    p.add_argument("action", nargs="?", choices=["list", "activate", "verify", "gc"])
    p.add_argument("id", nargs="?")
    p.set_defaults(func=cmd_snapshots)

    p = sub.add_parser(
        "cache", parents=[common], help="what the import caches take; --clear empties them"
    )
    p.add_argument(
        "--clear",
        action="store_true",
        help="empty the embedding, text-recognition and read-document caches",
    )
    p.set_defaults(func=cmd_cache)

    p = sub.add_parser("remove", parents=[common], help="take documents out (by source or doc_id)")
    p.add_argument("items", nargs="+")
    p.set_defaults(func=cmd_remove)

    p = sub.add_parser("collections", parents=[common], help="list|create|rename|delete|use")
    p.add_argument("action", nargs="?")
    p.add_argument("names", nargs="*")
    p.add_argument("--yes", action="store_true", help="confirm a deletion")
    p.set_defaults(func=cmd_collections)

    p = sub.add_parser(
        "documents",
        parents=[common],
        help="list documents, show one's import report, or edit a title and aliases",
    )
    p.add_argument("action", choices=["list", "show", "edit"])
    p.add_argument(
        "doc", nargs="?", metavar="DOC", help="show, edit: a doc_id or a document's source"
    )
    p.add_argument("--title", help="edit: the title to show and cite")
    p.add_argument("--label", help="edit: the source label (how the source is named)")
    p.add_argument(
        "--alias",
        dest="aliases",
        action="append",
        metavar="ALIAS",
        help="edit: another name list_documents finds the document by (repeat; replaces all)",
    )
    p.add_argument("--clear-aliases", action="store_true", help="edit: remove every alias")
    p.set_defaults(func=cmd_documents)

    add_tool_parsers(sub, common)
    add_ask_parsers(sub, common)
    add_trace_parsers(sub, common)
    add_eval_parsers(sub, common)
    add_serve_parsers(sub, common)
    add_upgrade_parsers(sub, common)

    p = sub.add_parser("bench", parents=[common], help="run benchmarks and write reports")
    p.add_argument("names", nargs="*", help="benchmarks to run (default: all)")
    p.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    p.set_defaults(func=cmd_bench)
    return parser


async def _run(func: Command, args: argparse.Namespace) -> int:
    data_gate(args.command)  # refuses data of a newer build, or data that needs `upgrade`
    from actors import App

    if args.command in WITHOUT_ACTORS:
        app = App.from_environment()
        try:
            return await func(app, args)
        finally:
            await app.aclose()
    async with App.open() as app:
        return await func(app, args)


def single_blas_thread() -> None:
    """Run numpy's BLAS on one thread in this process, unless the user chose a number.

    A one-off tool call multiplies a few query rows at a time: threads there only wait for each
    other, a hundred times slower (0.2 s for one query's embedding on a busy 2-core machine,
    2 ms on one thread); the vectors differ from two threads' in the last bits only (about
    3e-7) and rank the blocks a query finds in the same order (tests/cli/test_startup.py).
    OpenBLAS reads this when it loads, so it is set before anything imports numpy.
    """
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def _sole_error(exc: BaseException) -> BaseException:
    """The one exception inside nested single-member exception groups, else `exc` itself."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "sync_func", None):  # `serve`: NiceGUI owns its own asyncio loop
        code: int = args.sync_func(args)
        return code
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        if getattr(args, "plain_func", None):
            plain: int = args.plain_func(args)
            return plain
        if args.command in WITHOUT_ACTORS:
            single_blas_thread()
        import anyio

        # Without actors nothing needs trio's guarantees, and asyncio (the standard library's)
        # loads in about half of trio's time: a tenth of a second of a one-off tool call.
        backend = "asyncio" if args.command in WITHOUT_ACTORS else "trio"
        return anyio.run(_run, args.func, args, backend=backend)
    except KeyboardInterrupt:
        if args.command == "import":
            err.print("import paused: run `citewise import` again to resume where it stopped")
        else:
            err.print("interrupted")
        return EXIT_FAIL
    except Exception as group:
        # A task group (e.g. the trace writer's) wraps a user error raised inside it.
        exc = _sole_error(group)
        known = exit_code_for(exc)
        if known is not None:
            err.print(f"[red]error:[/] {escape(redact(str(exc)))}")
            return known
        # Last resort: the user sees what broke, not a traceback.
        err.print(f"[red]unexpected error:[/] {type(exc).__name__}: {escape(redact(str(exc)))}")
        err.print("please report this with `citewise status --json` output")
        return EXIT_FAIL
