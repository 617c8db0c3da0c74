"""Answer checks: what one run of a gold question did (recorded from the harness's events) and
whether its answer passes, with failure types and, for missed evidence, the layer that lost it
(seed §4.1). The rules are explicit data below; they read the answer, the citations the harness
validated and the pinned snapshot. Nothing here calls a model or trusts a flagged citation.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Literal

import msgspec

from engine.evaluation.coverage import section_key
from engine.evaluation.gold import (
    DECLINED_KINDS,
    GoldItem,
    contains_quote,
    normalize,
    normalize_answer,
)
from engine.harness import (
    AdmissionDecided,
    Citation,
    Event,
    Finalizing,
    RequestFinished,
    RequestStarted,
    ToolCallFinished,
)
from engine.tools import read_result, returned_citations
from engine.trace import trace_id_for
from index.snapshot import Snapshot
from index.textnorm import fold

FailureType = Literal[
    "no_answer",  # the request ended without an answer (termination_reason says why)
    "clarification",  # asked the user to clarify a gold question, which is unambiguous
    "invalid_citation",  # a citation the harness flagged (never returned or only located by
    # scan_term, malformed, gone)
    "evidence_not_cited",  # no valid cited block holds a gold quote (per evidence document)
    "fact_missing",  # an answer_must_include fact is absent (no variant present)
    "section_missing",  # a coverage answer does not name every expected section
    "term_not_cited",  # a scan answer cites no block containing the term
    "invented_evidence",  # an absent/out_of_scope answer cites anything at all
    "not_declined",  # an absent/out_of_scope answer does not say the documents lack it
    "gap_not_disclosed",  # a partial snapshot or refused evidence is not disclosed
]
EvidenceLayer = Literal[
    "cited", "retrieved_not_cited", "refused_by_budget", "not_retrieved", "no_tool_call"
]

# "The documents do not cover it", detectably, in English and Chinese. An absent or
# out_of_scope question passes only when the answer matches one of these AND cites nothing.
DECLINE_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\b(?:do|does|did)(?:n['’]t| not)\s+(?:seem to\s+|appear to\s+)?(?:cover|mention|"
        r"discuss|describe|say|contain|include|address|document|explain|provide|talk about)",
        r"\bnot\s+(?:covered|mentioned|discussed|described|documented|addressed|included|"
        r"found|explained|provided|available)\b",
        r"\bno\s+(?:information|mention|documentation|coverage|section|evidence|details?)\b",
        r"\bnothing\s+(?:about|on|in)\b",
        r"\b(?:outside|beyond)\s+(?:the\s+|my\s+|what\s+)?(?:scope|documents|I can)",
        r"\b(?:cannot|can['’]t|can not|unable to|won['’]t|will not|am not able to)\s+(?:run|"
        r"execute|make|create|write|draw up|plan|do that|help with|answer)",
        r"(?:没有|未|并未|并没有|不曾)(?:提到|提及|涉及|讲|讲到|介绍|说明|记载|包含|找到|相关|覆盖|描述)",
        r"不(?:包含|涉及|在.{0,12}范围)",
        r"(?:超出|超过|不属于).{0,12}范围",
        r"(?:无法|不能|不会|没法)(?:执行|运行|制定|替你|为你|帮你|回答|提供|安排)",
        r"文档(?:中|里)?(?:没有|未|并未|并没有)",
    )
)
# "Something is missing or unfinished": required when a budget or the tool-call limit refused
# evidence. (A partial snapshot is disclosed by naming each missing source instead.)
GAP_PATTERNS: tuple[re.Pattern[str], ...] = (
    *DECLINE_PATTERNS,
    *(
        re.compile(p, re.IGNORECASE)
        for p in (
            r"\b(?:incomplete|unfinished|partial(?:ly)?|truncated|missing|not complete)\b",
            r"\bcould\s*(?:n['’]t|not)\s+(?:be\s+)?(?:read|fit|retrieve|retrieved|get|access|"
            r"include|included|load|loaded|finish|complete)",
            r"\b(?:budget|tool[- ]call limit|limit (?:was |is |has been )?reached)\b",
            r"内容未完|未完|不完整|不全|缺少|缺失|遗漏|无法(?:读取|获取|容纳|纳入|完成|全部)|预算|上限|超出",
        )
    ),
)


def declines(answer: str) -> bool:
    return any(p.search(answer) for p in DECLINE_PATTERNS)


def discloses_gap(answer: str) -> bool:
    return any(p.search(answer) for p in GAP_PATTERNS)


class ToolUse(msgspec.Struct, frozen=True, kw_only=True):
    tool: str
    args: dict[str, object]
    harness_status: str
    outcome: str
    admitted: bool | None = None  # None: refused before dispatch or failed (nothing to admit)


class RunRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One run of one question, as the harness reported it."""

    question_id: str
    run: int  # 1-based
    request_id: str
    trace_id: str  # `citewise trace show <trace_id>`
    answer: str | None
    termination_reason: str
    message: str = ""
    citations: tuple[Citation, ...] = ()
    tools: tuple[ToolUse, ...] = ()
    seen: tuple[str, ...] = ()  # citations of blocks tools returned and the harness admitted
    refused: tuple[str, ...] = ()  # … returned but refused by the budget (never seen)
    finalized: str | None = None  # why a final turn without tools was forced, if it was
    bundle_hash: str = ""
    cost: float = 0.0
    currency: str = "USD"
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hit_tokens: int = 0
    total_tokens: int = 0
    model_calls: int = 0


class RunRecorder:
    """An `on_event` callback collecting what `check_run` needs from one request's events."""

    def __init__(self) -> None:
        self.finished: RequestFinished | None = None
        self.bundle_hash = ""
        self.tools: list[ToolUse] = []
        self.seen: dict[str, None] = {}
        self.refused: dict[str, None] = {}
        self.finalized: str | None = None
        self._pending: tuple[int, list[str]] | None = None  # (tool index, citations returned)

    async def __call__(self, event: Event) -> None:
        self.add(event)

    def add(self, event: Event) -> None:
        if isinstance(event, RequestStarted):
            bundle = event.manifest.get("prompt_bundle") or {}
            self.bundle_hash = str(bundle.get("hash") or "")
        elif isinstance(event, ToolCallFinished):
            self.tools.append(
                ToolUse(
                    tool=event.tool,
                    args=dict(event.args),
                    harness_status=event.harness_status,
                    outcome=event.outcome,
                )
            )
            self._pending = None
            result = read_result(event.tool, event.payload)
            if event.harness_status == "ok" and result is not None:
                self._pending = (len(self.tools) - 1, returned_citations(result))
        elif isinstance(event, AdmissionDecided) and self._pending is not None:
            index, citations = self._pending
            self._pending = None
            accepted = event.verdict == "accepted"
            self.tools[index] = msgspec.structs.replace(self.tools[index], admitted=accepted)
            target = self.seen if accepted else self.refused
            target.update(dict.fromkeys(citations))
        elif isinstance(event, Finalizing):
            self.finalized = self.finalized or event.reason
        elif isinstance(event, RequestFinished):
            self.finished = event

    def record(self, question_id: str, run: int) -> RunRecord:
        f = self.finished
        if f is None:
            raise RuntimeError(f"run {run} of {question_id} ended without a RequestFinished event")
        c = f.counters
        return RunRecord(
            question_id=question_id,
            run=run,
            request_id=f.request_id,
            trace_id=trace_id_for(f.request_id),
            answer=f.answer,
            termination_reason=f.termination_reason,
            message=f.message,
            citations=f.citations,
            tools=tuple(self.tools),
            seen=tuple(self.seen),
            refused=tuple(c for c in self.refused if c not in self.seen),
            finalized=self.finalized,
            bundle_hash=self.bundle_hash,
            cost=f.cost,
            currency=f.currency,
            prompt_tokens=c.prompt_tokens,
            completion_tokens=c.completion_tokens,
            cache_hit_tokens=c.cache_hit_tokens,
            total_tokens=c.used_tokens,
            model_calls=c.model_calls,
        )


class AnswerCheck(msgspec.Struct, frozen=True, kw_only=True):
    """The verdict on one run: passed when no check failed."""

    question_id: str
    kind: str
    run: int
    passed: bool
    failures: tuple[FailureType, ...] = ()
    details: tuple[str, ...] = ()  # one sentence per failure, for the report
    evidence_layer: EvidenceLayer | None = None  # evidence questions only
    trace_id: str = ""
    termination_reason: str = ""
    cost: float = 0.0
    total_tokens: int = 0
    answer: str | None = None  # kept for review before a promotion


def _block_text(snapshot: Snapshot, citation: str) -> str | None:
    doc_id, _, block_id = citation.partition("#")
    ordinal = snapshot.block_ordinal(doc_id, block_id)
    return None if ordinal is None else snapshot.block(ordinal).text


def _doc_source(snapshot: Snapshot, doc_id: str) -> str | None:
    ordinal = snapshot.doc_ordinal(doc_id)
    return None if ordinal is None else snapshot.documents[ordinal].source_label


def evidence_layer(item: GoldItem, run: RunRecord, snapshot: Snapshot) -> EvidenceLayer:
    """Where the gold evidence got to in this run (the first quote-holding block wins)."""
    quotes = [normalize(e.quote) for e in item.evidence]

    def holds(citation: str) -> bool:
        text = _block_text(snapshot, citation)
        return text is not None and contains_quote(text, quotes)

    if any(c.valid and holds(c.citation) for c in run.citations):
        return "cited"
    if any(holds(c) for c in run.seen):
        return "retrieved_not_cited"
    if any(holds(c) for c in run.refused):
        return "refused_by_budget"
    if not any(t.harness_status == "ok" for t in run.tools):
        return "no_tool_call"
    return "not_retrieved"


def _uncited_documents(item: GoldItem, run: RunRecord, snapshot: Snapshot) -> list[str]:
    """Evidence documents none of whose quotes lies in a valid cited block of that document."""
    missing: list[str] = []
    for document in dict.fromkeys(e.document for e in item.evidence):
        quotes = [normalize(e.quote) for e in item.evidence if e.document == document]
        ok = False
        for c in run.citations:
            if not c.valid or _doc_source(snapshot, c.doc_id) != document:
                continue
            text = _block_text(snapshot, c.citation)
            if text is not None and contains_quote(text, quotes):
                ok = True
                break
        if not ok:
            missing.append(document)
    return missing


def _failed_sources(snapshot: Snapshot) -> list[str]:
    m = snapshot.manifest
    if m.status != "ready_partial" and not m.failed_documents:
        return []
    return [f.source for f in m.failed_documents]


def _names(source: str) -> set[str]:
    """How an answer may name a missing source: its path, file name or file stem."""
    path = PurePosixPath(source.replace("\\", "/"))
    return {normalize(source), normalize(path.name), normalize(path.stem)} - {""}


def check_run(item: GoldItem, run: RunRecord, snapshot: Snapshot) -> AnswerCheck:
    """Apply every rule that fits the question's kind to one run (see FailureType)."""
    failures: list[FailureType] = []
    details: list[str] = []

    def fail(kind: FailureType, why: str) -> None:
        if kind not in failures:
            failures.append(kind)
        details.append(why)

    answer = run.answer
    layer: EvidenceLayer | None = None
    if answer is None:
        fail("no_answer", f"no answer ({run.termination_reason}): {run.message}")
    else:
        folded = normalize_answer(answer)
        if run.termination_reason == "clarification":
            fail("clarification", "asked to clarify an unambiguous question")
        invalid = [c.citation for c in run.citations if not c.valid]
        if item.kind in DECLINED_KINDS:
            if run.citations:
                fail(
                    "invented_evidence",
                    f"cites {len(run.citations)} block(s) for a question "
                    "the documents do not answer",
                )
            if not declines(answer):
                fail("not_declined", "does not say the documents do not cover it")
        else:
            located = [c.citation for c in run.citations if c.located_not_read]
            unverified = [c for c in invalid if c not in located]
            if unverified:
                fail("invalid_citation", f"unverifiable citation(s): {', '.join(unverified)}")
            if located:
                fail(
                    "invalid_citation",
                    f"cites block(s) only located by scan_term, never read: {', '.join(located)}",
                )
            if item.evidence:
                layer = evidence_layer(item, run, snapshot)
                uncited = _uncited_documents(item, run, snapshot)
                if uncited:
                    fail(
                        "evidence_not_cited",
                        f"no cited block holds the evidence of "
                        f"{', '.join(uncited)} ({layer.replace('_', ' ')})",
                    )
            for variants in item.facts():
                if not any(normalize_answer(v) in folded for v in variants):
                    fail("fact_missing", f"missing fact {' / '.join(variants)!r}")
            if item.kind == "coverage":
                absent = [s for s in item.expected_sections if section_key(s) not in folded]
                if absent:
                    fail("section_missing", f"does not list {', '.join(absent)}")
            if item.kind == "scan" and item.term:
                needle = fold(item.term.strip())
                if not any(
                    c.valid and needle in fold(_block_text(snapshot, c.citation) or "")
                    for c in run.citations
                ):
                    fail("term_not_cited", f"cites no block containing {item.term!r}")
        gaps = _failed_sources(snapshot)
        unnamed = [s for s in gaps if not any(n in folded for n in _names(s))]
        if unnamed:
            fail(
                "gap_not_disclosed",
                f"the snapshot is partial and the answer does not name {', '.join(unnamed)}",
            )
        # Refused evidence: the gold evidence was only ever in refused results (evidence
        # questions), or any refused result never admitted later (the others); or the run was
        # forced to finish early by the request budget or the tool-call limit.
        refused = layer == "refused_by_budget" if item.evidence else bool(run.refused)
        limited = refused or run.finalized in ("budget", "tool_call_limit")
        if limited and not discloses_gap(answer):
            fail(
                "gap_not_disclosed",
                "a budget or tool-call limit refused evidence and the "
                "answer does not say what is missing",
            )
    return AnswerCheck(
        question_id=item.id,
        kind=item.kind,
        run=run.run,
        passed=not failures,
        failures=tuple(failures),
        details=tuple(details),
        evidence_layer=layer,
        trace_id=run.trace_id,
        termination_reason=run.termination_reason,
        cost=run.cost,
        total_tokens=run.total_tokens,
        answer=answer,
    )
