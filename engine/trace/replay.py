"""Seed §5.3's reproducibility checks over a stored trace: evidence replay (exact messages
rebuilt from artifacts and checked against their recorded hash), retrieval replay (recorded tool
calls re-run through a runner pinned to the old snapshot, blocks and order diffed) and re-run
summaries. It never calls a model or opens a snapshot, and never shows an input failing its hash.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

import msgspec

from engine.chat import ChatMessage
from engine.harness import ANSWERED, RequestFinished
from engine.tools.contracts import ToolResult, outcome_of, returned_citations
from engine.trace import model as m
from engine.trace.model import Span
from engine.trace.recorder import join_messages
from engine.trace.store import ArtifactUnavailable, TraceRecord, TraceStore

FULL_MODE_HINT = (
    'set `mode = "full"` under [trace] in config.toml (or the environment variable '
    "CITEWISE_TRACE_MODE=full, or the diagnostics switch in Settings), then ask again — "
    "`citewise trace rerun ID -n 1` repeats this request"
)
_messages = msgspec.json.Decoder(list[ChatMessage])


class ModelInput(msgspec.Struct, kw_only=True):
    """What the model received in one call; `messages` only when the bytes match the hash."""

    turn: int
    attempt: int
    span_id: str
    sha256: str
    size: int
    verified: bool
    messages: list[ChatMessage] | None = None
    problem: str | None = None


class ToolOutput(msgspec.Struct, kw_only=True):
    turn: int
    call: int
    tool: str
    args: Any
    harness_status: str
    payload: Any = None  # the exact JSON the tool returned, decoded
    problem: str | None = None


class EvidenceReplay(msgspec.Struct, kw_only=True):
    trace_id: str
    available: bool
    message: str
    model_inputs: list[ModelInput] = []
    tool_outputs: list[ToolOutput] = []
    answer: str | None = None


def _by_time(spans: Sequence[Span], kind: str) -> list[Span]:
    return sorted((s for s in spans if s.kind == kind), key=lambda s: (s.start, s.span_id))


def _int(span: Span, key: str) -> int:
    value = span.attributes.get(key, 0)
    return value if isinstance(value, int) else 0


def message_bytes(store: TraceStore, span: Span) -> bytes:
    """The exact `messages` JSON of an llm_call span, reassembled and checked.

    Raises ArtifactUnavailable when a part is missing or the result fails the recorded hash.
    """
    parts = [ref.sha256 for ref in span.artifacts if ref.kind == "messages"]
    expected = span.attributes.get("citewise.messages.sha256")
    if not parts or not isinstance(expected, str):
        raise ArtifactUnavailable("this model call recorded no messages")
    whole = join_messages(store.read_artifact(sha) for sha in parts)
    if hashlib.sha256(whole).hexdigest() != expected:
        raise ArtifactUnavailable("the rebuilt messages do not match the hash recorded")
    return whole


def _artifact(store: TraceStore, span: Span, kind: str) -> bytes | None:
    ref = next((a for a in span.artifacts if a.kind == kind), None)
    if ref is None or not ref.stored:
        return None
    return store.read_artifact(ref.sha256)


def evidence_replay(store: TraceStore, record: TraceRecord) -> EvidenceReplay:
    trace_id = record.summary.trace_id
    if record.summary.mode != "full":
        return EvidenceReplay(
            trace_id=trace_id,
            available=False,
            message=(
                "Evidence replay is unavailable for this trace: it was recorded in metadata "
                "mode, which keeps hashes and sizes but not the prompts, tool results or "
                f"answer. To record them, {FULL_MODE_HINT}."
            ),
        )
    inputs: list[ModelInput] = []
    problems = 0
    for span in _by_time(record.spans, "llm_call"):
        sha = str(span.attributes.get("citewise.messages.sha256", ""))
        size = _int(span, "citewise.messages.bytes")
        item = ModelInput(
            turn=_int(span, m.TURN),
            attempt=_int(span, m.ATTEMPT),
            span_id=span.span_id,
            sha256=sha,
            size=size,
            verified=False,
        )
        try:
            item.messages = _messages.decode(message_bytes(store, span))
            item.verified = True
        except ArtifactUnavailable as exc:
            item.problem = str(exc)
            problems += 1
        inputs.append(item)
    outputs: list[ToolOutput] = []
    for span in _by_time(record.spans, "tool_call"):
        out = ToolOutput(
            turn=_int(span, m.TURN),
            call=_call_number(span),
            tool=str(span.attributes.get(m.TOOL_NAME, "")),
            args=_args(span),
            harness_status=str(span.attributes.get(m.HARNESS_STATUS, "")),
        )
        try:
            raw = _artifact(store, span, "tool_payload")
            out.payload = None if raw is None else msgspec.json.decode(raw)
        except ArtifactUnavailable as exc:
            out.problem = str(exc)
            problems += 1
        outputs.append(out)
    answer = None
    for span in _by_time(record.spans, "final"):
        try:
            raw = _artifact(store, span, "answer")
        except ArtifactUnavailable:
            problems += 1
            raw = None
        answer = None if raw is None else raw.decode()
    message = (
        f"{len(inputs)} model call(s) and {len(outputs)} tool call(s), rebuilt from artifacts "
        "and checked against the hashes recorded when they were sent"
    )
    if problems:
        message += f"; {problems} could not be rebuilt (removed by retention or damaged)"
    if record.summary.partial:
        message += f"; the trace is partial ({record.summary.dropped} records were dropped)"
    return EvidenceReplay(
        trace_id=trace_id,
        available=True,
        message=message,
        model_inputs=inputs,
        tool_outputs=outputs,
        answer=answer,
    )


def _call_number(span: Span) -> int:
    call_id = span.attributes.get(m.TOOL_CALL_ID)
    if isinstance(call_id, str) and call_id.startswith("call-") and call_id[5:].isdigit():
        return int(call_id[5:])
    return 0


def _args(span: Span) -> Any:
    raw = span.attributes.get(m.TOOL_ARGS)
    if not isinstance(raw, str):
        return {}
    try:
        return json.loads(raw)
    except ValueError:
        return {}


# -- retrieval replay --------------------------------------------------------------------------


class ToolResultLike(Protocol):
    """What replay needs of a re-run tool call (engine.tools.ToolOutcome is one)."""

    @property
    def result(self) -> ToolResult: ...

    @property
    def json(self) -> bytes: ...


ToolRunner = Callable[[str, dict[str, Any]], Awaitable[ToolResultLike]]


class ToolDiff(msgspec.Struct, kw_only=True):
    turn: int
    call: int
    tool: str
    args: Any
    recorded_outcome: str
    replayed_outcome: str
    recorded_blocks: list[str]
    replayed_blocks: list[str]
    same_blocks: bool  # the same set of blocks
    same_order: bool  # … in the same order
    added: list[str]
    removed: list[str]
    payload_identical: bool  # byte for byte the same JSON as the model received

    @property
    def identical(self) -> bool:
        return self.same_order and self.recorded_outcome == self.replayed_outcome


class RetrievalReplay(msgspec.Struct, kw_only=True):
    trace_id: str
    snapshot_id: str | None
    snapshot_available: bool
    identical: bool
    message: str
    calls: list[ToolDiff] = []


def replayable_calls(record: TraceRecord) -> list[Span]:
    """Tool calls the harness dispatched (refused ones never reached a tool)."""
    return [
        s
        for s in _by_time(record.spans, "tool_call")
        if _call_number(s) > 0 and s.attributes.get(m.HARNESS_STATUS) == "ok"
    ]


def snapshot_of(record: TraceRecord) -> tuple[str | None, str | None]:
    """(collection, snapshot id) the request was pinned to."""
    snap = (record.manifest or {}).get("snapshot") or {}
    return (
        snap.get("collection") or record.summary.collection,
        snap.get("id") or record.summary.snapshot_id,
    )


def snapshot_gone(record: TraceRecord, why: str) -> RetrievalReplay:
    _, snapshot_id = snapshot_of(record)
    return RetrievalReplay(
        trace_id=record.summary.trace_id,
        snapshot_id=snapshot_id,
        snapshot_available=False,
        identical=False,
        message=(
            f"Retrieval replay is not possible: the snapshot {snapshot_id} this request ran on "
            f"{why}. Old snapshots are removed by retention ([snapshots] keep_last / keep_days)."
        ),
    )


async def replay_retrieval(record: TraceRecord, run_tool: ToolRunner) -> RetrievalReplay:
    """Re-run every dispatched tool call with its recorded arguments through `run_tool`
    (already pinned to the request's snapshot) and compare blocks, order and bytes."""
    _, snapshot_id = snapshot_of(record)
    diffs: list[ToolDiff] = []
    for span in replayable_calls(record):
        tool = str(span.attributes.get(m.TOOL_NAME, ""))
        args = _args(span)
        result = await run_tool(tool, args if isinstance(args, dict) else {})
        payload = result.json
        recorded = [str(c) for c in span.attributes.get(m.TOOL_BLOCKS, [])]
        replayed = returned_citations(result.result)
        ref = next((a for a in span.artifacts if a.kind == "tool_payload"), None)
        diffs.append(
            ToolDiff(
                turn=_int(span, m.TURN),
                call=_call_number(span),
                tool=tool,
                args=args,
                recorded_outcome=str(span.attributes.get(m.TOOL_OUTCOME, "")),
                replayed_outcome=outcome_of(result.result),
                recorded_blocks=recorded,
                replayed_blocks=replayed,
                same_blocks=set(recorded) == set(replayed),
                same_order=recorded == replayed,
                added=[c for c in replayed if c not in set(recorded)],
                removed=[c for c in recorded if c not in set(replayed)],
                payload_identical=ref is not None
                and ref.sha256 == hashlib.sha256(payload).hexdigest(),
            )
        )
    changed = [d for d in diffs if not d.identical]
    if not diffs:
        message = "this request made no tool calls to replay"
    elif changed:
        message = (
            f"{len(changed)} of {len(diffs)} tool call(s) returned different blocks, order or "
            f"outcome on snapshot {snapshot_id}"
        )
    else:
        message = (
            f"all {len(diffs)} tool call(s) returned the same blocks in the same order on "
            f"snapshot {snapshot_id}"
        )
    return RetrievalReplay(
        trace_id=record.summary.trace_id,
        snapshot_id=snapshot_id,
        snapshot_available=True,
        identical=not changed,
        message=message,
        calls=diffs,
    )


# -- model re-run ------------------------------------------------------------------------------


class RunOutcome(msgspec.Struct, kw_only=True):
    request_id: str
    termination_reason: str
    answered: bool
    passed: bool  # answered, and every citation points at a block this request returned
    answer_sha256: str | None
    citations: list[str]
    invalid_citations: int
    tokens: int = 0
    cost: float = 0.0
    # The answer's text, for showing runs side by side; None when it is not known (no answer,
    # or the original of a metadata trace, which keeps only the answer's hash).
    answer: str | None = None


class RerunReport(msgspec.Struct, kw_only=True):
    trace_id: str
    runs: int
    passed: int
    pass_rate: float
    failure_types: dict[str, int]  # termination reason, or "invalid_citations"
    distinct_answers: int  # among the new runs
    flipped: list[int]  # 1-based runs whose pass/fail differs from the original
    answer_changed: list[int]  # 1-based runs whose answer differs from the original's
    citations_changed: list[int]
    same_configuration: bool
    notes: list[str]
    original: RunOutcome | None
    outcomes: list[RunOutcome]


def outcome_of_finished(finished: RequestFinished) -> RunOutcome:
    answered = finished.termination_reason in ANSWERED and finished.answer is not None
    invalid = sum(1 for c in finished.citations if not c.valid)
    return RunOutcome(
        request_id=finished.request_id,
        termination_reason=finished.termination_reason,
        answered=answered,
        passed=answered and invalid == 0,
        answer_sha256=(
            hashlib.sha256(finished.answer.encode()).hexdigest()
            if finished.answer is not None
            else None
        ),
        citations=[c.citation for c in finished.citations],
        invalid_citations=invalid,
        tokens=finished.counters.used_tokens,
        cost=finished.cost,
        answer=finished.answer,
    )


def outcome_of_trace(record: TraceRecord) -> RunOutcome | None:
    """The original run's outcome from its final span (answers compared by hash, so this
    works on metadata traces too)."""
    final = next((s for s in record.spans if s.kind == "final"), None)
    if final is None:
        return None
    a = final.attributes
    reason = str(a.get(m.TERMINATION, record.summary.termination_reason or ""))
    answer = next((r for r in final.artifacts if r.kind == "answer"), None)
    valid = [bool(v) for v in a.get(m.CITATIONS_VALID, [])]
    answered = reason in ANSWERED and answer is not None
    invalid = valid.count(False)
    return RunOutcome(
        request_id=record.summary.trace_id,
        termination_reason=reason,
        answered=answered,
        passed=answered and invalid == 0,
        answer_sha256=answer.sha256 if answer else None,
        citations=[str(c) for c in a.get(m.CITATIONS, [])],
        invalid_citations=invalid,
        tokens=record.summary.tokens,
        cost=record.summary.cost,
    )


def summarize_reruns(
    trace_id: str,
    original: RunOutcome | None,
    outcomes: Sequence[RunOutcome],
    *,
    same_configuration: bool = True,
    notes: Sequence[str] = (),
) -> RerunReport:
    passed = sum(1 for o in outcomes if o.passed)
    failures: Counter[str] = Counter()
    for o in outcomes:
        if not o.answered:
            failures[o.termination_reason] += 1
        elif o.invalid_citations:
            failures["invalid_citations"] += 1
    flipped: list[int] = []
    changed: list[int] = []
    cites: list[int] = []
    if original is not None:
        for i, o in enumerate(outcomes, start=1):
            if o.passed != original.passed:
                flipped.append(i)
            if o.answer_sha256 != original.answer_sha256:
                changed.append(i)
            if o.citations != original.citations:
                cites.append(i)
    return RerunReport(
        trace_id=trace_id,
        runs=len(outcomes),
        passed=passed,
        pass_rate=passed / len(outcomes) if outcomes else 0.0,
        failure_types=dict(sorted(failures.items())),
        distinct_answers=len({o.answer_sha256 for o in outcomes if o.answer_sha256}),
        flipped=flipped,
        answer_changed=changed,
        citations_changed=cites,
        same_configuration=same_configuration,
        notes=list(notes),
        original=original,
        outcomes=list(outcomes),
    )
