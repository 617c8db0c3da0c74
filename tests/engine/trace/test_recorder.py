"""The recorder turns a real request's events into the span tree SPEC §8 describes.

The request is real (harness, tools, snapshot, loopback chat server); what the recorder makes of
its events is checked against what the server actually received and what the tools returned.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator

import msgspec
import pytest

from engine.chat import ChatClient
from engine.harness import (
    AdmissionDecided,
    Counters,
    Event,
    ModelCallStarted,
    RequestFinished,
    ToolCallFinished,
    TurnStarted,
)
from engine.trace import RequestRecorder, Span, messages_json
from engine.trace import model as m
from engine.trace.model import ArtifactPut, ManifestPut, SpanPut, TraceHead, WriteOp
from engine.trace.recorder import join_messages
from index.snapshot import Snapshot
from tests.engine.trace.scenario import (
    MARKER,
    QUESTION,
    build_home,
    make_deps,
    messages_segment,
    pinned,
    run_events,
    script,
)
from tests.servers.chat_server import ChatServer

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Snapshot]:
    with pinned(build_home(tmp_path_factory.mktemp("recorder"))) as snap:
        yield snap


@pytest.fixture
async def chat(chat_server: ChatServer) -> AsyncIterator[ChatClient]:
    client = ChatClient(base_url=chat_server.url, model="deepseek-chat", api_key="k", timeout_s=5)
    try:
        yield client
    finally:
        await client.aclose()


def record(events: list[Event], mode: m.TraceMode) -> tuple[RequestRecorder, list[WriteOp]]:
    recorder = RequestRecorder(events[0].request_id, mode)
    t0 = time.time()
    ops: list[WriteOp] = []
    for event in events:
        ops.extend(recorder.feed(event, t0 + event.at))
    return recorder, ops


def latest_spans(ops: list[WriteOp]) -> dict[str, Span]:
    """The last version written of every span (spans are upserted as they change)."""
    out: dict[str, Span] = {}
    for op in ops:
        if isinstance(op, SpanPut):
            out[op.span.span_id] = op.span
    return out


async def test_span_tree_has_request_turns_calls_admission_and_final(
    snapshot: Snapshot, chat: ChatClient, chat_server: ChatServer
) -> None:
    script(chat_server)
    finished, events = await run_events(make_deps(snapshot, chat))
    assert finished.termination_reason == "finished"
    recorder, ops = record(events, "metadata")
    assert recorder.finished
    spans = latest_spans(ops)
    by_kind: dict[str, list[Span]] = {}
    for span in spans.values():
        by_kind.setdefault(span.kind, []).append(span)
    (root,) = by_kind["request"]
    assert root.parent_id is None and root.status == "ok"
    assert len(by_kind["turn"]) == 2 and all(t.parent_id == root.span_id for t in by_kind["turn"])
    turn_ids = {t.span_id for t in by_kind["turn"]}
    assert len(by_kind["llm_call"]) == 2 and all(
        s.parent_id in turn_ids for s in by_kind["llm_call"]
    )
    (tool,) = by_kind["tool_call"]
    (admission,) = by_kind["admission"]
    assert tool.parent_id == admission.parent_id and tool.parent_id in turn_ids
    (final,) = by_kind["final"]
    assert final.parent_id == root.span_id
    assert all(s.end is not None and s.end >= s.start for s in spans.values())

    # GenAI names and the figures the server reported
    usage = [e.usage for e in events if hasattr(e, "usage") and e.usage is not None]
    llm = sorted(by_kind["llm_call"], key=lambda s: s.start)
    assert [s.attributes[m.INPUT_TOKENS] for s in llm] == [u.prompt_tokens for u in usage]
    assert all(s.attributes[m.OPERATION] == "chat" for s in llm)
    assert all(s.attributes[m.REQUEST_MODEL] == "deepseek-chat" for s in llm)
    assert tool.attributes[m.OPERATION] == "execute_tool"
    assert tool.attributes[m.TOOL_NAME] == "search_blocks"
    assert tool.attributes[m.TOOL_CALL_ID] == "call-1"
    assert root.attributes[m.COUNTER_PREFIX + "tool_calls"] == 1
    assert root.attributes[m.TERMINATION] == "finished"

    # retrieval ranks per list, for exactly the blocks the tool returned, in order
    done = next(e for e in events if isinstance(e, ToolCallFinished))
    returned = [b["citation"] for b in msgspec.json.decode(done.payload or b"{}")["blocks"]]
    assert tool.attributes[m.TOOL_BLOCKS] == returned
    assert tool.attributes[m.RETRIEVAL_BLOCKS] == returned
    for key in (m.RETRIEVAL_KEYWORD_RANKS, m.RETRIEVAL_VECTOR_RANKS, m.RETRIEVAL_FUSED):
        assert len(tool.attributes[key]) == len(returned)
    # The answer's block is in the vector list; blocks under the snapshot's similarity floor
    # are not (rank 0), and the trace says where the floor was.
    assert tool.attributes[m.RETRIEVAL_VECTOR_RANKS][0] >= 1
    floor = tool.attributes[m.RETRIEVAL_VECTOR_FLOOR]
    assert isinstance(floor, float) and floor > 0.2
    read = tool.attributes[m.RETRIEVAL_VECTOR_READ_SIMILARITIES]
    assert isinstance(read, list) and read[0] >= floor

    # the admission decision with its figures
    decided = next(e for e in events if isinstance(e, AdmissionDecided))
    assert admission.attributes[m.ADMISSION_VERDICT] == "accepted" == decided.verdict
    assert admission.attributes[m.ADMISSION_NEEDED] == decided.needed

    # the final answer's evidence: citation → block, with where it points
    assert final.attributes[m.CITATIONS] == [returned[0]]
    assert final.attributes[m.CITATIONS_VALID] == [True]
    (cited,) = [e for e in final.events if e.name == "citation"]
    assert cited.attributes["citewise.citation.title"] == "Rivers"
    assert cited.attributes["citewise.citation.returned_by"] == ["search_blocks"]

    heads = [op for op in ops if isinstance(op, TraceHead)]
    assert heads[0].question == QUESTION and heads[-1].termination_reason == "finished"
    assert heads[-1].tokens == finished.counters.used_tokens


async def test_full_mode_artifacts_rebuild_the_exact_bytes_the_server_received(
    snapshot: Snapshot, chat: ChatClient, chat_server: ChatServer
) -> None:
    script(chat_server)
    _, events = await run_events(make_deps(snapshot, chat))
    _, ops = record(events, "full")
    blobs = {op.sha256: op.data for op in ops if isinstance(op, ArtifactPut)}
    llm = sorted(
        (s for s in latest_spans(ops).values() if s.kind == "llm_call"), key=lambda s: s.start
    )
    received = [r for r in chat_server.requests if r.path.endswith("/chat/completions")]
    assert len(llm) == len(received) == 2
    for span, request in zip(llm, received, strict=True):
        parts = [ref.sha256 for ref in span.artifacts if ref.kind == "messages"]
        assert len(parts) == span.attributes["citewise.messages.count"]
        rebuilt = join_messages(blobs[sha] for sha in parts)
        assert rebuilt == messages_segment(request.raw)
        assert msgspec.json.decode(rebuilt)[-1]["role"] == "user"
    started = [e for e in events if isinstance(e, ModelCallStarted)]
    assert messages_json(started[1].messages) == messages_segment(received[1].raw)
    # the observation with the document's text was stored as a tool payload and a message
    assert any(MARKER.encode() in data for data in blobs.values())
    final = next(e for e in events if isinstance(e, RequestFinished))
    assert (final.answer or "").encode() in blobs.values()


async def test_metadata_mode_keeps_hashes_and_sizes_but_no_text(
    snapshot: Snapshot, chat: ChatClient, chat_server: ChatServer
) -> None:
    script(chat_server)
    _, events = await run_events(make_deps(snapshot, chat))
    _, ops = record(events, "metadata")
    assert not [op for op in ops if isinstance(op, ArtifactPut)]
    spans = latest_spans(ops).values()
    refs = [ref for s in spans for ref in s.artifacts]
    assert {r.kind for r in refs} >= {"messages", "reply", "tool_payload", "answer"}
    assert all(not r.stored and r.size > 0 and len(r.sha256) == 64 for r in refs)
    everything = b"".join(msgspec.json.encode(op) for op in ops if not isinstance(op, ManifestPut))
    assert MARKER.encode() not in everything
    assert b"The Amazon carries the most water" not in everything  # the answer
    assert b"You are" not in everything  # no system prompt text


async def test_events_after_a_lost_start_still_make_spans() -> None:
    """A dropped RequestStarted (full channel) must not break the rest of the trace."""
    rid = "ab" * 16
    recorder = RequestRecorder(rid, "metadata")
    ops = recorder.feed(
        TurnStarted(request_id=rid, at=0.5, turn=1, final=False, prompt_tokens=9), 100.5
    )
    ops += recorder.feed(
        RequestFinished(
            request_id=rid,
            at=1.0,
            termination_reason="model_error",
            answer=None,
            message="The model call failed",
            counters=Counters(model_calls=1),
        ),
        101.0,
    )
    spans = latest_spans(ops)
    kinds = sorted(s.kind for s in spans.values())
    assert kinds == ["final", "request", "turn"]
    request = next(s for s in spans.values() if s.kind == "request")
    assert request.status == "error" and "model call failed" in request.status_message
    assert recorder.finished
