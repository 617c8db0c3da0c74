"""Citations: checked against the blocks returned in this request, resolved on the snapshot."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from actors.catalog import Catalog
from engine.harness.citations import Evidence, MarkerNumbers, cited, resolve
from engine.paths import DataDir
from engine.tools import (
    TOOL_CONTRACT_VERSION,
    BlockItem,
    BlocksResult,
    ScanHit,
    ScanTermResult,
)
from index.snapshot import Block, Snapshot
from tests.corpus import make_app, run_import

EVENTS = """# Node events

## Emitters

An EventEmitter calls every listener synchronously, in the order they were registered.

## Errors

If an emitter emits 'error' and no listener is registered, the error is thrown.
"""

LOOP = """# 事件循环

事件循环按阶段运行。定时器阶段最先执行。

轮询阶段等待新的 I/O 事件。
"""


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Snapshot]:
    root = tmp_path_factory.mktemp("cite")
    docs = root / "docs"
    docs.mkdir()
    (docs / "events.md").write_text(EVENTS, encoding="utf-8")
    (docs / "loop.md").write_text(LOOP, encoding="utf-8")
    result = run_import(make_app(root / "home"), [docs])
    assert result.status == "ready", result
    with Catalog(DataDir(root / "home"), "default").pin_active() as snap:
        assert snap is not None
        yield snap


def _blocks(snapshot: Snapshot) -> list[Block]:
    return [snapshot.block(i) for i in range(snapshot.n_blocks)]


def _item(b: Block) -> BlockItem:
    return BlockItem(
        citation=b.citation,
        doc_id=b.doc_id,
        block_id=b.block_id,
        title="",
        source_label="",
        section="",
        page_start=b.page_start,
        page_end=b.page_end,
        text=b.text,
    )


def _result(*blocks: Block) -> BlocksResult:
    return BlocksResult(
        blocks=tuple(_item(b) for b in blocks),
        total=len(blocks),
        token_estimate=0,
        contract_version=TOOL_CONTRACT_VERSION,
    )


def _payload(*blocks: Block) -> bytes:
    """A search_blocks / list_blocks result's JSON, as the model and the events carry it."""
    return msgspec.json.encode(_result(*blocks))


def test_a_returned_block_resolves_to_title_section_and_preview(snapshot: Snapshot) -> None:
    block = next(b for b in _blocks(snapshot) if "synchronously" in b.text)
    evidence = Evidence()
    assert evidence.add_result("search_blocks", _payload(block)) == 1
    answer = f"Listeners run in order.【来源:{block.citation}】 Again【来源：{block.citation}】."
    (c,) = resolve(answer, evidence, snapshot)
    assert c.valid and c.problem is None and c.occurrences == 2
    assert c.returned_by == ("search_blocks",)
    assert c.title == "Node events" and c.source_label == "events.md"
    assert c.section_title == "Emitters" and c.section_path.endswith("Emitters")
    assert "An EventEmitter calls every listener synchronously" in c.preview
    assert c.section_path == "Node events / Emitters"
    assert c.label() == "Node events · Emitters"
    assert block.citation not in c.label()  # never the raw id


def test_a_block_never_returned_is_flagged_even_if_it_exists(snapshot: Snapshot) -> None:
    returned, other = _blocks(snapshot)[:2]
    evidence = Evidence()
    evidence.add_result("list_blocks", _payload(returned))
    answer = f"A【来源:{returned.citation}】 B【来源:{other.citation}】"
    first, second = resolve(answer, evidence, snapshot)
    assert first.valid and first.index == 1
    assert not second.valid and second.problem == "not_returned" and second.index == 2
    assert second.title == "" and second.preview == ""  # never shown as evidence
    assert "unverified" in second.label()


def test_a_block_seen_only_as_a_scan_hit_is_located_not_read_until_its_text_is_returned(
    snapshot: Snapshot,
) -> None:
    block = next(b for b in _blocks(snapshot) if "定时器" in b.text)
    evidence = Evidence()
    hit = ScanHit(
        citation=block.citation,
        doc_id=block.doc_id,
        block_id=block.block_id,
        title="",
        source_label="",
        section="",
        snippet="定时器",
        count=1,
    )
    hits = ScanTermResult(
        hits=(hit,), count=1, token_estimate=0, contract_version=TOOL_CONTRACT_VERSION
    )
    evidence.add_result("scan_term", msgspec.json.encode(hits))
    answer = f"定时器阶段最先执行【来源:{block.citation}】"
    (c,) = resolve(answer, evidence, snapshot)
    # the model knows where the block is, not what it says: never valid evidence
    assert not c.valid and c.problem == "located_not_read" and c.located_not_read
    assert c.title == "事件循环" and c.returned_by == ("scan_term",)  # shown where it is
    assert c.label().startswith("located by a term scan, not read: 事件循环")
    assert block.citation not in evidence and evidence.located(block.citation)
    numbers = MarkerNumbers(evidence)
    assert numbers.feed(answer) + numbers.flush() == "定时器阶段最先执行[1?]"
    # once list_blocks returns its full text, the same citation is evidence
    evidence.add_returned("list_blocks", _result(block))
    (c,) = resolve(answer, evidence, snapshot)
    assert c.valid and c.problem is None and c.returned_by == ("list_blocks", "scan_term")
    assert not evidence.located(block.citation)


def test_a_typed_result_and_its_json_register_the_same_blocks(snapshot: Snapshot) -> None:
    one, two = _blocks(snapshot)[:2]
    typed, decoded = Evidence(), Evidence()
    assert typed.add_returned("list_blocks", _result(one, two)) == 2
    assert decoded.add_result("list_blocks", _payload(one, two)) == 2
    for block in (one, two):
        assert typed.tools(block.citation) == decoded.tools(block.citation) == ("list_blocks",)


def test_a_payload_that_is_not_the_tools_result_registers_nothing(snapshot: Snapshot) -> None:
    block = _blocks(snapshot)[0]
    evidence = Evidence()
    assert evidence.add_result("get_outline", _payload(block)) == 0  # not an outline
    assert evidence.add_result("no_such_tool", _payload(block)) == 0
    assert evidence.add_result("list_blocks", b"not json") == 0
    assert block.citation not in evidence


def test_invented_and_malformed_ids_are_flagged(snapshot: Snapshot) -> None:
    evidence = Evidence()
    evidence.add("nodoc", "b1", "search_blocks")  # returned, yet not in this snapshot
    answer = "x【来源:nodoc#b1】 y【来源:madeup#b9】 z【来源:nohash】"
    a, b, c = resolve(answer, evidence, snapshot)
    assert (a.valid, a.problem) == (False, "not_in_snapshot")
    assert (b.valid, b.problem) == (False, "not_returned")
    assert (c.valid, c.problem) == (False, "malformed")


def test_several_ids_in_one_marker_are_each_checked(snapshot: Snapshot) -> None:
    one, two = _blocks(snapshot)[:2]
    evidence = Evidence()
    evidence.add_result("list_blocks", _payload(one, two))
    assert cited(f"x【来源:{one.citation}, {two.citation}】") == [
        (one.citation, 1),
        (two.citation, 1),
    ]
    assert all(
        c.valid for c in resolve(f"x【来源:{one.citation}，{two.citation}】", evidence, snapshot)
    )


@pytest.mark.parametrize("cut", range(1, 60, 3))
def test_streamed_markers_are_numbered_as_resolve_numbers_them(
    snapshot: Snapshot, cut: int
) -> None:
    one, two = _blocks(snapshot)[:2]
    evidence = Evidence()
    evidence.add_result("search_blocks", _payload(one))
    answer = f"【注】A【来源:{one.citation}】 B【来源:{two.citation}】 C【来源:{one.citation}】 end"
    numbers = MarkerNumbers(evidence)
    shown = "".join(numbers.feed(answer[i : i + cut]) for i in range(0, len(answer), cut))
    shown += numbers.flush()
    assert shown == "【注】A[1] B[2?] C[1] end"
    indexes = {c.citation: (c.index, c.valid) for c in resolve(answer, evidence, snapshot)}
    assert indexes == {one.citation: (1, True), two.citation: (2, False)}


def test_unclosed_bracket_is_passed_through_when_the_stream_ends(tmp_path: Path) -> None:
    numbers = MarkerNumbers(Evidence())
    assert numbers.feed("see 【来源:abc") == "see "
    assert numbers.flush() == "【来源:abc"


def test_a_pdf_block_is_placed_by_the_page_labels_the_book_prints(tmp_path: Path) -> None:
    import pymupdf

    from web.answer_view import chip_label
    from web.i18n import Texts

    pdf: Any = pymupdf.open()
    for topic in ("preface", "streams"):  # a page of sentences each: a few blocks per page
        page = pdf.new_page()
        for k in range(40):
            page.insert_text((72, 60 + 18 * k), f"Line {k} of the {topic} says {k * 7} things.")
    # the preface is printed as page "xii", the first chapter starts at page 1
    pdf.set_page_labels(
        [
            {"startpage": 0, "prefix": "", "style": "r", "firstpagenum": 12},
            {"startpage": 1, "prefix": "", "style": "D", "firstpagenum": 1},
        ]
    )
    docs = tmp_path / "docs"
    docs.mkdir()
    pdf.save(docs / "book.pdf")
    assert run_import(make_app(tmp_path / "home"), [docs]).status == "ready"
    with Catalog(DataDir(tmp_path / "home"), "default").pin_active() as snap:
        assert snap is not None
        blocks = _blocks(snap)
        evidence = Evidence()
        evidence.add_result("search_blocks", _payload(*blocks))
        found = resolve("".join(f"x【来源:{b.citation}】" for b in blocks), evidence, snap)
    by_page = {(c.page_start, c.page_end): c for c in found}
    preface, chapter = by_page[1, 1], by_page[2, 2]
    assert (preface.page_label_start, chapter.page_label_start) == ("xii", "1")
    assert preface.pages_shown() == ("xii", "xii") and preface.label().endswith("p. xii")
    assert chip_label(Texts("en"), chapter).endswith("· p. 1")  # the printed page, not PDF page 2
    assert chip_label(Texts("zh"), preface).endswith("第 xii 页")
