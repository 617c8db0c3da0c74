"""The settings page: validation before anything is written, saving, environment overrides,
and the two keys (stored in the credential store, shown masked, tested for real)."""

from __future__ import annotations

from pathlib import Path

import pytest
from nicegui import ui
from nicegui.testing import User

from engine.config import load_config
from tests.servers.chat_server import ChatServer, Text
from tests.servers.page_server import Page, html, serving, vendor_refusal
from tests.web.conftest import MemoryKeyring, service_for
from tests.web.test_ask_page import eventually, found, texts_of
from web.pages import register

pytestmark = pytest.mark.anyio
SECRET = "sk-test-0123456789abcdef"


def set_number(user: User, marker: str, value: float) -> None:
    element = found(user, marker)[0]
    assert isinstance(element, ui.number)
    element.set_value(value)


def all_text(user: User) -> str:
    assert user.client is not None
    parts = []
    for element in user.client.layout.descendants():
        for attr in ("text", "value", "content"):
            v = getattr(element, attr, None)
            if isinstance(v, str):
                parts.append(v)
        parts.extend(str(v) for v in element.props.values() if isinstance(v, str))
    return "\n".join(parts)


async def test_invalid_setting_is_refused_with_key_value_and_what_is_allowed(
    ui_user: User, tmp_path: Path, no_keys: None
) -> None:
    service = service_for(tmp_path / "home")
    before = service.data.config_file.read_bytes()
    register(service)
    await ui_user.open("/settings")
    set_number(ui_user, "setting-budget.max_tool_calls", 500)
    ui_user.find(marker="settings-save").click()
    await eventually(lambda: bool(found(ui_user, "error-message")))
    (sentence,) = texts_of(ui_user, "error-message")
    # Which field, by the label the page shows (walked: "a setting" on a page of thirty
    # fields left the person searching), and the field itself marked in red.
    assert sentence.startswith("“Max tool calls” has a value Citewise cannot use")
    assert "budget" not in sentence  # the setting's key is a detail
    field = found(ui_user, "setting-budget.max_tool_calls")[0]
    assert field.props.get("error") is True and field.props["error-message"]
    assert found(ui_user, "setting-budget.max_context_tokens")[0].props.get("error") is None
    details = "\n".join(texts_of(ui_user, "error-details-text"))
    assert "budget.max_tool_calls = 500" in details and "<= 100" in details
    assert service.data.config_file.read_bytes() == before
    assert service.config.budget.max_tool_calls == 8
    set_number(ui_user, "setting-budget.max_tool_calls", 5)
    ui_user.find(marker="settings-save").click()
    await eventually(lambda: service.config.budget.max_tool_calls == 5)
    assert field.props.get("error") is None and found(ui_user, "error-message") == []


async def test_valid_settings_are_saved_to_config_toml_and_used(
    ui_user: User, tmp_path: Path, no_keys: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CITEWISE_RETRIEVAL_TOP_K", "7")
    service = service_for(tmp_path / "home")
    register(service)
    await ui_user.open("/settings")
    await ui_user.should_see(marker="env-note")
    assert "CITEWISE_RETRIEVAL_TOP_K sets retrieval.top_k" in texts_of(
        ui_user, "error-details-text"
    )
    set_number(ui_user, "setting-budget.max_tool_calls", 3)
    set_number(ui_user, "setting-chat.price.output", 1.5)
    ui_user.find(marker="setting-network.proxy").type("http://127.0.0.1:3128")
    ui_user.find(marker="settings-save").click()
    await eventually(lambda: service.config.budget.max_tool_calls == 3)
    saved = load_config(service.data.config_file, environ={})
    assert saved.budget.max_tool_calls == 3
    assert saved.chat.price.output == 1.5
    assert saved.network.proxy == "http://127.0.0.1:3128"
    assert saved.retrieval.top_k == 5  # the environment override is not written to the file
    assert service.budgets().max_tool_calls == 3


async def test_key_is_stored_masked_and_never_shown_back(
    ui_user: User, tmp_path: Path, memory_keyring: MemoryKeyring, chat_server: ChatServer
) -> None:
    chat_server.script(Text("p"))
    service = service_for(tmp_path / "home", chat={"base_url": chat_server.url})
    register(service)
    await ui_user.open("/settings")
    await ui_user.should_not_see(marker="no-keyring")
    ui_user.find(marker="key-deepseek-input").type(SECRET)
    ui_user.find(marker="key-deepseek-test").click()
    await eventually(lambda: "It works" in texts_of(ui_user, "key-deepseek-message")[0])
    assert memory_keyring.passwords[("citewise", "deepseek")] == SECRET
    assert chat_server.requests[-1].headers["authorization"] == f"Bearer {SECRET}"
    assert texts_of(ui_user, "key-deepseek-current") == ["Stored: …cdef"]
    await ui_user.open("/settings")
    assert SECRET not in all_text(ui_user)
    config_file = service.data.config_file
    assert not config_file.exists() or SECRET not in config_file.read_text()


async def test_a_bad_key_fails_its_test_with_the_reason_and_is_not_stored(
    ui_user: User, tmp_path: Path, memory_keyring: MemoryKeyring
) -> None:
    server = ChatServer(api_key="the-right-key").start()
    try:
        service = service_for(tmp_path / "home", chat={"base_url": server.url})
        register(service)
        await ui_user.open("/settings")
        ui_user.find(marker="key-deepseek-input").type("sk-wrong-key-000000")
        ui_user.find(marker="key-deepseek-test").click()
        await eventually(lambda: "refused" in texts_of(ui_user, "key-deepseek-message")[0])
        host = server.url.removeprefix("http://").removesuffix("/v1")
        assert texts_of(ui_user, "key-deepseek-message")[0].startswith(
            f"{host} refused this key (HTTP 401)"
        )
        assert found(ui_user, "key-deepseek-retest")
        assert "unauthorized: " in "\n".join(texts_of(ui_user, "error-details-text"))
        assert memory_keyring.passwords == {}
    finally:
        server.stop()


async def test_without_a_credential_store_the_key_is_kept_for_the_session_and_said_so(
    ui_user: User, tmp_path: Path, no_keys: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = service_for(tmp_path / "home")
    register(service)
    await ui_user.open("/settings")
    await ui_user.should_see(marker="no-keyring")
    ui_user.find(marker="key-embedding-input").type("emb-key-1234567890")
    ui_user.find(marker="key-embedding-save").click()
    message = texts_of(ui_user, "key-embedding-message")[0]
    assert "CITEWISE_" not in message and "this session only" in message
    assert "Environment variable: CITEWISE_EMBEDDING_API_KEY" in texts_of(
        ui_user, "error-details-text"
    )
    assert service.key_is_set("embedding")
    monkeypatch.delenv("CITEWISE_EMBEDDING_API_KEY")  # what the service set, for this process


async def test_each_field_says_whether_its_value_is_the_default_or_saved(
    ui_user: User, tmp_path: Path, no_keys: None
) -> None:
    service = service_for(tmp_path / "home", budget={"max_tool_calls": 5})
    register(service)
    await ui_user.open("/settings")
    saved = found(ui_user, "setting-budget.max_tool_calls")[0]
    default = found(ui_user, "setting-budget.max_context_tokens")[0]
    assert (saved.value, saved.props["hint"]) == (5, "Saved")
    assert default.props["hint"] == "Default"


async def test_an_environment_variable_shows_its_value_in_effect_and_is_never_saved(
    ui_user: User, tmp_path: Path, no_keys: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CITEWISE_CHAT_MODEL", "deepseek-reasoner")
    service = service_for(tmp_path / "home", chat={"model": "deepseek-chat"})
    register(service)
    await ui_user.open("/settings")
    field = found(ui_user, "setting-chat.model")[0]
    assert field.value == "deepseek-reasoner"  # the value in effect, not the file's
    assert "readonly" in field.props
    hint = field.props["hint"]
    assert "deepseek-reasoner" in hint and "environment variable" in hint
    assert "deepseek-chat" in hint and "CITEWISE_" not in hint
    banner = " ".join(texts_of(ui_user, "env-note"))
    assert "environment variables" in banner and "CITEWISE_" not in banner
    assert "CITEWISE_CHAT_MODEL sets chat.model" in texts_of(ui_user, "error-details-text")
    set_number(ui_user, "setting-budget.max_tool_calls", 4)
    ui_user.find(marker="settings-save").click()
    await eventually(lambda: load_config(service.data.config_file, {}).budget.max_tool_calls == 4)
    assert load_config(service.data.config_file, environ={}).chat.model == "deepseek-chat"


@pytest.mark.parametrize(
    ("page", "lang", "starts", "not_in"),
    [
        (html(200), "en", "The address leads to", "refused"),
        (html(200), "zh", "该地址指向", "拒绝"),
        (html(403, b"<html>403 Forbidden</html>"), "en", "The address leads to", "refused"),
        (html(403, b"<html>403 Forbidden</html>"), "zh", "该地址指向", "拒绝"),
        (vendor_refusal(403), "en", "{host} refused this key (HTTP 403)", "address"),
        (vendor_refusal(403), "zh", "{host} 拒绝了这个 Key(HTTP 403)", "地址"),
    ],
    ids=["html-en", "html-zh", "html403-en", "html403-zh", "json403-en", "json403-zh"],
)
async def test_a_key_test_tells_a_wrong_address_from_a_refused_key_in_both_languages(
    ui_user: User,
    tmp_path: Path,
    memory_keyring: MemoryKeyring,
    page: Page,
    lang: str,
    starts: str,
    not_in: str,
) -> None:
    with serving(page) as served:
        host = served.url.removeprefix("http://")
        service = service_for(
            tmp_path / "home", chat={"base_url": served.url}, ui={"language": lang}
        )
        register(service)
        await ui_user.open("/settings")
        ui_user.find(marker="key-deepseek-input").type(SECRET)
        ui_user.find(marker="key-deepseek-test").click()
        await eventually(lambda: bool(found(ui_user, "key-deepseek-retest")))
    (message,) = texts_of(ui_user, "key-deepseek-message")
    assert message.startswith(starts.format(host=host)) and not_in not in message
    for hidden in ("chat.base_url", "citewise keys", "Error", "bad_request", "unauthorized"):
        assert hidden not in message
    assert memory_keyring.passwords == {}  # a key that did not work is not stored


async def test_a_saved_field_says_saved_at_once_not_default(
    ui_user: User, tmp_path: Path, no_keys: None
) -> None:
    """Walked: the chat base URL just saved still said "默认值" (Default) under it until the
    page was opened again."""
    service = service_for(tmp_path / "home", ui={"language": "zh"})
    register(service)
    await ui_user.open("/settings")
    proxy = found(ui_user, "setting-network.proxy")[0]
    assert proxy.props["hint"] == "默认值"
    proxy.set_value("http://127.0.0.1:3128")
    ui_user.find(marker="settings-save").click()
    await eventually(lambda: service.config.network.proxy == "http://127.0.0.1:3128")
    await eventually(lambda: proxy.props["hint"] == "已保存")
    assert "source-file" in proxy._markers
    assert found(ui_user, "setting-network.ca_bundle")[0].props["hint"] == "默认值"
