"""`citewise tool` (and `ask -`) in a subprocess: arguments from stdin or a file, the query
limit, a damaged active snapshot answered with collection_unavailable and a recorded reason,
and search_blocks' no_match reached through the snapshot's similarity threshold."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from actors.catalog import Catalog
from engine.paths import DataDir
from tests.corpus import REPO, make_app, run_import
from tests.servers.chat_server import ChatServer, Text

EVENTS = "# Node events\n\n## Emitters\n\nAn EventEmitter calls every listener synchronously.\n"
MORE = EVENTS + "\n## Errors\n\nAn 'error' event without a listener is thrown.\n"
TOOLS = {
    "list_documents": {},
    "get_outline": {"doc_ids": ["d"]},
    "search_blocks": {"query": "listener order"},
    "list_blocks": {"doc_id": "d"},
    "scan_term": {"term": "listener"},
}


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home with two snapshots of one document: the second is active."""
    root = tmp_path_factory.mktemp("cli-tool")
    docs = root / "docs"
    docs.mkdir()
    (docs / "events.md").write_text(EVENTS, encoding="utf-8")
    assert run_import(make_app(root / "home"), [docs]).status == "ready"
    (docs / "events.md").write_text(MORE, encoding="utf-8")
    assert run_import(make_app(root / "home"), [docs]).status == "ready"
    return root / "home"


def _env(home: Path, server: ChatServer | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CITEWISE_")}
    env.update(
        CITEWISE_HOME=str(home),
        CITEWISE_DEEPSEEK_API_KEY="test",
        PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring",
    )
    if server is not None:
        env["CITEWISE_CHAT_BASE_URL"] = server.url
    return env


def _citewise(*args: str, home: Path, stdin: str = "", server: ChatServer | None = None) -> Any:
    return subprocess.run(
        [sys.executable, "-m", "cli", *args],
        cwd=REPO,
        env=_env(home, server),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=180,
    )


def _snapshots(home: Path) -> tuple[str, str]:
    catalog = Catalog(DataDir(home), "default")
    earlier, active = (m.snapshot_id for m in catalog.list())
    assert catalog.active_id() == active
    return earlier, active


def test_arguments_come_from_the_line_from_stdin_or_from_a_file(
    library: Path, tmp_path: Path
) -> None:
    args = json.dumps({"term": "listener"})
    inline = _citewise("tool", "scan_term", args, home=library)
    piped = _citewise("tool", "scan_term", "-", home=library, stdin=args)
    (tmp_path / "args.json").write_text(args, encoding="utf-8")
    filed = _citewise("tool", "scan_term", f"@{tmp_path / 'args.json'}", home=library)
    assert inline.returncode == piped.returncode == filed.returncode == 0, piped.stderr
    assert inline.stdout == piped.stdout == filed.stdout
    assert json.loads(piped.stdout)["count"] == 2
    missing = _citewise("tool", "scan_term", f"@{tmp_path / 'nope.json'}", home=library)
    assert missing.returncode == 2 and "cannot read the arguments" in missing.stderr


def test_a_query_too_long_for_a_command_line_arrives_on_stdin_and_is_refused_with_the_limit(
    library: Path,
) -> None:
    query = "listener " * 30_000  # 270 KB: "Argument list too long" on a command line
    proc = _citewise("tool", "search_blocks", "-", home=library, stdin=json.dumps({"query": query}))
    assert proc.returncode == 2, proc.stderr
    error = json.loads(proc.stdout)["error"]
    assert error["code"] == "invalid_argument"
    assert "the limit is 4,000 (retrieval.max_query_chars)" in error["message"]


def test_a_damaged_active_snapshot_answers_every_tool_and_ask_with_collection_unavailable(
    library: Path, tmp_path: Path, chat_server: ChatServer
) -> None:
    home = tmp_path / "home"
    shutil.copytree(library, home)
    earlier, active = _snapshots(home)
    (home / "collections" / "default" / "snapshots" / active / "blocks.meta").unlink()
    for name, args in TOOLS.items():
        proc = _citewise("tool", name, json.dumps(args), home=home)
        assert proc.returncode == 2, (name, proc.stderr)
        error = json.loads(proc.stdout)["error"]  # the tools' payload, not a bare message
        assert error["code"] == "collection_unavailable", name
        message = error["message"]
        assert f"the active snapshot {active}" in message and "blocks.meta is missing" in message
        assert f"`citewise snapshots verify {active}`" in message
        assert f"`citewise snapshots activate {earlier}`" in message

    asked = _citewise(
        "ask", "--json", "-", home=home, stdin="How do listeners run?\n", server=chat_server
    )
    assert asked.returncode == 1, asked.stderr
    outcome = json.loads(asked.stdout)
    assert outcome["termination_reason"] == "collection_unavailable"
    assert outcome["answer"] is None and "blocks.meta is missing" in outcome["message"]
    assert f"snapshots activate {earlier}" in outcome["message"]
    assert chat_server.requests == []  # no model call
    traces = _citewise("trace", "list", "--json", home=home)
    assert "collection_unavailable" in traces.stdout  # the termination reason is recorded

    # the repair the message names works
    assert _citewise("snapshots", "activate", earlier, home=home).returncode == 0
    repaired = _citewise("tool", "scan_term", json.dumps({"term": "listener"}), home=home)
    assert repaired.returncode == 0 and json.loads(repaired.stdout)["count"] == 1


def test_no_match_is_reachable_through_the_snapshot_threshold_end_to_end(
    tmp_path: Path, chat_server: ChatServer
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "events.md").write_text(EVENTS, encoding="utf-8")
    home = tmp_path / "home"
    strict = make_app(home, retrieval={"min_similarity": 0.95})
    assert run_import(strict, [docs]).status == "ready"
    unrelated = {"query": "zebra migration quantum"}  # no shared word, low similarity

    proc = _citewise("tool", "search_blocks", json.dumps(unrelated), home=home)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["blocks"] == [] and result["total"] == 0
    assert result["empty_reason"] == "no_match"

    def answer(body: dict[str, Any]) -> Text:
        payload = json.loads(body["messages"][-1]["content"].splitlines()[-2])["payload"]
        assert payload["empty_reason"] == "no_match"
        return Text("Thought: nothing.\nAction: Finish[The documents do not cover zebras.]")

    chat_server.script(
        Text(f"Thought: search.\nAction: search_blocks[{json.dumps(unrelated)}]"), answer
    )
    asked = _citewise(
        "ask", "--json", "-", home=home, stdin="Do zebras migrate?", server=chat_server
    )
    assert asked.returncode == 0, asked.stderr
    outcome = json.loads(asked.stdout)
    assert outcome["termination_reason"] == "finished" and outcome["citations"] == []
    assert "Do zebras migrate?" in chat_server.requests[0].body["messages"][1]["content"]
    assert len(chat_server.requests) == 2
