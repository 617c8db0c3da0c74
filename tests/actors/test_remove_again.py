"""Removing is idempotent: a document already removed says so and changes nothing (the app,
`citewise remove`, with and without --json), a name the collection never held is still an
error, and a removal naming both kinds removes the one still there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from actors.catalog import Catalog
from actors.errors import AppError
from cli import main
from engine.paths import DataDir
from tests.corpus import make_app

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "trio"


def notes(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "a.md").write_text("# A\n\nAbout otters.\n", encoding="utf-8")
    (folder / "b.md").write_text("# B\n\nOn owls.\n", encoding="utf-8")
    return folder


async def test_removing_a_document_already_removed_says_so_and_builds_nothing(
    tmp_path: Path,
) -> None:
    root = tmp_path / "home"
    app = make_app(root)
    try:
        await app.import_paths([notes(tmp_path / "docs")])
        first = await app.remove(["a.md"])
        snapshots = len(Catalog(DataDir(root), "default").list())
        again = await app.remove(["a.md"])
        with pytest.raises(AppError):
            await app.remove(["never-here.md"])
        both = await app.remove(["a.md", "b.md"])
    finally:
        await app.aclose()
    assert first.activated and first.already_removed == []
    assert (again.status, again.activated, again.already_removed) == (None, False, ["a.md"])
    assert again.snapshot_id == first.snapshot_id and again.library_documents == 1
    assert "already removed" in again.message
    assert len(Catalog(DataDir(root), "default").list()) == snapshots + 1  # only `both` built
    assert both.activated and both.already_removed == ["a.md"] and both.library_documents == 0


def test_citewise_remove_twice_succeeds_and_says_already_removed(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["import", str(notes(tmp_path / "docs")), "--json"]) == 0
    capsys.readouterr()
    assert main(["remove", "a.md"]) == 0
    capsys.readouterr()
    assert main(["remove", "a.md"]) == 0
    assert "already removed: a.md" in capsys.readouterr().out
    assert main(["remove", "a.md", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["already_removed"] == ["a.md"] and result["activated"] is False
    assert main(["remove", "never-here.md"]) != 0
