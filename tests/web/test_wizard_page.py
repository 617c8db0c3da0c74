"""The first-run wizard with NiceGUI's simulated user: from an empty data directory to a first
answered question, with the scripted chat server and the built-in embedding model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import anyio
import pytest
from nicegui import ui
from nicegui.testing import User

from tests.servers.chat_server import ChatServer, Text
from tests.web.conftest import MemoryKeyring, service_for
from tests.web.test_ask_page import answer_html, eventually, found, search, texts_of
from tests.web.test_library_page import import_state
from web.pages import register

pytestmark = pytest.mark.anyio


def cite_first(body: dict[str, object]) -> Text:
    messages = body["messages"]
    assert isinstance(messages, list)
    observation = json.loads(messages[-1]["content"].splitlines()[-2])
    citation = observation["payload"]["blocks"][0]["citation"]
    return Text(f"Thought: ok.\nAction: Finish[监听器按注册顺序同步调用。【来源:{citation}】]")


async def test_wizard_takes_a_new_user_to_a_first_cited_answer(
    ui_user: User,
    tmp_path: Path,
    docs: Path,
    memory_keyring: MemoryKeyring,
    chat_server: ChatServer,
) -> None:
    service = service_for(tmp_path / "home", chat={"base_url": chat_server.url})
    register(service)
    await ui_user.open("/")
    await ui_user.should_see("Welcome to Citewise")

    # 1. language: Chinese; the wizard comes back in Chinese at the next step
    language = found(ui_user, "wizard-language")[0]
    assert isinstance(language, ui.radio)
    language.set_value("zh")
    ui_user.find(marker="wizard-next-language").click()
    await ui_user.should_see("欢迎使用 Citewise", retries=30)
    assert service.config.ui.language == "zh"

    # 2. DeepSeek key: a failing test keeps the user on this step
    ui_user.find(marker="wizard-next-chat").click()
    await eventually(lambda: "还没有保存 Key" in texts_of(ui_user, "key-deepseek-message")[0])
    chat_server.script(Text("p"))
    ui_user.find(marker="key-deepseek-input").type("sk-wizard-0000000000")
    ui_user.find(marker="wizard-next-chat").click()
    await eventually(lambda: memory_keyring.passwords.get(("citewise", "deepseek")) is not None)

    # 3. embeddings: the built-in model, tested offline
    ui_user.find(marker="wizard-next-embedding").click()
    await eventually(lambda: "连接正常" in texts_of(ui_user, "wizard-embedding-message")[0])

    # 4. documents: the next step waits for an import
    ui_user.find(marker="wizard-next-documents").click()
    await ui_user.should_see("请等待导入完成后再继续。")
    ui_user.find(marker="import-path").type(str(docs))
    ui_user.find(marker="import-button").click()
    await eventually(lambda: import_state(ui_user) == "导入完成", timeout_s=60)
    ui_user.find(marker="wizard-next-documents").click()

    # 5. the first question opens the ask page, which answers it at once
    chat_server.script(search("监听器 listener"), cite_first)
    ui_user.find(marker="wizard-question").type("监听器按什么顺序调用?")
    ui_user.find(marker="wizard-finish").click()
    await eventually(lambda: bool(found(ui_user, "citation-chip")), timeout_s=30)
    assert "监听器按注册顺序同步调用。[1]" in answer_html(ui_user)
    assert texts_of(ui_user, "citation-chip") == ["[1] Node events · Emitters"]
    assert service.first_run_done()


async def test_skip_goes_to_the_library_and_the_wizard_does_not_come_back(
    ui_user: User, tmp_path: Path, no_keys: None
) -> None:
    service = service_for(tmp_path / "home")
    register(service)
    await ui_user.open("/")
    await ui_user.should_see(marker="wizard-skip")
    ui_user.find(marker="wizard-skip").click()
    await ui_user.should_see(marker="import-panel")
    await ui_user.open("/")
    await ui_user.should_see(marker="question-box")


async def test_reloading_the_ask_page_after_the_first_question_does_not_ask_again(
    ui_user: User, home_copy: Path, chat_server: ChatServer, no_keys: None, monkeypatch: Any
) -> None:
    monkeypatch.setenv("CITEWISE_DEEPSEEK_API_KEY", "test-key")
    chat_server.script(Text("Thought: t\nAction: Finish[Listeners run in order.]"))
    service = service_for(home_copy, chat={"base_url": chat_server.url})
    register(service)
    await ui_user.open("/wizard?step=ask")
    ui_user.find(marker="wizard-question").type("In which order do listeners run?")
    ui_user.find(marker="wizard-finish").click()
    await eventually(lambda: "Listeners run in order." in answer_html(ui_user), timeout_s=30)
    await eventually(lambda: bool(found(ui_user, "export-answer")))  # recorded
    assert len(chat_server.requests) == 1
    (conversation,) = service.conversations()

    # A reload, the conversation's own address, and the address older versions used.
    for address in (
        "/",
        f"/?c={conversation.conversation_id}",
        "/?" + urlencode({"q": "In which order do listeners run?"}),
    ):
        await ui_user.open(address)
        await ui_user.should_see(marker="question-box")
        await anyio.sleep(0.5)  # the old page asked 0.1 s after loading
    assert len(chat_server.requests) == 1
    assert [c.turns for c in service.conversations()] == [1]
    assert chat_server.remaining == 0


async def test_the_conversation_address_shows_it_without_asking(
    ui_user: User, home_copy: Path, chat_server: ChatServer, no_keys: None, monkeypatch: Any
) -> None:
    monkeypatch.setenv("CITEWISE_DEEPSEEK_API_KEY", "test-key")
    chat_server.script(Text("Thought: t\nAction: Finish[Listeners run in order.]"))
    service = service_for(home_copy, chat={"base_url": chat_server.url})
    register(service)
    await ui_user.open("/wizard?step=ask")
    ui_user.find(marker="wizard-question").type("Order?")
    ui_user.find(marker="wizard-finish").click()
    await eventually(lambda: bool(found(ui_user, "export-answer")), timeout_s=30)
    (conversation,) = service.conversations()
    await ui_user.open(f"/?c={conversation.conversation_id}")
    await ui_user.should_see("Listeners run in order.")
    await ui_user.should_see(marker="trace-link")
    assert len(chat_server.requests) == 1


async def test_without_a_key_the_wizard_goes_on_to_the_documents_and_says_how_long_a_key_lasts(
    ui_user: User, tmp_path: Path, docs: Path, no_keys: None
) -> None:
    """Walked: the key step was a dead end for a learner with no DeepSeek key (only "Skip
    setup", which skips the documents too), and on a computer with no credential store it
    said the key is kept there."""
    service = service_for(tmp_path / "home", ui={"language": "zh"})
    register(service)
    await ui_user.open("/wizard?step=chat")
    help_text = texts_of(ui_user, "wizard-chat-help")[0]
    assert "没有凭据库" in help_text and "保存在系统凭据库中" not in help_text
    ui_user.find(marker="wizard-next-chat").click()
    await ui_user.should_see("还没有 Key?可以先不设置 Key 继续", retries=30)
    ui_user.find(marker="wizard-without-key").click()
    ui_user.find(marker="wizard-next-embedding").click()
    await eventually(lambda: "连接正常" in texts_of(ui_user, "wizard-embedding-message")[0])
    ui_user.find(marker="import-path").type(str(docs))
    ui_user.find(marker="import-button").click()
    await eventually(lambda: import_state(ui_user) == "导入完成", timeout_s=60)
    assert len(service.documents()) == 2
