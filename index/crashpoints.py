"""Named crash points: `crash_point("catalog.pointer:after-replace")` kills this process there
when CITEWISE_CRASH_AT names that point (`NAME` or `NAME#N` for the N-th time it is reached).

Crash tests use it to stop the app exactly before or after each fsync and replace. The
environment is read once, at import; unarmed, a call is one global lookup and a return. It
lives in index/ (the bottom layer) so every layer may call it; engine.crashpoints re-exports it.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Mapping

AT_ENV = "CITEWISE_CRASH_AT"  # NAME or NAME#N: die by SIGKILL at that point (N-th reach)
LOG_ENV = "CITEWISE_CRASH_LOG"  # a file: every reached name is appended, one per line
_KILL = getattr(signal, "SIGKILL", signal.SIGTERM)  # Windows: SIGTERM is TerminateProcess

# The four steps of index.fsutil.atomic_write, after each label given to it.
ATOMIC_STEPS = ("before-fsync", "before-replace", "after-replace", "after-dir-fsync")


def _atomic(label: str) -> tuple[str, ...]:
    return tuple(f"{label}:{step}" for step in ATOMIC_STEPS)


# The steps of engine/versions/upgrade.py, before and after each, plus the middle of the switch.
UPGRADE_POINTS: tuple[str, ...] = (
    *(
        f"upgrade.{step}.{when}"
        for step in ("check", "backup", "migrate", "selfcheck", "switch", "cleanup")
        for when in ("before", "after")
    ),
    "upgrade.switch.moved-first",
)

# Every point, in roughly the order a session reaches them. Add a point here and call it;
# tests/hardening/test_crash_points.py kills the app at each one and checks the invariants.
CRASH_POINTS: tuple[str, ...] = (
    # import: the journal of the job and its finished documents (actors/journal.py)
    *_atomic("journal.job"),
    "journal.done:before-fsync",
    "journal.done:after-fsync",
    # snapshot build (index/snapshot.py, index/vectors.py, index/fsutil.py)
    "snapshot.dir:after-fsync",
    "snapshot.file:before-fsync",
    "snapshot.file:after-fsync",
    "snapshot.graph:before-fsync",
    "snapshot.graph:after-fsync",
    "snapshot.files:after-dir-fsync",
    *_atomic("snapshot.manifest"),
    "snapshot.committed",
    # a batch that formed no snapshot keeps its record (actors/catalog.py)
    *_atomic("catalog.failed-manifest"),
    # activation: the active pointer (actors/catalog.py)
    *_atomic("catalog.pointer"),
    # garbage collection: rename into trash/, then remove (actors/catalog.py)
    "gc.trash:before-replace",
    "gc.trash:after-replace",
    "gc.trash:after-dir-fsync",
    "gc.rmtree:before",
    "gc.rmtree:after",
    # trace writes (engine/trace/store.py, actors/trace_writer.py)
    "trace.artifact:before-replace",
    "trace.artifact:after-replace",
    "trace.commit:before",
    "trace.commit:after",
    "trace.prune:after-rows-commit",
    "trace.orphans:after-mark",
    # conversations (actors/conversations.py)
    "conversation.append:before-fsync",
    "conversation.append:after-fsync",
    # prompt bundles: a new experiment, its freeze, the baseline promote
    # (engine/prompts/registry.py)
    "bundles.new:before-rename",
    "bundles.new:after-rename",
    *_atomic("bundles.manifest"),
    *_atomic("bundles.baseline"),
    # the copy-on-write upgrade (engine/versions/upgrade.py); tests/upgrade/test_upgrade_crash.py
    # kills at each one. A normal session never reaches them: they run only when `citewise
    # upgrade` does.
    *UPGRADE_POINTS,
)
_KNOWN = set(CRASH_POINTS)


def register(*names: str) -> tuple[str, ...]:
    """Declare points that live outside CRASH_POINTS (a module's own sequence of steps, e.g.
    an upgrade); call at import time. Their owner's tests kill at each of them."""
    _KNOWN.update(names)
    return names


class _Plan:
    """What the environment asked for, read once."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        target = environ.get(AT_ENV, "")
        name, _, nth = target.partition("#")
        self.target = name
        self.nth = int(nth) if nth else 1
        self.log = environ.get(LOG_ENV, "")
        self.armed = bool(self.target or self.log)
        self.reached: dict[str, int] = {}
        self.lock = threading.Lock()  # points are reached from worker threads too


_plan = _Plan(os.environ)


def crash_point(name: str) -> None:
    """Die here (SIGKILL, no clean-up) if CITEWISE_CRASH_AT names this point; else nothing."""
    if _plan.armed:
        _reach(name)


def _reach(name: str) -> None:
    if name not in _KNOWN:
        raise ValueError(f"crash point {name!r} is neither in CRASH_POINTS nor registered")
    with _plan.lock:
        count = _plan.reached.get(name, 0) + 1
        _plan.reached[name] = count
    if _plan.log:
        fd = os.open(_plan.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, f"{name}\n".encode())
        finally:
            os.close(fd)
    if name == _plan.target and count == _plan.nth:
        os.kill(os.getpid(), _KILL)


def atomic_points(label: str) -> tuple[str, ...]:
    """The names atomic_write(..., point=label) reaches, in order."""
    return _atomic(label)
