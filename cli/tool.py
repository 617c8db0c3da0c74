"""`citewise tool NAME [ARGS]`: run one of the five tools by hand and print the exact result JSON
the model would see. ARGS is a JSON object, `-` to read it from standard input, or `@FILE` to
read it from a file (arguments too long for a command line: over ~128 KB the system refuses).

Exit 0 for a result or a legal empty one, 2 for a tool error payload (collection_unavailable
included) or invalid usage. It never edits the arguments it reads: the tool validates them.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from actors import AppError
from cli.output import EXIT_OK, EXIT_USAGE

if TYPE_CHECKING:
    from actors import App

STDIN = "-"
FROM_FILE = "@"


def read_arguments(spec: str) -> bytes:
    """The JSON arguments `spec` names: itself, standard input (`-`) or a file (`@FILE`)."""
    if spec == STDIN:
        return sys.stdin.buffer.read()
    if spec.startswith(FROM_FILE):
        path = Path(spec[len(FROM_FILE) :])
        try:
            return path.read_bytes()
        except OSError as exc:
            raise AppError(
                f"cannot read the arguments from {path}: {exc.strerror or exc}"
            ) from None
    return spec.encode("utf-8", "surrogateescape")


async def cmd_tool(app: App, args: argparse.Namespace) -> int:
    """Print the exact result JSON the model would see; 0 for results and legal empties."""
    raw = await anyio.to_thread.run_sync(read_arguments, args.args)
    outcome = await app.run_tool(
        args.name, raw, collection=args.collection, snapshot_id=args.snapshot
    )
    sys.stdout.write(outcome.json.decode("utf-8") + "\n")
    sys.stdout.flush()
    return EXIT_USAGE if outcome.is_error else EXIT_OK


JSON_NEGATIVE_NUMBER = re.compile(r"^-(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add `tool` to the `citewise` subcommands (`sub` from add_subparsers)."""
    p = sub.add_parser(
        "tool", parents=[common], help="run one of the five tools by hand and print its JSON"
    )
    p.add_argument(
        "name",
        help="list_documents, get_outline, search_blocks, list_blocks or scan_term",
    )
    p.add_argument(
        "args",
        nargs="?",
        default="{}",
        help="the arguments as a JSON object; - reads them from standard input, @FILE from a file",
    )
    p.add_argument("--snapshot", metavar="ID", help="a snapshot other than the active one")
    # argparse takes "-1e+16" for an option (it knows only plain negative numbers); any JSON
    # number is an argument here, so the tool answers it with its own error.
    p._negative_number_matcher = JSON_NEGATIVE_NUMBER
    p.set_defaults(func=cmd_tool)
