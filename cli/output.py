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


def exit_codes() -> tuple[tuple[tuple[type[Exception], ...], int], ...]:
    """The table: the first row whose types match an error decides its exit code. (A function:
    `citewise serve` and `--version` import this module without loading the app.)"""
    from actors import USER_ERRORS, SpendingCapReached, UpgradeError, UpgradeRequired

    return (
        ((SpendingCapReached,), EXIT_FAIL),  # the request was refused: a failure
        ((*USER_ERRORS, UpgradeError, UpgradeRequired), EXIT_USAGE),
    )


def exit_code_for(exc: BaseException) -> int | None:
    """The exit code of an error a person can act on; None for a bug."""
    for types, code in exit_codes():
        if isinstance(exc, types):
            return code
    return None


def emit_json(value: Any) -> None:
    """Exactly one JSON document on stdout (msgspec encodes Structs, dicts and lists)."""
    sys.stdout.write(msgspec.json.encode(value).decode() + "\n")
    sys.stdout.flush()
