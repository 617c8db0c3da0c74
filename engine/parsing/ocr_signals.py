"""The side channel between a parse worker recognising scanned pages and the import that
waits for it: the worker appends one line to a file per page recognised, and holds between
pages while `<file>.pause` exists. The import (actors/parse_pool.py) reads the lines for
progress and makes or removes the pause file.

A worker's whole result still comes back as its return value; this carries only progress and
the pause, and never fails the parse: a file that cannot be written is ignored.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

PAUSE_POLL_S = 0.2


def pause_file(path: str) -> Path:
    return Path(path + ".pause")


class PageSignals:
    """The worker's end. Lines: `want N` (pages this call will recognise), then `page P H`
    per page (0-based P; H is 1 when it came from the OCR cache)."""

    def __init__(self, path: str) -> None:
        self._path = path

    def _append(self, line: str) -> None:
        if not self._path:
            return
        with contextlib.suppress(OSError):
            fd = os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                os.write(fd, line.encode())
            finally:
                os.close(fd)

    def wanted(self, pages: int) -> None:
        self._append(f"want {pages}\n")

    def page_done(self, page: int, cached: bool) -> None:
        self._append(f"page {page} {int(cached)}\n")

    def hold(self) -> None:
        """Wait here while the import is paused (cancelling kills this process)."""
        if not self._path:
            return
        pause = pause_file(self._path)
        while pause.exists():
            time.sleep(PAUSE_POLL_S)


class PageCounts:
    """The import's end: what the lines written so far say."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0
        self._rest = b""
        self.wanted = 0
        self.done = 0
        self.cached = 0

    def read(self) -> bool:
        """Take in the lines appended since the last call; True when a count changed."""
        try:
            with self.path.open("rb") as f:
                f.seek(self._offset)
                chunk = f.read()
        except OSError:
            return False
        self._offset += len(chunk)
        *lines, self._rest = (self._rest + chunk).split(b"\n")
        changed = False
        for line in lines:
            word, *values = line.decode(errors="replace").split()
            if word == "want" and values:
                self.wanted += int(values[0])
                changed = True
            elif word == "page" and len(values) == 2:
                self.done += 1
                self.cached += values[1] == "1"
                changed = True
        return changed
