"""The ask page with NiceGUI's simulated user against the scripted loopback chat server."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from nicegui.testing import User

from tests.servers.chat_server import ChatServer, Delay, Text
from tests.web.conftest import service_for
from web.pages import register

pytestmark = pytest.mark.anyio


def search(query: str = "listener order") -> Text:
    return Text(f'Thought: search.\nAction: search_blocks[{{"query": "{query}"}}]')


def cite(body: dict[str, Any]) -> Text:
    """Finish citing the first block the search returned, plus one never returned."""
    observation = json.loads(body["messages"][-1]["content"].splitlines()[-2])
    citation = observation["payload"]["blocks"][0]["citation"]
    answer = (
        f"Listeners run **synchronously**, one after another.【来源:{citation}】 "
        "Made up.【来源:dnope#b1】"
    )
    return Text(f"Thought: enough.\nAction: Finish[{answer}]", chunk_chars=3, chunk_delay_s=0.01)


async def eventually(check: Callable[[], bool], timeout_s: float = 15.0) -> None:
    with anyio.fail_after(timeout_s):
        while not check():
            await anyio.sleep(0.02)


def found(user: User, marker: str) -> list[Any]:
    """The elements with this marker in creation order (none is an empty list, not an error)."""
    try:
        return sorted(user.find(marker=marker).elements, key=lambda e: e.id)
    except AssertionError:
        return []


def texts_of(user: User, marker: str) -> list[str]:
    out = []
    for element in found(user, marker):
        text = element.text if hasattr(element, "text") else getattr(element, "content", "")
        out.append(str(text))
    return out


def ask_enabled(user: User) -> bool:
    return all(b.enabled for b in found(user, "ask-button"))


def answer_html(user: User) -> str:
    elements = found(user, "answer")
    return str(elements[-1].content) if elements else ""


@pytest.fixture
def chat_env(monkeypatch: pytest.MonkeyPatch, no_keys: None) -> None:
    monkeypatch.setenv("CITEWISE_DEEPSEEK_API_KEY", "test-key")


async def test_answer_streams_then_shows_chips_that_open_the_source(
    ui_user: User, home_copy: Path, chat_server: ChatServer, chat_env: None
) -> None:
    chat_server.script(search(), cite)
    service = service_for(home_copy, chat={"base_url": chat_server.url})
    register(service)
    await ui_user.open("/")
    ui_user.find(marker="question-box").type("How do listeners run?")
    ui_user.find(marker="ask-button").click()

    seen: list[str] = []

    def partial_then_final() -> bool:
        html = answer_html(ui_user)
        if html and (not seen or seen[-1] != html):
            seen.append(html)
        return bool(found(ui_user, "citation-chip"))

    await eventually(partial_then_final)
    final = answer_html(ui_user)
    assert "<strong>synchronously</strong>" in final
    assert "[1]" in final and "[2?]" in final and "来源" not in final
    assert any("Listeners" in s and len(s) < len(final) for s in seen[:-1]), "no partial text"
    chips = texts_of(ui_user, "citation-chip")
    assert chips == ["[1] Node events · Emitters"]
    unverified = texts_of(ui_user, "citation-chip-unverified")
    assert len(unverified) == 1 and "dnope" not in unverified[0]
    assert chat_server.remaining == 0

    ui_user.find(marker="citation-chip").click()
    await ui_user.should_see(marker="source-viewer", retries=50)
    cited = texts_of(ui_user, "cited-block")
    assert len(cited) == 1
    await ui_user.should_see("calls every listener synchronously")
    assert texts_of(ui_user, "source-title") == ["Node events"]


async def test_follow_up_continues_the_conversation_and_history_lists_it(
    ui_user: User, home_copy: Path, chat_server: ChatServer, chat_env: None
) -> None:
    chat_server.script(
        Text("Thought: t\nAction: Finish[First answer.]"),
        Text("Thought: t\nAction: Finish[Second answer.]"),
    )
    service = service_for(home_copy, chat={"base_url": chat_server.url})
    register(service)
    await ui_user.open("/")
    for question, answer in (("What are emitters?", "First"), ("And errors?", "Second")):
        ui_user.find(marker="question-box").type(question)
        ui_user.find(marker="ask-button").click()
        await eventually(lambda a=answer: a in answer_html(ui_user))  # type: ignore[misc]
        await eventually(lambda: ask_enabled(ui_user))  # the turn is recorded
    carried = json.dumps(chat_server.requests[-1].body["messages"])
    assert "What are emitters?" in carried and "First answer." in carried
    conversations = service.conversations()
    assert len(conversations) == 1 and conversations[0].turns == 2
    await ui_user.should_see(marker="history-item")

    ui_user.find(marker="new-conversation").click()
    await ui_user.should_not_see(marker="answer-card")
    ui_user.find(marker="history-item").click()
    await ui_user.should_see("Second answer.")
    await ui_user.should_see("What are emitters?")


async def test_stop_cancels_the_request_and_records_nothing(
    ui_user: User, home_copy: Path, chat_server: ChatServer, chat_env: None
) -> None:
    chat_server.script(Delay(30, Text("Thought: t\nAction: Finish[too late]")))
    service = service_for(home_copy, chat={"base_url": chat_server.url})
    register(service)
    await ui_user.open("/")
    ui_user.find(marker="question-box").type("Slow question?")
    ui_user.find(marker="ask-button").click()
    await eventually(lambda: len(chat_server.requests) == 1)
    ui_user.find(marker="stop-button").click()
    await ui_user.should_see(marker="stopped", retries=50)
    await eventually(lambda: chat_server.requests[0].disconnected.is_set(), timeout_s=10)
    assert service.conversations() == []
    assert ask_enabled(ui_user)


async def test_no_key_says_where_to_add_it(
    ui_user: User, home_copy: Path, chat_server: ChatServer, no_keys: None
) -> None:
    register(service_for(home_copy, chat={"base_url": chat_server.url}))
    await ui_user.open("/")
    ui_user.find(marker="question-box").type("Anything?")
    ui_user.find(marker="ask-button").click()
    await ui_user.should_see(marker="ask-error", retries=30)
    assert "Settings" in texts_of(ui_user, "ask-error")[0]
    assert chat_server.requests == []
    # The answer card has the way out, not only the sentence (it used to be a dead end).
    assert "Open settings" in texts_of(ui_user, "error-action")


async def test_without_a_key_the_ask_page_says_so_before_a_question_in_chinese(
    ui_user: User, home_copy: Path, no_keys: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The embedded defaults have no chat key: the page says so up front, in the UI language,
    with the way to Settings and what works without a key; a saved key takes it away."""
    register(service_for(home_copy, ui={"language": "zh"}))
    await ui_user.open("/")
    banner = texts_of(ui_user, "no-key-banner")
    assert banner and "DeepSeek API Key" in banner[0] and "直接查找" in banner[0]
    assert texts_of(ui_user, "error-action") == ["打开设置", "打开资料库"]
    monkeypatch.setenv("CITEWISE_DEEPSEEK_API_KEY", "test-key")
    await ui_user.open("/")
    assert found(ui_user, "no-key-banner") == []


async def test_incomplete_knowledge_base_is_disclosed_on_the_page(
    ui_user: User, tmp_path: Path, docs: Path, chat_env: None
) -> None:
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    service = service_for(tmp_path / "home")
    job = service.new_import([docs])
    await job.run()
    assert job.result is not None and job.result.status == "ready_partial"
    register(service)
    await ui_user.open("/")
    await ui_user.should_see(marker="partial-banner")
    banner = texts_of(ui_user, "partial-banner")[0]
    assert "broken.pdf" in banner and "1 document" in banner
    assert "Retry" not in banner  # retrying a broken file as it is fails again: it says why
    assert texts_of(ui_user, "error-action") == ["Open the library"]


async def test_budget_limit_is_disclosed_with_the_answer(
    ui_user: User, home_copy: Path, chat_server: ChatServer, chat_env: None
) -> None:
    chat_server.script(search(), Text("Thought: t\nAction: Finish[What I know so far.]"))
    service = service_for(
        home_copy, chat={"base_url": chat_server.url}, budget={"max_tool_calls": 0}
    )
    register(service)
    await ui_user.open("/")
    ui_user.find(marker="question-box").type("Tell me everything")
    ui_user.find(marker="ask-button").click()
    await ui_user.should_see(marker="budget-banner", retries=100)
    banner = texts_of(ui_user, "budget-banner")[0]
    assert "did not fit into the budget" in banner and "limit of 0 tool calls" in banner
    assert ".." not in banner
    assert "What I know so far." in answer_html(ui_user)
    assert texts_of(ui_user, "answer-summary")[0].startswith("2 turns · 0 tool calls")


def element(user: User, marker: str) -> Any:
    (only,) = found(user, marker)
    return only


async def test_enter_sends_and_the_hint_says_so_in_both_languages(
    ui_user: User, home_copy: Path, chat_server: ChatServer, chat_env: None
) -> None:
    chat_server.script(Text("Thought: t\nAction: Finish[Sent by Enter.]"))
    register(service_for(home_copy, chat={"base_url": chat_server.url}))
    await ui_user.open("/")
    assert texts_of(ui_user, "enter-hint") == ["Enter sends · Shift+Enter starts a new line"]
    ui_user.find(marker="question-box").type("Does Enter send?")
    ui_user.find(marker="question-box").trigger("keydown.enter")
    await eventually(lambda: "Sent by Enter." in answer_html(ui_user))
    assert len(chat_server.requests) == 1


async def test_the_hint_and_the_budget_card_speak_chinese(
    ui_user: User, home_copy: Path, chat_env: None
) -> None:
    register(service_for(home_copy, ui={"language": "zh"}))
    await ui_user.open("/")
    assert texts_of(ui_user, "enter-hint") == ["按 Enter 发送 · Shift+Enter 换行"]
    hints = texts_of(ui_user, "gauge-hint")
    assert len(hints) == 3 and all(h and h.isascii() is False for h in hints)


async def test_the_budget_card_says_what_each_gauge_means(
    ui_user: User, home_copy: Path, chat_env: None
) -> None:
    register(service_for(home_copy))
    await ui_user.open("/")
    assert "answers with what it has found" in texts_of(ui_user, "gauge-intro")[0]
    context, request, tools = texts_of(ui_user, "gauge-hint")
    assert "earlier answers" in context and "passages" in context
    assert "what it costs" in request
    assert "Searches" in tools


async def test_only_the_control_that_can_act_looks_active(
    ui_user: User, home_copy: Path, chat_server: ChatServer, chat_env: None
) -> None:
    chat_server.script(Delay(2, Text("Thought: t\nAction: Finish[Done.]")))
    register(service_for(home_copy, chat={"base_url": chat_server.url}))
    await ui_user.open("/")
    ask, stop = element(ui_user, "ask-button"), element(ui_user, "stop-button")
    assert ask.enabled and ask.props["color"] == "primary"
    assert not stop.enabled and stop.props["color"] == "grey-6" and "outline" in stop.props
    ui_user.find(marker="question-box").type("Slow?")
    ui_user.find(marker="ask-button").click()
    await eventually(lambda: stop.enabled)
    assert not ask.enabled and ask.props["color"] == "grey-6"
    assert stop.props["color"] == "negative" and "outline" not in stop.props
    await eventually(lambda: "Done." in answer_html(ui_user))
    await eventually(lambda: ask.enabled and not stop.enabled)
    assert stop.props["color"] == "grey-6"


async def test_a_streaming_answer_shows_a_cursor_that_goes_when_it_ends(
    ui_user: User, home_copy: Path, chat_server: ChatServer, chat_env: None
) -> None:
    answer = "Listeners run one after another, synchronously, in registration order."
    chat_server.script(
        Text(f"Thought: t\nAction: Finish[{answer}]", chunk_chars=2, chunk_delay_s=0.03)
    )
    register(service_for(home_copy, chat={"base_url": chat_server.url}))
    await ui_user.open("/")
    ui_user.find(marker="question-box").type("How?")
    ui_user.find(marker="ask-button").click()
    await eventually(lambda: "Listeners" in answer_html(ui_user))
    streaming = answer_html(ui_user)
    assert "cw-cursor" in streaming and answer not in streaming
    assert streaming.index("Listeners") < streaming.index("cw-cursor") < streaming.rindex("</p>")
    await eventually(lambda: bool(found(ui_user, "answer-summary")))
    assert answer in answer_html(ui_user) and "cw-cursor" not in answer_html(ui_user)


async def test_an_earlier_conversation_keeps_its_cost_line_trace_link_and_export(
    ui_user: User, home_copy: Path, chat_server: ChatServer, chat_env: None
) -> None:
    chat_server.script(search(), cite)
    service = service_for(home_copy, chat={"base_url": chat_server.url})
    register(service)
    await ui_user.open("/")
    ui_user.find(marker="question-box").type("How do listeners run?")
    ui_user.find(marker="ask-button").click()
    await eventually(lambda: bool(found(ui_user, "export-answer")), timeout_s=30)
    live_summary = texts_of(ui_user, "answer-summary")
    live_trace = [link.props["href"] for link in found(ui_user, "trace-link")]
    assert live_summary[0].startswith("2 turns · 1 tool call · ")

    ui_user.find(marker="new-conversation").click()
    await ui_user.should_not_see(marker="answer-card")
    ui_user.find(marker="history-item").click()
    await ui_user.should_see(marker="answer-summary")
    assert texts_of(ui_user, "answer-summary") == live_summary
    assert [link.props["href"] for link in found(ui_user, "trace-link")] == live_trace
    assert texts_of(ui_user, "citation-chip") == ["[1] Node events · Emitters"]
    assert "Made up.[2?]" in answer_html(ui_user)

    ui_user.find(marker="export-answer").click()
    markdown = (await ui_user.download.next(timeout=5)).text
    assert markdown.startswith("# How do listeners run?\n")
    assert "Listeners run **synchronously**, one after another.[1]" in markdown
    assert "Made up.[2?]" in markdown  # as the page shows it
    assert "- **[1]** Node events · Emitters\n  > " in markdown
    assert "An EventEmitter calls every listener synchronously" in markdown
    assert "- **[2?]** unverified source" in markdown
    assert "dnope" not in markdown and "#b" not in markdown
    assert live_summary[0] in markdown

    ui_user.find(marker="export-conversation").click()
    whole = (await ui_user.download.next(timeout=5)).text
    assert whole.startswith("# Citewise conversation, ") and "## How do listeners run?" in whole


async def test_a_question_still_running_after_a_reload_is_followed_not_asked_again(
    ui_user: User, home_copy: Path, chat_server: ChatServer, chat_env: None
) -> None:
    chat_server.script(Delay(1.5, Text("Thought: t\nAction: Finish[Worth the wait.]")))
    service = service_for(home_copy, chat={"base_url": chat_server.url})
    register(service)
    await ui_user.open("/")
    ui_user.find(marker="question-box").type("Slow one?")
    ui_user.find(marker="ask-button").click()
    await eventually(lambda: len(chat_server.requests) == 1)
    await ui_user.open("/")  # the reload
    await ui_user.should_see(marker="still-running")
    await ui_user.should_see("Slow one?")
    await ui_user.should_see("Worth the wait.", retries=60)
    await ui_user.should_not_see(marker="still-running")
    assert len(chat_server.requests) == 1
    assert [c.turns for c in service.conversations()] == [1]
