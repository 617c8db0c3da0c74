"""list_blocks: all blocks of the scope in block_index order — subsections included, unions
deduplicated, never truncated, and a scope that is wrong anywhere fails as a whole."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.parsing.model import PATH_SEPARATOR, unique_paths
from engine.tools import BlocksResult, ErrorResult, ToolOutcome, run_tool
from index.records import BlockRecord, DocumentRecord, SectionRecord
from index.snapshot import Snapshot
from tests.engine.tools.snapshots import context, library, write_snapshot


@pytest.fixture
def snap(tmp_path: Path, open_snapshot: Callable[[Path], Snapshot]) -> Snapshot:
    return open_snapshot(write_snapshot(tmp_path / "s", [*library(), bare_headings()]))


def bare_headings() -> DocumentRecord:
    """A chapter whose first section is a heading with no text (no blocks at all)."""
    sections = [
        ("Appendix", 1, 0),
        ("Appendix / Empty part", 2, 0),
        ("Appendix / Full part", 2, 2),
    ]
    return hand_built("bare", sections)


def hand_built(name: str, sections: list[tuple[str, int, int]]) -> DocumentRecord:
    """A document from (path, depth, number of blocks) per section, in document order."""
    records: list[SectionRecord] = []
    blocks: list[BlockRecord] = []
    for ordinal, (path, depth, count) in enumerate(sections):
        for _ in range(count):
            n = len(blocks)
            text = f"{path} block {n}"
            blocks.append(
                BlockRecord(
                    block_index=n, block_id=f"{name}{n}", section=ordinal, text=text, tokens=3
                )
            )
        records.append(
            SectionRecord(
                path=path,
                title=path.rsplit(PATH_SEPARATOR, 1)[-1],
                ordinal=ordinal,
                depth=depth,
                parent=-1,
                direct_blocks=count,
                subtree_blocks=0,
                direct_tokens=3 * count,
                subtree_tokens=0,
                first_sentence="",
            )
        )
    return DocumentRecord(
        doc_id=f"d{name}",
        content_hash=name.encode().hex().ljust(64, "0"),
        source=f"{name}.md",
        source_label=f"{name}.md",
        title=name,
        sections=tuple(records),
        blocks=tuple(blocks),
    )


def list_blocks(snap: Snapshot, **args: Any) -> ToolOutcome:
    return anyio.run(run_tool, context(snap), "list_blocks", args)


def blocks_of(outcome: ToolOutcome) -> list[tuple[str, str]]:
    assert isinstance(outcome.result, BlocksResult), outcome.json
    assert outcome.result.total == len(outcome.result.blocks)
    return [(b.section, b.text) for b in outcome.result.blocks]


def events_id(snap: Snapshot) -> str:
    return next(d.doc_id for d in snap.documents if d.source == "nodejs-md/events.md")


def test_omitted_or_empty_section_paths_return_the_whole_document_in_order(snap: Snapshot) -> None:
    doc = events_id(snap)
    info = next(d for d in snap.documents if d.doc_id == doc)
    whole = [snap.block(o).text for o in info.block_range]
    assert [t for _, t in blocks_of(list_blocks(snap, doc_id=doc))] == whole
    assert [t for _, t in blocks_of(list_blocks(snap, doc_id=doc, section_paths=[]))] == whole
    outcome = list_blocks(snap, doc_id=doc)
    assert [b["block_id"] for b in json.loads(outcome.json)["blocks"]] == [
        snap.block(o).block_id for o in info.block_range
    ]


def test_a_parent_and_its_child_give_the_union_once_in_original_order(snap: Snapshot) -> None:
    doc = events_id(snap)
    child = "Events / Class: EventEmitter / emitter.setMaxListeners(n)"
    parent = "Events / Class: EventEmitter"
    got = blocks_of(list_blocks(snap, doc_id=doc, section_paths=[child, "Events / Notes", parent]))
    assert [s for s, _ in got] == [parent, child, child, "Events / Notes"]
    assert len({t for _, t in got}) == len(got)


def test_a_section_path_includes_all_its_descendants(snap: Snapshot) -> None:
    doc = events_id(snap)
    got = blocks_of(list_blocks(snap, doc_id=doc, section_paths=["Events"]))
    whole = blocks_of(list_blocks(snap, doc_id=doc))
    assert got == whole


def test_one_missing_path_fails_the_whole_call_and_names_it(snap: Snapshot) -> None:
    doc = events_id(snap)
    outcome = list_blocks(snap, doc_id=doc, section_paths=["Events / Notes", "Notes", "Nope"])
    assert isinstance(outcome.result, ErrorResult)
    assert outcome.result.error.code == "scope_not_found"
    message = outcome.result.error.message
    assert "'Notes'" in message and "'Nope'" in message
    assert "Listeners are called" not in outcome.json.decode()  # nothing partial


def test_a_long_document_comes_back_whole_never_truncated(
    tmp_path: Path, open_snapshot: Callable[[Path], Snapshot]
) -> None:
    sections = [(f"Part {i}", 1, 30) for i in range(40)]  # 1,200 blocks
    snap = open_snapshot(write_snapshot(tmp_path / "long", [hand_built("long", sections)]))
    got = blocks_of(list_blocks(snap, doc_id="dlong"))
    assert len(got) == 1_200 == snap.documents[0].block_count
    assert [t for _, t in got] == [snap.block(o).text for o in range(1_200)]


def test_one_call_reads_one_document_only(snap: Snapshot) -> None:
    ids = [d.doc_id for d in snap.documents][:2]
    outcome = list_blocks(snap, doc_id=ids)
    assert isinstance(outcome.result, ErrorResult)
    assert (
        outcome.result.error.code == "invalid_argument" and "doc_id" in outcome.result.error.message
    )


def test_an_unknown_doc_id_is_scope_not_found(snap: Snapshot) -> None:
    outcome = list_blocks(snap, doc_id="dmissing")
    assert isinstance(outcome.result, ErrorResult)
    assert outcome.result.error.code == "scope_not_found"
    assert "dmissing" in outcome.result.error.message


def test_sections_without_blocks_are_a_legal_empty_scope(snap: Snapshot) -> None:
    outcome = list_blocks(snap, doc_id="dbare", section_paths=["Appendix / Empty part"])
    assert isinstance(outcome.result, BlocksResult)
    assert (outcome.result.blocks, outcome.result.total) == ((), 0)
    assert outcome.result.empty_reason == "scope_empty"
    full = blocks_of(list_blocks(snap, doc_id="dbare", section_paths=["Appendix"]))
    assert [s for s, _ in full] == ["Appendix / Full part"] * 2


_titles = st.sampled_from(["Intro", "Notes", "Usage", "附录", "A / B"])


@st.composite
def outlines(draw: st.DrawFn) -> list[tuple[str, int, int]]:
    """Random outlines: titles that repeat, depths that jump, sections with 0-3 blocks."""
    n = draw(st.integers(1, 9))
    titles = [draw(_titles) for _ in range(n)]
    depths = [draw(st.integers(1, 4)) for _ in range(n)]
    counts = [draw(st.integers(0, 3)) for _ in range(n)]
    return list(zip(unique_paths(titles, depths), depths, counts, strict=True))


@given(outline=outlines(), data=st.data())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_any_set_of_paths_gives_exactly_the_naive_union_of_their_subtrees(
    outline: list[tuple[str, int, int]], data: st.DataObject
) -> None:
    paths = [p for p, _, _ in outline]
    chosen = data.draw(st.lists(st.sampled_from(paths), max_size=4))
    doc = hand_built("p", outline)
    # The oracle reads paths only: a block is in scope when its section is a chosen path or
    # lies below one.
    in_scope = [
        (doc.sections[b.section].path, b.text)
        for b in doc.blocks
        if not chosen
        or any(
            doc.sections[b.section].path == p
            or doc.sections[b.section].path.startswith(p + PATH_SEPARATOR)
            for p in chosen
        )
    ]
    with (
        tempfile.TemporaryDirectory() as tmp,
        Snapshot.open(write_snapshot(Path(tmp) / "s", [doc])) as snap,
    ):
        outcome = list_blocks(snap, doc_id="dp", section_paths=chosen)
        if not in_scope:
            assert isinstance(outcome.result, BlocksResult)
            assert outcome.result.empty_reason == "scope_empty"
        assert blocks_of(outcome) == in_scope
        missing = list_blocks(snap, doc_id="dp", section_paths=[*chosen, "Not / There"])
        assert isinstance(missing.result, ErrorResult)
        assert missing.result.error.code == "scope_not_found"
