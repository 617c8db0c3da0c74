"""`citewise serve [--native|--browser] [--port P]`: the desktop UI.

NiceGUI owns its asyncio loop, so serving is a plain function the CLI calls directly, never
inside the CLI's trio loop. It serves 127.0.0.1 only and refuses any other host. The web
package is imported only when serving (the one place the command line starts the other front
end).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

from cli.output import EXIT_OK, EXIT_USAGE, exit_code_for

LOOPBACK = "127.0.0.1"


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add `serve` to the `citewise` subcommands (`sub` from add_subparsers). Its entry point
    is `args.sync_func(args)`, to be called outside any event loop."""
    p = sub.add_parser(
        "serve",
        parents=[common],
        help="open the desktop UI (native window, or the browser with --browser)",
    )
    how = p.add_mutually_exclusive_group()
    how.add_argument(
        "--native",
        action="store_true",
        help="the native window (the default; where none can open, says why and serves the "
        "browser UI)",
    )
    how.add_argument(
        "--browser", action="store_true", help="serve the browser UI on 127.0.0.1 only"
    )
    p.add_argument("--port", type=int, help="port on 127.0.0.1 (default: a free random port)")
    p.add_argument("--host", default=LOOPBACK, help=argparse.SUPPRESS)
    p.set_defaults(func=None, sync_func=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    """Serve until interrupted; the exit code follows SPEC §12."""
    if args.host != LOOPBACK:  # refused before anything loads or listens
        print(
            f"error: Citewise serves only on {LOOPBACK} (this machine); --host {args.host} is "
            "refused because it would expose your documents and keys to the network",
            file=sys.stderr,
        )
        return EXIT_USAGE
    started = time.monotonic()
    say = _say
    window = None
    if not args.browser:  # the toolkit starts now, while the server loads
        from web.window import NativeWindow

        window = NativeWindow(say, started)
    from actors import App, install_redaction

    install_redaction()  # no key in any log line or traceback, uvicorn's included
    # Imported here: the UI toolkit loads only when serving.
    from web.launcher import LaunchRefused, serve

    try:
        if getattr(args, "collection", None):
            App.from_environment().use_collection(args.collection)
        serve(
            port=args.port,
            browser=args.browser,
            host=args.host,
            say=say,
            started=started,
            native=window,
        )
    except LaunchRefused as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:
        code = exit_code_for(exc)
        if code is None:
            raise
        print(f"error: {exc}", file=sys.stderr)
        return code
    except KeyboardInterrupt:
        return EXIT_OK
    finally:
        if window is not None:  # never left behind, whatever ended the server
            window.end()
    return EXIT_OK


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m cli.serve [--browser] [--port P]` (what `citewise serve` runs)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--collection", "-c", help="collection to open")
    common.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    parser = argparse.ArgumentParser(prog="citewise")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    add_parsers(sub, common)
    args = parser.parse_args(["serve", *(sys.argv[1:] if argv is None else argv)])
    return cmd_serve(args)


if __name__ == "__main__":
    sys.exit(main())
