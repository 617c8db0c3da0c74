"""An answer's story, turn by turn, from its trace: what the model decided, which tool it used
with which arguments, what came back, what the budget admitted, what each call cost, and which
sentence of the answer cites which block; and evidence replay as the conversation the model saw.

Pure functions over a TraceRecord and what was read for it (`StoryInputs`): codes, numbers and
names only — the page says them in the UI language. Nothing here reads a file or a snapshot."""

from __future__ import annotations

import json
import re
from typing import Any, Literal

import msgspec

from engine.chat import ChatMessage
from engine.harness.citations import MARKER
from engine.trace import Span, TraceRecord
from engine.trace import model as m


class StoryBlock(msgspec.Struct, kw_only=True):
    """A block as a person recognises it; the names are "" when they could not be looked up."""

    citation: str
    title: str = ""
    source_label: str = ""
    section: str = ""
    page_start: int | None = None
    page_end: int | None = None
    text: str = ""  # only in evidence replay (full mode)


class StoryInputs(msgspec.Struct, kw_only=True):
    """What was read besides the record: model replies by span id (full mode), the answer
    (full mode, or the conversation it belongs to), blocks by citation id."""

    replies: dict[str, str] = {}
    answer: str | None = None
    blocks: dict[str, StoryBlock] = {}


class ModelStep(msgspec.Struct, kw_only=True, tag="model"):
    span_id: str
    attempt: int
    ok: bool
    thought: str | None  # None: not recorded (metadata mode)
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    reasoning_tokens: int
    cost: float
    latency_ms: float
    will_retry: bool = False
    error_code: str = ""


class ToolStep(msgspec.Struct, kw_only=True, tag="tool"):
    span_id: str
    call: int  # 0: refused before any tool ran
    tool: str
    args: dict[str, Any]
    harness_status: str
    outcome: str  # ok, an empty_reason or an error code
    blocks: list[StoryBlock]
    embedding_tokens: int = 0
    latency_ms: float = 0.0


class AdmissionStep(msgspec.Struct, kw_only=True, tag="admission"):
    span_id: str
    tool: str
    verdict: str  # accepted | context_budget_exceeded | request_budget_exceeded
    result_tokens: int
    needed: int
    available: int
    used_tokens: int

    @property
    def left(self) -> int:
        return max(self.available - self.needed, 0)


Step = ModelStep | ToolStep | AdmissionStep


class StoryTurn(msgspec.Struct, kw_only=True):
    number: int
    final: bool
    steps: list[Step]
    protocol_errors: int = 0


class CitedSentence(msgspec.Struct, kw_only=True):
    text: str  # the sentence, markers removed
    citations: list[str]  # citation ids, in order


class StoryCitation(msgspec.Struct, kw_only=True):
    index: int
    citation: str
    valid: bool
    problem: str
    block: StoryBlock


class TraceStory(msgspec.Struct, kw_only=True):
    question: str
    status: str
    termination_reason: str
    turns: list[StoryTurn]
    answer: str | None
    sentences: list[CitedSentence]
    citations: list[StoryCitation]
    thoughts_recorded: bool
    currency: str


def _int(a: dict[str, Any], key: str) -> int:
    value = a.get(key, 0)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _float(a: dict[str, Any], key: str) -> float:
    value = a.get(key, 0.0)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def thought_of(reply: str) -> str:
    """The model's reasoning in its reply: the text before `Action:`, without `Thought:`."""
    head = reply.split("Action:", 1)[0].strip()
    return re.sub(r"^\s*Thought\s*[:：]\s*", "", head).strip()


def _args(span: Span) -> dict[str, Any]:
    raw = span.attributes.get(m.TOOL_ARGS)
    if not isinstance(raw, str):
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _block(inputs: StoryInputs, citation: str) -> StoryBlock:
    return inputs.blocks.get(citation) or StoryBlock(citation=citation)


def _step(span: Span, inputs: StoryInputs, thoughts: bool) -> Step | None:
    a = span.attributes
    if span.kind == "llm_call":
        reply = inputs.replies.get(span.span_id)
        return ModelStep(
            span_id=span.span_id,
            attempt=_int(a, m.ATTEMPT) or 1,
            ok=span.status != "error",
            thought=thought_of(reply) if reply is not None else ("" if thoughts else None),
            input_tokens=_int(a, m.INPUT_TOKENS),
            output_tokens=_int(a, m.OUTPUT_TOKENS),
            cache_read_tokens=_int(a, m.CACHE_READ_TOKENS),
            reasoning_tokens=_int(a, m.REASONING_TOKENS),
            cost=_float(a, m.COST),
            latency_ms=_float(a, m.LATENCY_MS),
            will_retry=bool(a.get(m.WILL_RETRY, False)),
            error_code=str(a.get(m.ERROR_CODE, "")),
        )
    if span.kind == "tool_call":
        call_id = str(a.get(m.TOOL_CALL_ID, ""))
        return ToolStep(
            span_id=span.span_id,
            call=int(call_id[5:]) if call_id[5:].isdigit() else 0,
            tool=str(a.get(m.TOOL_NAME, "")),
            args=_args(span),
            harness_status=str(a.get(m.HARNESS_STATUS, "")),
            outcome=str(a.get(m.TOOL_OUTCOME, "") or "unfinished"),
            blocks=[_block(inputs, str(c)) for c in a.get(m.TOOL_BLOCKS, [])],
            embedding_tokens=_int(a, m.EMBEDDING_TOKENS),
            latency_ms=_float(a, m.LATENCY_MS),
        )
    if span.kind == "admission":
        return AdmissionStep(
            span_id=span.span_id,
            tool=str(a.get(m.TOOL_NAME, "")),
            verdict=str(a.get(m.ADMISSION_VERDICT, "")),
            result_tokens=_int(a, m.ADMISSION_RESULT_TOKENS),
            needed=_int(a, m.ADMISSION_NEEDED),
            available=_int(a, m.ADMISSION_AVAILABLE),
            used_tokens=_int(a, m.ADMISSION_USED),
        )
    return None


def cited_sentences(answer: str) -> list[CitedSentence]:
    """The answer cut after each run of citation markers: each piece with the blocks it cites.
    Text after the last marker (no citation) is a piece with none."""
    out: list[CitedSentence] = []
    position = 0
    pending: list[str] = []
    text = ""
    for match in MARKER.finditer(answer):
        between = answer[position : match.start()]
        if between.strip() and pending:
            out.append(CitedSentence(text=text.strip(), citations=pending))
            pending, text = [], ""
        text += between
        pending += [c for c in re.split(r"[\s,，;；、]+", match.group(1)) if c]
        position = match.end()
    if pending:
        out.append(CitedSentence(text=text.strip(), citations=pending))
    rest = answer[position:].strip()
    if rest:
        out.append(CitedSentence(text=rest, citations=[]))
    return out


def build_story(record: TraceRecord, inputs: StoryInputs) -> TraceStory:
    s = record.summary
    thoughts = s.mode == "full"
    turns: dict[int, StoryTurn] = {}
    for span in sorted(record.spans, key=lambda x: (x.start, x.span_id)):
        if span.kind == "turn":
            number = _int(span.attributes, m.TURN)
            turn = turns.setdefault(number, StoryTurn(number=number, final=False, steps=[]))
            turn.final = bool(span.attributes.get(m.FINAL_TURN, False))
            turn.protocol_errors = sum(1 for e in span.events if e.name == "protocol_error")
    for span in sorted(record.spans, key=lambda x: (x.start, x.span_id)):
        step = _step(span, inputs, thoughts)
        if step is None:
            continue
        number = _int(span.attributes, m.TURN)
        turn = turns.setdefault(number, StoryTurn(number=number, final=False, steps=[]))
        turn.steps.append(step)
    final = next((x for x in record.spans if x.kind == "final"), None)
    citations: list[StoryCitation] = []
    if final is not None:
        for event in final.events:
            if event.name != "citation":
                continue
            e = event.attributes
            cid = str(e.get("citewise.citation", ""))
            known = inputs.blocks.get(cid)
            block = StoryBlock(
                citation=cid,
                title=str(e.get("citewise.citation.title", "")) or (known.title if known else ""),
                source_label=str(e.get("citewise.citation.source", "")),
                section=str(e.get("citewise.citation.section", "")),
                page_start=e.get("citewise.citation.page_start"),
                page_end=e.get("citewise.citation.page_end"),
            )
            citations.append(
                StoryCitation(
                    index=_int(e, "citewise.citation.index"),
                    citation=cid,
                    valid=bool(e.get("citewise.citation.valid", False)),
                    problem=str(e.get("citewise.citation.problem", "")),
                    block=block,
                )
            )
    answer = inputs.answer
    return TraceStory(
        question=s.question,
        status=s.status,
        termination_reason=s.termination_reason or "",
        turns=[turns[k] for k in sorted(turns)],
        answer=answer,
        sentences=cited_sentences(answer) if answer else [],
        citations=citations,
        thoughts_recorded=thoughts,
        currency=s.currency,
    )


# -- evidence replay as a conversation -------------------------------------------------------

MessageKind = Literal["system", "question", "observation", "reply", "text"]


class ObservationView(msgspec.Struct, kw_only=True):
    harness_status: str
    tool: str
    message: str
    outcome: str  # ok, an empty_reason or an error code
    blocks: list[StoryBlock]
    error: str = ""
    payload: Any = None  # decoded, for the details toggle


class ConversationMessage(msgspec.Struct, kw_only=True):
    role: str
    kind: MessageKind
    text: str
    observation: ObservationView | None = None


_DATA = re.compile(r"<<<DATA \d+>>>\n(.*)\n<<<END DATA \d+>>>", re.S)


def observation_of(content: str) -> ObservationView | None:
    """The observation a user message carries, or None when it is not one."""
    found = _DATA.search(content)
    if found is None:
        return None
    try:
        data = json.loads(found.group(1))
    except ValueError:
        return None
    if not isinstance(data, dict) or "harness_status" not in data:
        return None
    payload = data.get("payload")
    blocks: list[StoryBlock] = []
    outcome, error = "ok", ""
    if isinstance(payload, dict):
        for item in payload.get("blocks") or payload.get("hits") or []:
            if isinstance(item, dict):
                blocks.append(
                    StoryBlock(
                        citation=str(item.get("citation", "")),
                        title=str(item.get("title", "")),
                        source_label=str(item.get("source_label", "")),
                        section=str(item.get("section", "")),
                        page_start=item.get("page_start"),
                        page_end=item.get("page_end"),
                        text=str(item.get("text", item.get("snippet", ""))),
                    )
                )
        if isinstance(payload.get("error"), dict):
            outcome = str(payload["error"].get("code", "error"))
            error = str(payload["error"].get("message", ""))
        elif payload.get("empty_reason"):
            outcome = str(payload["empty_reason"])
    return ObservationView(
        harness_status=str(data.get("harness_status", "")),
        tool=str(data.get("tool") or ""),
        message=str(data.get("message") or ""),
        outcome=outcome,
        blocks=blocks,
        error=error,
        payload=payload,
    )


def conversation_of(messages: list[ChatMessage]) -> list[ConversationMessage]:
    """One model call's messages as a conversation: instructions, the question, each reply
    and each observation with its blocks."""
    out: list[ConversationMessage] = []
    for message in messages:
        content = message.content or ""
        if message.role == "system":
            out.append(ConversationMessage(role="system", kind="system", text=content))
        elif message.role == "assistant":
            out.append(ConversationMessage(role="assistant", kind="reply", text=content))
        else:
            observation = observation_of(content)
            if observation is not None:
                out.append(
                    ConversationMessage(
                        role=message.role, kind="observation", text="", observation=observation
                    )
                )
            else:
                out.append(ConversationMessage(role=message.role, kind="question", text=content))
    return out
