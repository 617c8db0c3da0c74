"""A transient tool failure (the query embedding service answering 503) is retried once, and
only once; the retry is visible and is not a second logical tool call."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from actors.app import App
from engine.chat import ChatClient
from engine.harness import (
    Deps,
    Event,
    Limits,
    Request,
    RequestFinished,
    ToolCallFinished,
    ToolCallOutcome,
    run_request,
)
from engine.prompts.bundle import load_baseline
from engine.tools import ToolContext, render_tools, run_tool
from tests.corpus import make_app
from tests.servers.chat_server import ChatServer, Text
from tests.servers.embedding_server import Delay as EmbeddingDelay
from tests.servers.embedding_server import EmbeddingServer
from tests.servers.embedding_server import Status as EmbeddingStatus

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _app(home: Path, server: EmbeddingServer) -> App:
    embedding = {
        "provider": "openai_compatible",
        "base_url": server.url,
        "model": "test-embedding",
        "dimensions": server.dimensions,
    }
    return make_app(home, embedding=embedding)


@pytest.fixture
async def app(
    tmp_path: Path, embedding_server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[App]:
    monkeypatch.setenv("CITEWISE_EMBEDDING_API_KEY", "sk-test")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "events.md").write_text("# Events\n\nListeners run in order.\n", encoding="utf-8")
    home = tmp_path / "home"
    assert (await _import(home, embedding_server, docs)) == "ready"
    app = _app(home, embedding_server)
    try:
        yield app
    finally:
        await app.aclose()


async def _import(home: Path, server: EmbeddingServer, docs: Path) -> str | None:
    app = _app(home, server)
    try:
        return (await app.import_paths([docs])).status
    finally:
        await app.aclose()


async def _ask(app: App, chat_server: ChatServer) -> tuple[RequestFinished, list[Event]]:
    events: list[Event] = []

    async def emit(event: Event) -> None:
        events.append(event)

    return await _ask_with(app, chat_server, emit), events


async def _ask_with(
    app: App, chat_server: ChatServer, emit: Callable[[Event], Awaitable[None]]
) -> RequestFinished:
    chat = ChatClient(base_url=chat_server.url, model="deepseek-chat", api_key="k", timeout_s=5)
    try:
        with app.catalog().pin_active() as snapshot:
            assert snapshot is not None
            ctx = ToolContext(snapshot=snapshot, embedder=app.embedder(), counter=app.counter())

            async def tool(name: str, args: dict[str, Any]) -> ToolCallOutcome:
                return await run_tool(ctx, name, args)

            deps = Deps(
                chat=chat,
                run_tool=tool,
                tool_descriptions=render_tools(),
                counter=app.counter(),
                snapshot=snapshot,
                bundle=load_baseline(),
                limits=Limits(retry_delay_s=0.0),
            )
            return await run_request(deps, Request(question="order?"), emit)
    finally:
        await chat.aclose()


SEARCH = Text('Thought: search.\nAction: search_blocks[{"query": "listener order"}]')
DONE = Text("Thought: done.\nAction: Finish[In order.]")


def _last_observation(server: ChatServer) -> dict[str, Any]:
    lines = server.requests[-1].body["messages"][-1]["content"].splitlines()
    return json.loads(lines[-2])  # type: ignore[no-any-return]


async def test_one_transient_tool_failure_is_retried_and_not_counted_twice(
    app: App, embedding_server: EmbeddingServer, chat_server: ChatServer
) -> None:
    before = len(embedding_server.requests)
    embedding_server.script(EmbeddingStatus(503, "busy"))
    chat_server.script(SEARCH, DONE)
    finished, events = await _ask(app, chat_server)
    (tool,) = [e for e in events if isinstance(e, ToolCallFinished)]
    assert tool.attempts == 2 and tool.outcome == "ok"
    assert len(embedding_server.requests) - before == 2
    assert _last_observation(chat_server)["payload"]["blocks"]
    assert (finished.counters.tool_calls, finished.counters.tool_retries) == (1, 1)


async def test_a_second_transient_tool_failure_reaches_the_model_as_its_payload(
    app: App, embedding_server: EmbeddingServer, chat_server: ChatServer
) -> None:
    before = len(embedding_server.requests)
    embedding_server.script(EmbeddingStatus(503, "busy"), EmbeddingStatus(503, "busy"))
    chat_server.script(SEARCH, DONE)
    finished, events = await _ask(app, chat_server)
    (tool,) = [e for e in events if isinstance(e, ToolCallFinished)]
    assert tool.attempts == 2 and tool.outcome == "upstream_unavailable"
    assert len(embedding_server.requests) - before == 2  # never a third attempt
    error = _last_observation(chat_server)["payload"]["error"]
    assert error["code"] == "upstream_unavailable" and error["retryable"] is True
    assert finished.termination_reason == "finished" and finished.counters.tool_calls == 1


async def test_cancelling_during_a_slow_tool_stops_the_request_promptly(
    app: App, embedding_server: EmbeddingServer, chat_server: ChatServer
) -> None:
    embedding_server.script(EmbeddingDelay(3.0))  # the query embedding hangs
    chat_server.script(SEARCH, DONE)
    before = {t.id for t in anyio.get_running_tasks()}
    events: list[Event] = []

    async def emit(event: Event) -> None:
        events.append(event)

    async def ask_and_record() -> None:
        await _ask_with(app, chat_server, emit)

    t0 = time.monotonic()
    with anyio.move_on_after(0.5) as scope:
        await ask_and_record()
    assert scope.cancelled_caught and time.monotonic() - t0 < 1.5
    assert [type(e).__name__ for e in events][-2:] == ["ToolCallStarted", "RequestFinished"]
    finished = events[-1]
    assert isinstance(finished, RequestFinished)
    assert finished.termination_reason == "cancelled" and finished.answer is None
    assert len(chat_server.requests) == 1  # the model was never asked again
    assert {t.id for t in anyio.get_running_tasks()} == before
