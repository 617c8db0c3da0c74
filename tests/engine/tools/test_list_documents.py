"""list_documents: metadata-only matching, whole source names and aliases, stable order, and
empty results that say why."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

from engine.tools import ListDocumentsResult, run_tool
from index.snapshot import Snapshot
from tests.engine.tools.snapshots import EVENTS, FAQ, HANDBOOK, context, record, write_snapshot


@pytest.fixture
def snap(tmp_path: Path, open_snapshot: Callable[[Path], Snapshot]) -> Snapshot:
    docs = [
        msgspec.structs.replace(
            record(EVENTS, "nodejs-md/events.md"), aliases=("Node Events", "node-events")
        ),
        record(HANDBOOK, "debian-reference.zh-cn.txt"),
        msgspec.structs.replace(
            record(FAQ, "python-faq/library.html"), source_label="Python FAQ/Library"
        ),
        # Same label as the FAQ, other title: the order must fall back to the title.
        msgspec.structs.replace(
            record(EVENTS, "converted/a.docx"), source_label="Python FAQ/Library", title="Aardvark"
        ),
    ]
    return open_snapshot(write_snapshot(tmp_path / "s", docs))


def listed(snap: Snapshot, **args: Any) -> ListDocumentsResult:
    outcome = anyio.run(run_tool, context(snap), "list_documents", args)
    assert isinstance(outcome.result, ListDocumentsResult), outcome.json
    return outcome.result


def sources(result: ListDocumentsResult) -> list[str]:
    return [d.source_label for d in result.documents]


@pytest.mark.parametrize(
    "name",
    [
        "nodejs-md/events.md",
        "NODEJS-MD/Events.MD",
        "  nodejs-md/events.md ",
        "nodejs-md\\events.md",
        "./nodejs-md/events.md",
        "events.md",
        "node events",
        "NODE-EVENTS",
    ],
)
def test_source_matches_the_whole_name_or_alias_ignoring_case(snap: Snapshot, name: str) -> None:
    assert sources(listed(snap, source=name)) == ["nodejs-md/events.md"]


@pytest.mark.parametrize("name", ["ents.md", "nodejs-md", "events", "node", "md/events.md"])
def test_source_does_not_match_part_of_a_name(snap: Snapshot, name: str) -> None:
    result = listed(snap, source=name)
    assert result.documents == () and result.total == 0
    assert result.empty_reason == "no_match"


def test_source_matches_the_label_as_well_as_the_canonical_source(snap: Snapshot) -> None:
    assert [d.title for d in listed(snap, source="python-faq/library.html").documents] == [
        "Library and Extension FAQ"
    ]
    labelled = listed(snap, source="python faq/library")
    assert [d.title for d in labelled.documents] == ["Aardvark", "Library and Extension FAQ"]


def test_lang_filters_by_language_code(snap: Snapshot) -> None:
    assert sources(listed(snap, lang="ZH")) == ["debian-reference.zh-cn.txt"]
    assert listed(snap, lang="fr").empty_reason == "no_match"


def test_title_contains_matches_titles_never_body_text(snap: Snapshot) -> None:
    assert sources(listed(snap, title_contains="extension")) == ["Python FAQ/Library"]
    assert sources(listed(snap, title_contains="参考")) == ["debian-reference.zh-cn.txt"]
    body_only = listed(snap, title_contains="asynchronous event model")  # in Events' body
    assert body_only.documents == () and body_only.empty_reason == "no_match"


def test_filters_combine_and_results_sort_by_label_then_title_then_doc_id(snap: Snapshot) -> None:
    everything = listed(snap)
    assert everything.total == len(everything.documents) == 4
    assert [(d.source_label, d.title) for d in everything.documents] == [
        ("debian-reference.zh-cn.txt", "Debian 参考手册"),
        ("nodejs-md/events.md", "Events"),
        ("Python FAQ/Library", "Aardvark"),
        ("Python FAQ/Library", "Library and Extension FAQ"),
    ]
    assert listed(snap, lang="en", title_contains="aard").total == 1
    assert listed(snap, lang="zh", title_contains="aard").empty_reason == "no_match"


def test_each_document_reports_its_section_and_block_counts(snap: Snapshot) -> None:
    events = next(d for d in listed(snap).documents if d.title == "Events")
    info = next(d for d in snap.documents if d.doc_id == events.doc_id)
    assert (events.sections, events.blocks) == (len(info.sections), info.block_count)
    assert events.aliases == ("Node Events", "node-events") and events.lang == "en"


def test_an_empty_collection_says_collection_empty(
    tmp_path: Path, open_snapshot: Callable[[Path], Snapshot]
) -> None:
    empty = open_snapshot(write_snapshot(tmp_path / "empty", []))
    result = listed(empty)
    assert result.documents == () and result.empty_reason == "collection_empty"
    assert listed(empty, source="x").empty_reason == "collection_empty"
