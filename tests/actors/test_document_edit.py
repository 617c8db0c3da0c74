"""Editing a document's title, source label and aliases: a copy-on-write snapshot that parses
and embeds nothing, an edit that later imports keep, and `citewise documents edit`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from actors import App, AppError
from cli import main
from index.snapshot import verify_snapshot
from tests.corpus import make_app, run_import

EVENTS = "# Node events\n\n## Emitters\n\nAn EventEmitter calls every listener synchronously.\n"
STREAMS = "# Streams\n\n## Backpressure\n\nwrite() returns false when the buffer is full.\n"


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "events.md").write_text(EVENTS, encoding="utf-8")
    (folder / "streams.md").write_text(STREAMS, encoding="utf-8")
    return folder


def tool(app: App, name: str, args: dict[str, Any]) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        outcome = await app.run_tool(name, json.dumps(args))
        result: dict[str, Any] = json.loads(outcome.json)
        return result

    return anyio.run(go, backend="trio")


def edit(app: App, item: str, **changes: Any) -> Any:
    return anyio.run(lambda: app.edit_document(item, **changes), backend="trio")


def test_edit_makes_a_child_snapshot_that_parses_and_embeds_nothing(home: Path, docs: Path) -> None:
    app = make_app(home)
    first = run_import(app, [docs])
    before = tool(app, "search_blocks", {"query": "listener synchronously"})["blocks"][0]

    result = edit(app, "events.md", title="The events chapter", aliases=["EE", " node events "])

    assert result.changed and result.previous_snapshot_id == first.snapshot_id
    assert result.title == "The events chapter" and result.aliases == ("EE", "node events")
    manifest = app.catalog().active_manifest()
    assert manifest is not None and manifest.snapshot_id == result.snapshot_id
    assert manifest.parent_id == first.snapshot_id
    s = manifest.stats
    assert (s.documents_in, s.blocks_embedded, s.embedding_tokens) == (0, 0, 0)
    assert s.documents_carried == 2 and s.blocks_indexed == s.blocks_carried > 0
    assert [d.doc_id for d in manifest.documents] == [d.doc_id for d in first_docs(app, first)]
    assert verify_snapshot(app.catalog().snapshot_path(manifest.snapshot_id)).ok
    # Citations of the same block keep their id and now show the new title.
    after = tool(app, "search_blocks", {"query": "listener synchronously"})["blocks"][0]
    assert after["citation"] == before["citation"]
    assert (before["title"], after["title"]) == ("Node events", "The events chapter")
    # Aliases feed list_documents' source matching (case-insensitive); titles its title filter.
    by_alias = tool(app, "list_documents", {"source": "ee"})["documents"]
    assert [d["title"] for d in by_alias] == ["The events chapter"]
    assert tool(app, "list_documents", {"source": "Node Events"})["total"] == 1
    assert tool(app, "list_documents", {"title_contains": "chapter"})["total"] == 1
    # The older snapshot is immutable: rolling back brings the old title back.
    app.activate(first.snapshot_id)
    assert tool(app, "list_documents", {"source": "events.md"})["documents"][0]["title"] == (
        "Node events"
    )


def first_docs(app: App, result: Any) -> Any:
    manifest = app.catalog().manifest(result.snapshot_id)
    assert manifest is not None
    return manifest.documents


def test_the_edit_survives_importing_the_changed_file_again(home: Path, docs: Path) -> None:
    app = make_app(home)
    run_import(app, [docs])
    old_id = edit(app, "events.md", title="Events, edited", source_label="node/events").doc_id
    (docs / "events.md").write_text(EVENTS + "\n## Errors\n\nAn error event throws.\n", "utf-8")

    again = run_import(app, [docs])

    assert again.stats.documents_reused == 1  # streams.md; events.md was parsed anew
    listed = tool(app, "list_documents", {})["documents"]
    events = next(d for d in listed if d["source_label"] == "node/events")
    assert events["title"] == "Events, edited" and events["doc_id"] != old_id
    assert next(d for d in listed if d["doc_id"] != events["doc_id"])["title"] == "Streams"


def test_removing_a_document_forgets_its_edit(home: Path, docs: Path) -> None:
    app = make_app(home)
    run_import(app, [docs])
    edit(app, "events.md", title="Events, edited")
    anyio.run(lambda: app.remove(["events.md"]), backend="trio")
    run_import(app, [docs])
    titles = sorted(d["title"] for d in tool(app, "list_documents", {})["documents"])
    assert titles == ["Node events", "Streams"]


def test_an_edit_that_changes_nothing_makes_no_snapshot(home: Path, docs: Path) -> None:
    app = make_app(home)
    first = run_import(app, [docs])
    result = edit(app, "events.md", title="  Node   events ")
    assert not result.changed and result.snapshot_id == first.snapshot_id
    assert len(app.catalog().list()) == 1


@pytest.mark.parametrize(
    ("item", "changes", "message"),
    [
        ("events.md", {"title": "   "}, "the title is empty"),
        ("events.md", {}, "nothing to change"),
        ("nope.md", {"title": "X"}, "neither a doc_id nor a document source"),
    ],
)
def test_edits_that_cannot_be_made_say_why(
    home: Path, docs: Path, item: str, changes: dict[str, Any], message: str
) -> None:
    app = make_app(home)
    first = run_import(app, [docs])
    with pytest.raises(AppError, match=message):
        edit(app, item, **changes)
    assert app.catalog().active_id() == first.snapshot_id


def test_documents_edit_command_prints_one_json_document(
    home: Path, docs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_import(make_app(home), [docs])
    capsys.readouterr()
    code = main(["documents", "edit", "streams.md", "--title", "Streams [draft]", "--json"])
    result = json.loads(capsys.readouterr().out)
    assert code == 0 and result["changed"] and result["title"] == "Streams [draft]"
    code = main(["documents", "edit", result["doc_id"], "--alias", "S1", "--alias", "s1", "--json"])
    assert code == 0 and json.loads(capsys.readouterr().out)["aliases"] == ["S1"]
    code = main(["documents", "list", "--json"])
    listed = json.loads(capsys.readouterr().out)["documents"]
    assert [(d["title"], d["aliases"]) for d in listed] == [
        ("Node events", []),
        ("Streams [draft]", ["S1"]),
    ]
    code = main(["documents", "edit", "streams.md", "--title", ""])
    assert code == 2 and "the title is empty" in capsys.readouterr().err
