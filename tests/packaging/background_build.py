"""packaging/build.sh as a background process of the test session: started as soon as the
session knows it will run the frozen build's tests, so PyInstaller's minutes of one core run
beside the (serial) rest of the suite; the `built` fixture waits for it. Its output goes to a
temporary folder; it never outlives the session (stopped with its whole process group).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import types
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from tests.corpus import REPO

BUILD_DIR = Path(os.environ.get("CITEWISE_BUILD_DIR", REPO / ".build"))
APP = BUILD_DIR / "dist" / "citewise"
BUILD_TIMEOUT_S = 30 * 60

# Below the suite's own processes: the tests (some of them timed) keep the cores they ask
# for, and the build takes whatever is left; once the suite waits for it, it has both.
NICENESS = 10


def smoke_module() -> types.ModuleType:
    """packaging/smoke.py (a script folder, not a package: `packaging` is pip's name)."""
    if "smoke" in sys.modules:
        return sys.modules["smoke"]
    spec = importlib.util.spec_from_file_location("smoke", REPO / "packaging" / "smoke.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def build_env() -> dict[str, str]:
    """build.sh's environment: none of ours, and the build folder the checks look in."""
    env: dict[str, str] = smoke_module().clean_env(CITEWISE_BUILD_DIR=str(BUILD_DIR))
    return env


@dataclass(frozen=True)
class BuildResult:
    returncode: int
    stdout: str
    stderr: str
    seconds: float  # from its start to its end, most of it beside other tests
    waited: float  # how long the fixture that needed it waited


class BackgroundBuild:
    """One run of packaging/build.sh with `env`, started on construction."""

    def __init__(self, env: dict[str, str]) -> None:
        self._logs = Path(tempfile.mkdtemp(prefix="citewise-build-"))
        self._out: IO[bytes] = (self._logs / "stdout").open("wb")
        self._err: IO[bytes] = (self._logs / "stderr").open("wb")
        self._started = time.monotonic()
        self._ended: float | None = None
        self._proc = subprocess.Popen(
            ["nice", "-n", str(NICENESS), str(REPO / "packaging" / "build.sh")],
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self._out,
            stderr=self._err,
            start_new_session=True,  # its own process group: stop() ends PyInstaller too
        )

    def wait(self, timeout_s: float) -> BuildResult:
        """The finished build's result; a build still running `timeout_s` after its start is
        stopped and reported as failed (returncode None becomes -9)."""
        asked = time.monotonic()
        left = max(0.0, timeout_s - (asked - self._started))
        try:
            code = self._proc.wait(timeout=left)
        except subprocess.TimeoutExpired:
            self._kill()
            code = self._proc.wait()
        if self._ended is None:
            self._ended = time.monotonic()
        self._out.flush()
        self._err.flush()
        return BuildResult(
            returncode=code,
            stdout=(self._logs / "stdout").read_text(errors="replace"),
            stderr=(self._logs / "stderr").read_text(errors="replace"),
            seconds=self._ended - self._started,
            waited=time.monotonic() - asked,
        )

    def stop(self) -> None:
        """End the build if it still runs, and remove its output."""
        if self._proc.poll() is None:
            self._kill()
            self._proc.wait()
        self._out.close()
        self._err.close()
        shutil.rmtree(self._logs, ignore_errors=True)

    def _kill(self) -> None:
        try:
            os.killpg(self._proc.pid, signal.SIGTERM)
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self._proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass  # it ended on its own meanwhile
