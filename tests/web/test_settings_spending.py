"""Spending caps in the UI: the settings page shows today's and this month's totals beside the
caps (and follows a saved change), and the ask page refuses a question at a reached cap, in the
person's language, without calling the model."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from nicegui import ui
from nicegui.testing import User

from actors.spending import spending_for
from tests.servers.chat_server import ChatServer
from tests.web.conftest import service_for
from tests.web.test_ask_page import eventually, found, texts_of
from web.pages import register

pytestmark = pytest.mark.anyio


async def test_settings_show_the_running_totals_beside_the_caps(
    ui_user: User, tmp_path: Path, no_keys: None
) -> None:
    service = service_for(tmp_path / "home", chat={"daily_cap": 0.5})
    spending_for(service).record("r1", 0.75, "USD")
    today = dt.datetime.now().astimezone()
    register(service)
    await ui_user.open("/settings")
    assert texts_of(ui_user, "spending-today") == [
        f"Today ({today.date().isoformat()}): 0.7500 USD of the daily cap 0.5 USD"
    ]
    assert texts_of(ui_user, "spending-month") == [
        f"This month ({today.strftime('%Y-%m')}): 0.7500 USD, no monthly cap"
    ]
    assert found(ui_user, "spending-today-reached")
    cap = found(ui_user, "setting-chat.daily_cap")[0]
    assert isinstance(cap, ui.number)
    cap.set_value(2)
    ui_user.find(marker="settings-save").click()
    await eventually(lambda: "of the daily cap 2 USD" in texts_of(ui_user, "spending-today")[0])
    assert not found(ui_user, "spending-today-reached")
    assert service.config.chat.daily_cap == 2


async def test_a_question_past_the_cap_is_refused_in_the_persons_language(
    ui_user: User,
    home_copy: Path,
    chat_server: ChatServer,
    no_keys: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CITEWISE_DEEPSEEK_API_KEY", "test-key")
    service = service_for(
        home_copy,
        chat={"base_url": chat_server.url, "daily_cap": 0.1},
        ui={"language": "zh"},
    )
    spending_for(service).record("r1", 0.25, "USD")
    register(service)
    await ui_user.open("/")
    ui_user.find(marker="question-box").type("How do listeners run?")
    ui_user.find(marker="ask-button").click()
    await eventually(lambda: bool(found(ui_user, "ask-error")))
    message = texts_of(ui_user, "ask-error")[0]
    assert message.startswith("已达到每日花费上限") and "0.2500 USD" in message
    assert chat_server.requests == []
    assert service.conversations() == []  # nothing was asked, so nothing is recorded


async def test_the_spending_note_points_to_the_prices_where_they_are(
    ui_user: User, tmp_path: Path, no_keys: None
) -> None:
    """Walked: the note said "the prices below" but the prices card is above it."""
    register(service_for(tmp_path / "home"))
    await ui_user.open("/settings")
    price = found(ui_user, "setting-chat.price.output")[0]
    note = found(ui_user, "spend-note")[0]
    assert price.id < note.id  # built (and shown) first: above
    assert "prices above" in note.text
