"""N-run answer statistics and bundle comparisons, with `ask` scripted per question and run."""

from __future__ import annotations

import anyio
import msgspec
import pytest

from engine.evaluation import (
    AnswerSummary,
    GoldItem,
    GoldSet,
    RunRecord,
    compare_answers,
    evaluate_answers,
)
from index.snapshot import Snapshot
from tests.engine.evaluation.conftest import QUOTE, citation_of, item, run

DECLINE = "The documents do not cover this."


def gold() -> GoldSet:
    fact = item(id="q-fact")
    absent = item(id="q-absent", kind="absent", evidence=[], answer_must_include=[])
    return GoldSet(path="g", sha256="0" * 64, items=(fact, absent))


def evaluate(snapshot: Snapshot, fails: set[tuple[str, int]], runs: int = 3) -> AnswerSummary:
    """Every run answers correctly, except the (question, run) pairs in `fails`."""
    cite = citation_of(snapshot, QUOTE)
    asked: list[tuple[str, int]] = []

    async def ask(question: GoldItem, number: int) -> RunRecord:
        asked.append((question.id, number))
        wrong = (question.id, number) in fails
        if question.kind == "absent":
            text = "Use setAffinity()." if wrong else DECLINE
            return run(snapshot, text, question=question.id, number=number, cost=0.01, tokens=100)
        text = "10 listeners" + ("" if wrong else ", to find a memory leak") + f".【来源:{cite}】"
        return run(
            snapshot,
            text,
            returned=[cite],
            question=question.id,
            number=number,
            cost=0.02,
            tokens=300,
        )

    async def main() -> AnswerSummary:
        summary, records = await evaluate_answers(
            gold(), snapshot, ask, runs=runs, bundle="b@1", bundle_hash="h" * 64
        )
        assert [(r.question_id, r.run) for r in records] == asked
        return summary

    summary = anyio.run(main)
    assert asked == [(q, n) for q in ("q-fact", "q-absent") for n in range(1, runs + 1)]
    return summary


def test_n_runs_give_pass_rate_per_kind_flips_cost_and_tokens(snapshot: Snapshot) -> None:
    summary = evaluate(snapshot, {("q-fact", 2)})
    fact, absent = summary.by_kind["fact"], summary.by_kind["absent"]
    assert (fact.runs, fact.passed_runs, fact.flips, fact.passed_every_run) == (3, 2, 1, 0)
    assert fact.pass_rate == pytest.approx(2 / 3)
    assert (absent.pass_rate, absent.flips, absent.passed_every_run) == (1.0, 0, 1)
    assert summary.pass_rate == pytest.approx(5 / 6)
    assert summary.flips == ("q-fact",)
    assert [r.outcome for r in summary.rows] == ["flaky", "pass"]
    assert summary.failure_types == {"fact_missing": 1}
    assert summary.evidence_layers == {"cited": 3}
    assert summary.cost == pytest.approx(3 * 0.02 + 3 * 0.01)
    assert summary.tokens.total == 3 * 300 + 3 * 100
    assert summary.tokens_per_run == pytest.approx(200)
    assert [c.run for c in summary.rows[0].checks] == [1, 2, 3]


def test_a_question_failing_every_run_is_a_failure_not_a_flip(snapshot: Snapshot) -> None:
    summary = evaluate(snapshot, {("q-absent", 1), ("q-absent", 2)}, runs=2)
    assert summary.flips == ()
    assert summary.rows[1].outcome == "fail"
    assert summary.failure_types == {"not_declined": 2}


def test_runs_outside_one_to_fifty_are_refused(snapshot: Snapshot) -> None:
    async def ask(question: GoldItem, number: int) -> RunRecord:
        raise AssertionError("not asked")

    async def evaluate_with(runs: int) -> None:
        await evaluate_answers(gold(), snapshot, ask, runs=runs, bundle="b", bundle_hash="")

    for runs in (0, 51):
        with pytest.raises(ValueError, match="between 1 and 50"):
            anyio.run(evaluate_with, runs)


def test_a_comparison_lists_the_questions_whose_outcome_changed(snapshot: Snapshot) -> None:
    a = evaluate(snapshot, set(), runs=2)
    b = evaluate(snapshot, {("q-fact", 1), ("q-fact", 2), ("q-absent", 1)}, runs=2)
    b = msgspec.structs.replace(b, bundle="b@2")
    comparison = compare_answers(a, b)
    assert (comparison.a, comparison.b) == ("b@1", "b@2")
    assert [(c.id, c.a, c.b, c.a_passed, c.b_passed) for c in comparison.changed] == [
        ("q-fact", "pass", "fail", 2, 0),
        ("q-absent", "pass", "flaky", 2, 1),
    ]
    assert comparison.regressed == ("q-fact", "q-absent") and comparison.improved == ()
    assert comparison.by_kind["fact"] == (1.0, 0.0)
    assert compare_answers(b, a).improved == ("q-fact", "q-absent")
