"""One writer process per data directory: an advisory lock file that readers never take.

A second writer waits up to `wait_s` and then fails with a message that says who holds the lock.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import filelock

# Still imported from here by actors/app.py and cli/upgrade.py.
from engine.errors import WriterBusy as WriterBusy
from engine.paths import DataDir


@contextlib.contextmanager
def writer_lock(data: DataDir, wait_s: float = 0.0) -> Iterator[None]:
    data.root.mkdir(parents=True, exist_ok=True)
    lock = filelock.FileLock(str(data.writer_lock))
    try:
        lock.acquire(timeout=wait_s)
    except filelock.Timeout:
        raise WriterBusy(
            f"another Citewise process is changing {data.root} (an import, removal or clean-up "
            "is running); wait for it to finish, or stop it, then try again"
        ) from None
    try:
        yield
    finally:
        lock.release()


def writer_active(data: DataDir) -> bool:
    """True when some process holds the writer lock (without waiting or blocking it)."""
    if not data.writer_lock.exists():
        return False
    lock = filelock.FileLock(str(data.writer_lock))
    try:
        lock.acquire(timeout=0)
    except filelock.Timeout:
        return True
    lock.release()
    return False
