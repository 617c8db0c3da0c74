"""The PyInstaller one-folder build (packaging/) starts and works as a user would use it.

Builds with packaging/build.sh (or reuses the build whose BUILD_ID names the current source
hash), started in the background at the session's start (tests/packaging/build_session.py), then
runs packaging/smoke.py's checks on it, one test each: the same checks the Windows workflow
(.github/workflows/windows.yml) runs on the build.ps1 build, so the two cannot drift. What
they check is in packaging/smoke.py: `--version`, the files found by path (prompts, NiceGUI's
assets, the OCR models), an offline import of a Markdown file and a PDF with a scanned page
in the frozen binary's worker processes, `ask` through the loopback chat server, the
credential store path for keys, `serve --browser` on 127.0.0.1 behind the token and the Host
check, the log of a program without a console, and a newer version unpacked beside.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.packaging.background_build import (
    APP,
    BUILD_TIMEOUT_S,
    BuildWatch,
    smoke_module,
)

pytestmark = pytest.mark.skipif(
    sys.platform != "linux", reason="packaging/build.sh builds the Linux app (build.ps1: Windows)"
)

smoke = smoke_module()


@pytest.fixture(scope="module")
def built(background_build: BuildWatch) -> Path:
    """The app packaging/build.sh built, started at the session's start (tests/packaging/
    build_session.py) so that it ran beside the other tests."""
    done = background_build.wait(BUILD_TIMEOUT_S)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    summary = done.stderr.strip().splitlines()[-1]
    print(
        f"\nfrozen build: {summary} (build.sh: {done.seconds:.0f} s, "
        f"waited for it: {done.waited:.0f} s)"
    )
    return APP


@pytest.fixture(scope="module")
def checks(built: Path, tmp_path_factory: pytest.TempPathFactory) -> object:
    return smoke.Smoke(built, tmp_path_factory.mktemp("frozen"))


@pytest.mark.parametrize("name", smoke.Smoke.CHECKS)
def test_the_built_app(checks: object, name: str) -> None:
    getattr(checks, name)()  # a SmokeFailure (an AssertionError) says what the user would see
