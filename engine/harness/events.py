"""What a running request reports, as a msgspec tagged union (one Struct per kind).

Consumed by the CLI, the UI and the trace writer; encode/decode with `EVENT_DECODER`. Events
are records of what happened, never commands. They never contain an API key.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from engine.chat import ChatMessage, ChatUsage
from engine.harness.budget import Counters
from engine.harness.citations import Citation
from engine.harness.injection import Suspicion
from engine.harness.observation import HarnessStatus
from engine.tools.contracts import ToolInternals

EVENTS_FORMAT = 1

TerminationReason = Literal[
    "finished",
    "clarification",
    "budget",
    "tool_call_limit",
    "protocol_error",
    "model_error",
    "cancelled",
    "internal_error",
    "collection_unavailable",
]

ANSWERED: frozenset[TerminationReason] = frozenset({"finished", "clarification"})


class _Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="event"):
    request_id: str
    at: float  # seconds since the request started (monotonic clock)


class RequestStarted(_Event, frozen=True, kw_only=True, tag="request_started"):
    question: str
    conversation_id: str | None
    manifest: dict[str, Any]  # the run manifest: versions, models, snapshot, budgets


class ConversationTrimmed(_Event, frozen=True, kw_only=True, tag="conversation_trimmed"):
    dropped: int  # earlier question/answer pairs left out, oldest first
    kept: int
    reason: str


class TurnStarted(_Event, frozen=True, kw_only=True, tag="turn_started"):
    turn: int  # 1-based agent turn
    final: bool  # tools are off: the answer must come now
    prompt_tokens: int  # estimated


class ModelCallStarted(_Event, frozen=True, kw_only=True, tag="model_call_started"):
    turn: int
    attempt: int  # 1, or 2 for the automatic retry
    messages: tuple[ChatMessage, ...]  # exactly what is sent (trace artifact)
    prompt_tokens: int  # estimated
    max_tokens: int


class ModelCallFinished(_Event, frozen=True, kw_only=True, tag="model_call_finished"):
    turn: int
    attempt: int
    ok: bool
    usage: ChatUsage | None  # as reported, or counted when the response had none
    usage_counted: bool = False  # True when the tokenizer stood in for missing usage
    cost: float = 0.0
    latency_ms: float = 0.0
    first_token_ms: float | None = None
    finish_reason: str | None = None
    model: str = ""
    response_id: str = ""
    reply: str = ""  # the model's visible reply (trace artifact)
    reasoning: str = ""  # a reasoning model's reasoning_content: trace only, never the answer
    error_code: str | None = None
    error_message: str | None = None
    will_retry: bool = False
    error_cause: str = ""  # the ChatError's cause (tls, not_json…), for the person's sentence


class AnswerDelta(_Event, frozen=True, kw_only=True, tag="answer_delta"):
    text: str


class AnswerRetracted(_Event, frozen=True, kw_only=True, tag="answer_retracted"):
    """The streamed text was not a valid final answer after all (the reply broke the
    protocol or the call failed): front ends must discard what they showed."""

    reason: str


class ProtocolErrorSeen(_Event, frozen=True, kw_only=True, tag="protocol_error"):
    """The model's reply broke the response protocol (the harness tells it what to fix)."""

    turn: int
    message: str
    consecutive: int


class ToolCallStarted(_Event, frozen=True, kw_only=True, tag="tool_call_started"):
    turn: int
    call: int  # logical tool call number (1-based); 0 when refused before dispatch
    tool: str
    args: dict[str, Any]


class ToolCallFinished(_Event, frozen=True, kw_only=True, tag="tool_call_finished"):
    turn: int
    call: int
    tool: str
    args: dict[str, Any]
    harness_status: HarnessStatus
    outcome: str  # "ok", an empty_reason, or the tool's error code
    token_estimate: int = 0
    attempts: int = 1
    latency_ms: float = 0.0
    # Retrieval details for the trace (scores…); never shown to the model. None: not run.
    internal: ToolInternals | None = None
    payload: bytes | None = None  # the exact model-facing JSON (trace artifact)
    suspicious: tuple[Suspicion, ...] = ()  # blocks whose text looks like an injection attempt


class AdmissionDecided(_Event, frozen=True, kw_only=True, tag="admission"):
    turn: int
    tool: str | None
    verdict: Literal["accepted", "context_budget_exceeded", "request_budget_exceeded"]
    prompt_tokens: int
    result_tokens: int
    needed: int
    available: int
    used_tokens: int


class Finalizing(_Event, frozen=True, kw_only=True, tag="finalizing"):
    """The next turn is the last one, without tools."""

    reason: Literal["budget", "tool_call_limit", "internal_error"]
    message: str


class RequestFinished(_Event, frozen=True, kw_only=True, tag="request_finished"):
    termination_reason: TerminationReason
    answer: str | None  # None: the request ended without an answer
    message: str  # for the person: what happened (the error, when there is no answer)
    citations: tuple[Citation, ...] = ()
    counters: Counters = msgspec.field(default_factory=Counters)
    cost: float = 0.0
    currency: str = "USD"
    snapshot_id: str | None = None


Event = (
    RequestStarted
    | ConversationTrimmed
    | TurnStarted
    | ModelCallStarted
    | ModelCallFinished
    | AnswerDelta
    | AnswerRetracted
    | ProtocolErrorSeen
    | ToolCallStarted
    | ToolCallFinished
    | AdmissionDecided
    | Finalizing
    | RequestFinished
)

EVENT_DECODER: msgspec.json.Decoder[Event] = msgspec.json.Decoder(Event)
EVENT_ENCODER = msgspec.json.Encoder()
