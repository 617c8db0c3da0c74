"""Fixtures of the tool tests: snapshots opened for a test are closed after it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from index.snapshot import Snapshot


@pytest.fixture
def open_snapshot() -> Iterator[Callable[[Path], Snapshot]]:
    """Opens snapshots and closes them all after the test."""
    opened: list[Snapshot] = []

    def open_(path: Path) -> Snapshot:
        snap = Snapshot.open(path)
        opened.append(snap)
        return snap

    yield open_
    for snap in opened:
        snap.close()
