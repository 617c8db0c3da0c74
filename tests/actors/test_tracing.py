"""Traces through the App and `citewise trace`: list/show JSON (SPEC §15), evidence replay,
retrieval replay on the pinned snapshot, model re-run, import traces, and the diagnostic bundle
with a canary key that must never reach a file under the data directory or the zip."""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import zipfile
from collections.abc import AsyncIterator
from pathlib import Path

import msgspec
import pytest

from actors import App, AppError
from actors.asking import ask
from actors.tracing import (
    IngestTracer,
    bundle,
    evidence,
    get_trace,
    list_traces,
    rerun,
    retrieval,
    trace_writer,
    traced,
)
from cli.trace import add_parsers, cmd_trace
from engine.chat import ChatClient
from engine.trace import FULL_MODE_HINT, zip_contains
from engine.trace import model as m
from engine.trace.store import DB_NAME
from tests.corpus import make_app
from tests.engine.trace.scenario import (
    MARKER,
    QUESTION,
    build_home,
    files_containing,
    messages_segment,
    script,
    search_then_cite,
)
from tests.servers.chat_server import ChatServer, Status, Text

pytestmark = pytest.mark.anyio
CANARY = "sk-canary-5f1e0c3a9b7d42e8"


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """DOCUMENTS imported once; each test works on its own copy."""
    return build_home(tmp_path_factory.mktemp("tracing-library"))


@pytest.fixture
def copy_home(library: Path, tmp_path: Path) -> Path:
    shutil.copytree(library.parent / "docs", tmp_path / "docs")
    return Path(shutil.copytree(library, tmp_path / "home"))


@pytest.fixture
async def chat(chat_server: ChatServer) -> AsyncIterator[ChatClient]:
    client = ChatClient(base_url=chat_server.url, model="deepseek-chat", api_key="k", timeout_s=5)
    try:
        yield client
    finally:
        await client.aclose()


def app_on(home: Path, server: ChatServer, mode: str = "metadata", **more: object) -> App:
    return make_app(
        home,
        chat={"base_url": server.url},
        trace={"mode": mode},
        **more,  # type: ignore[arg-type]
    )


async def ask_traced(app: App, chat: ChatClient | None = None, question: str = QUESTION) -> str:
    async with trace_writer(app) as writer:
        result = await ask(app, question, chat=chat, on_event=traced(writer))
    assert writer.health().dropped == 0
    return result.finished.request_id


def cli(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="citewise")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--collection", "-c")
    common.add_argument("--json", action="store_true")
    add_parsers(parser.add_subparsers(dest="command"), common)
    return parser.parse_args(argv)


async def test_list_and_show_print_the_fixed_json_fields(
    tmp_path: Path,
    copy_home: Path,
    chat_server: ChatServer,
    chat: ChatClient,
    capsys: pytest.CaptureFixture[str],
) -> None:
    app = app_on(copy_home, chat_server)
    script(chat_server)
    request_id = await ask_traced(app, chat)
    capsys.readouterr()
    assert await cmd_trace(app, cli(["trace", "list", "--json"])) == 0
    listed = json.loads(capsys.readouterr().out)
    (row,) = listed["traces"]
    assert {
        "trace_id",
        "started_at",
        "question",
        "status",
        "termination_reason",
        "tokens",
        "cost",
    } <= row.keys()
    assert row["trace_id"] == request_id and row["question"] == QUESTION
    assert row["termination_reason"] == "finished" and row["tokens"] > 0

    assert await cmd_trace(app, cli(["trace", "show", request_id[:10], "--json"])) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["trace_id"] == request_id and shown["partial"] is False
    assert shown["manifest"]["snapshot"]["content_hash"]
    kinds = {s["kind"] for s in shown["spans"]}
    assert kinds == {"request", "turn", "llm_call", "tool_call", "admission", "final"}
    for span in shown["spans"]:
        assert {
            "span_id",
            "parent_id",
            "kind",
            "name",
            "start",
            "end",
            "status",
            "attributes",
        } <= span.keys()

    assert await cmd_trace(app, cli(["trace", "show", request_id])) == 0
    text = capsys.readouterr().out
    assert "search_blocks" in text and "Rivers" in text and "accepted" in text
    with pytest.raises(AppError, match="no trace"):
        await cmd_trace(app, cli(["trace", "show", "ffffffff"]))
    await app.aclose()


async def test_evidence_replay_rebuilds_what_the_model_received(
    tmp_path: Path, copy_home: Path, chat_server: ChatServer, chat: ChatClient
) -> None:
    app = app_on(copy_home, chat_server, mode="full")
    script(chat_server)
    request_id = await ask_traced(app, chat)
    replay = evidence(app, request_id)
    assert replay.available
    sent = [r for r in chat_server.requests if r.path.endswith("/chat/completions")]
    assert [i.verified for i in replay.model_inputs] == [True, True]
    for item, request in zip(replay.model_inputs, sent, strict=True):
        assert msgspec.json.encode(item.messages) == messages_segment(request.raw)
    (tool,) = replay.tool_outputs
    assert tool.tool == "search_blocks" and MARKER in json.dumps(tool.payload)
    assert replay.answer is not None and replay.answer.startswith("The Amazon carries")

    # a tampered artifact is reported, never shown as what the model saw
    store_root = app.data.root / "traces" / "artifacts"
    victim = next(
        p for p in store_root.rglob("*") if p.is_file() and b"You are Citewise" in p.read_bytes()
    )
    victim.write_bytes(victim.read_bytes().replace(b"You are", b"You were"))
    broken = evidence(app, request_id)
    assert not any(i.verified for i in broken.model_inputs)
    assert all(i.messages is None and "damaged" in (i.problem or "") for i in broken.model_inputs)
    await app.aclose()


async def test_evidence_replay_in_metadata_mode_says_how_to_turn_full_mode_on(
    tmp_path: Path, copy_home: Path, chat_server: ChatServer, chat: ChatClient
) -> None:
    app = app_on(copy_home, chat_server)
    script(chat_server)
    replay = evidence(app, await ask_traced(app, chat))
    assert not replay.available and replay.model_inputs == []
    assert "metadata mode" in replay.message and FULL_MODE_HINT in replay.message
    await app.aclose()


async def test_retrieval_replay_matches_on_the_pinned_snapshot_and_reports_differences(
    tmp_path: Path, copy_home: Path, chat_server: ChatServer, chat: ChatClient
) -> None:
    app = app_on(copy_home, chat_server, snapshots={"keep_last": 1})
    script(chat_server)
    request_id = await ask_traced(app, chat)
    same = await retrieval(app, request_id)
    assert same.snapshot_available and same.identical
    (call,) = same.calls
    assert call.tool == "search_blocks" and call.payload_identical and call.recorded_blocks

    # the recorded result differs from what the snapshot returns now: the diff says how
    db = sqlite3.connect(app.data.root / "traces" / DB_NAME)
    span_id, body = db.execute(
        "SELECT span_id, body FROM spans WHERE kind = 'tool_call'"
    ).fetchone()
    span = json.loads(body)
    blocks = span["attributes"][m.TOOL_BLOCKS]
    span["attributes"][m.TOOL_BLOCKS] = [*reversed(blocks), "gone#b0"]
    db.execute("UPDATE spans SET body = ? WHERE span_id = ?", (json.dumps(span).encode(), span_id))
    db.commit()
    db.close()
    changed = await retrieval(app, request_id)
    (diff,) = changed.calls
    assert not changed.identical and diff.removed == ["gone#b0"] and not diff.same_order
    assert "different" in changed.message

    # a newer import plus GC with keep_last=1 collects the request's snapshot
    (tmp_path / "docs" / "more.md").write_text("# More\n\nAnother river note.\n", encoding="utf-8")
    await app.import_paths([tmp_path / "docs"])
    await app.gc()
    gone = await retrieval(app, request_id)
    assert not gone.snapshot_available and "has been collected" in gone.message
    with pytest.raises(AppError, match="collected"):
        await rerun(app, request_id, 1, chat=chat)
    await app.aclose()


async def test_rerun_reports_pass_rate_failure_types_and_flips(
    tmp_path: Path, copy_home: Path, chat_server: ChatServer, chat: ChatClient
) -> None:
    app = app_on(copy_home, chat_server)
    script(chat_server)
    request_id = await ask_traced(app, chat)
    chat_server.script(
        search_then_cite,
        search_then_cite,  # run 1: the same good answer
        Text("Action: Finish[Made up.【来源:nodoc#b1】]"),  # run 2: cites a block never returned
        Status(400, "bad request"),  # run 3: the model call fails
    )
    async with trace_writer(app) as writer:
        report = await rerun(app, request_id, 3, chat=chat, writer=writer)
    assert report.runs == 3 and report.passed == 1
    assert report.pass_rate == pytest.approx(1 / 3)
    assert report.failure_types == {"invalid_citations": 1, "model_error": 1}
    assert report.flipped == [2, 3] and report.answer_changed == [2, 3]
    assert report.same_configuration and report.notes == []
    assert report.original is not None and report.original.passed
    assert len(list_traces(app)) == 4  # every re-run is traced too
    await app.aclose()


async def test_a_canary_key_never_reaches_the_data_dir_or_the_bundle(
    tmp_path: Path, copy_home: Path, chat_server: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CITEWISE_DEEPSEEK_API_KEY", CANARY)
    home = copy_home
    app = app_on(home, chat_server, mode="full")
    # the vendor echoes the key back in an error first; the retry then answers normally
    chat_server.script(Status(500, "overloaded", echo_key=True), search_then_cite, search_then_cite)
    request_id = await ask_traced(app)  # the app's own client, with the key from the environment
    assert chat_server.requests[0].headers["authorization"] == f"Bearer {CANARY}"
    record = get_trace(app, request_id)
    assert record.summary.termination_reason == "finished"
    failed = [s for s in record.spans if s.kind == "llm_call" and s.status == "error"]
    assert len(failed) == 1 and failed[0].attributes[m.WILL_RETRY] is True

    report = await bundle(app, request_id, tmp_path / "out" / "bundle.zip")
    assert report.verified_clean and report.secrets_checked == 1 and report.artifacts > 0
    with zipfile.ZipFile(report.path) as zf:
        names = set(zf.namelist())
        trace = json.loads(zf.read("trace.json"))
        assert b"[chat]" in zf.read("config.toml")
    assert {"trace.json", "manifest.json", "config.toml", "README.txt"} <= names
    assert any(n.startswith("artifacts/") for n in names)
    assert trace["trace_id"] == request_id
    assert not zip_contains(Path(report.path), CANARY.encode())
    assert zip_contains(Path(report.path), MARKER.encode())  # the scan does see content
    assert files_containing(home, CANARY.encode()) == []
    await app.aclose()


async def test_bundle_removes_proxy_credentials_from_the_config(
    tmp_path: Path, copy_home: Path, chat_server: ChatServer, chat: ChatClient
) -> None:
    app = app_on(
        copy_home, chat_server, network={"proxy": "http://alice:hunter2-secret@proxy.lan:3128"}
    )
    script(chat_server)
    request_id = await ask_traced(app, chat)
    report = await bundle(app, request_id)
    assert Path(report.path).parent == app.data.root / "bundles"
    with zipfile.ZipFile(report.path) as zf:
        config = zf.read("config.toml").decode()
    assert "proxy.lan:3128" in config and "hunter2" not in config and "alice" not in config
    await app.aclose()


async def test_an_import_is_traced_with_one_span_per_document(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nAlpha text.\n", encoding="utf-8")
    (docs / "b.txt").write_text("Beta text.\n", encoding="utf-8")
    (docs / "scan.pdf").write_bytes(b"%PDF-1.4\nnot really a pdf\n")
    app = make_app(tmp_path / "home")
    async with trace_writer(app) as writer:
        tracer = IngestTracer(writer, "default")
        result = await app.import_paths([docs], on_progress=tracer.wrap(None))
        tracer.finished(result)
    (summary,) = list_traces(app, kind="ingest")
    assert summary.status == "ok" and summary.termination_reason == "ready_partial"
    record = get_trace(app, summary.trace_id)
    (root,) = [s for s in record.spans if s.parent_id is None]
    assert root.kind == "ingest" and root.attributes[m.SNAPSHOT_ID] == result.snapshot_id
    docs_spans = {s.name: s for s in record.spans if s.parent_id == root.span_id}
    assert set(docs_spans) == {"a.md", "b.txt", "scan.pdf"}
    assert docs_spans["a.md"].status == "ok" and docs_spans["b.txt"].status == "ok"
    failed = docs_spans["scan.pdf"]
    assert (
        failed.status == "error"
        and failed.attributes[m.ERROR_TYPE] == result.failed_documents[0].reason
    )
    assert list_traces(app) == []  # questions and imports are listed apart
    await app.aclose()


def test_the_trace_command_line_parses_every_action() -> None:
    args = cli(["trace", "rerun", "abcd1234", "-n", "5", "--json"])
    assert (args.action, args.id, args.runs, args.json) == ("rerun", "abcd1234", 5, True)
    assert cli(["trace"]).action == "list"
    assert cli(["trace", "bundle", "abcd", "-o", "x.zip"]).output == Path("x.zip")
    with pytest.raises(SystemExit):
        cli(["trace", "explode"])


async def test_full_diagnostics_switched_on_reaches_the_running_writer_and_the_file(
    copy_home: Path, chat_server: ChatServer
) -> None:
    app = app_on(copy_home, chat_server)
    async with app.running():
        assert app.trace_writer is not None and app.trace_writer.mode == "metadata"
        assert await app.set_trace_mode("full") == "full"
        assert app.trace_writer.mode == "full"  # the next question's trace keeps its texts
    assert 'mode = "full"' in app.data.config_file.read_text(encoding="utf-8")
