"""The frozen app's entry point: the `citewise` console script's main (`cli:main`), plus
what only a frozen program has to do itself.

- Worker processes. anyio.to_process starts parse workers as `sys.executable -u -m
  anyio.to_process`; a frozen executable is not a Python interpreter, so it plays one for
  exactly that command line and nothing else.
- The native window's process, started as `sys.executable -m web.window` (web/window.py).
- multiprocessing.freeze_support(), for any library that spawns with multiprocessing.
- The windowed launcher (Citewise.exe) has no console: with no arguments it opens the app, and
  its output goes to a log file instead of nowhere.

It imports nothing of Citewise before it knows which of these it is running.
"""

from __future__ import annotations

import multiprocessing
import sys

WORKER_COMMAND = ["-u", "-m", "anyio.to_process"]
WINDOW_COMMAND = ["-m", "web.window"]  # the native window's own process (web/window.py)
LAUNCHER = "Citewise"  # the windowed executable's name (Windows); the console one is citewise
LOG_MAX_BYTES = 5_000_000


def _pipes_as_streams() -> None:
    """A child talks to its parent over stdin and stdout pipes. What `-u` does for an
    interpreter: unbuffered stdout, so no answer waits in a buffer while the parent waits for
    it; and a windowed executable's pipes are there even when Python saw no console."""
    import io

    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), write_through=True)
    if sys.stdin is None:
        sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)))


def _run_parse_worker() -> int:
    _pipes_as_streams()
    from anyio.to_process import process_worker

    process_worker()
    return 0


def _is_launcher() -> bool:
    from pathlib import Path

    return Path(sys.executable).stem == LAUNCHER


def _give_streams_a_home() -> None:
    """A windowed program starts with no stdout or stderr; libraries that print or log (the
    web server does) would fail, and a user reporting a problem needs the messages. They go to
    logs/citewise.log in the data directory (nothing is written outside it), one old log kept."""
    if sys.stdout is not None and sys.stderr is not None:
        return
    from engine.paths import data_home

    folder = data_home() / "logs"
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "citewise.log"
    if log.is_file() and log.stat().st_size > LOG_MAX_BYTES:
        log.replace(log.with_suffix(".log.1"))
    stream = open(log, "a", encoding="utf-8", buffering=1)  # noqa: SIM115 (lives as long as we do)
    sys.stdout = sys.stdout or stream
    sys.stderr = sys.stderr or stream


def main() -> int:
    if sys.argv[1:] == WORKER_COMMAND:
        return _run_parse_worker()
    if sys.argv[1:] == WINDOW_COMMAND:
        _pipes_as_streams()
        from web.window import main as window_main

        return window_main()
    multiprocessing.freeze_support()
    _give_streams_a_home()
    from cli import main as citewise_main

    argv = sys.argv[1:]
    if not argv and _is_launcher():
        argv = ["serve"]  # a double-click opens the app
    return citewise_main(argv)


if __name__ == "__main__":
    sys.exit(main())
