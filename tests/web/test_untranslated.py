"""The Chinese UI speaks Chinese: every page and dialog (ask with an answer, library with
documents and a failed one, traces with a trace, settings with a failed key test and a refused
save, the wizard, the upgrade refusal, an error dialog) rendered in Chinese with NiceGUI's
simulated user, its visible text collected, and any English word found is a failure.

What may stay in Latin letters is short and explicit: proper nouns, units, file and model
names, addresses, identifiers (anything with `_`, `.`, `/` or digits in it), and the words of
the test's own data (the documents, the question, the model's scripted answer), which are the
person's content, not UI text. Text behind a "details" toggle is for a bug report, not checked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path

import pytest
from nicegui import ui
from nicegui.testing import User, UserInteraction

from actors import DEFAULT_COLLECTION
from engine.versions.formats import current_versions
from tests.corpus import make_app, run_import
from tests.servers.chat_server import ChatServer
from tests.servers.page_server import html, serving
from tests.web.conftest import EVENTS_MD, STREAMS_MD, service_for
from tests.web.test_ask_page import ask_enabled, cite, eventually, found, search
from tests.web.test_settings_page import set_number
from web.pages import register
from web.upgrade_page import open_or_explain

pytestmark = pytest.mark.anyio

QUESTION = "How do listeners run?"
SCRIPTED_ANSWER = "Listeners run synchronously, one after another. Made up."
# Latin words the Chinese UI may show: names of products, vendors, formats, units, and the
# terms kept in English on purpose (Key, Base URL, token).
ALLOWED = frozenset(
    """
    Citewise DeepSeek OpenAI API Key Base URL HTTP HTTPS PDF Markdown HTML EPUB TXT CNY USD
    token tokens English Enter Shift
    """.casefold().split()
)
WORD = re.compile(r"[A-Za-z]{3,}")
# Not words of a language: addresses, paths, file and model names, ids, code, numbers+units.
IDENTIFIER = re.compile(
    r"https?://\S+|\S*[_./\\@#:-]\S*|\S*\d\S*|\b[a-f0-9]{8,}\b|\b(ms|KB|MB|GB)\b"
)


def data_words() -> frozenset[str]:
    """The words of the content the test itself put in: documents, question, answer, and the
    collection's name ("default")."""
    text = " ".join((EVENTS_MD, STREAMS_MD, QUESTION, SCRIPTED_ANSWER, DEFAULT_COLLECTION))
    return frozenset(w.casefold() for w in WORD.findall(text))


def _hidden(element: ui.element) -> bool:
    """Invisible (or in a closed dialog), or behind a details toggle (marked error-details)."""
    current: ui.element | None = element
    while current is not None:
        if not current.visible or (isinstance(current, ui.dialog) and not current.value):
            return True
        if current is not element and "error-details" in current._markers:
            return True
        current = current.parent_slot.parent if current.parent_slot else None
    return False


def visible_texts(user: User) -> list[tuple[str, str]]:
    """(where, text) of every visible string: texts, labels, placeholders, hints, options,
    notifications."""
    assert user.client is not None
    out: list[tuple[str, str]] = []
    for element in user.client.layout.descendants():
        if _hidden(element):
            continue
        where = f"{type(element).__name__}[{' '.join(element._markers)}]"
        for value in (getattr(element, "text", None), getattr(element, "content", None)):
            if isinstance(value, str) and value:
                out.append((where, value))
        for prop in ("label", "placeholder", "hint", "title", "caption"):
            value = element.props.get(prop)
            if isinstance(value, str) and value:
                out.append((where, value))
        options = getattr(element, "options", None)
        if isinstance(options, dict):
            out.extend((where, str(v)) for v in options.values())
    out.extend(("notify", str(m)) for m in user.notify.messages)
    return out


def open_dialogs(user: User) -> list[ui.dialog]:
    assert user.client is not None
    return [e for e in user.client.layout.descendants() if isinstance(e, ui.dialog) and e.value]


def english_words(texts: Iterable[tuple[str, str]], allowed: frozenset[str]) -> list[str]:
    found_words = []
    for where, text in texts:
        plain = re.sub(r"<[^>]+>", " ", text)  # markdown rendered as HTML
        plain = IDENTIFIER.sub(" ", plain)
        for word in WORD.findall(plain):
            if word.casefold() not in ALLOWED | allowed:
                found_words.append(f"{word!r} in {where}: {text[:120]!r}")
    return found_words


async def check_page(user: User, path: str, marker: str | None = None) -> list[str]:
    await user.open(path)
    if marker is not None:
        await user.should_see(marker=marker, retries=50)
    return [f"{path}: {w}" for w in english_words(visible_texts(user), data_words())]


@pytest.fixture(scope="module")
def partial_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two documents imported and one that failed (not text in any encoding)."""
    root = tmp_path_factory.mktemp("zh-home")
    folder = root / "docs"
    folder.mkdir()
    (folder / "events.md").write_text(EVENTS_MD, encoding="utf-8")
    (folder / "streams.md").write_text(STREAMS_MD, encoding="utf-8")
    (folder / "notes.md").write_bytes(b"\xff\xfe\x00\x00" + bytes(range(256)) * 40)
    assert run_import(make_app(root / "home"), [folder]).status == "ready_partial"
    return root / "home"


async def test_every_page_and_dialog_in_chinese_has_no_english_words(
    ui_user: User,
    partial_home: Path,
    chat_server: ChatServer,
    monkeypatch: pytest.MonkeyPatch,
    no_keys: None,
) -> None:
    monkeypatch.setenv("CITEWISE_DEEPSEEK_API_KEY", "test-key")
    monkeypatch.setenv("CITEWISE_TRACE_RETENTION_DAYS", "12")  # a setting the environment sets
    chat_server.script(search(), cite)
    service = service_for(partial_home, chat={"base_url": chat_server.url}, ui={"language": "zh"})
    register(service)
    problems: list[str] = []

    # ask, with an answer and its citations
    await ui_user.open("/")
    ui_user.find(marker="question-box").type(QUESTION)
    ui_user.find(marker="ask-button").click()
    await eventually(lambda: bool(found(ui_user, "trace-link")) and ask_enabled(user=ui_user))
    problems += [f"/ (answered): {w}" for w in english_words(visible_texts(ui_user), data_words())]
    trace_href = found(ui_user, "trace-link")[0].props["href"]

    problems += await check_page(ui_user, "/library", "failed-document")
    # the library's dialogs: remove a document, delete the collection, clean up snapshots
    for marker in ("remove-button", "collection-delete", "gc-button"):
        before = len(open_dialogs(ui_user))
        UserInteraction(ui_user, {found(ui_user, marker)[0]}, None).click()
        await eventually(lambda before=before: len(open_dialogs(ui_user)) > before)
    words = english_words(visible_texts(ui_user), data_words())
    problems += [f"/library (dialogs): {w}" for w in words]
    problems += await check_page(ui_user, "/traces")
    problems += await check_page(ui_user, trace_href, "trace-story")
    ui_user.find(marker="evidence-replay").click()
    await ui_user.should_see(marker="evidence-unavailable")
    problems += [f"evidence: {w}" for w in english_words(visible_texts(ui_user), data_words())]
    ui_user.find(marker="retrieval-replay").click()
    await ui_user.should_see(marker="retrieval-diff", retries=50)
    problems += [f"retrieval: {w}" for w in english_words(visible_texts(ui_user), data_words())]
    # a re-run's result, then the original compared with the re-run
    chat_server.script(search(), cite)
    set_number(ui_user, "rerun-runs", 1)
    ui_user.find(marker="rerun-start").click()
    await ui_user.should_see(marker="rerun-summary", retries=200)
    problems += [f"re-run: {w}" for w in english_words(visible_texts(ui_user), data_words())]
    compare_href = found(ui_user, "rerun-compare-link")[0].props["href"]
    problems += await check_page(ui_user, compare_href, "trace-comparison")
    problems += await check_page(ui_user, "/traces?id=0000000000000000", "error-dialog")
    problems += await check_page(ui_user, "/wizard")

    # settings, then a refused save and a failed key test against a web page
    problems += await check_page(ui_user, "/settings", "env-note")
    set_number(ui_user, "setting-budget.max_tool_calls", 500)
    ui_user.find(marker="settings-save").click()
    await eventually(lambda: bool(found(ui_user, "error-message")))
    with serving(html(403, b"<html><h1>403 Forbidden</h1></html>")) as served:
        await service.save_settings({"chat": {"base_url": served.url}})
        ui_user.find(marker="key-deepseek-test").click()
        await eventually(lambda: bool(found(ui_user, "key-deepseek-retest")))
    problems += [
        f"/settings (errors): {w}" for w in english_words(visible_texts(ui_user), data_words())
    ]
    assert problems == [], "\n".join(problems)


async def test_the_upgrade_refusal_in_chinese_has_no_english_words(
    ui_user: User, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "home"
    root.mkdir()
    (root / "config.toml").write_text('format_version = 1\n[ui]\nlanguage = "zh"\n')
    stamp = {"formats": {**current_versions(), "config": 9}, "app_version": "9.0.0"}
    (root / "formats.json").write_text(json.dumps(stamp))
    monkeypatch.setenv("CITEWISE_HOME", str(root))
    assert open_or_explain(register) is None
    problems = await check_page(ui_user, "/", "upgrade-refused")
    assert problems == [], "\n".join(problems)
