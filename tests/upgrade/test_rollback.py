"""The rollbacks: restoring a pre-upgrade backup (application and data rollback) is itself
copy-on-write, and the previous build opens what it restores; `citewise backup` and the gate."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from actors.backup import backups, restore_backup
from engine.errors import UpgradeError
from engine.versions.formats import current_versions
from engine.versions.upgrade import inspect
from tests.upgrade.formats_v2 import CURRENT_V2, make_v1_home, tree, upgrade_v2

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def v1_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("v1-rollback")
    return make_v1_home(base / "home", base / "docs")


@pytest.fixture
def upgraded(v1_template: Path, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    home = tmp_path / "home"
    shutil.copytree(v1_template, home)
    before = tree(home)
    upgrade_v2(home)
    return home, before


def citewise(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CITEWISE_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "cli", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_restoring_the_pre_upgrade_backup_gives_the_previous_build_its_data_back(
    upgraded: tuple[Path, dict[str, str]],
) -> None:
    home, before = upgraded
    upgraded_tree = {k: v for k, v in tree(home).items() if not k.startswith("backups/")}
    # This build reads v1: the upgraded directory is newer and refused, the way back is offered.
    refused = citewise(home, "status")
    assert refused.returncode == 2 and "backup restore" in refused.stderr
    [backup] = backups(home)
    listed = citewise(home, "backup", "list")
    assert listed.returncode == 0 and backup.backup_id in listed.stdout
    done = citewise(home, "backup", "restore", backup.backup_id, "--yes")
    assert done.returncode == 0, done.stderr
    after = {k: v for k, v in tree(home).items() if not k.startswith("backups/")}
    kept = {k: v for k, v in before.items() if "/pins/" not in k}
    assert {k: v for k, v in after.items() if "/pins/" not in k} == kept
    assert inspect(home, current_versions()).state == "current"
    status = citewise(home, "status", "--json")
    assert status.returncode == 0 and '"status":"ready"' in status.stdout
    # Copy-on-write: the data it replaced (the upgraded data) is a backup of its own.
    safety = [b for b in backups(home) if b.backup_id != backup.backup_id]
    assert len(safety) == 1 and safety[0].formats == CURRENT_V2
    copy = home / "backups" / safety[0].backup_id
    restored_upgrade = {k: v for k, v in tree(copy).items() if k != "backup.json"}
    assert restored_upgrade == {k: v for k, v in upgraded_tree.items() if "/pins/" not in k}


def test_restore_refuses_an_unknown_backup_and_changes_nothing(
    upgraded: tuple[Path, dict[str, str]],
) -> None:
    home, _ = upgraded
    before = tree(home)
    with pytest.raises(UpgradeError, match="no complete backup"):
        restore_backup(home, "20990101-000000-ffff-v9")
    with pytest.raises(UpgradeError, match="not a backup id"):
        restore_backup(home, "../home")
    assert tree(home) == before


def test_cli_upgrade_explains_and_changes_nothing_without_confirmation(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    answer = citewise(home, "upgrade")
    assert answer.returncode == 0 and "up to date" in answer.stdout
