"""Importing several folders at once (App.import_paths, what the CLI and the web import both
run): files with the same relative name in different folders all land, named by their folder."""

from __future__ import annotations

from pathlib import Path

from tests.corpus import make_app, run_import


def _folders(root: Path, names: int) -> list[Path]:
    folders = []
    for side in ("a", "b"):
        folder = root / side
        (folder / "notes").mkdir(parents=True)
        for i in range(names):
            (folder / "notes" / f"n{i}.md").write_text(
                f"# {side} {i}\n\nText of note {i} in folder {side}.\n", encoding="utf-8"
            )
        folders.append(folder)
    return folders


def test_two_folders_with_the_same_relative_names_import_every_file(tmp_path: Path) -> None:
    a, b = _folders(tmp_path / "docs", 3)
    app = make_app(tmp_path / "home")
    result = run_import(app, [a, b])
    assert result.status == "ready", result
    assert result.stats.documents_succeeded == 6
    manifest = app.catalog().active_manifest()
    assert manifest is not None
    assert sorted(d.source for d in manifest.documents) == [
        f"{side}/notes/n{i}.md" for side in ("a", "b") for i in range(3)
    ]
    # Where each came from is recorded under the same name (the source view, retries).
    assert app.retry_paths(["b/notes/n1.md"]) == [(b / "notes" / "n1.md").resolve()]
