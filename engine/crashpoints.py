"""Named crash points for crash-safety tests (SPEC §16): the public face of index.crashpoints.

    from engine.crashpoints import crash_point, register
    STEPS = register("upgrade.copy:after-fsync", "upgrade.pointer:after-replace")
    crash_point("upgrade.copy:after-fsync")     # a name in CRASH_POINTS or registered

With CITEWISE_CRASH_AT=NAME (or NAME#N: the N-th time) the process kills itself with SIGKILL
at that call, leaving the files as `kill -9` would (a power cut, which also loses what was
not fsynced, is not simulated). CITEWISE_CRASH_LOG=FILE
appends every reached name to FILE, so a test can check that a normal run reaches every point.
Unset, a call costs one global lookup. Armed, an unknown name raises, so a typo fails the
crash tests. Points of the core session are listed in CRASH_POINTS (index/crashpoints.py) and
tests/hardening/test_crash_points.py kills at each; a module with its own steps `register`s
them and its tests kill at each. The implementation lives in index/, the bottom layer, so that
snapshot writers may call it too.
"""

from __future__ import annotations

from index.crashpoints import (
    AT_ENV,
    CRASH_POINTS,
    LOG_ENV,
    atomic_points,
    crash_point,
    register,
)

__all__ = ["AT_ENV", "CRASH_POINTS", "LOG_ENV", "atomic_points", "crash_point", "register"]
