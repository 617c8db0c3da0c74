"""A damaged current version of the library: the Ask and Library pages say so in words and
offer the one repair (go back to the newest usable version), instead of an error dialog."""

from __future__ import annotations

from pathlib import Path

import pytest
from nicegui.testing import User

from actors.catalog import Catalog
from engine.paths import DataDir
from tests.corpus import make_app, run_import
from tests.web.conftest import EVENTS_MD, STREAMS_MD, service_for
from tests.web.test_ask_page import eventually
from web.pages import register

pytestmark = pytest.mark.anyio


def _library(root: Path, imports: list[str]) -> tuple[Path, list[str]]:
    """A data directory with one snapshot per imported text; the active one's vectors deleted."""
    home = root / "home"
    for i, text in enumerate(imports):
        folder = root / f"docs{i}"
        folder.mkdir()
        (folder / f"doc{i}.md").write_text(text, encoding="utf-8")
        assert run_import(make_app(home), [folder]).status == "ready"
    catalog = Catalog(DataDir(home), "default")
    ids = [m.snapshot_id for m in catalog.list()]
    (catalog.snapshot_path(ids[-1]) / "vectors.f16").unlink()
    return home, ids


@pytest.fixture
def two_versions(tmp_path: Path) -> tuple[Path, list[str]]:
    return _library(tmp_path, [EVENTS_MD, STREAMS_MD])


@pytest.fixture
def one_version(tmp_path: Path) -> tuple[Path, list[str]]:
    return _library(tmp_path, [EVENTS_MD])


async def test_a_damaged_library_offers_to_go_back_to_the_last_usable_version(
    two_versions: tuple[Path, list[str]], ui_user: User, no_keys: None
) -> None:
    home, ids = two_versions
    app = service_for(home)
    register(app)
    await ui_user.open("/library")
    await ui_user.should_see(marker="damage-banner")
    await ui_user.should_see("The current version of your library cannot be opened")
    await ui_user.should_see(marker="error-details")  # the technical problem sits under details
    await ui_user.open("/")
    await ui_user.should_see(marker="damage-banner")
    ui_user.find(marker="damage-go-back").click()
    await eventually(lambda: Catalog(DataDir(home), "default").active_id() == ids[0])
    assert app.damage() is None
    await ui_user.open("/library")
    await ui_user.should_not_see(marker="damage-banner")
    await ui_user.should_see("Node events")


async def test_a_damaged_only_version_says_to_import_again(
    one_version: tuple[Path, list[str]], ui_user: User, no_keys: None
) -> None:
    home, _ = one_version
    register(service_for(home))
    await ui_user.open("/")
    await ui_user.should_see("import your documents again")
    ui_user.find(marker="damage-open-library").click()
    await ui_user.should_see(marker="import-path")
