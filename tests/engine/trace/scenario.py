"""A small real library and a scripted two-turn request, shared by the trace tests.

The request runs the real harness with the real tools on a real snapshot against the loopback
chat server: turn 1 searches, turn 2 answers citing the first block the search returned.
MARKER occurs in one document only, so finding it in a file proves document text got there.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from actors.catalog import Catalog
from engine.chat import ChatClient
from engine.config import Config
from engine.embedding import LocalEmbedding
from engine.harness import (
    Deps,
    Event,
    Limits,
    Request,
    RequestFinished,
    ToolCallOutcome,
    run_request,
)
from engine.paths import DataDir
from engine.prompts.bundle import load_baseline
from engine.tokens import TokenCounter
from engine.tools import TOOL_CONTRACT_VERSION, ToolContext, render_tools, run_tool
from engine.trace import manifest_extra
from index.snapshot import Snapshot
from tests.corpus import make_app, run_import
from tests.servers.chat_server import ChatServer, Text

MARKER = "QZX7731WATERMARK"
QUESTION = "Which river carries the most water?"
DOCUMENTS = {
    "rivers.md": (
        "# Rivers\n\n## Amazon\n\n"
        f"The Amazon carries more water than any other river on Earth ({MARKER}).\n\n"
        "## Nile\n\nThe Nile flows north through eleven countries to the Mediterranean.\n"
    ),
    "lakes.md": "# 湖泊\n\n## 贝加尔湖\n\n贝加尔湖是世界上最深的湖泊。它位于西伯利亚。\n",
}
COUNTER = TokenCounter()
_CITATION = re.compile(r'"citation":"([^"]+)"')


def write_documents(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in DOCUMENTS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def build_home(root: Path, **sections: dict[str, object]) -> Path:
    """A data directory at root/home with DOCUMENTS imported into collection `default`."""
    home = root / "home"
    result = run_import(make_app(home, **sections), [write_documents(root / "docs")])
    assert result.status == "ready", result
    return home


@contextmanager
def pinned(home: Path) -> Iterator[Snapshot]:
    with Catalog(DataDir(home), "default").pin_active() as snap:
        assert snap is not None
        yield snap


def make_deps(snapshot: Snapshot, chat: ChatClient, config: Config | None = None) -> Deps:
    ctx = ToolContext(snapshot=snapshot, embedder=LocalEmbedding(), counter=COUNTER)

    async def tool(name: str, args: dict[str, Any]) -> ToolCallOutcome:
        return await run_tool(ctx, name, args)

    return Deps(
        chat=chat,
        run_tool=tool,
        tool_descriptions=render_tools(top_k=ctx.params.top_k),
        counter=COUNTER,
        snapshot=snapshot,
        bundle=load_baseline(),
        limits=Limits(retry_delay_s=0.0),
        manifest_extra=manifest_extra(
            config or Config(), tool_contract_version=TOOL_CONTRACT_VERSION
        ),
    )


def search_then_cite(body: dict[str, Any]) -> Text:
    """Turn 1 searches; a later turn cites the first block of the last observation."""
    last = body["messages"][-1]["content"]
    found = _CITATION.search(last.replace('": "', '":"'))
    if found is None:
        args = json.dumps({"query": "river carries the most water"})
        return Text(f"Thought: I should search.\nAction: search_blocks[{args}]")
    return Text(
        "Thought: The search answered it.\n"
        f"Action: Finish[The Amazon carries the most water.【来源:{found.group(1)}】]"
    )


def script(server: ChatServer, requests: int = 1) -> None:
    server.script(*([search_then_cite] * (2 * requests)))


async def run_events(deps: Deps, question: str = QUESTION) -> tuple[RequestFinished, list[Event]]:
    events: list[Event] = []

    async def emit(event: Event) -> None:
        events.append(event)

    finished = await run_request(deps, Request(question=question), emit)
    return finished, events


def messages_segment(raw_body: bytes) -> bytes:
    """The `messages` array exactly as it went over the wire (the client's field order is
    model, messages, max_tokens, …; quotes inside strings are escaped, so the keys are
    found unambiguously)."""
    start = raw_body.index(b'"messages":') + len(b'"messages":')
    end = raw_body.rindex(b',"max_tokens":')
    return raw_body[start:end]


def files_containing(root: Path, needle: bytes) -> list[Path]:
    return [p for p in sorted(root.rglob("*")) if p.is_file() and needle in p.read_bytes()]
