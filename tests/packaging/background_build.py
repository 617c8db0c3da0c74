"""packaging/build.sh as a background process of the test session: started as soon as the
session knows it will run the frozen build's tests, so PyInstaller's minutes of one core run
beside the rest of the suite; the `built` fixture waits for it. Its output and exit status go
to a temporary folder, where any process of the session can read them; it never outlives the
session (stopped with its whole process group).
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

STARTED, STATUS = "started", "status"  # files in the build's folder: start time, exit status
POLL_S = 1.0
# build.sh at lower priority, then its exit status written whole (renamed into place)
_RECORD_STATUS = (
    f'nice -n {NICENESS} "$0"; echo $? > "$1/{STATUS}.tmp"; mv "$1/{STATUS}.tmp" "$1/{STATUS}"'
)


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
    """One run of packaging/build.sh with `env`, started on construction. Its output and exit
    status land in files of one folder, so any process of the session can wait for it
    (`BuildWatch`): under pytest-xdist the controller starts it and a worker runs the tests."""

    def __init__(self, env: dict[str, str], folder: Path | None = None) -> None:
        self.folder = folder or Path(tempfile.mkdtemp(prefix="citewise-build-"))
        self._out: IO[bytes] = (self.folder / "stdout").open("wb")
        self._err: IO[bytes] = (self.folder / "stderr").open("wb")
        (self.folder / STARTED).write_text(repr(time.time()))
        # the shell that runs build.sh writes its exit status once it ends: the status is
        # there for every process, not only for this one (which alone could wait() on it)
        self._proc = subprocess.Popen(
            ["sh", "-c", _RECORD_STATUS, str(REPO / "packaging" / "build.sh"), str(self.folder)],
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self._out,
            stderr=self._err,
            start_new_session=True,  # its own process group: stop() ends PyInstaller too
        )

    def stop(self) -> None:
        """End the build if it still runs, and remove its output."""
        if self._proc.poll() is None:
            self._kill()
            self._proc.wait()
        self._out.close()
        self._err.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    def _kill(self) -> None:
        try:
            os.killpg(self._proc.pid, signal.SIGTERM)
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self._proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass  # it ended on its own meanwhile


class BuildWatch:
    """The build whose files are in `folder`, as seen from any process of the session."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def wait(self, timeout_s: float) -> BuildResult:
        """The finished build's result; a build still running `timeout_s` after its start is
        reported as failed (returncode -9; the session's end stops it)."""
        asked = time.time()
        if not (self.folder / STARTED).exists():
            raise RuntimeError(f"no build was started in {self.folder}")
        started = float((self.folder / STARTED).read_text())
        status = self.folder / STATUS
        while not status.exists() and time.time() < started + timeout_s:
            time.sleep(POLL_S)
        ended = float(status.stat().st_mtime) if status.exists() else time.time()
        code = int(status.read_text()) if status.exists() else -9
        return BuildResult(
            returncode=code,
            stdout=(self.folder / "stdout").read_text(errors="replace"),
            stderr=(self.folder / "stderr").read_text(errors="replace"),
            seconds=ended - started,
            waited=time.time() - asked,
        )
