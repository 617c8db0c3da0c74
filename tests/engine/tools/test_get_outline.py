"""get_outline: structure only, in the order asked, duplicates once, all-or-nothing scope."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from engine.tools import ErrorResult, GetOutlineResult, ToolOutcome, run_tool
from index.snapshot import Snapshot
from tests.engine.tools.snapshots import (
    EVENTS,
    context,
    document,
    library,
    record,
    section,
    write_snapshot,
)


@pytest.fixture
def snap(tmp_path: Path, open_snapshot: Callable[[Path], Snapshot]) -> Snapshot:
    plain = document("Plain notes", section("Plain notes", 1, "No headings at all, just text."))
    docs = [*library(), record(plain, "notes.txt")]
    return open_snapshot(write_snapshot(tmp_path / "s", docs))


def outline(snap: Snapshot, **args: Any) -> ToolOutcome:
    return anyio.run(run_tool, context(snap), "get_outline", args)


def ids(snap: Snapshot) -> dict[str, str]:
    return {d.source: d.doc_id for d in snap.documents}


def test_documents_come_in_the_order_asked_and_duplicates_keep_the_first(snap: Snapshot) -> None:
    d = ids(snap)
    asked = [d["python-faq/library.html"], d["nodejs-md/events.md"], d["python-faq/library.html"]]
    result = outline(snap, doc_ids=asked).result
    assert isinstance(result, GetOutlineResult)
    assert [doc.doc_id for doc in result.documents] == asked[:2]


def test_one_unknown_doc_id_among_known_ones_fails_the_whole_call(snap: Snapshot) -> None:
    d = ids(snap)
    outcome = outline(snap, doc_ids=[d["nodejs-md/events.md"], "dNOPE1", "dNOPE2"])
    assert isinstance(outcome.result, ErrorResult)
    assert outcome.result.error.code == "scope_not_found"
    assert "'dNOPE1'" in outcome.result.error.message
    assert "'dNOPE2'" in outcome.result.error.message
    assert b"sections" not in outcome.json  # nothing of the known document leaks through


def test_outline_is_structure_without_block_ids_or_body_text(snap: Snapshot) -> None:
    doc_id = ids(snap)["nodejs-md/events.md"]
    outcome = outline(snap, doc_ids=[doc_id])
    info = next(i for i in snap.documents if i.doc_id == doc_id)
    for ordinal in info.block_range:
        assert snap.block(ordinal).block_id.encode() not in outcome.json
    assert b"memory leaks" not in outcome.json  # body text beyond a first sentence


def test_sections_carry_path_position_counts_and_first_sentence_in_document_order(
    snap: Snapshot,
) -> None:
    doc_id = ids(snap)["nodejs-md/events.md"]
    result = outline(snap, doc_ids=[doc_id]).result
    assert isinstance(result, GetOutlineResult)
    (doc,) = result.documents
    expected = record(EVENTS, "nodejs-md/events.md").sections
    assert [s.ordinal for s in doc.sections] == list(range(len(expected)))
    for got, want in zip(doc.sections, expected, strict=True):
        assert (got.path, got.depth, got.direct_blocks, got.subtree_blocks) == (
            want.path,
            want.depth,
            want.direct_blocks,
            want.subtree_blocks,
        )
        assert (got.direct_tokens, got.subtree_tokens, got.first_sentence) == (
            want.direct_tokens,
            want.subtree_tokens,
            want.first_sentence,
        )
    assert doc.sections[0].subtree_blocks == sum(s.direct_blocks for s in doc.sections)
    assert (doc.title, doc.source_label) == ("Events", "nodejs-md/events.md")


def test_duplicate_section_titles_get_unique_paths(snap: Snapshot) -> None:
    result = outline(snap, doc_ids=[ids(snap)["nodejs-md/events.md"]]).result
    assert isinstance(result, GetOutlineResult)
    paths = [s.path for s in result.documents[0].sections]
    assert len(set(paths)) == len(paths)
    assert "Events / Notes" in paths and "Events / Notes (2)" in paths


def test_a_document_without_headings_has_one_root_section(snap: Snapshot) -> None:
    result = outline(snap, doc_ids=[ids(snap)["notes.txt"]]).result
    assert isinstance(result, GetOutlineResult)
    (root,) = result.documents[0].sections
    assert (root.path, root.depth, root.ordinal) == ("Plain notes", 1, 0)
    assert root.subtree_blocks == root.direct_blocks >= 1
