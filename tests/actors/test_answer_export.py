"""Markdown export of answers and conversations: citations resolved to title, section, page
and the quoted passage; never a raw block id."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.answer_export import (
    ExportedTurn,
    ExportLabels,
    conversation_markdown,
    export_conversation,
    export_name,
    turn_markdown,
)
from actors.catalog import Catalog
from actors.conversations import ConversationTurn
from actors.errors import AppError
from engine.harness import Citation
from engine.paths import DataDir


def _cite(index: int, **kw: object) -> Citation:
    base: dict[str, object] = {
        "index": index,
        "citation": f"d{index}#b{index}",
        "doc_id": f"d{index}",
        "block_id": f"b{index}",
        "valid": True,
    }
    return Citation(**(base | kw))  # type: ignore[arg-type]


EVENTS = _cite(
    1,
    title="Node events",
    section_path="Node events / Emitters",
    page_start=3,
    preview="An EventEmitter calls every listener\nsynchronously.",
)


def test_an_answer_lists_its_sources_with_section_page_and_quote() -> None:
    turn = ExportedTurn(
        question="How do listeners run?",
        answer="Synchronously, in order. [1] [2?]",
        citations=(_cite(2, valid=False), EVENTS),
        meta="2 Dec 10:14 · 0.0012 CNY",
    )
    md = turn_markdown(turn, ExportLabels())
    assert md.startswith("## How do listeners run?\n\nSynchronously, in order. [1] [2?]\n")
    assert "- **[1]** Node events · Emitters · p. 3\n  > An EventEmitter calls every listener "
    assert "synchronously." in md
    assert "- **[2?]** unverified source" in md
    assert md.index("[1]** Node") < md.index("[2?]**")  # in citation order
    assert "d1#b1" not in md and "b2" not in md
    assert md.rstrip().endswith("*2 Dec 10:14 · 0.0012 CNY*")


def test_page_ranges_and_labels_come_in_the_callers_language() -> None:
    labels = ExportLabels(sources="来源", page="第 {page} 页", pages="第 {start}–{end} 页")
    cited = _cite(1, title="手册", section_title="安装", page_start=4, page_end=6)
    md = turn_markdown(
        ExportedTurn(question="怎么装?", answer="见 [1]", citations=(cited,)), labels
    )
    assert "**来源**" in md and "- **[1]** 手册 · 安装 · 第 4–6 页" in md


def test_a_conversation_keeps_every_turn_in_order_and_says_when_one_had_no_answer() -> None:
    turns = [
        ExportedTurn(question="First?", answer="One. [1]", citations=(EVENTS,)),
        ExportedTurn(question="Second\nline?", answer=None, termination_reason="model_error"),
    ]
    md = conversation_markdown(turns, ExportLabels(), title="First?")
    assert md.startswith("# First?\n\n## First?\n")
    assert "\n---\n\n## Second line?\n\n*No answer (model_error).*" in md
    assert md.endswith("\n") and not md.endswith("\n\n")


def test_the_file_name_holds_the_day_and_the_first_words() -> None:
    assert export_name("How do listeners run?", "2026-12-02T10:14:00Z") == (
        "citewise-2026-12-02-How-do-listeners-run.md"
    )
    assert export_name("监听器/按什么顺序?", "2026-12-02T10:14:00Z") == (
        "citewise-2026-12-02-监听器-按什么顺序.md"
    )


def _recorded(q: str, a: str | None, rid: str) -> ConversationTurn:
    return ConversationTurn(
        request_id=rid,
        question=q,
        answer=a,
        termination_reason="finished" if a else "model_error",
        snapshot_id=None,
        created_at="2026-12-02T10:14:00Z",
        cost=0.5,
        currency="CNY",
    )


def test_one_recorded_answer_or_the_whole_conversation_is_exported(tmp_path: Path) -> None:
    catalog = Catalog(DataDir(tmp_path), "default")
    turns = [
        _recorded("First?", "One.【来源:d1#b1】", "r1"),
        _recorded("Second?", None, "r2"),
    ]
    meta = lambda t: f"{t.cost:.2f} {t.currency}"  # noqa: E731
    one = export_conversation(catalog, turns, ExportLabels(), request_id="r1", meta=meta)
    assert one == "# First?\n\nOne.[1]\n\n*0.50 CNY*\n"
    whole = export_conversation(catalog, turns, ExportLabels(), title="Conversation")
    assert whole.startswith("# Conversation\n\n## First?\n\nOne.[1]\n")
    assert "## Second?\n\n*No answer (model_error).*" in whole and "来源" not in whole
    with pytest.raises(AppError):
        export_conversation(catalog, turns, ExportLabels(), request_id="nope")
