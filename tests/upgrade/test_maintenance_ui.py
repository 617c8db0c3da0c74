"""The UI side: the settings page's version check and backup restore (asks first, copy-on-write),
and the page shown instead of the app on data a newer Citewise wrote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from nicegui.testing import User

from engine.versions.formats import current_versions
from engine.versions.upgrade import list_backups, make_backup
from tests.web.conftest import anyio_backend, no_keys, service_for, ui_user  # noqa: F401
from tests.web.test_ask_page import eventually, found
from tests.web.test_settings_page import all_text
from web.pages import register
from web.upgrade_page import open_or_explain

pytestmark = pytest.mark.anyio


async def test_settings_check_versions_only_when_asked_and_restore_a_backup_after_confirming(
    ui_user: User,  # noqa: F811
    tmp_path: Path,
    no_keys: None,  # noqa: F811
) -> None:
    service = service_for(tmp_path / "home", ui={"language": "en"})
    root = service.data.root
    (root / "state.json").write_text('{"current_collection": "default"}')
    info = make_backup(
        root,
        backup_id="20260101-000000-abcd-v0.1.0",
        reason="before the upgrade to Citewise 0.2.0",
        formats=current_versions(),
        app_version="0.1.0",
    )
    (root / "state.json").write_text('{"current_collection": "changed"}')
    register(service)
    await ui_user.open("/settings")
    await ui_user.should_see(marker="running-version")
    ui_user.find(marker="version-check").click()
    await eventually(lambda: "so nothing was asked online" in all_text(ui_user))
    ui_user.find(marker=f"restore-{info.backup_id}").click()
    await ui_user.should_see(marker="restore-confirm")
    assert json.loads((root / "state.json").read_text())["current_collection"] == "changed"
    ui_user.find(marker="restore-confirm").click()
    await eventually(
        lambda: json.loads((root / "state.json").read_text())["current_collection"] == "default"
    )
    safety = [b for b in list_backups(root) if b.backup_id != info.backup_id]
    assert len(safety) == 1  # the data it replaced was backed up first
    assert found(ui_user, "maintenance")


async def test_data_of_a_newer_citewise_gets_a_refusal_page_and_stays_untouched(
    ui_user: User,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = tmp_path / "home"
    root.mkdir()
    stamp = {"formats": {**current_versions(), "config": 9}, "app_version": "9.0.0"}
    (root / "formats.json").write_text(json.dumps(stamp))
    monkeypatch.setenv("CITEWISE_HOME", str(root))
    before = sorted(p.name for p in root.iterdir())
    assert open_or_explain(register) is None
    await ui_user.open("/")
    await ui_user.should_see(marker="upgrade-refused")
    assert "9.0.0" in all_text(ui_user)
    assert sorted(p.name for p in root.iterdir()) == before
    assert (root / "formats.json").read_text() == json.dumps(stamp)


async def test_back_up_now_from_settings_lists_the_new_backup(
    ui_user: User,  # noqa: F811
    tmp_path: Path,
    no_keys: None,  # noqa: F811
) -> None:
    service = service_for(tmp_path / "home", ui={"language": "en"})
    root = service.data.root
    (root / "state.json").write_text('{"current_collection": "default"}')
    register(service)
    await ui_user.open("/settings")
    await ui_user.should_see(marker="no-backups")
    ui_user.find(marker="backup-now").click()
    await eventually(lambda: len(list_backups(root)) == 1)
    made = list_backups(root)[0]
    assert (root / "backups" / made.backup_id / "state.json").is_file()
    await ui_user.should_see(marker=f"restore-{made.backup_id}")
