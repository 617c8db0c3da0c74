"""kill -9 at every step of the upgrade (a real process, SIGKILL at each crash point), then a
restart: the old data is intact and active, or the new data is complete — never a mix."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from engine.crashpoints import AT_ENV, CRASH_POINTS
from engine.versions.upgrade import inspect
from tests.upgrade.formats_v2 import CURRENT_V2, make_v1_home, tree
from tests.upgrade.test_upgrade import assert_new_data_complete, assert_old_data_intact

ROOT = Path(__file__).resolve().parents[2]
POINTS = [p for p in CRASH_POINTS if p.startswith("upgrade.")]
# From the commit (the new formats.json) on, a restart finishes the new data.
COMMITTED = {
    "upgrade.switch.moved-first",
    "upgrade.switch.after",
    "upgrade.cleanup.before",
    "upgrade.cleanup.after",
}


@pytest.fixture(scope="module")
def v1_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("v1-crash")
    return make_v1_home(base / "home", base / "docs")


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
@pytest.mark.parametrize("point", POINTS)
def test_kill_at_any_step_then_restart_gives_old_or_complete_new_data(
    v1_template: Path, tmp_path: Path, point: str
) -> None:
    home = tmp_path / "home"
    shutil.copytree(v1_template, home)
    before = tree(home)
    env = {**os.environ, AT_ENV: point, "PYTHONPATH": str(ROOT)}
    env.pop("CITEWISE_HOME", None)
    child = subprocess.run(
        [sys.executable, "-m", "tests.upgrade.formats_v2", str(home)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        timeout=120,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr.decode()[-2000:]
    if point in COMMITTED:
        assert_new_data_complete(home, before)
    else:
        assert inspect(home, CURRENT_V2).state == "older"
        assert_old_data_intact(home, before)
