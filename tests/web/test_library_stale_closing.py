"""The import panel's closing line tells what the last import did only while the library is
still as that import left it: a removal or a rollback afterwards takes it away, in this page
and after a reload, and the next import shows its own."""

from __future__ import annotations

from pathlib import Path

import pytest
from nicegui.testing import User, UserInteraction

from tests.web.conftest import service_for
from tests.web.test_ask_page import eventually, found
from tests.web.test_library_page import import_path, import_state
from web.pages import register

pytestmark = pytest.mark.anyio


def closing(user: User) -> list[str]:
    """The closing lines a person can see (a hidden panel shows none)."""
    return [
        str(e.text)
        for e in found(user, "import-result")
        if e.visible and e.parent_slot is not None and e.parent_slot.parent.visible
    ]


async def test_a_removal_then_a_rollback_take_the_last_imports_closing_line_away(
    ui_user: User, tmp_path: Path, docs: Path, no_keys: None
) -> None:
    service = service_for(tmp_path / "home")
    register(service)
    await ui_user.open("/library")
    await import_path(ui_user, docs)
    await eventually(lambda: import_state(ui_user) == "Import finished", timeout_s=60)
    assert closing(ui_user) == ["2 documents in the library; 2 added."]

    UserInteraction(ui_user, {found(ui_user, "remove-button")[0]}, None).click()
    ui_user.find(marker="confirm-yes").click()
    await eventually(lambda: len(service.documents()) == 1, timeout_s=30)
    await eventually(lambda: closing(ui_user) == [])
    assert ui_user.notify.contains("removed")

    await ui_user.open("/library")  # a reload does not bring the old line back
    assert closing(ui_user) == [] and import_state(ui_user) in ("", "Import finished")

    ui_user.find(marker="activate-button").click()
    UserInteraction(ui_user, {found(ui_user, "confirm-yes")[-1]}, None).click()
    await eventually(lambda: len(service.documents()) == 2)
    assert closing(ui_user) == []

    await import_path(ui_user, docs)  # the next import tells its own story
    await eventually(lambda: any(closing(ui_user)), timeout_s=60)
    assert closing(ui_user) == ["2 documents in the library; 2 unchanged."]
