"""OTLP/HTTP export, decoded by a receiver on loopback: the span tree arrives whole, with the
GenAI attribute names and typed values; export is off unless the OTEL_* variables ask for it."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator

import pytest

from engine.chat import ChatClient
from engine.harness import TurnStarted
from engine.trace import OtlpExporter, OtlpExportError, RequestRecorder, exporter_from_environment
from engine.trace import model as m
from index.snapshot import Snapshot
from tests.engine.trace.otlp_receiver import OtlpReceiver, attributes, otlp_receiver
from tests.engine.trace.scenario import build_home, make_deps, pinned, run_events, script
from tests.servers.chat_server import ChatServer

pytestmark = pytest.mark.anyio
__all__ = ["otlp_receiver"]


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Snapshot]:
    with pinned(build_home(tmp_path_factory.mktemp("otlp"))) as snap:
        yield snap


@pytest.fixture
async def chat(chat_server: ChatServer) -> AsyncIterator[ChatClient]:
    client = ChatClient(base_url=chat_server.url, model="deepseek-chat", api_key="k", timeout_s=5)
    try:
        yield client
    finally:
        await client.aclose()


async def test_exported_spans_decode_into_the_same_tree_with_genai_names(
    snapshot: Snapshot, chat: ChatClient, chat_server: ChatServer, otlp_receiver: OtlpReceiver
) -> None:
    script(chat_server)
    finished, events = await run_events(make_deps(snapshot, chat))
    recorder = RequestRecorder(events[0].request_id, "metadata")
    t0 = time.time()
    for event in events:
        recorder.feed(event, t0 + event.at)
    spans = recorder.spans()
    exporter = OtlpExporter(otlp_receiver.endpoint + "/v1/traces", service_version="0.1.0")
    try:
        exporter.export(spans)
    finally:
        exporter.close()

    assert otlp_receiver.paths == ["/v1/traces"]
    resource = otlp_receiver.exports[0]["resourceSpans"][0]["resource"]
    assert attributes(resource) == {"service.name": "citewise", "service.version": "0.1.0"}
    got = otlp_receiver.spans()
    assert len(got) == len(spans)
    ids = {s["spanId"] for s in got}
    assert {s["traceId"] for s in got} == {recorder.trace_id} and len(recorder.trace_id) == 32
    roots = [s for s in got if "parentSpanId" not in s]
    assert len(roots) == 1 and all(s.get("parentSpanId", roots[0]["spanId"]) in ids for s in got)
    for s in got:
        assert int(s["endTimeUnixNano"]) >= int(s["startTimeUnixNano"]) > 1_600_000_000 * 10**9
    by_kind: dict[str, list[dict[str, object]]] = {}
    for s in got:
        by_kind.setdefault(attributes(s)["citewise.span.kind"], []).append(s)  # type: ignore[arg-type]
    llm = [attributes(s) for s in by_kind["llm_call"]]
    assert all(s["kind"] == 3 for s in by_kind["llm_call"])  # SPAN_KIND_CLIENT
    assert sorted(a[m.INPUT_TOKENS] for a in llm) == sorted(
        e.usage.prompt_tokens
        for e in events
        if getattr(e, "usage", None) is not None  # type: ignore[attr-defined]
    )
    assert {a[m.OPERATION] for a in llm} == {"chat"}
    assert {a[m.REQUEST_MODEL] for a in llm} == {"deepseek-chat"}
    (tool,) = [attributes(s) for s in by_kind["tool_call"]]
    assert tool[m.TOOL_NAME] == "search_blocks" and tool[m.TOOL_CALL_ID] == "call-1"
    assert isinstance(tool[m.RETRIEVAL_VECTOR_SIMILARITIES][0], float)
    (request,) = by_kind["request"]
    assert attributes(request)[m.TERMINATION] == finished.termination_reason
    assert request["status"] == {"code": 1, "message": ""}
    (final,) = by_kind["final"]
    assert [e["name"] for e in final["events"]] == ["citation"]  # type: ignore[index]


def test_a_refusing_collector_is_an_export_error_naming_no_header(
    otlp_receiver: OtlpReceiver,
) -> None:
    otlp_receiver.status = 503
    exporter = exporter_from_environment(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": otlp_receiver.endpoint + "/",
            "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Basic%20c2VjcmV0LWhlYWRlcg==,x-team=a",
        }
    )
    assert exporter is not None
    span = RequestRecorder("ab" * 16, "metadata")
    span.feed(TurnStarted(request_id="ab" * 16, at=0.0, turn=1, final=False, prompt_tokens=1), 1.0)
    with pytest.raises(OtlpExportError, match="503") as caught:
        exporter.export(span.spans())
    exporter.close()
    assert "c2VjcmV0" not in str(caught.value)
    assert otlp_receiver.paths == ["/v1/traces"]
    assert otlp_receiver.headers[0]["authorization"] == "Basic c2VjcmV0LWhlYWRlcg=="
    assert otlp_receiver.headers[0]["x-team"] == "a"


def test_export_is_off_unless_an_endpoint_is_configured() -> None:
    assert exporter_from_environment({}) is None
    assert exporter_from_environment({"OTEL_EXPORTER_OTLP_HEADERS": "a=b"}) is None
    only_traces = exporter_from_environment(
        {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/custom"}
    )
    assert only_traces is not None and only_traces.endpoint == "http://127.0.0.1:4318/custom"
    only_traces.close()


def test_an_unreachable_collector_is_an_export_error() -> None:
    exporter = OtlpExporter("http://127.0.0.1:9/v1/traces", timeout_s=1.0)
    recorder = RequestRecorder("cd" * 16, "metadata")
    recorder.feed(
        TurnStarted(request_id="cd" * 16, at=0.0, turn=1, final=False, prompt_tokens=1), 1.0
    )
    with pytest.raises(OtlpExportError, match="could not reach"):
        exporter.export(recorder.spans())
    exporter.close()
