"""What every command prints and returns: the two consoles (results on stdout, progress and
notices on stderr), the one JSON writer for --json, and the one table from error to exit code
(SPEC §12: 0 success, 1 failure, 2 invalid usage or a tool error, 3 partial success)."""

from __future__ import annotations

import sys
from typing import Any

import msgspec
from rich.console import Console

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_PARTIAL = 0, 1, 2, 3

err = Console(stderr=True, highlight=False)
out = Console(highlight=False, soft_wrap=True)


def exit_code_for(exc: BaseException) -> int | None:
    """The exit code an error a person can act on carries (engine.errors.UserError.exit_code:
    the one table, kept with each error class); None for a bug."""
    from actors import UserError

    return exc.exit_code if isinstance(exc, UserError) else None


def emit_json(value: Any) -> None:
    """Exactly one JSON document on stdout (msgspec encodes Structs, dicts and lists)."""
    sys.stdout.write(msgspec.json.encode(value).decode() + "\n")
    sys.stdout.flush()
