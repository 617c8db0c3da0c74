"""The traces page as a learner uses it: an answered question's trace tells its story (decisions,
tools, results, admissions, costs, cited sentences), shows totals and a timeline, replays the
evidence and the retrieval, re-runs the question with a cost estimate first, compares two
traces, switches full diagnostics on for the next questions, and lists, searches and filters
the requests. Real harness, real tools, the scripted chat server on loopback."""

from __future__ import annotations

import zipfile
from io import BytesIO
from pathlib import Path
from typing import Any

import pytest
from nicegui import ui
from nicegui.testing import User

from actors import App
from tests.servers.chat_server import ChatServer, Text
from tests.web.conftest import service_for
from tests.web.test_ask_page import ask_enabled, cite, eventually, found, search, texts_of
from tests.web.test_settings_page import set_number
from web.pages import register

pytestmark = pytest.mark.anyio
QUESTION = "How do listeners run?"


async def _ask_once(user: User, question: str = QUESTION) -> str:
    """Ask on the Ask page; the answer's trace link."""
    await user.open("/")
    user.find(marker="question-box").type(question)
    user.find(marker="ask-button").click()
    await eventually(lambda: bool(found(user, "trace-link")) and ask_enabled(user))
    return str(found(user, "trace-link")[-1].props["href"])


def _service(home: Path, server: ChatServer, mode: str = "metadata") -> App:
    service = service_for(home, chat={"base_url": server.url}, trace={"mode": mode})
    register(service)
    return service


def _labels(user: User, marker: str) -> list[str]:
    return [str(e._props.get("label", "")) for e in found(user, marker)]


def _row_text(row: ui.element) -> str:
    return " ".join(str(getattr(e, "text", "")) for e in row.descendants())


@pytest.fixture
def chat_key(monkeypatch: pytest.MonkeyPatch, no_keys: None) -> None:
    monkeypatch.setenv("CITEWISE_DEEPSEEK_API_KEY", "test-key")


@pytest.mark.parametrize("mode", ["metadata", "full"])
async def test_an_answers_trace_tells_its_story_with_totals_timeline_and_replays(
    ui_user: User, home_copy: Path, chat_server: ChatServer, chat_key: None, mode: str
) -> None:
    chat_server.script(search(), cite)
    _service(home_copy, chat_server, mode)
    await ui_user.open(await _ask_once(ui_user))
    await ui_user.should_see(marker="trace-detail")
    assert len(found(ui_user, "trace-row")) == 1
    await ui_user.should_see(marker="trace-story", retries=50)

    # the story: two turns, the search in plain words, its blocks by title, the admission
    assert len(found(ui_user, "story-turn")) == 2
    (tool,) = found(ui_user, "story-tool")
    assert "Searched the documents for “listener order”" in _row_text(tool)
    assert texts_of(ui_user, "story-result")[0].startswith("It returned")
    assert any("Node events" in str(b.text) for b in found(ui_user, "story-block"))
    (admission,) = texts_of(ui_user, "story-admission")
    assert admission.startswith("Admitted into the context:") and "left" in admission
    usage = texts_of(ui_user, "story-usage")
    assert len(usage) == 2 and all("tokens in" in u and "USD" in u for u in usage)
    thoughts = texts_of(ui_user, "story-thought")
    assert thoughts == (
        ["The model thought: “search.”", "The model thought: “enough.”"] if mode == "full" else []
    )
    # which sentence cites which block; the made-up source is flagged
    sentences = found(ui_user, "story-sentence")
    assert len(sentences) >= 2
    assert any(
        "Node events" in str(c._props.get("text", "")) or "Node events" in str(c.text)
        for c in found(ui_user, "story-citation")
    )
    assert found(ui_user, "story-citation-invalid")

    # totals and the timeline, raw attributes under details
    assert texts_of(ui_user, "total-model_calls") == ["2"]
    assert texts_of(ui_user, "total-tool_calls") == ["1"]
    assert texts_of(ui_user, "total-bundle")[0].startswith("baseline")
    kinds = {label.split(" · ")[0] for label in _labels(ui_user, "span-row")}
    assert {"Question", "Turn 1", "Turn 2", "Model call", "Tool call", "Final answer"} <= kinds
    assert all(label.endswith(" · done") for label in _labels(ui_user, "span-row"))
    assert len(found(ui_user, "waterfall-bar")) == len(found(ui_user, "span-row"))

    # evidence replay: the conversation the model saw, or how to keep it next time
    ui_user.find(marker="evidence-replay").click()
    if mode == "metadata":
        await ui_user.should_see(marker="evidence-unavailable")
        assert "full diagnostics" in texts_of(ui_user, "evidence-unavailable")[0]
    else:
        await ui_user.should_see(marker="evidence-model-input")
        assert len(found(ui_user, "evidence-model-input")) == 2
        assert found(ui_user, "evidence-system") and found(ui_user, "evidence-observation")
        assert found(ui_user, "evidence-answer")

    # retrieval replay: the blocks of then and now side by side
    ui_user.find(marker="retrieval-replay").click()
    await ui_user.should_see(marker="retrieval-diff", retries=50)
    assert "same blocks, same order" in texts_of(ui_user, "retrieval-diff")[0]
    assert found(ui_user, "retrieval-cell") and not found(ui_user, "retrieval-cell-changed")

    # the diagnostic bundle downloads as a zip
    ui_user.find(marker="bundle-download").click()
    response = await ui_user.download.next(timeout=15)
    assert "trace.json" in " ".join(zipfile.ZipFile(BytesIO(response.content)).namelist())


def _other_answer(body: dict[str, Any]) -> Text:
    """Finish citing the first block, in other words than `cite`."""
    reply = cite(body)
    return Text(reply.text.replace("one after another", "in the order they were added"))


async def test_rerun_shows_its_cost_first_then_pass_rate_and_answers_side_by_side(
    ui_user: User, home_copy: Path, chat_server: ChatServer, chat_key: None
) -> None:
    chat_server.script(search(), cite)
    _service(home_copy, chat_server)
    href = await _ask_once(ui_user)
    await ui_user.open(href)
    await ui_user.should_see(marker="rerun-estimate")
    asked = len(chat_server.requests)
    set_number(ui_user, "rerun-runs", 2)
    estimate = texts_of(ui_user, "rerun-estimate")[0]
    assert estimate.startswith("2 runs of about 2 model calls each") and "USD" in estimate
    assert len(chat_server.requests) == asked  # nothing runs before the click

    chat_server.script(search(), cite, search(), _other_answer)
    ui_user.find(marker="rerun-start").click()
    await ui_user.should_see(marker="rerun-summary", retries=200)
    assert texts_of(ui_user, "rerun-summary") == ["0 of 2 runs passed (0%)."]  # dnope#b1
    assert "cited a block it never retrieved × 2" in texts_of(ui_user, "rerun-failures")[0]
    assert len(found(ui_user, "rerun-run")) == 2
    diffs = [str(e.content) for e in found(ui_user, "answer-diff")]
    assert len(diffs) == 2 and "line-through" not in diffs[0]  # run 1: the same words
    assert "line-through" in diffs[1] and "in the order they were added" in diffs[1]

    # each run is a trace of its own, and opens
    link = found(ui_user, "rerun-trace-link")[1].props["href"]
    await ui_user.open(link)
    await ui_user.should_see(marker="trace-story", retries=50)
    assert len(found(ui_user, "trace-row")) == 3


async def test_two_traces_compared_side_by_side(
    ui_user: User, home_copy: Path, chat_server: ChatServer, chat_key: None
) -> None:
    chat_server.script(search(), cite, search("error event"), _other_answer)
    _service(home_copy, chat_server, "full")
    first = (await _ask_once(ui_user)).split("id=")[1]
    second = (await _ask_once(ui_user, "And when an error happens?")).split("id=")[1]
    await ui_user.open(f"/traces?id={first}")
    await ui_user.should_see(marker="compare-select")
    select = found(ui_user, "compare-select")[0]
    assert isinstance(select, ui.select) and second in select.options
    select.set_value(second)
    ui_user.find(marker="compare-go").click()
    await ui_user.should_see(marker="trace-comparison", retries=50)
    assert texts_of(ui_user, "compare-config") == [
        "Same configuration: same versions, models, snapshot and budgets."
    ]
    assert texts_of(ui_user, "compare-answer") == ["The answers differ."]
    assert len(found(ui_user, "compare-call")) == 2
    assert "line-through" in str(found(ui_user, "answer-diff")[0].content)


async def test_full_diagnostics_switched_on_from_the_page_holds_for_the_next_question(
    ui_user: User, home_copy: Path, chat_server: ChatServer, chat_key: None
) -> None:
    chat_server.script(search(), cite, search(), cite)
    service = _service(home_copy, chat_server)
    await ui_user.open(await _ask_once(ui_user))
    ui_user.find(marker="evidence-replay").click()
    await ui_user.should_see(marker="evidence-unavailable")
    switch = found(ui_user, "diagnostics-switch")[-1]
    switch.set_value(True)
    await eventually(lambda: service.config.trace.mode == "full")
    assert 'mode = "full"' in service.data.config_file.read_text(encoding="utf-8")
    await ui_user.open("/traces")
    assert found(ui_user, "diagnostics-switch")[0].value is True
    assert texts_of(ui_user, "diagnostics-state")[0].startswith("On:")

    await ui_user.open(await _ask_once(ui_user))
    ui_user.find(marker="evidence-replay").click()
    await ui_user.should_see(marker="evidence-model-input")


async def test_the_list_searches_filters_and_badges(
    ui_user: User, home_copy: Path, chat_server: ChatServer, chat_key: None
) -> None:
    chat_server.script(search(), cite, search("error event"), cite)
    _service(home_copy, chat_server)
    await _ask_once(ui_user)
    await _ask_once(ui_user, "What happens to an error event?")
    await ui_user.open("/traces")
    assert len(found(ui_user, "trace-row")) == 2
    assert not found(ui_user, "trace-badge-partial")
    search_box = found(ui_user, "trace-search")[0]
    search_box.set_value("error event")
    await eventually(lambda: len(found(ui_user, "trace-row")) == 1)
    assert "error event" in _row_text(found(ui_user, "trace-row")[0])
    found(ui_user, "trace-filter-status")[0].set_value("error")
    await eventually(lambda: bool(found(ui_user, "no-traces")))
    assert texts_of(ui_user, "no-traces")[0].startswith("No request matches")
    found(ui_user, "trace-filter-status")[0].set_value("any")
    search_box.set_value("")
    found(ui_user, "trace-order")[0].set_value("oldest")
    await eventually(lambda: len(found(ui_user, "trace-row")) == 2)
    first_row = found(ui_user, "trace-row")[0]
    assert QUESTION in _row_text(first_row)


async def test_no_traces_yet_says_how_to_get_one(
    ui_user: User, tmp_path: Path, no_keys: None
) -> None:
    register(service_for(tmp_path / "home"))
    await ui_user.open("/traces")
    await ui_user.should_see(marker="no-traces")
    assert found(ui_user, "diagnostics-switch")
