"""The `citewise` entry point, kept deliberately light.

Parsing runs in worker processes that re-import the parent's main module (this one, or the
console script that imports it), so it imports nothing heavy: the commands live in
actors/commands.py and load only when a command runs.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    from engine import redaction

    redaction.install()  # before anything can log: no key reaches a log or a traceback
    from actors.commands import main as run_command

    return run_command(argv)


if __name__ == "__main__":
    sys.exit(main())
