"""Running requests as tasks: cancellation, snapshot pinning per request, conversations."""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from actors import App, AppError
from actors.asking import AskResult, ask, deps_for
from actors.conversations import ConversationStore
from actors.harness import open_request
from engine.chat import ChatClient
from engine.harness import (
    AnswerDelta,
    Event,
    Limits,
    Request,
    RequestFinished,
    RequestStarted,
)
from tests.corpus import make_app, run_import
from tests.servers.chat_server import ChatServer, Delay, Reply, ReplyFunction, Text

pytestmark = pytest.mark.anyio

EVENTS = "# Node events\n\n## Emitters\n\nAn EventEmitter calls listeners in order.\n"
HOLD_LIMIT_S = 60.0  # a held model call gives up after this (only if the test is broken)
LOOP = "# 事件循环\n\n事件循环按阶段运行。定时器阶段最先执行。\n"


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory holding EVENTS, imported once: each test runs on its own copy (an
    import in a test's own event loop would start parse workers for that loop alone)."""
    root = tmp_path_factory.mktemp("runner")
    docs = root / "docs"
    docs.mkdir()
    (docs / "events.md").write_text(EVENTS, encoding="utf-8")
    assert run_import(make_app(root / "home"), [docs]).status == "ready"
    return root / "home"


def _home(imported: Path, tmp_path: Path) -> Path:
    home = tmp_path / "home"
    shutil.copytree(imported, home)
    return home


@pytest.fixture
async def app(imported: Path, tmp_path: Path) -> AsyncIterator[App]:
    app = make_app(_home(imported, tmp_path))
    try:
        yield app
    finally:
        await app.aclose()


@pytest.fixture
async def chat(chat_server: ChatServer) -> AsyncIterator[ChatClient]:
    client = ChatClient(base_url=chat_server.url, model="deepseek-chat", api_key="k", timeout_s=5)
    try:
        yield client
    finally:
        await client.aclose()


def call(name: str, args: dict[str, Any]) -> Text:
    return Text(f"Thought: need {name}.\nAction: {name}[{json.dumps(args)}]")


def finish(answer: str, **kw: Any) -> Text:
    return Text(f"Thought: done.\nAction: Finish[{answer}]", **kw)


async def _ask(app: App, chat: ChatClient, question: str, **kw: Any) -> AskResult:
    return await ask(app, question, chat=chat, limits=Limits(retry_delay_s=0.0), **kw)


async def test_cancelling_mid_stream_closes_the_stream_and_leaves_no_task(
    app: App, chat: ChatClient, chat_server: ChatServer
) -> None:
    chat_server.script(finish("word " * 400, chunk_chars=5, chunk_delay_s=0.02))
    before = {t.id for t in anyio.get_running_tasks()}
    events: list[Event] = []
    with app.catalog().pin_active() as snapshot:
        assert snapshot is not None
        deps = deps_for(app, snapshot, chat, limits=Limits(retry_delay_s=0.0))
        async with open_request(deps, Request(question="q")) as running:
            async for event in running.events:
                events.append(event)
                if isinstance(event, AnswerDelta):
                    running.cancel()
            t0 = time.monotonic()
        finished = running.finished
    assert isinstance(events[-1], RequestFinished) and events[-1] is finished
    assert finished.termination_reason == "cancelled" and finished.answer is None
    assert time.monotonic() - t0 < 1.0
    (request,) = chat_server.requests
    assert request.disconnected.wait(2.0)  # the server saw the HTTP stream closed early
    assert request.finished.wait(2.0)
    assert len(request.chunks) < 80  # far from the whole answer (≈ 400 chunks)
    assert {t.id for t in anyio.get_running_tasks()} == before


async def test_cancelling_the_caller_propagates_and_stops_the_request(
    app: App, chat: ChatClient, chat_server: ChatServer
) -> None:
    chat_server.script(Delay(5.0, finish("too late")))
    before = {t.id for t in anyio.get_running_tasks()}
    with anyio.move_on_after(0.3) as scope:
        await _ask(app, chat, "q")
    assert scope.cancelled_caught  # not swallowed: the caller's scope saw its cancellation
    assert chat_server.requests[0].disconnected.wait(2.0)
    assert {t.id for t in anyio.get_running_tasks()} == before


async def test_leaving_the_block_early_stops_a_request_blocked_on_a_full_channel(
    app: App, chat: ChatClient, chat_server: ChatServer
) -> None:
    chat_server.script(finish("x " * 600, chunk_chars=2))
    with app.catalog().pin_active() as snapshot:
        assert snapshot is not None
        deps = deps_for(app, snapshot, chat)
        t0 = time.monotonic()
        async with open_request(deps, Request(question="q")) as running:
            await anyio.sleep(0.3)  # never reading: the loop fills the channel and waits
        assert time.monotonic() - t0 < 1.5
    assert running.finished is not None
    assert running.finished.termination_reason == "cancelled"


def _documents_seen(hold_first: threading.Event) -> ReplyFunction:
    """A model that lists documents, then answers with how many it saw. The first model call
    of the question "first" is held (in the server's handler thread) until `hold_first` is set,
    so the test decides what happens while that request is in flight, whatever the load."""

    def reply(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]["content"]
        if last.startswith("<question>"):
            if last.split("\n")[1] == "first":
                hold_first.wait(HOLD_LIMIT_S)
            return call("list_documents", {})
        total = json.loads(last.splitlines()[-2])["payload"]["total"]
        return finish(f"{total} documents")

    return reply


async def test_two_concurrent_requests_each_read_the_snapshot_they_pinned(
    app: App, chat_server: ChatServer, tmp_path: Path
) -> None:
    # The first request pins the active snapshot and is held at its first model call while a
    # new snapshot is imported and activated and a second request runs to its end; only then
    # does the first list the documents. No sleep decides the order, so load cannot flip it.
    # Its own client: the held call must not hit the 5 s timeout of the `chat` fixture.
    held = threading.Event()
    chat_server.script(*[_documents_seen(held)] * 4)
    first_pinned = anyio.Event()
    results: dict[str, AskResult] = {}

    async def on_event(event: Event) -> None:
        if isinstance(event, RequestStarted):
            first_pinned.set()

    chat = ChatClient(
        base_url=chat_server.url, model="deepseek-chat", api_key="k", timeout_s=HOLD_LIMIT_S
    )

    async def first() -> None:
        results["first"] = await _ask(app, chat, "first", on_event=on_event)

    old = app.catalog().active_id()
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(first)
            await first_pinned.wait()
            more = tmp_path / "more"
            more.mkdir()
            (more / "loop.md").write_text(LOOP, encoding="utf-8")
            imported = await app.import_paths([more])  # a new snapshot becomes active meanwhile
            assert imported.status == "ready", imported.failed_documents
            results["second"] = await _ask(app, chat, "second")
            assert "first" not in results  # still held: it has not listed anything yet
            held.set()
    finally:
        held.set()  # never leave the server's handler thread waiting
        await chat.aclose()
    new = app.catalog().active_id()
    assert old != new
    assert results["first"].finished.snapshot_id == old
    assert results["first"].finished.answer == "1 documents"
    assert results["second"].finished.snapshot_id == new
    assert results["second"].finished.answer == "2 documents"


async def test_a_follow_up_carries_the_earlier_question_and_answer_but_not_observations(
    app: App, chat: ChatClient, chat_server: ChatServer
) -> None:
    chat_server.script(
        call("search_blocks", {"query": "listener order"}),
        finish("Listeners run in order."),
        finish("Yes, synchronously."),
    )
    one = await _ask(app, chat, "How do listeners run?")
    two = await _ask(app, chat, "Synchronously?", conversation_id=one.conversation_id)
    assert two.conversation_id == one.conversation_id
    messages = chat_server.requests[2].body["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[1]["content"] == "<question>\nHow do listeners run?\n</question>\n"
    assert messages[2]["content"] == "Action: Finish[Listeners run in order.]"
    assert messages[3]["content"] == "<question>\nSynchronously?\n</question>\n"
    carried = json.dumps(messages[1:])
    assert "<<<DATA" not in carried and "EventEmitter" not in carried  # no observation
    turns = ConversationStore(app.data, "default").load(one.conversation_id)
    assert [(t.question, t.answer) for t in turns] == [
        ("How do listeners run?", "Listeners run in order."),
        ("Synchronously?", "Yes, synchronously."),
    ]
    third = await _ask(app, chat, "New topic")  # no id: a new conversation, nothing carried
    assert third.conversation_id != one.conversation_id


async def test_a_collection_without_a_snapshot_ends_without_a_model_call(
    app: App, chat: ChatClient, chat_server: ChatServer
) -> None:
    app.create_collection("empty")
    result = await _ask(app, chat, "anything?", collection="empty")
    assert result.finished.termination_reason == "collection_unavailable"
    assert result.finished.answer is None and "citewise import" in result.finished.message
    assert chat_server.requests == []


async def test_asking_without_a_key_says_how_to_set_one(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CITEWISE_DEEPSEEK_API_KEY", raising=False)
    monkeypatch.setattr("actors.asking.get_key", lambda name: None)
    with pytest.raises(AppError, match="keys set deepseek"):
        await ask(app, "q")


async def test_an_unknown_conversation_is_refused(app: App, chat: ChatClient) -> None:
    with pytest.raises(AppError, match="no conversation"):
        await _ask(app, chat, "q", conversation_id="c20250101-120000-abcdef")
    with pytest.raises(AppError, match="not a conversation id"):
        await _ask(app, chat, "q", conversation_id="../../secrets")


# -- App.ask: questions on the app's harness runner -----------------------------------------------
@pytest.fixture
async def served_app(
    imported: Path, tmp_path: Path, chat_server: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[App]:
    """A running App with one document whose chat client talks to the scripted server."""
    monkeypatch.setenv("CITEWISE_DEEPSEEK_API_KEY", "k")
    app = make_app(_home(imported, tmp_path), chat={"base_url": chat_server.url})
    async with app.running():
        yield app


LONG_ANSWER = "Listeners run in the order they were added. " * 40  # ~230 streamed chunks


async def test_a_question_streams_its_events_and_is_recorded_after_its_reader_leaves(
    served_app: App, chat_server: ChatServer
) -> None:
    chat_server.script(finish(LONG_ANSWER, chunk_chars=8, chunk_delay_s=0.001))
    run = served_app.ask("How do listeners run?")
    seen: list[Event] = []
    async with run.events() as events:
        async for event in events:
            seen.append(event)
            if isinstance(event, AnswerDelta):
                break  # the page was closed mid-answer
    result = await run.wait()
    assert isinstance(seen[0], RequestStarted)
    assert result is not None and result.finished.answer == LONG_ANSWER.strip()
    store = ConversationStore(served_app.data, served_app.current_collection())
    [turn] = store.load(result.conversation_id)
    assert turn.answer == LONG_ANSWER.strip()


async def test_a_question_nobody_reads_finishes_past_its_event_buffer(
    served_app: App, chat_server: ChatServer
) -> None:
    chat_server.script(finish(LONG_ANSWER, chunk_chars=4))  # far more events than the buffer
    with anyio.fail_after(HOLD_LIMIT_S):
        result = await served_app.ask("How do listeners run?").wait()
    assert result is not None and result.finished.answer == LONG_ANSWER.strip()


async def test_a_reader_sees_every_event_up_to_the_finish(
    served_app: App, chat_server: ChatServer
) -> None:
    chat_server.script(finish(LONG_ANSWER, chunk_chars=4))
    run = served_app.ask("How do listeners run?")
    async with run.events() as events:
        seen = [event async for event in events]
    text = "".join(e.text for e in seen if isinstance(e, AnswerDelta))
    assert isinstance(seen[-1], RequestFinished)
    assert text.strip() == LONG_ANSWER.strip()
    with pytest.raises(RuntimeError, match="one reader"):
        run.events()


async def test_stopping_a_question_ends_its_events_and_records_nothing(
    served_app: App, chat_server: ChatServer
) -> None:
    chat_server.script(Delay(HOLD_LIMIT_S))
    run = served_app.ask("How do listeners run?")
    async with run.events() as events:
        async for event in events:
            if isinstance(event, RequestStarted):
                run.stop()
    assert await run.wait() is None
    assert served_app.conversations() == []


async def test_asking_needs_a_running_app(app: App) -> None:
    with pytest.raises(RuntimeError, match="running app"):
        app.ask("How do listeners run?")
