"""The trace writer: submit() never waits, a stalled or broken store never reaches the request,
what could not be written is counted and marks the trace partial, metadata mode stores no
document text or prompt, keys are redacted, and finished traces are exported over OTLP."""

from __future__ import annotations

import sqlite3
import statistics
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import msgspec
import pytest

from actors.trace_writer import TraceWriter, open_trace_writer
from engine.chat import ChatClient
from engine.harness import AnswerDelta, Event, RequestFinished, RequestStarted
from engine.trace import OtlpExporter, TraceStore, trace_id_for
from engine.trace.store import DB_NAME
from tests.engine.trace.otlp_receiver import OtlpReceiver, attributes, otlp_receiver
from tests.engine.trace.scenario import (
    MARKER,
    build_home,
    files_containing,
    make_deps,
    pinned,
    run_events,
    script,
)
from tests.servers.chat_server import ChatServer

pytestmark = pytest.mark.anyio
__all__ = ["otlp_receiver"]


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def events(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Event]]:
    """The events of one real request (search, then a cited answer), recorded once."""
    server = ChatServer().start()
    try:
        with pinned(build_home(tmp_path_factory.mktemp("writer"))) as snapshot:

            async def go() -> list[Event]:
                script(server)
                async with ChatClient(
                    base_url=server.url, model="deepseek-chat", api_key="k", timeout_s=5
                ) as chat:
                    finished, recorded = await run_events(make_deps(snapshot, chat))
                assert finished.termination_reason == "finished"
                return recorded

            yield anyio.run(go, backend="trio")
    finally:
        server.stop()


def store_at(root: Path, busy_timeout_s: float = 5.0) -> TraceStore:
    return TraceStore(root, busy_timeout_s=busy_timeout_s)


def deltas(events: list[Event], n: int) -> list[Event]:
    """The real request with `n` extra answer deltas before its end: a long trace."""
    rid = events[0].request_id
    extra: list[Event] = [AnswerDelta(request_id=rid, at=events[-1].at, text="x") for _ in range(n)]
    return [*events[:-1], *extra, events[-1]]


async def test_everything_submitted_is_written_when_the_writer_closes(
    tmp_path: Path, events: list[Event]
) -> None:
    root = tmp_path / "traces"
    async with open_trace_writer(lambda: store_at(root)) as writer:
        assert all(writer.submit(e) for e in events)
    health = writer.health()
    assert health.dropped == 0 and health.available
    with store_at(root) as store:
        record = store.get(trace_id_for(events[0].request_id))
    assert record.summary.status == "ok" and not record.summary.partial
    assert {s.kind for s in record.spans} == {
        "request",
        "turn",
        "llm_call",
        "tool_call",
        "admission",
        "final",
    }
    assert record.manifest is not None and record.manifest["snapshot"]["id"]


async def test_a_stalled_store_leaves_submit_instant_and_marks_the_trace_partial(
    tmp_path: Path, events: list[Event]
) -> None:
    root = tmp_path / "traces"
    store_at(root).close()
    blocker = sqlite3.connect(root / DB_NAME, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another writer holds the database: the store stalls
    stream = deltas(events, 3000)
    async with open_trace_writer(lambda: store_at(root, busy_timeout_s=0.5), buffer=64) as writer:
        took: list[float] = []
        started = time.perf_counter()
        for event in stream:
            t = time.perf_counter()
            writer.submit(event)
            took.append(time.perf_counter() - t)
            await anyio.sleep(0)  # the request keeps running on the same loop
        elapsed = time.perf_counter() - started
        stalled = writer.health()
        with anyio.fail_after(10):  # the store stays stuck until a write gives up
            while writer.health().failed_batches == 0:
                await anyio.sleep(0.05)
        blocker.execute("ROLLBACK")
        blocker.close()
        assert await writer.flush(10.0)
    health = writer.health()
    # the caller never waited for the store, stuck for at least its 0.5 s busy timeout (the
    # worst single submit only ever waits for the GIL, which the writer thread shares)
    assert statistics.median(took) < 0.0002 and max(took) < 0.1, (
        statistics.median(took),
        max(took),
    )
    assert elapsed < 0.5 * len(stream) / 1000 + 0.3, elapsed
    assert stalled.dropped > 0 and stalled.dropped < len(stream)
    with store_at(root) as store:
        summary = store.get(trace_id_for(events[0].request_id)).summary
    assert summary.partial
    assert summary.dropped == health.dropped > 0
    assert health.failed_batches >= 1 and "could not write traces" in (health.last_error or "")


async def test_a_store_that_cannot_open_never_reaches_the_request(
    tmp_path: Path, events: list[Event]
) -> None:
    blocked = tmp_path / "traces"
    blocked.write_text("a file where the trace folder should be")
    stream = deltas(events, 2000)
    started = time.perf_counter()
    async with open_trace_writer(lambda: store_at(blocked)) as writer:
        accepted = [writer.submit(e) for e in stream]
        await writer.flush()
    assert time.perf_counter() - started < 3.0
    health = writer.health()
    assert not health.available and "cannot create the trace folder" in (health.last_error or "")
    assert health.dropped == sum(accepted) + accepted.count(False)
    assert blocked.read_text() == "a file where the trace folder should be"


@pytest.mark.parametrize("mode", ["metadata", "full"])
async def test_metadata_mode_stores_no_document_text_or_prompt(
    tmp_path: Path, events: list[Event], mode: str
) -> None:
    root = tmp_path / "traces"
    async with open_trace_writer(lambda: store_at(root), mode=mode) as writer:
        for event in events:
            writer.submit(event)
    finished = events[-1]
    assert isinstance(finished, RequestFinished) and finished.answer
    leaks = {
        "document": files_containing(root, MARKER.encode()),
        "system prompt": files_containing(root, b"You are Citewise"),
        "answer": files_containing(root, finished.answer.encode()),
    }
    if mode == "metadata":
        assert leaks == {"document": [], "system prompt": [], "answer": []}
        with store_at(root) as store:
            record = store.get(trace_id_for(events[0].request_id))
        refs = [r for s in record.spans for r in s.artifacts]
        assert refs and not any(r.stored for r in refs)
    else:  # the same scan finds them when they are meant to be there
        assert all(leaks.values()), leaks


async def test_a_key_inside_an_event_is_redacted_before_it_is_stored(
    tmp_path: Path, events: list[Event]
) -> None:
    key = "sk-canary-0123456789abcdef"
    start = events[0]
    assert isinstance(start, RequestStarted)
    leaked = msgspec.structs.replace(start, question=f"my key is {key}, is that safe?")
    root = tmp_path / "traces"
    async with open_trace_writer(
        lambda: store_at(root), mode="full", secrets=lambda: [key, None]
    ) as w:
        for event in [leaked, *events[1:]]:
            w.submit(event)
    assert w.health().redactions == 1
    assert files_containing(root, key.encode()) == []
    with store_at(root) as store:
        assert store.get(trace_id_for(start.request_id)).summary.question == (
            "my key is [REDACTED], is that safe?"
        )


async def test_each_finished_trace_is_exported_once_and_failures_are_counted(
    tmp_path: Path, events: list[Event], otlp_receiver: OtlpReceiver
) -> None:
    root = tmp_path / "traces"
    exporter = OtlpExporter(otlp_receiver.endpoint + "/v1/traces", timeout_s=2.0)
    async with open_trace_writer(lambda: store_at(root), exporter=exporter) as writer:
        for event in events:
            writer.submit(event)
        assert await writer.flush()
        otlp_receiver.status = 500
        other = [msgspec.structs.replace(e, request_id="f" * 32) for e in events]
        for event in other:
            writer.submit(event)
        assert await writer.flush()
    health = writer.health()
    assert health.exported == 1 and health.export_failures == 1
    assert len(otlp_receiver.exports) == 2  # the second was sent and refused
    first = [s for s in otlp_receiver.spans() if s["traceId"] == trace_id_for(events[0].request_id)]
    with store_at(root) as store:
        stored = store.get(trace_id_for(events[0].request_id)).spans
    assert sorted(s["spanId"] for s in first) == sorted(s.span_id for s in stored)
    kinds = {attributes(s)["citewise.span.kind"] for s in first}
    assert kinds == {"request", "turn", "llm_call", "tool_call", "admission", "final"}


async def test_submit_after_close_is_a_counted_drop(tmp_path: Path, events: list[Event]) -> None:
    writer = TraceWriter(lambda: store_at(tmp_path / "traces"))
    writer.close()
    assert writer.submit(events[0]) is False
    assert writer.health().dropped == 1
