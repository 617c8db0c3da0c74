"""The copy-on-write upgrade with real migrations (config v1 → v2, trace store v1 → v2): what
a finished upgrade leaves, and that a failure at any step leaves the old data active and
untouched (or, once the switch has committed, the next start finishes the new data)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import msgspec
import pytest

from actors.errors import UpgradeRequired
from actors.upgrade import explain_upgrade, open_data, run_upgrade
from engine.errors import DataTooNew, NoUpgradePath, UpgradeFailed, UpgradeUnfinished
from engine.versions.formats import current_versions, registry
from engine.versions.upgrade import STEPS, inspect, list_backups, read_stamp, recover
from tests.upgrade.formats_v2 import (
    CURRENT_V2,
    MIGRATIONS_V2,
    TRACES,
    make_v1_home,
    read_config_v2,
    trace_schema,
    tree,
    upgrade_v2,
)

SECRET = "sk-upgrade-secret-0123456789"


@pytest.fixture(scope="module")
def v1_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("v1")
    return make_v1_home(base / "home", base / "docs")


@pytest.fixture
def v1_home(v1_template: Path, tmp_path: Path) -> Path:
    import shutil

    target = tmp_path / "home"
    shutil.copytree(v1_template, target)
    return target


def assert_old_data_intact(root: Path, before: dict[str, str]) -> None:
    recover(root)  # what the next start does
    assert tree(root) == before
    assert not (root / ".upgrade").exists() or not any((root / ".upgrade").iterdir())
    assert list_backups(root) == []
    assert inspect(root, CURRENT_V2).state == "older"


def assert_new_data_complete(root: Path, before: dict[str, str]) -> None:
    recover(root)
    stamp = read_stamp(root)
    assert stamp is not None and stamp.switching is None
    assert stamp.formats == CURRENT_V2
    config = read_config_v2(root / "config.toml")
    assert config["retrieval"]["results"] == 7  # type: ignore[index]
    assert config["ui"]["language"] == "zh"  # type: ignore[index]
    version, columns, rows = trace_schema(root / TRACES)
    assert (version, "tags" in columns, rows) == ("2", True, 1)
    after = tree(root)
    changed = {"config.toml", TRACES, "formats.json"}
    for rel, digest in before.items():  # every other file is exactly as it was
        if rel not in changed and not rel.startswith(TRACES):
            assert after.get(rel) == digest, rel
    assert not any((root / ".upgrade").iterdir())
    [backup] = list_backups(root)
    copy = root / "backups" / backup.backup_id
    kept = {k: v for k, v in before.items() if "/pins/" not in k}  # pin locks are not data
    assert {k: v for k, v in tree(copy).items() if k != "backup.json"} == kept
    assert inspect(copy, current_versions()).state == "current"  # the old build opens it


def test_every_format_has_one_registered_version() -> None:
    names = [f.name for f in registry()]
    assert len(names) == len(set(names))
    import actors.catalog
    import actors.conversations
    import actors.journal

    versions = current_versions()
    assert (
        actors.catalog.ActivePointer(snapshot_id="x").format_version == versions["active_pointer"]
    )
    assert versions["journal"] == actors.journal.JOURNAL_FORMAT
    assert versions["conversation"] == actors.conversations.CONVERSATION_FORMAT


def test_upgrade_migrates_into_new_files_and_keeps_a_backup_the_old_build_opens(
    v1_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CITEWISE_DEEPSEEK_API_KEY", SECRET)
    monkeypatch.setenv("CITEWISE_RETRIEVAL_TOP_K", "3")  # an override must not be written
    before = tree(v1_home)
    plan = explain_upgrade(v1_home, migrations=MIGRATIONS_V2, current=CURRENT_V2)
    assert plan is not None
    assert {c.format for c in plan.changes} == {"config", "trace_store"}
    assert "top_k is now `results`" in plan.text() and "MB" in plan.text()
    assert tree(v1_home) == before  # explaining changes nothing
    report = upgrade_v2(v1_home)
    assert report is not None
    assert_new_data_complete(v1_home, before)
    for path in v1_home.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    assert tomllib.loads((v1_home / "config.toml").read_text())["retrieval"]["results"] == 7


def test_other_commands_refuse_older_data_until_it_is_upgraded(v1_home: Path) -> None:
    before = tree(v1_home)
    with pytest.raises(UpgradeRequired, match="citewise upgrade"):
        open_data(v1_home, "import", current=CURRENT_V2)
    assert open_data(v1_home, "status", current=CURRENT_V2, writes=False).state == "older"
    assert tree(v1_home) == before


def test_newer_data_is_refused_and_never_touched(v1_home: Path) -> None:
    upgrade_v2(v1_home)
    before = tree(v1_home)
    for command in ("import", "status", "ask"):
        with pytest.raises(DataTooNew, match="newer Citewise"):
            open_data(v1_home, command)  # this build reads config 1
    with pytest.raises(DataTooNew):
        explain_upgrade(v1_home)
    assert tree(v1_home) == before


def test_a_format_without_a_migration_path_is_refused_before_anything_changes(
    v1_home: Path,
) -> None:
    before = tree(v1_home)
    with pytest.raises(NoUpgradePath, match="cannot upgrade config from format 1"):
        explain_upgrade(v1_home, migrations=MIGRATIONS_V2[1:], current=CURRENT_V2)
    with pytest.raises(NoUpgradePath):
        run_upgrade(v1_home, migrations=MIGRATIONS_V2[1:], current=CURRENT_V2)
    assert tree(v1_home) == before


@pytest.mark.parametrize("step", STEPS)
@pytest.mark.parametrize("when", ["before", "after"])
def test_a_failure_at_any_step_leaves_old_data_active_or_new_data_complete(
    v1_home: Path, step: str, when: str
) -> None:
    before = tree(v1_home)

    def fail(at: str, moment: str) -> None:
        if (at, moment) == (step, when):
            raise OSError(28, "No space left on device (injected)")

    committed = (step, when) in {("switch", "after"), ("cleanup", "before"), ("cleanup", "after")}
    if step == "cleanup":
        upgrade_v2(v1_home, on_step=fail)  # the upgrade is done; what is left goes next start
    elif committed:
        with pytest.raises(UpgradeUnfinished, match="start Citewise again"):
            upgrade_v2(v1_home, on_step=fail)
    else:
        with pytest.raises(UpgradeFailed, match="your data was not changed") as info:
            upgrade_v2(v1_home, on_step=fail)
        assert info.value.step == step
    if committed:
        assert_new_data_complete(v1_home, before)
    else:
        assert_old_data_intact(v1_home, before)
        upgrade_v2(v1_home)  # and a second try succeeds
        assert_new_data_complete(v1_home, before)


def test_a_failing_self_check_stops_the_upgrade_before_the_switch(v1_home: Path) -> None:
    (v1_home / "config.toml").write_text("format_version = 1\n[budget]\nmax_tool_calls = 500\n")
    before = tree(v1_home)
    with pytest.raises(UpgradeFailed, match="self-check 'config v2 decodes'") as info:
        upgrade_v2(v1_home)
    assert info.value.step == "selfcheck"
    assert_old_data_intact(v1_home, before)


def test_a_data_directory_without_a_format_record_counts_as_the_first_formats(
    v1_home: Path,
) -> None:
    (v1_home / "formats.json").unlink()
    assert inspect(v1_home).state == "current"
    assert inspect(v1_home, CURRENT_V2).state == "older"
    open_data(v1_home, "import")
    stamp = read_stamp(v1_home)
    assert stamp is not None and stamp.formats == current_versions()
    assert msgspec.json.decode((v1_home / "formats.json").read_bytes())["app_version"]
