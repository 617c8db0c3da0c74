"""`citewise import a/ b/` where both folders hold files with the same relative names: every
file lands, each named by its folder, and the closing line counts them all."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli import main


def test_import_of_two_folders_with_the_same_names_keeps_both_sets(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folders = []
    for side in ("a", "b"):
        folder = tmp_path / side
        folder.mkdir()
        for name in ("x.md", "y.md"):
            (folder / name).write_text(
                f"# {side} {name}\n\nFrom folder {side}.\n", encoding="utf-8"
            )
        folders.append(str(folder))
    assert main(["import", *folders, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["status"] == "ready"
    assert result["stats"]["documents_succeeded"] == 4
    assert main(["tool", "list_documents", "{}"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert sorted(d["source_label"] for d in listed["documents"]) == [
        "a/x.md",
        "a/y.md",
        "b/x.md",
        "b/y.md",
    ]
