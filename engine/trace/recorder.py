"""Turns one request's harness events (or one import's progress) into a span tree + artifacts.

Metadata mode keeps ids, figures, hashes and sizes but never stores document text, prompts,
replies or answers; full mode also stores those artifacts. A missing or out-of-order event
never makes it raise: what it did not see stays open.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from engine.chat import ChatMessage
from engine.harness import events as ev
from engine.tools.contracts import ToolInternals, read_result, returned_citations
from engine.trace import model as m
from engine.trace.manifest import canonical_json, from_harness, manifest_hash, normalized
from engine.trace.model import (
    ArtifactKind,
    ArtifactPut,
    ArtifactRef,
    Attributes,
    ManifestPut,
    Span,
    SpanEvent,
    SpanKind,
    SpanPut,
    SpanStatus,
    TraceHead,
    TraceMode,
    WriteOp,
    sha256_hex,
    span_id_for,
)

_encode = msgspec.json.Encoder().encode
AGENT = "citewise"


@dataclass
class _Open:
    """A span being built; frozen into a Span when written."""

    key: str
    kind: SpanKind
    name: str
    parent: str | None  # key of the parent span
    start: float
    end: float | None = None
    status: SpanStatus = "unset"
    status_message: str = ""
    attributes: Attributes = field(default_factory=dict)
    events: list[SpanEvent] = field(default_factory=list)
    artifacts: list[ArtifactRef] = field(default_factory=list)


class _Tree:
    """Spans of one trace by key, and the write records they turn into."""

    def __init__(self, trace_id: str, mode: TraceMode) -> None:
        self.trace_id = trace_id
        self.mode = mode
        self.spans: dict[str, _Open] = {}
        self.ops: list[WriteOp] = []
        self._stored: set[str] = set()

    def open(self, key: str, kind: SpanKind, name: str, parent: str | None, start: float) -> _Open:
        span = self.spans.get(key)
        if span is None:
            span = _Open(key, kind, name, parent, start)
            self.spans[key] = span
        return span

    def freeze(self, span: _Open) -> Span:
        parent = span.parent if span.parent in self.spans else None
        return Span(
            trace_id=self.trace_id,
            span_id=span_id_for(self.trace_id, span.key),
            parent_id=None if parent is None else span_id_for(self.trace_id, parent),
            kind=span.kind,
            name=span.name,
            start=span.start,
            end=span.end,
            status=span.status,
            status_message=span.status_message,
            attributes=dict(span.attributes),
            events=tuple(span.events),
            artifacts=tuple(span.artifacts),
        )

    def write(self, span: _Open) -> None:
        self.ops.append(SpanPut(span=self.freeze(span)))

    def close(self, span: _Open, end: float, status: SpanStatus = "ok", message: str = "") -> None:
        span.end = max(end, span.start)
        if span.status == "unset" or status == "error":
            span.status = status
            span.status_message = message or span.status_message
        self.write(span)

    def artifact(self, span: _Open, kind: ArtifactKind, data: bytes, media: str) -> ArtifactRef:
        """Reference `data` from `span`; its bytes are stored in full mode only."""
        sha = sha256_hex(data)
        stored = self.mode == "full"
        ref = ArtifactRef(kind=kind, sha256=sha, size=len(data), stored=stored, media_type=media)
        span.artifacts.append(ref)
        if stored and sha not in self._stored:
            self._stored.add(sha)
            self.ops.append(ArtifactPut(trace_id=self.trace_id, sha256=sha, data=data))
        return ref

    def take(self) -> list[WriteOp]:
        ops, self.ops = self.ops, []
        return ops


def messages_json(messages: Iterable[ChatMessage]) -> bytes:
    """The `messages` array exactly as the chat client encodes it into the request body."""
    return _encode(list(messages))


def join_messages(parts: Iterable[bytes]) -> bytes:
    """Reassemble the array from per-message JSON: byte-identical to `messages_json`."""
    return b"[" + b",".join(parts) + b"]"


class RequestRecorder:
    """One request: feed it the request's events in order; it returns what to write."""

    def __init__(self, trace_id: str, mode: TraceMode) -> None:
        self.trace_id = trace_id
        self.mode = mode
        self.tree = _Tree(trace_id, mode)
        self.base: float | None = None  # wall-clock time of the request's `at` = 0
        self.finished = False
        self.model = ""
        self.provider = ""
        self._refused = 0
        self._admissions = 0
        self._deltas = 0
        self._last_model_start: float | None = None

    def spans(self) -> list[Span]:
        return [self.tree.freeze(s) for s in self.tree.spans.values()]

    def _wall(self, event: ev.Event, received: float) -> float:
        if self.base is None:
            self.base = received - event.at
        return self.base + event.at

    def feed(self, event: ev.Event, received: float) -> list[WriteOp]:
        """`received`: wall-clock seconds when the event was handed to the trace writer."""
        t = self._wall(event, received)
        handler = _HANDLERS.get(type(event))
        if handler is not None:
            handler(self, event, t)
        return self.tree.take()

    # -- the request ---------------------------------------------------------------------

    def _request(self, t: float) -> _Open:
        return self.tree.open("request", "request", f"invoke_agent {AGENT}", None, t)

    def _started(self, e: ev.RequestStarted, t: float) -> None:
        span = self._request(t)
        span.start = t
        manifest = normalized(from_harness(e.manifest), self.mode)
        body = canonical_json(manifest)
        digest = manifest_hash(manifest)
        self.model = manifest.chat.model if manifest.chat else ""
        self.provider = manifest.chat.provider if manifest.chat else ""
        snap = manifest.snapshot
        a = span.attributes
        a[m.OPERATION] = "invoke_agent"
        a[m.AGENT_NAME] = AGENT
        a[m.PROVIDER] = self.provider
        a[m.REQUEST_MODEL] = self.model
        a[m.REQUEST_ID] = e.request_id
        a[m.QUESTION_CHARS] = len(e.question)
        a[m.MANIFEST_HASH] = digest
        a[m.TRACE_MODE] = self.mode
        if e.conversation_id:
            a[m.CONVERSATION_ID] = e.conversation_id
        if snap is not None:
            a[m.SNAPSHOT_ID] = snap.id
            a[m.SNAPSHOT_HASH] = snap.content_hash
            a[m.COLLECTION] = snap.collection
        for key, value in manifest.budgets.items():
            a[m.BUDGET_PREFIX + key] = value
        self.tree.ops.append(ManifestPut(sha256=digest, body=body))
        self.tree.ops.append(
            TraceHead(
                trace_id=self.trace_id,
                kind="request",
                started=t,
                question=e.question,
                status="running",
                mode=self.mode,
                manifest_hash=digest,
                snapshot_id=snap.id if snap else None,
                collection=snap.collection if snap else None,
                conversation_id=e.conversation_id,
            )
        )
        self.tree.write(span)

    def _note(self, name: str, t: float, attributes: Attributes) -> None:
        self._request(t).events.append(SpanEvent(name=name, at=t, attributes=attributes))

    def _trimmed(self, e: ev.ConversationTrimmed, t: float) -> None:
        self._note(
            "conversation_trimmed",
            t,
            {"citewise.dropped": e.dropped, "citewise.kept": e.kept, "citewise.reason": e.reason},
        )

    def _finalizing(self, e: ev.Finalizing, t: float) -> None:
        self._note("finalizing", t, {"citewise.reason": e.reason, "citewise.message": e.message})

    def _finished(self, e: ev.RequestFinished, t: float) -> None:
        tree = self.tree
        request = self._request(t)
        for span in list(tree.spans.values()):
            if span.end is None and span is not request:
                if span.kind == "turn":  # the last turn ends with the request
                    tree.close(span, t)
                else:
                    reason = f"not finished: the request ended ({e.termination_reason})"
                    tree.close(span, t, "error", reason)
        answered = e.termination_reason in ev.ANSWERED and e.answer is not None
        # the final answer is what the last model call streamed: the span covers that call
        start = self._last_model_start if answered and self._last_model_start else t
        final = tree.open("final", "final", "final answer", "request", start)
        fa = final.attributes
        fa[m.TERMINATION] = e.termination_reason
        if e.answer is not None:
            fa[m.ANSWER_CHARS] = len(e.answer)
            tree.artifact(final, "answer", e.answer.encode(), "text/plain; charset=utf-8")
        fa[m.CITATIONS] = [x.citation for x in e.citations]
        fa[m.CITATIONS_VALID] = [x.valid for x in e.citations]
        fa[m.CITATIONS_INVALID] = sum(1 for x in e.citations if not x.valid)
        for cited in e.citations:
            final.events.append(SpanEvent(name="citation", at=t, attributes=_citation(cited)))
        tree.close(final, t, "ok" if answered else "error", "" if answered else e.message)

        c = e.counters
        ra = request.attributes
        ra[m.TERMINATION] = e.termination_reason
        ra[m.INPUT_TOKENS] = c.prompt_tokens
        ra[m.OUTPUT_TOKENS] = c.completion_tokens
        ra[m.CACHE_READ_TOKENS] = c.cache_hit_tokens
        ra[m.REASONING_TOKENS] = c.reasoning_tokens
        ra[m.COST] = e.cost
        ra[m.CURRENCY] = e.currency
        ra["citewise.answer.deltas"] = self._deltas
        for key, value in msgspec.structs.asdict(c).items():
            ra[m.COUNTER_PREFIX + key] = value
        tree.close(request, t, "ok" if answered else "error", "" if answered else e.message)
        tree.ops.append(
            TraceHead(
                trace_id=self.trace_id,
                ended=t,
                status="ok" if answered else "error",
                termination_reason=e.termination_reason,
                tokens=c.used_tokens,
                cost=e.cost,
                currency=e.currency,
                snapshot_id=e.snapshot_id,
            )
        )
        self.finished = True

    # -- turns and model calls -------------------------------------------------------------

    def _turn(self, turn: int, t: float) -> _Open:
        return self.tree.open(f"turn:{turn}", "turn", f"turn {turn}", "request", t)

    def _turn_started(self, e: ev.TurnStarted, t: float) -> None:
        self._request(t)
        for span in self.tree.spans.values():
            if span.kind == "turn" and span.end is None:
                self.tree.close(span, t)
        span = self._turn(e.turn, t)
        if e.final:
            span.name = f"turn {e.turn} (final, no tools)"
        span.attributes[m.TURN] = e.turn
        span.attributes[m.FINAL_TURN] = e.final
        span.attributes[m.PROMPT_TOKENS_ESTIMATED] = e.prompt_tokens
        self.tree.write(span)

    def _model_started(self, e: ev.ModelCallStarted, t: float) -> None:
        self._turn(e.turn, t)
        key = f"llm:{e.turn}:{e.attempt}"
        span = self.tree.open(key, "llm_call", f"chat {self.model}".strip(), f"turn:{e.turn}", t)
        self._last_model_start = t
        a = span.attributes
        a[m.OPERATION] = "chat"
        a[m.PROVIDER] = self.provider
        a[m.REQUEST_MODEL] = self.model
        a[m.REQUEST_MAX_TOKENS] = e.max_tokens
        a[m.PROMPT_TOKENS_ESTIMATED] = e.prompt_tokens
        a[m.TURN] = e.turn
        a[m.ATTEMPT] = e.attempt
        parts = [_encode(message) for message in e.messages]
        whole = join_messages(parts)
        a["citewise.messages.count"] = len(parts)
        a["citewise.messages.bytes"] = len(whole)
        a["citewise.messages.sha256"] = sha256_hex(whole)
        a["citewise.messages.roles"] = [message.role for message in e.messages]
        for part in parts:  # one artifact per message, in order: each is stored once per trace
            self.tree.artifact(span, "messages", part, "application/json")

    def _model_finished(self, e: ev.ModelCallFinished, t: float) -> None:
        key = f"llm:{e.turn}:{e.attempt}"
        span = self.tree.open(key, "llm_call", f"chat {self.model}".strip(), f"turn:{e.turn}", t)
        self._turn(e.turn, t)
        a = span.attributes
        if e.usage is not None:
            a[m.INPUT_TOKENS] = e.usage.prompt_tokens
            a[m.OUTPUT_TOKENS] = e.usage.completion_tokens
            a[m.CACHE_READ_TOKENS] = e.usage.prompt_cache_hit_tokens
            a[m.REASONING_TOKENS] = e.usage.reasoning_tokens
            a[m.USAGE_COUNTED] = e.usage_counted
        a[m.COST] = e.cost
        a[m.LATENCY_MS] = round(e.latency_ms, 3)
        if e.first_token_ms is not None:
            a[m.FIRST_TOKEN_MS] = round(e.first_token_ms, 3)
        if e.finish_reason:
            a[m.FINISH_REASONS] = [e.finish_reason]
        if e.model:
            a[m.RESPONSE_MODEL] = e.model
        if e.response_id:
            a[m.RESPONSE_ID] = e.response_id
        a[m.WILL_RETRY] = e.will_retry
        a["citewise.reply.chars"] = len(e.reply)
        if e.reply:
            self.tree.artifact(span, "reply", e.reply.encode(), "text/plain; charset=utf-8")
        if e.reasoning:
            a["citewise.reasoning.chars"] = len(e.reasoning)
            self.tree.artifact(span, "reasoning", e.reasoning.encode(), "text/plain; charset=utf-8")
        if e.ok:
            self.tree.close(span, t)
        else:
            a[m.ERROR_TYPE] = e.error_code or "error"
            a[m.ERROR_CODE] = e.error_code or "error"
            a[m.ERROR_MESSAGE] = e.error_message or ""
            self.tree.close(span, t, "error", e.error_message or e.error_code or "failed")

    def _retracted(self, e: ev.AnswerRetracted, t: float) -> None:
        llm = [s for s in self.tree.spans.values() if s.kind == "llm_call"]
        target = llm[-1] if llm else self._request(t)
        target.events.append(
            SpanEvent(name="answer_retracted", at=t, attributes={"citewise.reason": e.reason})
        )

    def _protocol_error(self, e: ev.ProtocolErrorSeen, t: float) -> None:
        turn = self._turn(e.turn, t)
        turn.events.append(
            SpanEvent(
                name="protocol_error",
                at=t,
                attributes={"citewise.message": e.message, "citewise.consecutive": e.consecutive},
            )
        )
        turn.status = "error"
        turn.status_message = "the reply broke the response protocol"

    def _delta(self, e: ev.AnswerDelta, t: float) -> None:
        self._deltas += 1

    # -- tools and admission ------------------------------------------------------------------

    def _tool_key(self, turn: int, call: int, *, new: bool) -> str:
        if call > 0:
            return f"tool:{call}"
        if new:
            self._refused += 1
        return f"tool:{turn}:refused:{self._refused}"

    def _tool_started(self, e: ev.ToolCallStarted, t: float) -> None:
        self._turn(e.turn, t)
        key = self._tool_key(e.turn, e.call, new=True)
        span = self.tree.open(key, "tool_call", f"execute_tool {e.tool}", f"turn:{e.turn}", t)
        _tool_attributes(span.attributes, e.tool, e.call, e.turn, e.args)

    def _tool_finished(self, e: ev.ToolCallFinished, t: float) -> None:
        self._turn(e.turn, t)
        key = self._tool_key(e.turn, e.call, new=False)
        span = self.tree.open(key, "tool_call", f"execute_tool {e.tool}", f"turn:{e.turn}", t)
        a = span.attributes
        _tool_attributes(a, e.tool, e.call, e.turn, e.args)
        a[m.HARNESS_STATUS] = e.harness_status
        a[m.TOOL_OUTCOME] = e.outcome
        a[m.TOOL_TOKEN_ESTIMATE] = e.token_estimate
        a[m.TOOL_ATTEMPTS] = e.attempts
        a[m.LATENCY_MS] = round(e.latency_ms, 3)
        if e.payload is not None:
            result = read_result(e.tool, e.payload)
            a[m.TOOL_BLOCKS] = [] if result is None else returned_citations(result)
            a["citewise.tool.payload_bytes"] = len(e.payload)
            self.tree.artifact(span, "tool_payload", e.payload, "application/json")
        if e.suspicious:
            # Ids and kinds only: metadata mode never stores document text.
            a["citewise.injection.count"] = len(e.suspicious)
            a["citewise.injection.kinds"] = sorted({k for s in e.suspicious for k in s.kinds})
            a["citewise.injection.blocks"] = [s.citation for s in e.suspicious]
            for s in e.suspicious:
                span.events.append(
                    SpanEvent(
                        name="injection_suspected",
                        at=t,
                        attributes={
                            "citewise.citation": s.citation,
                            "citewise.kinds": list(s.kinds),
                        },
                    )
                )
        if e.internal is not None:
            a.update(retrieval_attributes(e.internal))
            self.tree.artifact(span, "tool_internal", _encode(e.internal), "application/json")
        failed = e.harness_status != "ok" or e.outcome in _TOOL_ERRORS or e.outcome == "exception"
        if failed:
            a[m.ERROR_TYPE] = e.outcome if e.harness_status == "ok" else e.harness_status
            if e.harness_status == "ok" and e.outcome in _TOOL_ERRORS:
                a[m.ERROR_CODE] = e.outcome
        elif e.outcome != "ok":
            a[m.EMPTY_REASON] = e.outcome
        self.tree.close(span, t, "error" if failed else "ok", f"{e.harness_status}: {e.outcome}")

    def _admission(self, e: ev.AdmissionDecided, t: float) -> None:
        self._turn(e.turn, t)
        self._admissions += 1
        name = f"admission {e.tool}" if e.tool else "admission"
        span = self.tree.open(
            f"admission:{self._admissions}", "admission", name, f"turn:{e.turn}", t
        )
        a = span.attributes
        a[m.TURN] = e.turn
        if e.tool:
            a[m.TOOL_NAME] = e.tool
        a[m.ADMISSION_VERDICT] = e.verdict
        a[m.ADMISSION_PROMPT_TOKENS] = e.prompt_tokens
        a[m.ADMISSION_RESULT_TOKENS] = e.result_tokens
        a[m.ADMISSION_NEEDED] = e.needed
        a[m.ADMISSION_AVAILABLE] = e.available
        a[m.ADMISSION_USED] = e.used_tokens
        accepted = e.verdict == "accepted"
        message = "" if accepted else f"{e.verdict}: needs {e.needed}, {e.available} available"
        self.tree.close(span, t, "ok" if accepted else "error", message)


_TOOL_ERRORS = frozenset(
    {
        "invalid_argument",
        "scope_not_found",
        "collection_unavailable",
        "upstream_unavailable",
        "tool_internal_error",
    }
)


def _tool_attributes(a: Attributes, tool: str, call: int, turn: int, args: Any) -> None:
    a[m.OPERATION] = "execute_tool"
    a[m.TOOL_NAME] = tool
    a[m.TOOL_TYPE] = "function"
    a[m.TURN] = turn
    if call > 0:
        a[m.TOOL_CALL_ID] = f"call-{call}"
    a[m.TOOL_ARGS] = _encode(args).decode()


def retrieval_attributes(internal: ToolInternals) -> Attributes:
    """Ranks and scores per list from search_blocks' internals, as flat attributes."""
    out: Attributes = {}
    if internal.embedding_tokens is not None:
        out[m.EMBEDDING_TOKENS] = internal.embedding_tokens
    if internal.embedding_error is not None:
        out[m.ERROR_CODE] = internal.embedding_error
    search = internal.search
    if search is None:
        return out
    ranking = search.ranking
    out[m.RETRIEVAL_VERSION] = search.retrieval_version
    out[m.RETRIEVAL_QUERY_TOKENS] = list(search.query_tokens)
    if search.character_tokens:
        out[m.RETRIEVAL_CHARACTER_TOKENS] = list(search.character_tokens)
    out[m.RETRIEVAL_KEYWORD_CANDIDATES] = search.keyword_candidates
    out[m.RETRIEVAL_VECTOR_CANDIDATES] = search.vector_candidates
    out[m.RETRIEVAL_BLOCKS] = [r.citation for r in ranking]
    out[m.RETRIEVAL_FUSED] = [r.fused for r in ranking]
    out[m.RETRIEVAL_KEYWORD_RANKS] = [r.keyword_rank or 0 for r in ranking]
    out[m.RETRIEVAL_KEYWORD_SCORES] = [r.keyword_score or 0.0 for r in ranking]
    out[m.RETRIEVAL_VECTOR_RANKS] = [r.vector_rank or 0 for r in ranking]
    out[m.RETRIEVAL_VECTOR_SIMILARITIES] = [r.similarity or 0.0 for r in ranking]
    if any(r.section_similarity is not None for r in ranking):
        out[m.RETRIEVAL_SECTION_SIMILARITIES] = [r.section_similarity or 0.0 for r in ranking]
    # Each vector candidate's similarity against the snapshot's floor (under it: no match).
    out[m.RETRIEVAL_VECTOR_FLOOR] = search.similarity_floor
    out[m.RETRIEVAL_VECTOR_BELOW_FLOOR] = search.vector_below_floor
    out[m.RETRIEVAL_VECTOR_READ] = [c for c, _ in search.vector_read]
    out[m.RETRIEVAL_VECTOR_READ_SIMILARITIES] = [s for _, s in search.vector_read]
    return out


def _citation(c: Any) -> Attributes:
    """A citation's identity and where it points — never its preview (document text)."""
    out: Attributes = {
        "citewise.citation": c.citation,
        "citewise.citation.valid": c.valid,
        "citewise.citation.index": c.index,
        "citewise.citation.returned_by": list(c.returned_by),
        "citewise.citation.title": c.title,
        "citewise.citation.source": c.source_label,
        "citewise.citation.section": c.section_path,
    }
    if c.problem:
        out["citewise.citation.problem"] = c.problem
    if c.page_start is not None:
        out["citewise.citation.page_start"] = c.page_start
        out["citewise.citation.page_end"] = c.page_end if c.page_end is not None else c.page_start
    return out


_HANDLERS: dict[type[Any], Any] = {
    ev.RequestStarted: RequestRecorder._started,
    ev.ConversationTrimmed: RequestRecorder._trimmed,
    ev.TurnStarted: RequestRecorder._turn_started,
    ev.ModelCallStarted: RequestRecorder._model_started,
    ev.ModelCallFinished: RequestRecorder._model_finished,
    ev.AnswerDelta: RequestRecorder._delta,
    ev.AnswerRetracted: RequestRecorder._retracted,
    ev.ProtocolErrorSeen: RequestRecorder._protocol_error,
    ev.ToolCallStarted: RequestRecorder._tool_started,
    ev.ToolCallFinished: RequestRecorder._tool_finished,
    ev.AdmissionDecided: RequestRecorder._admission,
    ev.Finalizing: RequestRecorder._finalizing,
    ev.RequestFinished: RequestRecorder._finished,
}


# -- imports -----------------------------------------------------------------------------------


class IngestSample(msgspec.Struct, frozen=True, kw_only=True):
    """The state of an import at one moment (actors/ingest.py's progress, copied)."""

    job_id: str
    collection: str
    state: str
    documents: dict[str, str]  # source -> queued | parsing | embedding | done | failed | reused
    documents_total: int = 0
    documents_done: int = 0
    documents_failed: int = 0
    documents_reused: int = 0
    pages: int = 0
    blocks: int = 0
    blocks_embedded: int = 0
    embedding_tokens: int = 0
    elapsed_s: float = 0.0


class IngestFailure(msgspec.Struct, frozen=True, kw_only=True):
    source: str
    stage: str
    reason: str


class IngestEnded(msgspec.Struct, frozen=True, kw_only=True):
    job_id: str
    collection: str
    snapshot_id: str | None
    status: str | None  # ready | ready_partial | failed | None (nothing changed)
    activated: bool
    failed: tuple[IngestFailure, ...] = ()
    skipped: int = 0
    stats: dict[str, int] = {}
    message: str = ""


_DOC_FINAL = {"done": "ok", "reused": "ok", "failed": "error"}


class IngestRecorder:
    """One import: a root `ingest` span with one child per document and its stages."""

    def __init__(self, trace_id: str, mode: TraceMode) -> None:
        self.trace_id = trace_id
        self.tree = _Tree(trace_id, mode)
        self.mode = mode
        self.finished = False
        self._started = False
        self._states: dict[str, str] = {}

    def spans(self) -> list[Span]:
        return [self.tree.freeze(s) for s in self.tree.spans.values()]

    def _root(self, collection: str, t: float) -> _Open:
        return self.tree.open("ingest", "ingest", f"import {collection}", None, t)

    def feed(self, item: IngestSample | IngestEnded, received: float) -> list[WriteOp]:
        if isinstance(item, IngestSample):
            self._sample(item, received)
        else:
            self._ended(item, received)
        return self.tree.take()

    def _sample(self, s: IngestSample, t: float) -> None:
        root = self._root(s.collection, t - s.elapsed_s)
        if not self._started:
            self._started = True
            root.attributes[m.COLLECTION] = s.collection
            self.tree.ops.append(
                TraceHead(
                    trace_id=self.trace_id,
                    kind="ingest",
                    started=root.start,
                    status="running",
                    mode=self.mode,
                    collection=s.collection,
                )
            )
            self.tree.write(root)
        for key, value in (
            ("documents_total", s.documents_total),
            ("documents_done", s.documents_done),
            ("documents_failed", s.documents_failed),
            ("documents_reused", s.documents_reused),
            ("pages", s.pages),
            ("blocks", s.blocks),
            ("blocks_embedded", s.blocks_embedded),
        ):
            root.attributes[f"citewise.ingest.{key}"] = value
        root.attributes[m.EMBEDDING_TOKENS] = s.embedding_tokens
        for source, state in s.documents.items():
            if self._states.get(source) == state:
                continue
            self._states[source] = state
            span = self.tree.open(f"doc:{source}", "ingest", source, "ingest", t)
            span.attributes[m.INGEST_SOURCE] = source
            span.attributes[m.INGEST_STAGE] = state
            span.events.append(SpanEvent(name=state, at=t))
            if state in _DOC_FINAL and span.end is None:
                status: SpanStatus = "ok" if _DOC_FINAL[state] == "ok" else "error"
                self.tree.close(span, t, status, "" if status == "ok" else "failed")

    def _ended(self, e: IngestEnded, t: float) -> None:
        root = self._root(e.collection, t)
        for failure in e.failed:
            span = self.tree.open(f"doc:{failure.source}", "ingest", failure.source, "ingest", t)
            span.attributes[m.INGEST_SOURCE] = failure.source
            span.attributes[m.INGEST_STAGE] = failure.stage
            span.attributes[m.ERROR_TYPE] = failure.reason
            message = f"{failure.stage}: {failure.reason}"
            if span.end is None:
                self.tree.close(span, t, "error", message)
            else:
                span.status, span.status_message = "error", message
                self.tree.write(span)
        for span in list(self.tree.spans.values()):
            if span.end is None and span is not root:
                self.tree.close(span, t, "error", "not finished when the import ended")
        a = root.attributes
        if e.snapshot_id:
            a[m.SNAPSHOT_ID] = e.snapshot_id
        a["citewise.ingest.status"] = e.status or "unchanged"
        a["citewise.ingest.activated"] = e.activated
        a["citewise.ingest.skipped"] = e.skipped
        for key, value in e.stats.items():
            a[f"citewise.ingest.stats.{key}"] = value
        ok = e.status != "failed"
        self.tree.close(root, t, "ok" if ok else "error", "" if ok else e.message)
        self.tree.ops.append(
            TraceHead(
                trace_id=self.trace_id,
                kind="ingest",
                started=root.start,
                ended=t,
                status="ok" if ok else "error",
                termination_reason=e.status or "unchanged",
                collection=e.collection,
                mode=self.mode,
                snapshot_id=e.snapshot_id,
            )
        )
        self.finished = True
