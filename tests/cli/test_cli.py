"""The citewise command line: JSON shapes of SPEC §15, exit codes of SPEC §12."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cli import main
from tests.corpus import REPO


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def notes(folder: Path, **files: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def test_version_prints_the_package_version() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "cli", "--version"], cwd=REPO, capture_output=True, text=True
    )
    assert out.returncode == 0 and out.stdout.startswith("citewise ")


def test_status_json_has_the_fixed_fields(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "status", "--json")
    assert code == 0
    assert json.loads(out) == {
        "collection": "default",
        "active_snapshot": None,
        "import": None,
        "data_dir": str(home),
    }
    folder = notes(tmp_path / "n", **{"a.md": "# A\n\nAlpha.\n", "skip.bin": "x"})
    code, out, _ = run(capsys, "import", str(folder), "--json")
    assert code == 0, out
    assert json.loads(out)["status"] == "ready"
    code, out, _ = run(capsys, "status", "--json")
    status = json.loads(out)
    active = status["active_snapshot"]
    for field in (
        "id",
        "status",
        "content_hash",
        "documents",
        "blocks",
        "failed_documents",
        "skipped",
        "created_at",
    ):
        assert field in active
    assert active["documents"] == 1 and active["blocks"] >= 1
    assert active["skipped"] == [{"source": "skip.bin", "reason": "unsupported_type"}]
    assert status["import"] is None


def test_import_exit_codes_full_partial_failed_and_usage(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = notes(tmp_path / "good", **{"a.md": "# A\n\nAlpha.\n"})
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "broken.pdf").write_bytes(b"%PDF-1.7 nonsense")
    assert run(capsys, "import", str(good))[0] == 0
    code, out, _ = run(capsys, "import", str(bad), "--json")
    assert code == 3  # ready_partial: the new batch failed, earlier documents stay usable
    assert json.loads(out)["failed_documents"][0]["source"] == "broken.pdf"
    code, out, err = run(capsys, "import", "--collection", "other", str(bad))
    assert code == 1 and "failed" in out
    code, _, err = run(capsys, "import")
    assert code == 2 and "nothing to import" in err
    code, _, err = run(capsys, "status", "--collection", "../escape")
    assert code == 2 and "not a valid collection name" in err


def test_snapshots_list_activate_verify_and_gc(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = notes(tmp_path / "n", **{"a.md": "# A\n\none\n"})
    run(capsys, "import", str(folder))
    (folder / "a.md").write_text("# A\n\ntwo\n", encoding="utf-8")
    run(capsys, "import", str(folder))
    code, out, _ = run(capsys, "snapshots", "list", "--json")
    listing = json.loads(out)
    first, second = listing["snapshots"]
    assert listing["active"] == second["id"] and second["parent_id"] == first["id"]
    code, out, _ = run(capsys, "snapshots", "activate", first["id"], "--json")
    assert code == 0 and json.loads(out)["active"] == first["id"]
    code, out, _ = run(capsys, "snapshots", "verify", first["id"], "--json")
    assert code == 0 and json.loads(out)["ok"] is True
    # damage one file of the second snapshot: verify says so with exit 1
    victim = home / "collections" / "default" / "snapshots" / second["id"] / "text.bin"
    data = bytearray(victim.read_bytes())
    data[0] ^= 0xFF
    victim.write_bytes(bytes(data))
    code, out, _ = run(capsys, "snapshots", "verify", second["id"], "--json")
    assert code == 1 and json.loads(out)["ok"] is False
    code, _, err = run(capsys, "snapshots", "activate", "s-missing")
    assert code == 2 and "does not exist" in err
    code, out, _ = run(capsys, "snapshots", "gc", "--json")
    assert code == 0 and set(json.loads(out)) >= {"deleted", "kept", "pinned", "retry_later"}


def test_collections_create_use_rename_delete(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "collections", "create", "papers")[0] == 0
    code, out, _ = run(capsys, "collections", "use", "papers", "--json")
    assert json.loads(out) == {"collections": ["default", "papers"], "current": "papers"}
    code, out, _ = run(capsys, "status", "--json")
    assert json.loads(out)["collection"] == "papers"
    run(capsys, "collections", "rename", "papers", "books")
    code, out, _ = run(capsys, "collections", "list", "--json")
    assert json.loads(out) == {"collections": ["books", "default"], "current": "books"}
    code, _, err = run(capsys, "collections", "delete", "books")
    assert code == 2 and "--yes" in err
    code, out, _ = run(capsys, "collections", "delete", "books", "--yes", "--json")
    assert json.loads(out) == {"collections": ["default"], "current": "default"}


def test_remove_by_source_and_unknown_names_are_refused(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = notes(tmp_path / "n", **{"a.md": "# A\n\nA.\n", "b.md": "# B\n\nB.\n"})
    run(capsys, "import", str(folder))
    code, out, _ = run(capsys, "remove", "a.md", "--json")
    assert code == 0 and json.loads(out)["status"] == "ready"
    code, out, _ = run(capsys, "status", "--json")
    assert json.loads(out)["active_snapshot"]["documents"] == 1
    code, _, err = run(capsys, "remove", "nope.md")
    assert code == 2 and "neither a document source nor a doc_id" in err


def test_tool_command_prints_the_exact_result_json_with_contract_exit_codes(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "tool", "list_documents", "{}")
    assert code == 2 and json.loads(out)["error"]["code"] == "collection_unavailable"
    folder = notes(tmp_path / "n", **{"events.md": "# Events\n\nEmitters call listeners.\n"})
    run(capsys, "import", str(folder))
    code, out, _ = run(capsys, "tool", "list_documents", "{}")
    listing = json.loads(out)
    assert code == 0 and listing["total"] == 1 and listing["token_estimate"] > 0
    doc_id = listing["documents"][0]["doc_id"]
    code, out, _ = run(capsys, "tool", "scan_term", json.dumps({"term": "LISTENERS"}))
    hits = json.loads(out)
    assert code == 0 and hits["count"] == 1 and hits["hits"][0]["doc_id"] == doc_id
    code, out, _ = run(capsys, "tool", "scan_term", '{"term": "dselect"}')
    assert code == 0 and json.loads(out)["empty_reason"] == "no_match"
    code, out, _ = run(capsys, "tool", "search_blocks", '{"query": "x", "doc_ids": []}')
    assert code == 2 and json.loads(out)["error"]["code"] == "invalid_argument"
    code, out, _ = run(capsys, "tool", "list_blocks", json.dumps({"doc_id": "d-nope"}))
    assert code == 2 and json.loads(out)["error"]["code"] == "scope_not_found"
    code, _, err = run(capsys, "tool", "delete_everything", "{}")
    assert code == 2 and "unknown tool" in err
    # the same call by hand on a named snapshot gives the same bytes
    code, listed, _ = run(capsys, "snapshots", "list", "--json")
    sid = json.loads(listed)["active"]
    assert run(capsys, "tool", "list_documents", "{}", "--snapshot", sid)[1] == out_of(
        capsys, "tool", "list_documents", "{}"
    )


def out_of(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    return run(capsys, *argv)[1]
