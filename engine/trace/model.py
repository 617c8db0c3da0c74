"""The trace contract: spans, artifact references, trace summaries and the store's write records.

Attribute names follow the OpenTelemetry GenAI conventions where one exists (`gen_ai.*`) and
use `citewise.*` otherwise. These records hold identifiers, sizes, hashes and figures; document
text, prompts and answers live only in artifacts, which metadata mode never stores.
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal

import msgspec

TRACE_FORMAT = 1

SpanKind = Literal["request", "turn", "llm_call", "tool_call", "admission", "final", "ingest"]
SPAN_KINDS: tuple[SpanKind, ...] = (
    "request",
    "turn",
    "llm_call",
    "tool_call",
    "admission",
    "final",
    "ingest",
)
SpanStatus = Literal["ok", "error", "unset"]  # OpenTelemetry's status codes
TraceMode = Literal["metadata", "full"]
TraceKind = Literal["request", "ingest"]
# ok: answered; error: ended without an answer; running: no final event (yet, or ever)
TraceStatus = Literal["ok", "error", "running"]
ArtifactKind = Literal[
    "messages",  # the exact `messages` JSON array sent to the model in one call
    "reply",  # the model's visible reply
    "reasoning",  # a reasoning model's reasoning_content
    "tool_payload",  # the exact model-facing tool result JSON
    "tool_internal",  # retrieval details the model never sees
    "answer",  # the final answer
]

# Attribute values are OpenTelemetry's: str, bool, int, float or a homogeneous list of one.
Attributes = dict[str, Any]

# -- attribute names -----------------------------------------------------------------------
# OpenTelemetry GenAI semantic conventions
OPERATION = "gen_ai.operation.name"  # "chat", "execute_tool", "invoke_agent"
PROVIDER = "gen_ai.provider.name"
REQUEST_MODEL = "gen_ai.request.model"
REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
REQUEST_TEMPERATURE = "gen_ai.request.temperature"
RESPONSE_MODEL = "gen_ai.response.model"
RESPONSE_ID = "gen_ai.response.id"
FINISH_REASONS = "gen_ai.response.finish_reasons"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
CACHE_READ_TOKENS = "gen_ai.usage.cache_read.input_tokens"
REASONING_TOKENS = "gen_ai.usage.reasoning.output_tokens"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
CONVERSATION_ID = "gen_ai.conversation.id"
AGENT_NAME = "gen_ai.agent.name"
ERROR_TYPE = "error.type"
# Citewise
REQUEST_ID = "citewise.request.id"
QUESTION_CHARS = "citewise.question.chars"
MANIFEST_HASH = "citewise.manifest.hash"
SNAPSHOT_ID = "citewise.snapshot.id"
SNAPSHOT_HASH = "citewise.snapshot.content_hash"
COLLECTION = "citewise.collection"
TERMINATION = "citewise.termination_reason"
TURN = "citewise.turn"
FINAL_TURN = "citewise.turn.final"
ATTEMPT = "citewise.attempt"
WILL_RETRY = "citewise.will_retry"
ERROR_CODE = "citewise.error.code"
ERROR_MESSAGE = "citewise.error.message"
PROMPT_TOKENS_ESTIMATED = "citewise.prompt_tokens.estimated"
USAGE_COUNTED = "citewise.usage.counted"  # the tokenizer stood in for missing usage
COST = "citewise.cost"
CURRENCY = "citewise.currency"
LATENCY_MS = "citewise.latency_ms"
FIRST_TOKEN_MS = "citewise.first_token_ms"
HARNESS_STATUS = "citewise.harness_status"
TOOL_OUTCOME = "citewise.tool.outcome"  # ok, an empty_reason or the tool's error code
EMPTY_REASON = "citewise.tool.empty_reason"
TOOL_ARGS = "citewise.tool.args"  # JSON text of the arguments (metadata: the model wrote them)
TOOL_TOKEN_ESTIMATE = "citewise.tool.token_estimate"
TOOL_ATTEMPTS = "citewise.tool.attempts"
TOOL_BLOCKS = "citewise.tool.blocks"  # citation ids returned, in order
ADMISSION_VERDICT = "citewise.admission.verdict"
ADMISSION_PROMPT_TOKENS = "citewise.admission.prompt_tokens"
ADMISSION_RESULT_TOKENS = "citewise.admission.result_tokens"
ADMISSION_NEEDED = "citewise.admission.needed"
ADMISSION_AVAILABLE = "citewise.admission.available"
ADMISSION_USED = "citewise.admission.used_tokens"
RETRIEVAL_VERSION = "citewise.retrieval.version"
RETRIEVAL_QUERY_TOKENS = "citewise.retrieval.query_tokens"
# A Chinese query's single characters, scored only in blocks that match a query token.
RETRIEVAL_CHARACTER_TOKENS = "citewise.retrieval.character_tokens"
RETRIEVAL_KEYWORD_CANDIDATES = "citewise.retrieval.keyword.candidates"
RETRIEVAL_VECTOR_CANDIDATES = "citewise.retrieval.vector.candidates"
# Parallel lists over the returned blocks, best first; rank 0 = not in that list.
RETRIEVAL_BLOCKS = "citewise.retrieval.blocks"
RETRIEVAL_FUSED = "citewise.retrieval.fused_scores"
RETRIEVAL_KEYWORD_RANKS = "citewise.retrieval.keyword.ranks"
RETRIEVAL_KEYWORD_SCORES = "citewise.retrieval.keyword.scores"
RETRIEVAL_VECTOR_RANKS = "citewise.retrieval.vector.ranks"
RETRIEVAL_VECTOR_SIMILARITIES = "citewise.retrieval.vector.similarities"
# The block's section against the query, where the vector order weighed it in.
RETRIEVAL_SECTION_SIMILARITIES = "citewise.retrieval.vector.section_similarities"
RETRIEVAL_VECTOR_FLOOR = "citewise.retrieval.vector.floor"
RETRIEVAL_VECTOR_BELOW_FLOOR = "citewise.retrieval.vector.below_floor"
RETRIEVAL_VECTOR_READ = "citewise.retrieval.vector.read"  # citations read, best first
RETRIEVAL_VECTOR_READ_SIMILARITIES = "citewise.retrieval.vector.read_similarities"
EMBEDDING_TOKENS = "citewise.embedding.tokens"  # the embedding vendor's count, never chat tokens
BUDGET_PREFIX = "citewise.budget."  # citewise.budget.max_context_tokens …
COUNTER_PREFIX = "citewise.counters."  # citewise.counters.tool_calls …
ANSWER_CHARS = "citewise.answer.chars"
CITATIONS = "citewise.citations"  # citation ids in order of first appearance
CITATIONS_VALID = "citewise.citations.valid"  # parallel booleans
CITATIONS_INVALID = "citewise.citations.invalid_count"
TRACE_MODE = "citewise.trace.mode"
INGEST_STAGE = "citewise.ingest.stage"
INGEST_SOURCE = "citewise.ingest.source"


class ArtifactRef(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A content-addressed blob linked from a span. `stored` is False in metadata mode: the
    hash and size are kept (they prove what was sent) but the bytes are not."""

    kind: ArtifactKind
    sha256: str
    size: int
    stored: bool
    media_type: str = "application/json"


class SpanEvent(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A point in time inside a span (a protocol error, a retracted answer, a finalization)."""

    name: str
    at: float  # unix seconds
    attributes: Attributes = {}


class Span(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    trace_id: str  # 32 hex digits (OpenTelemetry's 16-byte trace id)
    span_id: str  # 16 hex digits
    parent_id: str | None
    kind: SpanKind
    name: str
    start: float  # unix seconds
    end: float | None  # None while the span is open (or was never closed: a killed process)
    status: SpanStatus = "unset"
    status_message: str = ""
    attributes: Attributes = {}
    events: tuple[SpanEvent, ...] = ()
    artifacts: tuple[ArtifactRef, ...] = ()

    @property
    def duration_ms(self) -> float | None:
        return None if self.end is None else (self.end - self.start) * 1000


class TraceSummary(msgspec.Struct, kw_only=True):
    """One row of `citewise trace list`; the field names of SPEC §15 come first."""

    trace_id: str
    started_at: str  # ISO-8601 UTC
    question: str  # the user's question (metadata: needed to list and re-run); "" for ingest
    status: TraceStatus
    termination_reason: str | None
    tokens: int  # chat tokens used (prompt + completion over every model call)
    cost: float
    currency: str = "USD"
    kind: TraceKind = "request"
    partial: bool = False  # something was dropped or lost on the way to the store
    dropped: int = 0
    mode: TraceMode = "metadata"
    manifest_hash: str = ""
    snapshot_id: str | None = None
    collection: str | None = None
    conversation_id: str | None = None
    duration_ms: float | None = None
    spans: int = 0


# -- what the recorder hands the store -------------------------------------------------------


class TraceHead(msgspec.Struct, frozen=True, kw_only=True, tag="trace"):
    """Creates or updates a trace's row; None fields leave the stored value as it is."""

    trace_id: str
    kind: TraceKind | None = None
    started: float | None = None  # unix seconds
    ended: float | None = None
    question: str | None = None
    status: TraceStatus | None = None
    termination_reason: str | None = None
    tokens: int | None = None
    cost: float | None = None
    currency: str | None = None
    mode: TraceMode | None = None
    manifest_hash: str | None = None
    snapshot_id: str | None = None
    collection: str | None = None
    conversation_id: str | None = None


class ManifestPut(msgspec.Struct, frozen=True, kw_only=True, tag="manifest"):
    sha256: str
    body: bytes  # canonical JSON


class SpanPut(msgspec.Struct, frozen=True, kw_only=True, tag="span"):
    span: Span


class ArtifactPut(msgspec.Struct, frozen=True, kw_only=True, tag="artifact"):
    trace_id: str
    sha256: str
    data: bytes


class DropsAdd(msgspec.Struct, frozen=True, kw_only=True, tag="drops"):
    """Records that never reached the store: the trace is partial."""

    trace_id: str
    count: int


WriteOp = TraceHead | ManifestPut | SpanPut | ArtifactPut | DropsAdd


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def span_id_for(trace_id: str, key: str) -> str:
    """A span id derived from the trace and the span's place in it (stable across upserts)."""
    return hashlib.sha256(f"{trace_id}/{key}".encode()).hexdigest()[:16]


def trace_id_for(request_id: str) -> str:
    """The trace id of a request: its id when that is already 32 hex digits (a uuid4 hex, as
    the harness makes them), else a hash of it — OpenTelemetry needs exactly 16 bytes."""
    rid = request_id.lower()
    if len(rid) == 32 and all(c in "0123456789abcdef" for c in rid):
        return rid
    return hashlib.sha256(request_id.encode()).hexdigest()[:32]
