"""The harness's own cost: per-turn overhead with long histories, and how soon the first
answer character reaches the caller after the chat server sends it.

Both run the real loop (actors.harness.open_request → engine.harness) with the real tools on a
small imported snapshot, against the scripted loopback chat server of the test suite (so they
need a source checkout). Model and tool time are measured and subtracted, never guessed.
"""

from __future__ import annotations

import dataclasses
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import anyio

from actors.app import App
from actors.asking import deps_for
from actors.harness import open_request
from bench.runner import Report
from engine.chat import ChatClient, ChatMessage, ChatResponse, StreamDelta
from engine.config import parse_config
from engine.harness import (
    AnswerDelta,
    Budgets,
    EarlierTurn,
    Limits,
    Request,
    RequestFinished,
    ToolCallOutcome,
    TurnStarted,
)
from engine.paths import DataDir
from engine.tokens import TokenCounter

DOC = """# Event loop

## Phases

The event loop runs callbacks in phases. Timers run first, then pending callbacks, then the
poll phase waits for I/O, then check callbacks run setImmediate handlers.

## 事件循环

事件循环按阶段运行。定时器阶段最先执行，轮询阶段等待新的 I/O 事件。
"""
FILLER = (
    "An earlier answer about the event loop: timers run first, then I/O callbacks. "
    "之前的回答：定时器阶段最先执行，轮询阶段等待新的 I/O 事件。 "
)


class _TimedChat:
    """The chat client, with the time spent inside its calls added up."""

    def __init__(self, inner: ChatClient) -> None:
        self.inner = inner
        self.provider = inner.provider
        self.model = inner.model
        self.spent = 0.0

    async def stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int,
        on_delta: Callable[[StreamDelta], Awaitable[None]] | None = None,
    ) -> ChatResponse:
        t0 = time.perf_counter()
        try:
            return await self.inner.stream(messages, max_tokens=max_tokens, on_delta=on_delta)
        finally:
            self.spent += time.perf_counter() - t0


def _import(root: Path) -> App:
    docs = root / "docs"
    docs.mkdir()
    (docs / "loop.md").write_text(DOC, encoding="utf-8")
    app = App(DataDir(root / "home"), parse_config({}, {}))

    async def go() -> None:
        result = await app.import_paths([docs])
        assert result.status == "ready", result

    anyio.run(go, backend="trio")
    return app


def _earlier(tokens: int, counter: TokenCounter) -> tuple[EarlierTurn, ...]:
    """Earlier Q&A of a conversation totalling about `tokens` tokens."""
    answer = FILLER * 40
    per = counter.count(answer) + 20
    return tuple(EarlierTurn(f"question {i}?", answer) for i in range(max(1, tokens // per)))


def turn_overhead(report: Report, quick: bool) -> None:
    from tests.servers.chat_server import ChatServer, Text  # the scripted loopback server

    report.title = "Harness overhead per agent turn"
    sizes = [10_000, 50_000, 100_000]
    tool_turns = 4 if quick else 7
    requests = 2 if quick else 5
    counter = TokenCounter()
    server = ChatServer().start()
    rows: list[list[Any]] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            app = _import(Path(tmp))
            for size in sizes:
                earlier = _earlier(size, counter)
                per_turn, with_client, start = [], [], []
                for _ in range(requests):
                    script = [
                        Text('Thought: look.\nAction: list_documents[{"lang": "zz"}]')
                    ] * tool_turns + [Text("Thought: done.\nAction: Finish[Timers run first.]")]
                    server.script(*script)
                    h, c, s, prompt = anyio.run(_one, app, server.url, earlier, backend="trio")
                    per_turn.append(h)
                    with_client.append(c)
                    start.append(s)
                rows.append(
                    [
                        size,
                        prompt,
                        tool_turns + 1,
                        round(statistics.median(per_turn), 3),
                        round(max(per_turn), 3),
                        round(statistics.median(with_client), 3),
                        round(statistics.median(start), 1),
                    ]
                )
                report.figure(f"overhead_ms_per_turn_at_{size // 1000}k", rows[-1][3])
                report.figure(f"turn_ms_with_chat_client_at_{size // 1000}k", rows[-1][5])
            anyio.run(app.aclose, backend="trio")
    finally:
        server.stop()
    report.table(
        "Per-turn cost by history size (medians over requests)",
        [
            "history tokens (target)",
            "prompt tokens (estimated)",
            "turns",
            "harness ms/turn",
            "harness max ms/turn",
            "with chat client ms/turn",
            "start ms (once per request)",
        ],
        rows,
    )
    report.target("harness overhead per turn at 100K tokens (ms)", rows[-1][3], 5.0)
    report.notes.append(
        "Harness overhead = request wall time minus the time inside the chat client's calls "
        "and inside the tools, divided by the agent turns; it includes parsing, token counts "
        "of the new messages, admission, events over the bounded channel and the prompt "
        "message list. 'With chat client' adds the client's JSON encoding of the whole prompt "
        "and SSE parsing against the loopback server (server time is not subtracted there)."
    )
    report.notes.append(
        "Turns are timed from the first TurnStarted event to RequestFinished. The start (run "
        "manifest, system prompt, counting the earlier conversation once) is reported apart."
    )
    report.notes.append(
        "History is the conversation's earlier Q&A (counted once at the start); each turn adds "
        "a small observation (list_documents with no match)."
    )


async def _one(
    app: App, url: str, earlier: tuple[EarlierTurn, ...]
) -> tuple[float, float, float, int]:
    chat = _TimedChat(ChatClient(base_url=url, model="deepseek-chat", api_key="bench"))
    tool_spent = 0.0
    budgets = Budgets(max_context_tokens=400_000, max_request_tokens=10_000_000)
    try:
        with app.catalog().pin_active() as snapshot:
            assert snapshot is not None
            deps = deps_for(app, snapshot, chat.inner, limits=Limits(budgets=budgets))
            inner_tool = deps.run_tool

            async def tool(name: str, args: dict[str, Any]) -> ToolCallOutcome:
                nonlocal tool_spent
                t0 = time.perf_counter()
                try:
                    return await inner_tool(name, args)
                finally:
                    tool_spent += time.perf_counter() - t0

            deps = dataclasses.replace(deps, chat=chat, run_tool=tool)
            request = Request(question="Which phase runs first?", earlier=earlier)
            finished: RequestFinished | None = None
            first_turn: float | None = None  # seconds after the request started (its clock)
            async with open_request(deps, request) as running:
                async for event in running.events:
                    if isinstance(event, TurnStarted) and first_turn is None:
                        first_turn = event.at
                    if isinstance(event, RequestFinished):
                        finished = event
    finally:
        await chat.inner.aclose()
    assert finished is not None and finished.termination_reason == "finished", finished
    assert first_turn is not None
    turns = finished.counters.agent_turns
    # Every model call and tool call happens after the first turn started.
    loop = finished.at - first_turn
    harness = (loop - chat.spent - tool_spent) / turns * 1000
    with_client = (loop - tool_spent) / turns * 1000
    return harness, with_client, first_turn * 1000, finished.counters.context_tokens


def first_char_latency(report: Report, quick: bool) -> None:
    from tests.servers.chat_server import ChatServer, Text

    report.title = "First answer character: server send → caller"
    runs = 10 if quick else 40
    reply = "Thought: I know this.\nAction: Finish[Timers run first, then the poll phase.]"
    first_answer_char = reply.index("Finish[") + len("Finish[")
    chunk_chars = 4
    server = ChatServer().start()
    latencies: list[float] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            app = _import(Path(tmp))
            for _ in range(runs):
                server.script(Text(reply, chunk_chars=chunk_chars, chunk_delay_s=0.005))
                received = anyio.run(_first_delta_at, app, server.url, backend="trio")
                record = server.requests[-1]
                # SSE events: the role chunk, then one per `chunk_chars` characters of text.
                sent_at = record.chunk_times[1 + first_answer_char // chunk_chars]
                latencies.append((received - sent_at) * 1000)
            anyio.run(app.aclose, backend="trio")
    finally:
        server.stop()
    latencies.sort()
    median = statistics.median(latencies)
    p90 = latencies[int(0.9 * (len(latencies) - 1))]
    report.figure("runs", runs)
    report.figure("first_char_latency_median_ms", round(median, 3))
    report.figure("first_char_latency_p90_ms", round(p90, 3))
    report.figure("first_char_latency_max_ms", round(latencies[-1], 3))
    report.target("first answer character latency, median (ms)", median, 5.0)
    report.notes.append(
        "Measured from the moment the loopback server wrote the SSE event holding the first "
        "answer character (time.monotonic in the server thread) to the moment the caller "
        "received the AnswerDelta from the bounded event channel, in the same process."
    )


async def _first_delta_at(app: App, url: str) -> float:
    chat = ChatClient(base_url=url, model="deepseek-chat", api_key="bench")
    at = 0.0
    try:
        with app.catalog().pin_active() as snapshot:
            assert snapshot is not None
            deps = deps_for(app, snapshot, chat)
            async with open_request(deps, Request(question="Which phase first?")) as running:
                async for event in running.events:
                    if isinstance(event, AnswerDelta) and not at:
                        at = time.monotonic()
    finally:
        await chat.aclose()
    return at
