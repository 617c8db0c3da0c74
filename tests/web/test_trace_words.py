"""How the traces page says a trace's codes in words: tools and their arguments, outcomes,
blocks, durations — in English and in Chinese, never as the raw code when words exist."""

from __future__ import annotations

from actors import StoryBlock
from web.i18n import Texts
from web.trace_words import block_label, duration, outcome, reason, tool_action

EN, ZH = Texts("en"), Texts("zh")


def test_a_tool_call_reads_as_what_the_model_asked_for() -> None:
    args = {"query": "listener order", "doc_ids": ["d1", "d2"]}
    assert tool_action(EN, "search_blocks", args) == (
        "Searched the documents for “listener order” (in d1, d2)"
    )
    assert tool_action(ZH, "search_blocks", args) == "在资料中检索“listener order” (范围:d1, d2)"
    assert tool_action(EN, "scan_term", {"term": "drain"}) == "Scanned for the exact term “drain”"
    assert tool_action(EN, "list_blocks", {"doc_id": "d1", "section_paths": ["A / B"]}) == (
        "Read a section of d1 in full (sections A / B)"
    )


def test_outcomes_and_harness_refusals_are_sentences() -> None:
    assert outcome(EN, "no_match") == "nothing matched"
    assert outcome(ZH, "scope_not_found") == "它指定的文档或章节不存在"
    assert reason(EN, "context_budget_exceeded") == "the result would not fit in the context"
    assert outcome(EN, "something_new") == "something_new"  # an unknown code, as it is


def test_a_block_is_named_by_title_section_and_pages() -> None:
    block = StoryBlock(
        citation="d1#b3", title="Node events", section="Node events / Emitters", page_start=4
    )
    assert block_label(EN, block) == "Node events · Emitters · p. 4"
    block.page_end = 6
    assert block_label(ZH, block) == "Node events · Emitters · 第 4–6 页"
    assert block_label(EN, StoryBlock(citation="d9#b9")) == "block d9#b9"
    assert (duration(480.4), duration(12_300), duration(None)) == ("480 ms", "12.3 s", "…")
