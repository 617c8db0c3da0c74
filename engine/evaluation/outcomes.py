"""Answer evaluation over N runs: every gold question asked N times through a caller-given `ask`,
then pass rate per kind, flips (passed in some runs, failed in others), failure types, cost and
tokens, and the side-by-side comparison of two bundles. Re-runs promise the same distribution,
not the same words (seed §5.3): a failed run is never retried or dropped from the statistics.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from typing import Literal

import msgspec

from engine.evaluation.answers import AnswerCheck, RunRecord, check_run
from engine.evaluation.gold import GoldItem, GoldSet
from index.snapshot import Snapshot

Outcome = Literal["pass", "fail", "flaky"]
Ask = Callable[[GoldItem, int], Awaitable[RunRecord]]  # (question, 1-based run) -> its record
OnRun = Callable[[GoldItem, RunRecord, AnswerCheck], Awaitable[None]]
MAX_RUNS = 50


class QuestionOutcome(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    kind: str
    lang: str
    runs: int
    passed: int  # runs that passed
    outcome: Outcome
    failures: dict[str, int]  # failure type -> runs it occurred in
    checks: tuple[AnswerCheck, ...]

    @property
    def flipped(self) -> bool:
        return self.outcome == "flaky"


class KindPass(msgspec.Struct, frozen=True, kw_only=True):
    questions: int
    runs: int  # question runs of this kind
    passed_runs: int
    pass_rate: float  # passed_runs / runs
    passed_every_run: int  # questions that passed in every run
    flips: int  # questions that passed in some runs and failed in others


class Tokens(msgspec.Struct, frozen=True, kw_only=True):
    prompt: int = 0
    completion: int = 0
    cache_hit: int = 0
    total: int = 0  # chat tokens only; embedding tokens are never added in


class AnswerSummary(msgspec.Struct, frozen=True, kw_only=True):
    bundle: str  # id@version
    bundle_hash: str
    runs: int  # per question
    questions: int
    pass_rate: float  # over every question run
    by_kind: dict[str, KindPass]
    flips: tuple[str, ...]  # question ids
    failure_types: dict[str, int]  # failure type -> question runs it occurred in
    evidence_layers: dict[str, int]  # where evidence got to, over evidence-question runs
    cost: float
    currency: str
    tokens: Tokens
    cost_per_run: float  # mean over question runs
    tokens_per_run: float
    rows: tuple[QuestionOutcome, ...]


def outcome_of(checks: Sequence[AnswerCheck]) -> Outcome:
    passed = sum(1 for c in checks if c.passed)
    if passed == len(checks):
        return "pass"
    return "fail" if passed == 0 else "flaky"


def question_outcome(item: GoldItem, checks: Sequence[AnswerCheck]) -> QuestionOutcome:
    failures: Counter[str] = Counter()
    for check in checks:
        failures.update(check.failures)
    return QuestionOutcome(
        id=item.id,
        kind=item.kind,
        lang=item.lang,
        runs=len(checks),
        passed=sum(1 for c in checks if c.passed),
        outcome=outcome_of(checks),
        failures=dict(failures),
        checks=tuple(checks),
    )


def summarize_answers(
    rows: Sequence[QuestionOutcome],
    records: Sequence[RunRecord],
    *,
    bundle: str,
    bundle_hash: str,
    runs: int,
) -> AnswerSummary:
    """Pass rates, flips, failure types, cost and tokens of the question runs."""
    checks = [c for row in rows for c in row.checks]
    by_kind: dict[str, KindPass] = {}
    for kind in dict.fromkeys(r.kind for r in rows):
        mine = [r for r in rows if r.kind == kind]
        total = sum(r.runs for r in mine)
        passed = sum(r.passed for r in mine)
        by_kind[kind] = KindPass(
            questions=len(mine),
            runs=total,
            passed_runs=passed,
            pass_rate=passed / total if total else 0.0,
            passed_every_run=sum(1 for r in mine if r.outcome == "pass"),
            flips=sum(1 for r in mine if r.flipped),
        )
    failures: Counter[str] = Counter()
    layers: Counter[str] = Counter()
    for check in checks:
        failures.update(check.failures)
        if check.evidence_layer is not None:
            layers[check.evidence_layer] += 1
    tokens = Tokens(
        prompt=sum(r.prompt_tokens for r in records),
        completion=sum(r.completion_tokens for r in records),
        cache_hit=sum(r.cache_hit_tokens for r in records),
        total=sum(r.total_tokens for r in records),
    )
    cost = sum(r.cost for r in records)
    n = len(records)
    return AnswerSummary(
        bundle=bundle,
        bundle_hash=bundle_hash,
        runs=runs,
        questions=len(rows),
        pass_rate=sum(1 for c in checks if c.passed) / len(checks) if checks else 0.0,
        by_kind=by_kind,
        flips=tuple(r.id for r in rows if r.flipped),
        failure_types=dict(failures.most_common()),
        evidence_layers=dict(layers.most_common()),
        cost=cost,
        currency=records[0].currency if records else "USD",
        tokens=tokens,
        cost_per_run=cost / n if n else 0.0,
        tokens_per_run=tokens.total / n if n else 0.0,
        rows=tuple(rows),
    )


async def evaluate_answers(
    gold: GoldSet,
    snapshot: Snapshot,
    ask: Ask,
    *,
    runs: int,
    bundle: str,
    bundle_hash: str,
    on_run: OnRun | None = None,
) -> tuple[AnswerSummary, list[RunRecord]]:
    """Ask every gold question `runs` times (question by question) and check each answer."""
    if not 1 <= runs <= MAX_RUNS:
        raise ValueError(f"the number of runs must be between 1 and {MAX_RUNS}")
    rows: list[QuestionOutcome] = []
    records: list[RunRecord] = []
    for item in gold.items:
        checks: list[AnswerCheck] = []
        for run in range(1, runs + 1):
            record = await ask(item, run)
            check = check_run(item, record, snapshot)
            records.append(record)
            checks.append(check)
            if on_run is not None:
                await on_run(item, record, check)
        rows.append(question_outcome(item, checks))
    summary = summarize_answers(rows, records, bundle=bundle, bundle_hash=bundle_hash, runs=runs)
    return summary, records


class ChangedQuestion(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    kind: str
    a: Outcome
    b: Outcome
    a_passed: int
    b_passed: int
    runs: int


class Comparison(msgspec.Struct, frozen=True, kw_only=True):
    """Two bundles on the same snapshot and questions."""

    a: str
    b: str
    a_pass_rate: float
    b_pass_rate: float
    by_kind: dict[str, tuple[float, float]]  # kind -> (a pass rate, b pass rate)
    changed: tuple[ChangedQuestion, ...]  # questions whose outcome differs
    improved: tuple[str, ...]
    regressed: tuple[str, ...]


_RANK: dict[Outcome, int] = {"fail": 0, "flaky": 1, "pass": 2}


def compare_answers(a: AnswerSummary, b: AnswerSummary) -> Comparison:
    """Which questions' outcome changed between bundle `a` and bundle `b`."""
    b_rows = {r.id: r for r in b.rows}
    changed: list[ChangedQuestion] = []
    for row in a.rows:
        other = b_rows.get(row.id)
        if other is None or other.outcome == row.outcome:
            continue
        changed.append(
            ChangedQuestion(
                id=row.id,
                kind=row.kind,
                a=row.outcome,
                b=other.outcome,
                a_passed=row.passed,
                b_passed=other.passed,
                runs=row.runs,
            )
        )
    kinds = dict.fromkeys([*a.by_kind, *b.by_kind])
    zero = KindPass(questions=0, runs=0, passed_runs=0, pass_rate=0.0, passed_every_run=0, flips=0)
    return Comparison(
        a=a.bundle,
        b=b.bundle,
        a_pass_rate=a.pass_rate,
        b_pass_rate=b.pass_rate,
        by_kind={
            k: (a.by_kind.get(k, zero).pass_rate, b.by_kind.get(k, zero).pass_rate) for k in kinds
        },
        changed=tuple(changed),
        improved=tuple(c.id for c in changed if _RANK[c.b] > _RANK[c.a]),
        regressed=tuple(c.id for c in changed if _RANK[c.b] < _RANK[c.a]),
    )
