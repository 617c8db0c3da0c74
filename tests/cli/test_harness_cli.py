"""`citewise ask` and `citewise keys` in a subprocess against the loopback chat server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.corpus import REPO, make_app, run_import
from tests.servers.chat_server import ChatServer, Text

EVENTS = "# Node events\n\n## Emitters\n\nAn EventEmitter calls every listener synchronously.\n"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cli-ask")
    docs = root / "docs"
    docs.mkdir()
    (docs / "events.md").write_text(EVENTS, encoding="utf-8")
    assert run_import(make_app(root / "home"), [docs]).status == "ready"
    return root / "home"


def _env(home: Path, server: ChatServer, key: str = "test") -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CITEWISE_")}
    env.update(
        CITEWISE_HOME=str(home),
        CITEWISE_CHAT_BASE_URL=server.url,
        CITEWISE_DEEPSEEK_API_KEY=key,
        PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring",
    )
    return env


def _citewise(*args: str, env: dict[str, str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cli", *args],
        cwd=REPO,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _search() -> Text:
    return Text('Thought: search.\nAction: search_blocks[{"query": "listener order"}]')


def _cite(body: dict[str, Any]) -> Text:
    observation = json.loads(body["messages"][-1]["content"].splitlines()[-2])
    citation = observation["payload"]["blocks"][0]["citation"]
    answer = f"Listeners run synchronously.【来源:{citation}】 Made up.【来源:nodoc#b1】"
    return Text(f"Thought: enough.\nAction: Finish[{answer}]", chunk_chars=3, chunk_delay_s=0.02)


def test_ask_streams_a_cited_answer_then_resolved_sources(
    home: Path, chat_server: ChatServer
) -> None:
    chat_server.script(_search(), _cite)
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli", "ask", "How do listeners run?"],
        cwd=REPO,
        env=_env(home, chat_server),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    first = proc.stdout.read(1)
    first_at = time.monotonic()
    rest, stderr = proc.communicate(timeout=120)
    stdout = (first + rest).decode()
    assert proc.returncode == 0, stderr.decode()
    answer_request = chat_server.requests[1]
    assert first_at < answer_request.chunk_times[-1]  # printed while the answer still streamed
    assert answer_request.headers["authorization"] == "Bearer test"
    assert stdout.startswith("Listeners run synchronously.[1] Made up.[2?]\n")
    assert "[1] Node events · Emitters" in stdout
    assert "[2?] unverified source" in stdout
    assert "【来源" not in stdout and "#" not in stdout  # never raw ids
    assert "finished" in stderr.decode()


def test_ask_json_prints_one_document_with_the_outcome(home: Path, chat_server: ChatServer) -> None:
    chat_server.script(_search(), _cite)
    proc = _citewise("ask", "--json", "How do listeners run?", env=_env(home, chat_server))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["termination_reason"] == "finished"
    assert doc["answer"].startswith("Listeners run synchronously.【来源:")
    valid, invalid = doc["citations"]
    assert valid["valid"] and valid["title"] == "Node events"
    assert not invalid["valid"] and invalid["problem"] == "not_returned"
    assert doc["counters"]["tool_calls"] == 1 and doc["counters"]["model_calls"] == 2
    assert doc["usage"]["total_tokens"] == doc["counters"]["used_tokens"] > 0
    assert doc["cost"] > 0 and doc["conversation_id"].startswith("c")

    chat_server.script(Text("Thought: t\nAction: Finish[Yes.]"))
    follow = _citewise(
        "ask",
        "--json",
        "--conversation",
        doc["conversation_id"],
        "Really?",
        env=_env(home, chat_server),
    )
    assert json.loads(follow.stdout)["conversation_id"] == doc["conversation_id"]
    carried = chat_server.requests[-1].body["messages"]
    assert "How do listeners run?" in carried[1]["content"]


def test_ask_without_an_answer_exits_1_and_says_why(home: Path, chat_server: ChatServer) -> None:
    chat_server.script(Text("no action"), Text("still no action"))
    proc = _citewise("ask", "q?", env=_env(home, chat_server))
    assert proc.returncode == 1
    assert "protocol_error" in proc.stderr and proc.stdout == ""


def test_keys_set_without_a_credential_store_names_the_environment_variable(
    home: Path, chat_server: ChatServer
) -> None:
    proc = _citewise("keys", "set", "deepseek", env=_env(home, chat_server), stdin="sk-secret\n")
    assert proc.returncode == 1
    assert "CITEWISE_DEEPSEEK_API_KEY" in proc.stderr
    assert "sk-secret" not in proc.stdout + proc.stderr


def test_keys_test_reports_a_working_chat_key(home: Path, chat_server: ChatServer) -> None:
    chat_server.script(Text("p"))
    key = "sk-distinctive-7f3a9c"
    proc = _citewise("keys", "test", "deepseek", "--json", env=_env(home, chat_server, key))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["deepseek"]["ok"] is True
    assert chat_server.requests[-1].headers["authorization"] == f"Bearer {key}"
    assert key not in proc.stdout + proc.stderr
