"""The `citewise` command line: the entry point, kept deliberately light.

Parsing runs in worker processes that re-import the parent's main module (this one, or the
console script that imports it), so it imports nothing heavy: the commands live in
cli/commands.py and load only when a command runs. cli/ is a front end beside web/: it calls
actors.App and may import bench/; nothing else imports cli/.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    from actors import install_redaction

    install_redaction()  # before anything can log: no key reaches a log or a traceback
    from cli.commands import main as run_command

    return run_command(argv)


if __name__ == "__main__":
    sys.exit(main())
