"""Answer checks on a real snapshot: citations resolved by the harness's own resolver, the
evidence layers, required facts, declining absent questions, and disclosed gaps."""

from __future__ import annotations

import pytest

from engine.evaluation import check_run
from index.snapshot import Snapshot
from tests.engine.evaluation.conftest import FAQ, QUOTE, citation_of, item, run


def test_a_returned_block_holding_the_evidence_cited_with_every_fact_passes(
    snapshot: Snapshot,
) -> None:
    cite = citation_of(snapshot, QUOTE)
    answer = f"Ten listeners (10); the warning helps find a memory leak.【来源:{cite}】"
    check = check_run(item(), run(snapshot, answer, returned=[cite]), snapshot)
    assert check.passed and check.failures == () and check.evidence_layer == "cited"


def test_any_listed_variant_of_a_fact_counts_and_a_missing_fact_fails(snapshot: Snapshot) -> None:
    cite = citation_of(snapshot, QUOTE)
    chinese = f"默认 10 个监听器，警告用于发现内存泄漏。【来源:{cite}】"
    assert check_run(item(), run(snapshot, chinese, returned=[cite]), snapshot).passed
    short = f"Ten, i.e. 10 listeners.【来源:{cite}】"
    check = check_run(item(), run(snapshot, short, returned=[cite]), snapshot)
    assert check.failures == ("fact_missing",)
    assert "memory leak / 内存泄漏" in check.details[0]


def test_citing_a_block_that_was_never_returned_fails_even_when_it_holds_the_quote(
    snapshot: Snapshot,
) -> None:
    cite = citation_of(snapshot, QUOTE)
    other = citation_of(snapshot, "Listeners are called synchronously")
    answer = f"10 listeners; it finds a memory leak.【来源:{cite}】"
    check = check_run(item(), run(snapshot, answer, returned=[other]), snapshot)
    assert not check.passed
    assert check.failures == ("invalid_citation", "evidence_not_cited")
    assert check.evidence_layer == "not_retrieved"


def test_citing_a_block_seen_only_as_a_scan_hit_fails_as_located_not_read(
    snapshot: Snapshot,
) -> None:
    cite = citation_of(snapshot, QUOTE)
    answer = f"10 listeners; it finds a memory leak.【来源:{cite}】"
    check = check_run(item(), run(snapshot, answer, located=[cite]), snapshot)
    assert check.failures == ("invalid_citation", "evidence_not_cited")
    assert "only located by scan_term, never read" in check.details[0]


@pytest.mark.parametrize(
    ("seen", "refused", "tools", "layer"),
    [
        (True, False, True, "retrieved_not_cited"),
        (False, True, True, "refused_by_budget"),
        (False, False, False, "no_tool_call"),
    ],
)
def test_missed_evidence_is_placed_in_the_layer_that_lost_it(
    snapshot: Snapshot, seen: bool, refused: bool, tools: bool, layer: str
) -> None:
    cite = citation_of(snapshot, QUOTE)
    other = citation_of(snapshot, "Listeners are called synchronously")
    answer = f"10 listeners, to catch a memory leak.【来源:{other}】 The answer may be incomplete."
    record = run(
        snapshot,
        answer,
        returned=[other, cite] if seen else [other],
        refused=[cite] if refused else [],
        tools=tools,
    )
    check = check_run(item(), record, snapshot)
    assert check.evidence_layer == layer and "evidence_not_cited" in check.failures


@pytest.mark.parametrize(
    "answer",
    [
        "The documents do not cover pinning a worker thread to a CPU core.",
        "This is not covered: worker_threads.md has no affinity option.",
        "文档中没有提到如何设置 CPU 亲和性。",
        "资料里并未涉及二维码或条形码。",
    ],
)
def test_an_absent_question_declined_without_citations_passes(
    snapshot: Snapshot, answer: str
) -> None:
    absent = item(kind="absent", evidence=[], answer_must_include=[])
    assert check_run(absent, run(snapshot, answer), snapshot).passed


def test_an_absent_question_answered_with_evidence_or_without_declining_fails(
    snapshot: Snapshot,
) -> None:
    absent = item(kind="absent", evidence=[], answer_must_include=[])
    cite = citation_of(snapshot, QUOTE)
    invented = f"The documents do not cover it, but see 【来源:{cite}】"
    check = check_run(absent, run(snapshot, invented, returned=[cite]), snapshot)
    assert check.failures == ("invented_evidence",)
    confident = "Use worker.setAffinity(2) to pin it."
    assert check_run(absent, run(snapshot, confident), snapshot).failures == ("not_declined",)
    oos = item(kind="out_of_scope", documents=[], evidence=[], answer_must_include=[])
    declined = "I cannot run code for you; I answer questions about your documents."
    assert check_run(oos, run(snapshot, declined), snapshot).passed
    assert check_run(oos, run(snapshot, None, termination="model_error"), snapshot).failures == (
        "no_answer",
    )


def test_an_answer_cut_short_by_the_budget_must_say_so(snapshot: Snapshot) -> None:
    cite = citation_of(snapshot, QUOTE)
    plain = f"10 listeners; it finds a memory leak.【来源:{cite}】"
    record = run(snapshot, plain, returned=[cite], finalized="budget")
    assert check_run(item(), record, snapshot).failures == ("gap_not_disclosed",)
    honest = plain + " The token budget ran out, so other sections could not be read."
    record = run(snapshot, honest, returned=[cite], finalized="budget")
    assert check_run(item(), record, snapshot).passed


def test_a_partial_snapshot_requires_naming_the_missing_source(partial: Snapshot) -> None:
    cite = citation_of(partial, QUOTE)
    plain = f"10 listeners; it finds a memory leak.【来源:{cite}】"
    check = check_run(item(), run(partial, plain, returned=[cite]), partial)
    assert check.failures == ("gap_not_disclosed",) and "scans/lecture-03.pdf" in check.details[0]
    named = plain + " Note: lecture-03.pdf failed to import and was not searched."
    assert check_run(item(), run(partial, named, returned=[cite]), partial).passed


def test_a_coverage_answer_must_name_every_expected_section(snapshot: Snapshot) -> None:
    cite = citation_of(snapshot, "Be sure to use the threading module")
    coverage = item(
        kind="coverage",
        question="List every question in the Threads part.",
        documents=[FAQ],
        evidence=[{"document": FAQ, "quote": "Be sure to use the threading module"}],
        expected_sections=["How do I program using threads?", "Can’t we get rid of the GIL?"],
        answer_must_include=[],
    )
    listing = f"1. How do I program using threads?【来源:{cite}】\n2. Can't we get rid of the GIL?"
    assert check_run(coverage, run(snapshot, listing, returned=[cite]), snapshot).passed
    half = f"1. How do I program using threads?【来源:{cite}】"
    check = check_run(coverage, run(snapshot, half, returned=[cite]), snapshot)
    assert check.failures == ("section_missing",)


def test_a_scan_answer_must_cite_a_block_containing_the_term(snapshot: Snapshot) -> None:
    scan = item(
        kind="scan",
        question="Find every mention of EventEmitter.",
        evidence=[],
        term="eventemitter",
        min_count=1,
        answer_must_include=[],
    )
    hit = citation_of(snapshot, "The EventEmitter class is defined")
    miss = citation_of(snapshot, "Listeners are called synchronously")
    assert check_run(scan, run(snapshot, f"Here:【来源:{hit}】", returned=[hit]), snapshot).passed
    check = check_run(scan, run(snapshot, f"Here:【来源:{miss}】", returned=[miss]), snapshot)
    assert check.failures == ("term_not_cited",)
