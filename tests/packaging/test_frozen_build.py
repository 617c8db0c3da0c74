"""The PyInstaller one-folder build (packaging/) starts and works as a user would use it.

Builds with packaging/build.sh (or reuses the build whose BUILD_ID names the current source
hash), then runs packaging/smoke.py's checks on it, one test each: the same checks the
Windows workflow (.github/workflows/windows.yml) runs on the build.ps1 build, so the two
cannot drift. What they check is in packaging/smoke.py: `--version`, the files found by path
(prompts, NiceGUI's assets, the OCR models), an offline import of a Markdown file and a PDF
with a scanned page in the frozen binary's worker processes, `ask` through the loopback chat
server, the credential store path for keys, `serve --browser` on 127.0.0.1 behind the token
and the Host check, the log of a program without a console, and a newer version unpacked beside.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

from tests.corpus import REPO

pytestmark = pytest.mark.skipif(
    sys.platform != "linux", reason="packaging/build.sh builds the Linux app (build.ps1: Windows)"
)

BUILD_DIR = Path(os.environ.get("CITEWISE_BUILD_DIR", REPO / ".build"))
APP = BUILD_DIR / "dist" / "citewise"
BUILD_TIMEOUT_S = 30 * 60


def _smoke_module() -> types.ModuleType:
    """packaging/smoke.py (a script folder, not a package: `packaging` is pip's name)."""
    spec = importlib.util.spec_from_file_location("smoke", REPO / "packaging" / "smoke.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


smoke = _smoke_module()


@pytest.fixture(scope="module")
def built() -> Path:
    started = time.monotonic()
    done = subprocess.run(
        [str(REPO / "packaging" / "build.sh")],
        cwd=REPO,
        env=smoke.clean_env(CITEWISE_BUILD_DIR=str(BUILD_DIR)),  # where the checks look
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    summary = done.stderr.strip().splitlines()[-1]
    print(f"\nfrozen build: {summary} (fixture: {time.monotonic() - started:.0f} s)")
    return APP


@pytest.fixture(scope="module")
def checks(built: Path, tmp_path_factory: pytest.TempPathFactory) -> object:
    return smoke.Smoke(built, tmp_path_factory.mktemp("frozen"))


@pytest.mark.parametrize("name", smoke.Smoke.CHECKS)
def test_the_built_app(checks: object, name: str) -> None:
    getattr(checks, name)()  # a SmokeFailure (an AssertionError) says what the user would see
