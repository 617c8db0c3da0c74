"""`citewise ask` and `citewise keys`: streaming a cited answer, storing and testing API keys.

The answer streams to stdout as it arrives (citation markers shown as [n]); sources and
notices follow, sources on stdout, notices on stderr. A key is read from stdin or a hidden
prompt and is never echoed, logged or printed back in full.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from rich.markup import escape

if TYPE_CHECKING:  # at run time each command imports what it uses: `--help` loads no app
    from actors import App, AskResult, Citation, Event, KeyName

from cli.output import EXIT_FAIL, EXIT_OK, emit_json, err


class _AnswerPrinter:
    """Writes answer deltas to stdout as they come, markers rewritten as [n]."""

    def __init__(self, quiet: bool) -> None:
        from actors import Evidence, MarkerNumbers

        self.quiet = quiet
        self.evidence = Evidence()
        self.numbers = MarkerNumbers(self.evidence)
        self.wrote = False

    def write(self, text: str) -> None:
        if text and not self.quiet:
            sys.stdout.write(text)
            sys.stdout.flush()
            self.wrote = True

    async def __call__(self, event: Event) -> None:
        from actors import (
            AnswerDelta,
            AnswerRetracted,
            ConversationTrimmed,
            Finalizing,
            MarkerNumbers,
            ModelCallFinished,
            ProtocolErrorSeen,
            ToolCallFinished,
            ToolCallStarted,
        )

        if isinstance(event, AnswerDelta):
            self.write(self.numbers.feed(event.text))
        elif isinstance(event, AnswerRetracted):
            self.write(self.numbers.flush())
            if self.wrote:
                self.write("\n")
                err.print(f"[yellow](the text above is withdrawn: {escape(event.reason)})[/]")
            self.numbers = MarkerNumbers(self.evidence)
            self.wrote = False
        elif isinstance(event, ToolCallFinished):
            if event.harness_status == "ok" and event.payload is not None:
                self.evidence.add_result(event.tool, event.payload)
            if not self.quiet:
                err.print(
                    f"[dim]· {escape(f'{event.tool}: {event.outcome} ({event.harness_status})')}[/]"
                )
        elif isinstance(event, ToolCallStarted):
            pass
        elif self.quiet:
            return
        elif isinstance(event, Finalizing):
            err.print(f"[yellow]· finishing now: {escape(event.message)}[/]")
        elif isinstance(event, ConversationTrimmed):
            err.print(f"[yellow]· {escape(event.reason)}[/]")
        elif isinstance(event, ProtocolErrorSeen):
            err.print(f"[dim]· the model broke the reply format ({event.consecutive})[/]")
        elif isinstance(event, ModelCallFinished) and not event.ok:
            retry = "; retrying once" if event.will_retry else ""
            err.print(f"[yellow]· model call failed: {escape(event.error_message or '')}{retry}[/]")

    def done(self) -> None:
        self.write(self.numbers.flush())
        if self.wrote:
            self.write("\n")


def _citation_line(c: Citation) -> str:
    return f"[{c.index}{'' if c.valid else '?'}] {c.label()}"


async def cmd_ask(app: App, args: argparse.Namespace) -> int:
    from actors import AppError

    if args.question == ["-"]:  # the question on standard input (long, or from a script)
        question = (await anyio.to_thread.run_sync(sys.stdin.read)).strip()
    else:
        question = " ".join(args.question).strip()
    if not question:
        raise AppError('ask needs a question, e.g. citewise ask "what is the event loop?"')
    printer = _AnswerPrinter(quiet=args.json)
    run = app.ask(question, args.conversation, args.collection)
    async with run.events() as events:
        async for event in events:
            await printer(event)
    result = await run.wait()
    printer.done()
    dropped = run.trace_dropped
    if result is None:  # stopped: nothing was recorded
        return EXIT_FAIL
    if dropped:
        err.print(f"[yellow]the trace of this answer is partial: {dropped} records were dropped[/]")
    return _report(result, as_json=args.json)


def _report(result: AskResult, *, as_json: bool) -> int:
    from actors import ANSWERED

    f = result.finished
    code = EXIT_OK if f.answer is not None else EXIT_FAIL
    c = f.counters
    if as_json:
        emit_json(
            {
                "answer": f.answer,
                "citations": f.citations,
                "termination_reason": f.termination_reason,
                "message": f.message,
                "counters": c,
                "cost": f.cost,
                "currency": f.currency,
                "usage": {
                    "prompt_tokens": c.prompt_tokens,
                    "completion_tokens": c.completion_tokens,
                    "cache_hit_tokens": c.cache_hit_tokens,
                    "reasoning_tokens": c.reasoning_tokens,
                    "total_tokens": c.used_tokens,
                },
                "conversation_id": result.conversation_id,
                "request_id": f.request_id,
                "collection": result.collection,
                "snapshot_id": f.snapshot_id,
            }
        )
        return code
    if f.citations:
        sys.stdout.write("\nSources:\n")
        for citation in f.citations:
            sys.stdout.write(f"  {_citation_line(citation)}\n")
            if citation.valid and citation.preview:
                sys.stdout.write(f"      “{citation.preview}”\n")
        sys.stdout.flush()
    if f.answer is None:
        err.print(f"[red]no answer[/] ({f.termination_reason}): {escape(f.message or '')}")
    elif f.termination_reason not in ANSWERED:
        err.print(f"[yellow]answer given under a limit[/] ({f.termination_reason})")
    err.print(
        f"[dim]{f.termination_reason} · {c.agent_turns} turns · {c.tool_calls} tool calls · "
        f"{c.used_tokens} chat tokens · {f.cost:.4f} {f.currency} · conversation "
        f"{result.conversation_id} (follow up with --conversation {result.conversation_id})[/]"
    )
    return code


# -- keys -------------------------------------------------------------------------------------


def _read_key(name: KeyName) -> str:
    if sys.stdin.isatty():
        return getpass.getpass(f"{name} API key (input hidden): ").strip()
    return sys.stdin.readline().strip()


async def cmd_keys(app: App, args: argparse.Namespace) -> int:
    from actors import ENV_NAMES, AppError, SecretStoreUnavailable

    action = args.action or "status"
    names: list[KeyName] = [args.name] if args.name else ["deepseek", "embedding"]
    if action == "status":
        status = {n: {"set": app.key_is_set(n), "shown_as": app.key_shown(n)} for n in names}
        if args.json:
            emit_json(status)
        else:
            for n, s in status.items():
                print(f"{n}: {s['shown_as']}")
        return EXIT_OK
    if action == "set":
        if not args.name:
            raise AppError("say which key: `citewise keys set deepseek` or `… set embedding`")
        key = await anyio.to_thread.run_sync(_read_key, args.name)
        if not key:
            raise AppError("no key was given (paste it, then press Enter)")
        try:
            stored = await anyio.to_thread.run_sync(
                lambda: app.store_key(args.name, key, session_fallback=False)
            )
        except SecretStoreUnavailable as exc:
            if args.json:
                emit_json({"stored": False, "message": str(exc), "env": ENV_NAMES[args.name]})
            else:
                err.print(f"[yellow]{escape(str(exc))}[/]")
            return EXIT_FAIL
        if args.json:
            emit_json({"stored": True, "key": args.name, "shown_as": stored.shown_as})
        else:
            print(f"{args.name} key stored in the system credential store ({stored.shown_as})")
        return EXIT_OK
    if action == "test":
        return await _test_keys(app, names, as_json=args.json)
    raise AppError(f"unknown keys action {action!r}; use set, test (or nothing for the status)")


async def _test_keys(app: App, names: list[KeyName], *, as_json: bool) -> int:
    results: dict[str, Any] = {}
    for name in names:
        results[name] = await app.test_key(name)
    ok = all(r.ok for r in results.values())
    if as_json:
        emit_json(results)
    else:
        for which, r in results.items():
            mark = "[green]ok[/]" if r.ok else f"[red]{r.code}[/]"
            err.print(f"{which}: {mark} {escape(r.message)} ({r.latency_ms:.0f} ms)")
    return EXIT_OK if ok else EXIT_FAIL


# -- parsers ----------------------------------------------------------------------------------


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add `ask` and `keys` to the `citewise` subcommands (`sub` from add_subparsers)."""
    p = sub.add_parser("ask", parents=[common], help="ask a question; the answer streams")
    p.add_argument("question", nargs="+", help="the question (quote it); - reads it from stdin")
    p.add_argument(
        "--conversation", metavar="ID", help="continue a conversation (its id is printed)"
    )
    p.set_defaults(func=cmd_ask)

    p = sub.add_parser("keys", parents=[common], help="set or test the API keys")
    p.add_argument("action", nargs="?", choices=["set", "test", "status"])
    p.add_argument("name", nargs="?", choices=["deepseek", "embedding"])
    p.set_defaults(func=cmd_keys)
