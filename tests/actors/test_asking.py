"""actors.asking against the loopback chat server: the configured query limit reaches the tools
and the run manifest, and a damaged active snapshot ends the question with a recorded reason."""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from actors.asking import ask
from actors.catalog import Catalog
from actors.conversations import ConversationStore
from engine.chat import ChatClient
from engine.harness import Event, RequestStarted
from engine.paths import DataDir
from tests.corpus import make_app, run_import
from tests.servers.chat_server import ChatServer, Text

pytestmark = pytest.mark.anyio

EVENTS = "# Node events\n\n## Emitters\n\nAn EventEmitter calls every listener synchronously.\n"


@pytest.fixture
def anyio_backend() -> str:
    return "trio"


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("asking")
    docs = root / "docs"
    docs.mkdir()
    (docs / "events.md").write_text(EVENTS, encoding="utf-8")
    assert run_import(make_app(root / "home"), [docs]).status == "ready"
    return root / "home"


@pytest.fixture
async def chat(chat_server: ChatServer) -> AsyncIterator[ChatClient]:
    client = ChatClient(base_url=chat_server.url, model="deepseek-chat", api_key="k", timeout_s=5)
    try:
        yield client
    finally:
        await client.aclose()


async def test_the_configured_query_limit_reaches_search_blocks_and_the_run_manifest(
    library: Path, chat: ChatClient, chat_server: ChatServer
) -> None:
    app = make_app(library, retrieval={"max_query_chars": 100})
    events: list[Event] = []

    async def keep(event: Event) -> None:
        events.append(event)

    long_query = json.dumps({"query": "listener " * 20})  # 180 characters

    def after_refusal(body: dict[str, Any]) -> Text:
        payload = json.loads(body["messages"][-1]["content"].splitlines()[-2])["payload"]
        assert payload["error"]["code"] == "invalid_argument"
        assert "the limit is 100" in payload["error"]["message"]
        return Text("Thought: shorter.\nAction: Finish[Asked with a shorter query.]")

    chat_server.script(Text(f"Action: search_blocks[{long_query}]"), after_refusal)
    try:
        result = await ask(app, "How do listeners run?", chat=chat, on_event=keep)
    finally:
        await app.aclose()
    assert result.finished.termination_reason == "finished"
    (started,) = [e for e in events if isinstance(e, RequestStarted)]
    assert started.manifest["settings"]["retrieval"]["max_query_chars"] == 100


async def test_a_damaged_active_snapshot_ends_the_question_with_collection_unavailable(
    library: Path, tmp_path: Path, chat: ChatClient, chat_server: ChatServer
) -> None:
    home = tmp_path / "home"
    shutil.copytree(library, home)
    sid = Catalog(DataDir(home), "default").active_id()
    assert sid is not None
    (home / "collections" / "default" / "snapshots" / sid / "vectors.f16").unlink()
    app = make_app(home)
    seen: list[Event] = []

    async def keep(event: Event) -> None:
        seen.append(event)

    try:
        result = await ask(app, "How do listeners run?", chat=chat, on_event=keep)
        outcome = await app.run_tool("scan_term", {"term": "listener"})
    finally:
        await app.aclose()
    f = result.finished
    assert f.termination_reason == "collection_unavailable" and f.answer is None
    assert "vectors.f16" in f.message and f"snapshots verify {sid}" in f.message
    assert "import the documents again" in f.message  # no earlier snapshot to go back to
    started, last = seen  # the trace gets the question and its end, nothing in between
    assert isinstance(started, RequestStarted) and started.question == "How do listeners run?"
    assert last == f and chat_server.requests == []
    (turn,) = ConversationStore(DataDir(home), "default").load(result.conversation_id)
    assert turn.termination_reason == "collection_unavailable"  # recorded with the conversation
    assert json.loads(outcome.json)["error"]["message"] in f.message
