"""The traces page: an answered question's trace, its span tree, and both replays."""

from __future__ import annotations

from pathlib import Path

import pytest
from nicegui.testing import User

from tests.servers.chat_server import ChatServer
from tests.web.conftest import service_for
from tests.web.test_ask_page import ask_enabled, cite, eventually, found, search, texts_of
from web.pages import register

pytestmark = pytest.mark.anyio


async def _ask_once(user: User) -> None:
    await user.open("/")
    user.find(marker="question-box").type("How do listeners run?")
    user.find(marker="ask-button").click()
    await eventually(lambda: bool(found(user, "trace-link")) and ask_enabled(user))


@pytest.mark.parametrize("mode", ["metadata", "full"])
async def test_an_answer_links_to_its_trace_with_spans_and_replays(
    ui_user: User,
    home_copy: Path,
    chat_server: ChatServer,
    monkeypatch: pytest.MonkeyPatch,
    no_keys: None,
    mode: str,
) -> None:
    monkeypatch.setenv("CITEWISE_DEEPSEEK_API_KEY", "test-key")
    chat_server.script(search(), cite)
    service = service_for(home_copy, chat={"base_url": chat_server.url}, trace={"mode": mode})
    register(service)
    await _ask_once(ui_user)
    link = found(ui_user, "trace-link")[0]
    await ui_user.open(link.props["href"])
    await ui_user.should_see(marker="trace-detail")
    assert len(found(ui_user, "trace-row")) == 1
    kinds = {row._props["label"].split(" · ")[0] for row in found(ui_user, "span-row")}
    assert {"Question", "turn 1", "Model call", "Tool call", "Final answer"} <= kinds
    assert all(row._props["label"].endswith(" · done") for row in found(ui_user, "span-row"))

    ui_user.find(marker="evidence-replay").click()
    if mode == "metadata":
        await ui_user.should_see(marker="evidence-unavailable")
        assert "full" in texts_of(ui_user, "evidence-unavailable")[0]
    else:
        await ui_user.should_see(marker="evidence-model-input")
        assert len(found(ui_user, "evidence-model-input")) == 2
        assert len(found(ui_user, "evidence-tool-output")) == 1

    ui_user.find(marker="retrieval-replay").click()
    await ui_user.should_see(marker="retrieval-diff", retries=50)
    assert "same blocks, same order" in texts_of(ui_user, "retrieval-diff")[0]


async def test_no_traces_yet_says_how_to_get_one(
    ui_user: User, tmp_path: Path, no_keys: None
) -> None:
    register(service_for(tmp_path / "home"))
    await ui_user.open("/traces")
    await ui_user.should_see(marker="no-traces")
