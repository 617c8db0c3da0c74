"""`citewise cache` shows what the import caches take; `--clear` empties them, costing only time:
the library reads as before, and the next import of a document embeds it again. While an
interrupted import waits to be resumed from them, they are not cleared."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from actors.journal import Job, JobTarget, Journal
from engine.paths import DataDir
from tests.cli.test_cli import notes, run


def _usage(capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    code, out, err = run(capsys, "cache", *extra, "--json")
    assert code == 0, err
    usage: dict[str, Any] = json.loads(out)
    return usage


def test_clearing_the_caches_frees_their_room_and_costs_only_time(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = notes(
        tmp_path / "n",
        **{
            "a.md": "# Tides\n\nThe moon's pull raises two bulges of water on opposite sides.\n",
            "b.md": "# Glaciers\n\nIce flows downhill under its own weight, slowly.\n",
        },
    )
    code, out, _ = run(capsys, "import", str(folder), "--json")
    assert code == 0, out
    before = _usage(capsys)
    assert before["embeddings"] > 0 and before["documents"] > 0
    parts = ("embeddings", "recognised_pages", "documents")
    assert before["total"] == sum(before[k] for k in parts)

    cleared = _usage(capsys, "--clear")
    # what they took when cleared (opening the embedding cache adds its 32 KB index file)
    assert cleared["cleared"] is True and cleared["total"] >= before["total"]
    after = _usage(capsys)
    assert after["documents"] == 0
    assert after["embeddings"] < before["embeddings"]

    # the snapshot holds its own copies: search and exact scan read as before
    code, out, _ = run(capsys, "tool", "scan_term", '{"term": "opposite sides"}')
    assert code == 0 and json.loads(out)["hits"], out
    code, out, _ = run(capsys, "tool", "search_blocks", '{"query": "moon pull water bulges"}')
    assert code == 0 and json.loads(out)["blocks"], out

    # the same files in another collection are read and embedded afresh
    assert run(capsys, "collections", "create", "again")[0] == 0
    code, out, _ = run(capsys, "import", str(folder), "--collection", "again", "--json")
    assert code == 0, out
    stats = json.loads(out)["stats"]
    assert stats["embedding_cache_hits"] == 0
    assert stats["blocks_embedded"] == stats["blocks_chunked"] > 0

    code, out, _ = run(capsys, "cache")
    assert "embeddings" in out and "read documents" in out and "MB" in out


def test_caches_an_interrupted_import_resumes_from_are_not_cleared(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = notes(tmp_path / "n", **{"a.md": "# One\n\nA note to keep in the caches.\n"})
    assert run(capsys, "import", str(folder), "--json")[0] == 0
    before = _usage(capsys)
    # a killed import leaves its job in the journal: the next import resumes it
    job = Job(
        job_id="killed",
        collection="default",
        created_at="2026-12-08T00:00:00Z",
        targets=(JobTarget(str(folder)),),
    )
    Journal(DataDir(home).journal("default")).start(job)

    code, _, err = run(capsys, "cache", "--clear")
    assert code == 2 and "interrupted import of default" in err and "citewise import" in err
    assert _usage(capsys) == before
