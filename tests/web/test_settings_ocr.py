"""The settings page's scanned-documents switch: OCR is on by default, turning it off is saved
and used by the next import, and the page limit is a number like any other setting."""

from __future__ import annotations

from pathlib import Path

import pytest
from nicegui import ui
from nicegui.testing import User

from engine.config import load_config
from tests.web.conftest import service_for
from tests.web.test_ask_page import eventually, found
from tests.web.test_settings_page import set_number
from web.i18n import Texts
from web.pages import register

pytestmark = pytest.mark.anyio


async def test_ocr_is_on_by_default_and_can_be_switched_off(
    ui_user: User, tmp_path: Path, no_keys: None
) -> None:
    service = service_for(tmp_path / "home")
    register(service)
    await ui_user.open("/settings")
    await ui_user.should_see(Texts("en")("set.ocr_group"))
    (switch,) = found(ui_user, "setting-ingest.ocr")
    assert isinstance(switch, ui.switch) and switch.value is True
    assert switch.text == Texts("en")("set.ocr")
    switch.set_value(False)
    set_number(ui_user, "setting-ingest.ocr_max_pages", 40)
    ui_user.find(marker="settings-save").click()
    await eventually(lambda: service.config.ingest.ocr is False)
    saved = load_config(service.data.config_file, environ={})
    assert saved.ingest.ocr is False and saved.ingest.ocr_max_pages == 40


def test_ocr_settings_are_written_in_both_languages() -> None:
    for key in ("set.ocr_group", "set.ocr", "set.ocr_max_pages"):
        english, chinese = Texts("en")(key), Texts("zh")(key)
        assert english and chinese and english != chinese
