"""Putting runs side by side: the cost of re-running a trace before it starts, the differences
between two answers, and two traces compared (manifest, tool calls, blocks, answers).

Pure functions over TraceRecords and answer texts; nothing here reads a file or calls a model.
"""

from __future__ import annotations

import difflib
import json
import re
from typing import Any, Literal

import msgspec

from engine.trace import TraceRecord
from engine.trace import model as m
from engine.trace.replay import replayable_calls

# -- re-run cost estimate --------------------------------------------------------------------


class RerunEstimate(msgspec.Struct, kw_only=True):
    runs: int
    model_calls_per_run: int
    tokens_per_run: int
    cost_per_run: float
    tokens: int
    cost: float
    currency: str


def rerun_estimate(record: TraceRecord, runs: int) -> RerunEstimate:
    """What `runs` re-runs cost if each uses what this trace used (the model may take more or
    fewer turns: it is an estimate, and the budgets still bound every run)."""
    s = record.summary
    calls = sum(1 for x in record.spans if x.kind == "llm_call")
    return RerunEstimate(
        runs=runs,
        model_calls_per_run=calls,
        tokens_per_run=s.tokens,
        cost_per_run=s.cost,
        tokens=s.tokens * runs,
        cost=s.cost * runs,
        currency=s.currency,
    )


# -- answers ---------------------------------------------------------------------------------

DiffOp = Literal["same", "added", "removed"]


class DiffPiece(msgspec.Struct, frozen=True):
    op: DiffOp
    text: str


# A Latin word or one other character (each Chinese character on its own), with the spaces
# after it: a changed word is then one change, not a word and a space.
_TOKEN = re.compile(r"[A-Za-z0-9_'’-]+\s*|\s+|\S\s*")


def answer_diff(before: str, after: str) -> list[DiffPiece]:
    """`after` against `before` word by word: what stayed, what was removed, what was added
    (neighbouring pieces of one kind merged)."""
    a, b = _TOKEN.findall(before), _TOKEN.findall(after)
    pieces: list[DiffPiece] = []

    def add(op: DiffOp, tokens: list[str]) -> None:
        if not tokens:
            return
        text = "".join(tokens)
        if pieces and pieces[-1].op == op:
            pieces[-1] = DiffPiece(op, pieces[-1].text + text)
        else:
            pieces.append(DiffPiece(op, text))

    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            add("same", a[i1:i2])
        else:
            add("removed", a[i1:i2])
            add("added", b[j1:j2])
    return pieces


class CitationChange(msgspec.Struct, kw_only=True):
    added: list[str]
    removed: list[str]

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed)


def citation_change(before: list[str], after: list[str]) -> CitationChange:
    return CitationChange(
        added=[c for c in after if c not in before], removed=[c for c in before if c not in after]
    )


# -- two traces ------------------------------------------------------------------------------


class ManifestChange(msgspec.Struct, kw_only=True):
    key: str  # dotted path: prompt_bundle.version, settings.chat.temperature …
    first: Any
    second: Any


class ToolCallView(msgspec.Struct, kw_only=True):
    tool: str
    args: dict[str, Any]
    outcome: str
    blocks: list[str]


class ToolCallPair(msgspec.Struct, kw_only=True):
    first: ToolCallView | None
    second: ToolCallView | None

    @property
    def same(self) -> bool:
        return self.first == self.second


class TraceComparison(msgspec.Struct, kw_only=True):
    first_id: str
    second_id: str
    same_question: bool
    same_configuration: bool
    manifest_changes: list[ManifestChange]
    calls: list[ToolCallPair]
    first_blocks: list[str]
    second_blocks: list[str]
    only_first: list[str]
    only_second: list[str]
    first_answer: str | None
    second_answer: str | None
    same_answer: bool | None  # None: neither text nor hash is known for one of them
    answer_diff: list[DiffPiece]
    citations: CitationChange


def manifest_changes(first: Any, second: Any, prefix: str = "") -> list[ManifestChange]:
    out: list[ManifestChange] = []
    if isinstance(first, dict) and isinstance(second, dict):
        for key in sorted(set(first) | set(second)):
            if key == "request_id":
                continue
            out.extend(manifest_changes(first.get(key), second.get(key), f"{prefix}{key}."))
    elif first != second:
        out.append(ManifestChange(key=prefix.rstrip("."), first=first, second=second))
    return out


def _calls(record: TraceRecord) -> list[ToolCallView]:
    out = []
    for span in replayable_calls(record):
        raw = span.attributes.get(m.TOOL_ARGS)
        try:
            args = json.loads(raw) if isinstance(raw, str) else {}
        except ValueError:
            args = {}
        out.append(
            ToolCallView(
                tool=str(span.attributes.get(m.TOOL_NAME, "")),
                args=args if isinstance(args, dict) else {},
                outcome=str(span.attributes.get(m.TOOL_OUTCOME, "")),
                blocks=[str(c) for c in span.attributes.get(m.TOOL_BLOCKS, [])],
            )
        )
    return out


def _answer_hash(record: TraceRecord) -> str | None:
    final = next((x for x in record.spans if x.kind == "final"), None)
    ref = None if final is None else next((r for r in final.artifacts if r.kind == "answer"), None)
    return None if ref is None else ref.sha256


def _citations(record: TraceRecord) -> list[str]:
    final = next((x for x in record.spans if x.kind == "final"), None)
    return [] if final is None else [str(c) for c in final.attributes.get(m.CITATIONS, [])]


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def compare_traces(
    first: TraceRecord,
    second: TraceRecord,
    first_answer: str | None = None,
    second_answer: str | None = None,
) -> TraceComparison:
    changes = manifest_changes(first.manifest or {}, second.manifest or {})
    a_calls, b_calls = _calls(first), _calls(second)
    pairs = [
        ToolCallPair(
            first=a_calls[i] if i < len(a_calls) else None,
            second=b_calls[i] if i < len(b_calls) else None,
        )
        for i in range(max(len(a_calls), len(b_calls)))
    ]
    a_blocks = _unique([c for call in a_calls for c in call.blocks])
    b_blocks = _unique([c for call in b_calls for c in call.blocks])
    if first_answer is not None and second_answer is not None:
        same: bool | None = first_answer == second_answer
    else:
        ha, hb = _answer_hash(first), _answer_hash(second)
        same = None if ha is None or hb is None else ha == hb
    diff = (
        answer_diff(first_answer, second_answer)
        if first_answer is not None and second_answer is not None
        else []
    )
    return TraceComparison(
        first_id=first.summary.trace_id,
        second_id=second.summary.trace_id,
        same_question=first.summary.question == second.summary.question,
        same_configuration=bool(first.summary.manifest_hash)
        and first.summary.manifest_hash == second.summary.manifest_hash,
        manifest_changes=changes,
        calls=pairs,
        first_blocks=a_blocks,
        second_blocks=b_blocks,
        only_first=[c for c in a_blocks if c not in b_blocks],
        only_second=[c for c in b_blocks if c not in a_blocks],
        first_answer=first_answer,
        second_answer=second_answer,
        same_answer=same,
        answer_diff=diff,
        citations=citation_change(_citations(first), _citations(second)),
    )
