"""How the UI tells a person about an error: every UserError's message_key has its sentence in
both languages, a sentence names no setting, variable, exception or command, and a page shows
the sentence with one helpful button while str(exc) waits behind the details toggle."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from collections.abc import Iterator
from pathlib import Path
from typing import get_args

import pytest
from nicegui import ui
from nicegui.testing import User

import actors
import engine
from actors.errors import SpendingCapReached
from engine.errors import (
    ChatError,
    ChatErrorCode,
    ConfigError,
    EmbeddingError,
    EmbeddingErrorCode,
    UserError,
)
from engine.harness.events import TerminationReason
from engine.keycheck import CheckCode
from tests.servers.page_server import html, serving
from tests.web.conftest import service_for
from tests.web.test_ask_page import eventually, found, texts_of
from web.error_view import ended_sentence, error_key, error_sentence, reason_words, show_error
from web.i18n import TEXTS, Texts
from web.i18n_errors import ERROR_TEXTS
from web.pages import register

pytestmark = pytest.mark.anyio
# What a sentence for a person never holds: a setting (section.key), a variable, a command,
# an exception's name, an HTTP library's words.
TECHNICAL = re.compile(r"\b[a-z]+\.[a-z_]+\b|CITEWISE_|`|citewise |\w+Error\b|Exception|httpx")
URL = re.compile(r"https?://\S+")  # an address to type in is for a person


def _subclasses(cls: type[UserError]) -> Iterator[type[UserError]]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def every_user_error() -> list[type[UserError]]:
    """Every UserError subclass of engine/ and actors/ (each module imported first)."""
    for package in (engine, actors):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            importlib.import_module(info.name)
    return sorted(set(_subclasses(UserError)), key=lambda c: (c.__module__, c.__name__))


def test_every_message_key_of_every_user_error_has_its_sentence_in_both_languages() -> None:
    errors = every_user_error()
    assert len(errors) > 30
    missing = [
        f"{cls.__module__}.{cls.__name__}: {cls.message_key}"
        for cls in [UserError, *errors]
        if cls.message_key not in TEXTS or not all(TEXTS[cls.message_key])
    ]
    assert missing == []


@pytest.mark.parametrize(
    ("key", "codes"),
    [
        ("error.chat_failed", get_args(ChatErrorCode)),
        ("error.embedding_failed", get_args(EmbeddingErrorCode)),
    ],
)
def test_every_provider_error_code_has_its_own_sentence(key: str, codes: tuple[str, ...]) -> None:
    assert [c for c in codes if f"{key}.{c}" not in TEXTS and c != "cancelled"] == []


def test_every_key_test_verdict_has_its_sentence() -> None:
    codes = [c for c in get_args(CheckCode) if c != "ok"]
    assert [c for c in codes if f"check.{c}" not in TEXTS] == []
    assert {"check.ok.deepseek", "check.ok.embedding"} <= TEXTS.keys()


@pytest.mark.parametrize("key", sorted(ERROR_TEXTS))
def test_a_sentence_for_a_person_names_no_setting_variable_command_or_exception(key: str) -> None:
    for text in ERROR_TEXTS[key]:
        assert TECHNICAL.search(URL.sub("", text)) is None, (key, text)


def test_the_most_specific_sentence_is_chosen() -> None:
    en = Texts("en")
    tls = ChatError("connection", "could not connect (SSLError)", cause="tls")
    assert error_key(tls) == "error.chat_failed.connection.tls"
    assert error_key(ChatError("timeout", "x", cause="tls")) == "error.chat_failed.timeout"
    assert error_key(EmbeddingError("quota", "x")) == "error.embedding_failed.quota"
    assert error_key(ValueError("boom")) == "error.bug"
    cap = SpendingCapReached("day", 1.23456, 1.0, "CNY")
    assert error_key(cap) == "spend.cap_reached.day"
    assert "1.2346 of 1 CNY today" in error_sentence(en, cap)
    assert "1.2346" in error_sentence(Texts("zh"), cap)


async def _page_with(user: User, exc: BaseException, lang: str) -> None:
    @ui.page("/boom")
    def boom() -> None:
        show_error(Texts(lang), exc, retry=lambda: None)

    await user.open("/boom")
    await eventually(lambda: bool(found(user, "error-message")))


@pytest.mark.parametrize("lang", ["en", "zh"])
async def test_a_user_error_shows_its_sentence_one_button_and_the_details_behind_a_toggle(
    ui_user: User, lang: str
) -> None:
    exc = ConfigError("budget.max_tool_calls = 500 is not allowed: it must be <= 100")
    await _page_with(ui_user, exc, lang)
    (sentence,) = texts_of(ui_user, "error-message")
    assert sentence == Texts(lang)("error.config_invalid")
    assert "budget" not in sentence
    (action,) = found(ui_user, "error-action")
    assert action.text == Texts(lang)("error.open_settings")
    (toggle,) = found(ui_user, "error-details")
    assert toggle.value is False  # closed until asked for
    assert texts_of(ui_user, "error-details-text")[0].startswith("ConfigError: budget.")


async def test_a_bug_says_so_in_words_and_offers_retry_and_the_details(ui_user: User) -> None:
    await _page_with(ui_user, KeyError("span_id"), "zh")
    (sentence,) = texts_of(ui_user, "error-message")
    assert sentence == Texts("zh")("error.bug") and "KeyError" not in sentence
    assert [b.text for b in found(ui_user, "error-action")] == ["重试"]
    assert "KeyError: 'span_id'" in texts_of(ui_user, "error-details-text")[0]


@pytest.mark.parametrize("lang", ["en", "zh"])
async def test_a_question_sent_to_a_website_says_what_is_wrong_in_the_ui_language(
    ui_user: User,
    home_copy: Path,
    no_keys: None,
    monkeypatch: pytest.MonkeyPatch,
    lang: str,
) -> None:
    monkeypatch.setenv("CITEWISE_DEEPSEEK_API_KEY", "sk-error-view-0123456789")
    with serving(html(403, b"<html><h1>403 Forbidden</h1></html>")) as served:
        register(service_for(home_copy, chat={"base_url": served.url}, ui={"language": lang}))
        await ui_user.open("/")
        ui_user.find(marker="question-box").type("How do listeners run?")
        ui_user.find(marker="ask-button").click()
        await eventually(lambda: bool(found(ui_user, "no-answer")))
    # Not "the key was refused": the address answered with a web page.
    assert texts_of(ui_user, "no-answer") == [Texts(lang)("error.chat_failed.bad_request.not_json")]
    details = texts_of(ui_user, "error-details-text")[-1]
    assert details.startswith("model_error: ") and "web page (HTTP 403)" in details
    assert [b.text for b in found(ui_user, "error-action")] == [Texts(lang)("error.open_settings")]


def test_a_termination_reason_reads_as_words_and_every_reason_has_its_sentence() -> None:
    zh = Texts("zh")
    assert reason_words(zh, "budget") == "预算用尽"
    assert reason_words(zh, "something_new") == "something_new"
    reasons = get_args(TerminationReason)
    assert [r for r in reasons if f"tr.reason.{r}" not in TEXTS] == []
    unanswered = set(reasons) - {"finished", "clarification"}
    assert [r for r in sorted(unanswered) if f"ended.{r}" not in TEXTS] == []
    assert ended_sentence(zh, "model_error", "unauthorized") == zh("error.chat_failed.unauthorized")
    assert ended_sentence(zh, "model_error", None) == zh("ended.model_error")
    tls = ended_sentence(zh, "model_error", "connection", "tls")
    assert tls == zh("error.chat_failed.connection.tls")


def _app_error_codes(path: Path) -> Iterator[str]:
    """The `code=` of every `raise AppError(…)` in a module."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        call = node.exc if isinstance(node, ast.Raise) else None
        if isinstance(call, ast.Call) and getattr(call.func, "id", "") == "AppError":
            for keyword in call.keywords:
                if keyword.arg == "code" and isinstance(keyword.value, ast.Constant):
                    yield str(keyword.value.value)


def test_every_situation_an_app_error_names_has_its_sentence_in_both_languages() -> None:
    """An AppError raised with code=… is told by `error.app.<code>`, not by the one vague
    sentence of its class, and the sentence fills in the facts the error carries."""
    from actors.errors import AppError

    root = Path(actors.__file__).parent
    codes = {code for path in root.glob("*.py") for code in _app_error_codes(path)}
    assert {"import_running", "no_collection", "no_key"} <= codes
    for code in codes:
        assert f"error.app.{code}" in TEXTS, code
    exc = AppError("there is no collection 'notes'", code="no_collection", name="notes")
    assert error_key(exc) == "error.app.no_collection"
    assert error_sentence(Texts("zh"), exc) == "没有名为“notes”的资料集。请先在“资料库”页新建。"
    assert error_key(AppError("something else")) == "error.app"
