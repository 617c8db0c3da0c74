"""The agent loop of one request: a small state machine whose states return the next state.

Start (manifest, prompt, conversation fitted into the budget) → ModelTurn (budget check, one
streamed model call with at most one automatic retry, parse ONE Action) → ToolStep (whitelist,
tool-call limit, run with at most one retry, THE admission, Observation) → ModelTurn … → Done.
Hard limits are data (`Limits`). It never swallows cancellation, never parses observation
text, never truncates a tool result and never invents an answer when the loop fails.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio
import anyio.to_thread
import msgspec

from engine.chat import ChatError, ChatMessage, ChatResponse, ChatUsage, StreamDelta, cost_of
from engine.config import Price
from engine.harness import events as ev
from engine.harness.budget import (
    Admission,
    Budgets,
    Counters,
    admit,
    check_final,
    check_turn,
    refusal_message,
)
from engine.harness.citations import Evidence, resolve
from engine.harness.history import MESSAGE_OVERHEAD, EntryKind, History, Role
from engine.harness.injection import Suspicion, scan_result, warning
from engine.harness.observation import (
    HarnessStatus,
    Observation,
    new_nonce,
    ok,
    problem,
    render_observation,
)
from engine.harness.protocol import (
    PROTOCOL_VERSION,
    FinishAction,
    FinishStream,
    ProtocolViolation,
    ToolAction,
    parse_reply,
)
from engine.prompts.bundle import (
    PromptBundle,
    collection_status,
    render_collection_status,
    render_document_languages,
)
from engine.tokens import TokenCounter
from engine.tools.contracts import (
    TOOL_NAMES,
    ToolInternals,
    ToolName,
    ToolResult,
    error_of,
    outcome_of,
)
from engine.versions import app_version
from index.snapshot import Snapshot

# The tool whitelist: immutable for the process, never derived from documents or settings.
WHITELIST: tuple[ToolName, ...] = TOOL_NAMES
_THREAD_TOKENIZE_CHARS = 20_000  # count bigger observations in a worker thread


class ChatModel(Protocol):
    """What the loop needs of a chat client (engine.chat.ChatClient is one)."""

    provider: str
    model: str

    async def stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int,
        on_delta: Callable[[StreamDelta], Awaitable[None]] | None = None,
    ) -> ChatResponse: ...


class ToolCallOutcome(Protocol):
    """What the loop needs of a tool outcome (engine.tools.ToolOutcome is one): the typed
    result it reads, the exact JSON the model is shown of it, and the trace's internals."""

    @property
    def result(self) -> ToolResult: ...

    @property
    def json(self) -> bytes: ...

    @property
    def token_estimate(self) -> int: ...

    @property
    def internal(self) -> ToolInternals: ...


ToolRunner = Callable[[str, dict[str, Any]], Awaitable[ToolCallOutcome]]
Emit = Callable[[ev.Event], Awaitable[None]]


class Limits(msgspec.Struct, frozen=True, kw_only=True):
    """The request's hard limits, as data."""

    budgets: Budgets = Budgets()
    max_consecutive_protocol_errors: int = 2
    model_attempts: int = 2  # the call plus at most one automatic retry
    tool_attempts: int = 2
    retry_delay_s: float = 0.5  # before an automatic retry when the vendor named no wait
    max_retry_delay_s: float = 10.0


class EarlierTurn(msgspec.Struct, frozen=True):
    """A question of the same conversation and the final answer it got."""

    question: str
    answer: str


@dataclass(frozen=True)
class Request:
    question: str
    request_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    conversation_id: str | None = None
    earlier: Sequence[EarlierTurn] = ()


@dataclass(frozen=True)
class Deps:
    """Everything the loop talks to; the snapshot is already pinned by the caller."""

    chat: ChatModel
    run_tool: ToolRunner
    tool_descriptions: str
    counter: TokenCounter
    snapshot: Snapshot
    bundle: PromptBundle
    price: Price = field(default_factory=Price)
    limits: Limits = field(default_factory=Limits)
    manifest_extra: Mapping[str, Any] = field(default_factory=dict)


def run_manifest(deps: Deps, request: Request) -> dict[str, Any]:
    """What this run depends on, content hashes as identity (SPEC §8)."""
    snap = deps.snapshot.manifest
    retrieval = msgspec.to_builtins(snap.retrieval) if snap.retrieval else None
    b = deps.bundle
    return {
        "app_version": app_version(),
        "request_id": request.request_id,
        "prompt_bundle": {
            "id": b.id,
            "version": b.version,
            "hash": b.hash,
            "parent": b.parent,
            "source": b.source,
        },
        "protocol_version": PROTOCOL_VERSION,
        "tool_whitelist": list(WHITELIST),
        "chat": {"provider": deps.chat.provider, "model": deps.chat.model},
        "embedding": msgspec.to_builtins(snap.embedding) if snap.embedding else None,
        "tokenizer": deps.counter.version,
        "snapshot": {
            "collection": snap.collection,
            "id": snap.snapshot_id,
            "content_hash": snap.content_hash,
            "status": snap.status,
        },
        "budgets": msgspec.to_builtins(deps.limits.budgets),
        "limits": {k: v for k, v in msgspec.to_builtins(deps.limits).items() if k != "budgets"},
        "retrieval": retrieval,
        "price": msgspec.to_builtins(deps.price),
        # the OCR engine and models that read the snapshot's scanned pages, when it had one
        **({"ocr_engine": snap.parser_versions["ocr"]} if "ocr" in snap.parser_versions else {}),
        **dict(deps.manifest_extra),
    }


# -- run state -----------------------------------------------------------------------------


class _Run:
    """The mutable state of one request; only the states below change it."""

    def __init__(self, deps: Deps, request: Request, emit: Emit) -> None:
        self.deps = deps
        self.request = request
        self._emit = emit
        self.t0 = time.monotonic()
        self.history = History(deps.counter)
        self.counters = Counters()
        self.evidence = Evidence()
        self.cost = 0.0
        self.protocol_streak = 0
        self.final_reason: ev.TerminationReason | None = None  # set: the next turn is final
        self.budgets = deps.limits.budgets

    def at(self) -> float:
        return time.monotonic() - self.t0

    async def emit(self, make: Callable[..., ev.Event], **fields: Any) -> None:
        await self._emit(make(request_id=self.request.request_id, at=self.at(), **fields))

    async def observe(self, observation: Observation) -> int:
        """Render, count and append an observation the loop has already decided to send."""
        text = render_observation(observation, new_nonce())
        tokens = await self.count_message(text)
        self.history.add("user", text, "observation", tokens=tokens)
        return tokens

    async def count_message(self, text: str) -> int:
        if len(text) > _THREAD_TOKENIZE_CHARS:
            return await anyio.to_thread.run_sync(self.history.tokens_for, text)
        return self.history.tokens_for(text)

    async def finalize(self, reason: ev.TerminationReason, message: str) -> None:
        if self.final_reason is None:
            self.final_reason = reason
            await self.emit(ev.Finalizing, reason=reason, message=message)


@dataclass(frozen=True)
class Done:
    reason: ev.TerminationReason
    answer: str | None
    message: str


class State(Protocol):
    async def step(self, run: _Run) -> State | Done: ...


# -- states --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Start:
    async def step(self, run: _Run) -> State | Done:
        deps, request = run.deps, run.request
        await run.emit(
            ev.RequestStarted,
            question=request.question,
            conversation_id=request.conversation_id,
            manifest=run_manifest(deps, request),
        )
        status = render_collection_status(collection_status(deps.snapshot.manifest))
        system = deps.bundle.render_system(
            tools=deps.tool_descriptions,
            collection_status=status,
            document_languages=render_document_languages(
                info.lang for info in deps.snapshot.documents
            ),
        )
        initial: list[tuple[Role, str, EntryKind]] = [("system", system, "system")]
        for turn in request.earlier:
            initial.append(("user", deps.bundle.render_question(turn.question), "earlier_question"))
            initial.append(("assistant", f"Action: Finish[{turn.answer}]", "earlier_answer"))
        initial.append(("user", deps.bundle.render_question(request.question), "question"))
        # Counted once, in a worker thread: a long conversation must not stall the event loop.
        counts = await anyio.to_thread.run_sync(
            deps.counter.count_many, [text for _, text, _ in initial]
        )
        h = run.history
        for (role, text, kind), n in zip(initial, counts, strict=True):
            h.add(role, text, kind, tokens=n + MESSAGE_OVERHEAD)
        dropped = 0
        check = check_turn(run.budgets, used_tokens=0, prompt_tokens=h.prompt_tokens)
        while not check.accepted and h.drop_oldest_earlier_pair():
            dropped += 1
            check = check_turn(run.budgets, used_tokens=0, prompt_tokens=h.prompt_tokens)
        if dropped:
            await run.emit(
                ev.ConversationTrimmed,
                dropped=dropped,
                kept=h.earlier_pairs(),
                reason=f"{dropped} earlier question(s) and answer(s) of this conversation did "
                "not fit the token budget and were left out of the prompt, oldest first",
            )
        if not check.accepted:
            return Done(
                "budget",
                None,
                f"The question and the instructions alone need {check.needed} tokens, more "
                f"than the budget allows ({check.available}); no model call was made. Raise "
                "max_context_tokens / max_request_tokens or ask a shorter question.",
            )
        return ModelTurn()


@dataclass(frozen=True)
class ModelTurn:
    async def step(self, run: _Run) -> State | Done:
        budgets = run.budgets
        c = run.counters
        if run.final_reason is None:
            check = check_turn(
                budgets, used_tokens=c.used_tokens, prompt_tokens=run.history.prompt_tokens
            )
            if not check.accepted:
                await run.finalize("budget", _budget_text(check))
        final = run.final_reason is not None
        if final:
            return await self._final(run)
        return await self._call(run, final=False, max_tokens=budgets.max_output_tokens)

    async def _final(self, run: _Run) -> State | Done:
        assert run.final_reason is not None
        budgets = run.budgets
        notice = run.deps.bundle.render_finalization(
            reason=_FINAL_REASONS[run.final_reason], max_tokens=budgets.final_output_tokens
        )
        run.history.add_to_last_user(notice)
        check = check_final(
            budgets, used_tokens=run.counters.used_tokens, prompt_tokens=run.history.prompt_tokens
        )
        if not check.accepted:
            return Done(
                run.final_reason,
                None,
                "The request's token budget is used up: even the final answer turn would need "
                f"{check.needed} tokens where {check.available} are allowed, so no further "
                "model call was made and there is no answer. Raise max_request_tokens (or "
                "max_context_tokens) or narrow the question, then ask again.",
            )
        return await self._call(run, final=True, max_tokens=budgets.final_output_tokens)

    async def _call(self, run: _Run, *, final: bool, max_tokens: int) -> State | Done:
        c = run.counters
        c.agent_turns += 1
        turn = c.agent_turns
        prompt_tokens = run.history.prompt_tokens
        c.context_tokens = prompt_tokens
        await run.emit(ev.TurnStarted, turn=turn, final=final, prompt_tokens=prompt_tokens)
        messages = tuple(run.history.messages())
        attempts = run.deps.limits.model_attempts
        for attempt in range(1, attempts + 1):
            result = await _model_call(run, turn, attempt, messages, prompt_tokens, max_tokens)
            if isinstance(result, ChatResponse):
                return await _after_reply(run, turn, result, final)
            retry = result.retryable and attempt < attempts
            if not retry:
                return Done("model_error", None, f"The model call failed: {result.message}")
            c.model_retries += 1
            limits = run.deps.limits
            wait = result.retry_after if result.retry_after is not None else limits.retry_delay_s
            await anyio.sleep(min(max(wait, 0.0), limits.max_retry_delay_s))
        raise AssertionError("unreachable: the last attempt returns")


_FINAL_REASONS: dict[ev.TerminationReason, str] = {
    "budget": "the request's token budget is nearly used up (request_budget_exceeded).",
    "tool_call_limit": "the limit on tool calls for one request is reached (tool_call_limit).",
    "internal_error": "the system failed while running a tool (harness_internal_error).",
}


def _budget_text(check: Admission) -> str:
    return (
        f"the next model call would need {check.needed} tokens where {check.available} are "
        f"allowed ({check.verdict})"
    )


async def _model_call(
    run: _Run,
    turn: int,
    attempt: int,
    messages: tuple[ChatMessage, ...],
    prompt_tokens: int,
    max_tokens: int,
) -> ChatResponse | ChatError:
    """One HTTP model call, streaming the Finish answer as it comes; errors are returned."""
    c = run.counters
    c.model_calls += 1
    await run.emit(
        ev.ModelCallStarted,
        turn=turn,
        attempt=attempt,
        messages=messages,
        prompt_tokens=prompt_tokens,
        max_tokens=max_tokens,
    )
    streamer = FinishStream()
    first: list[float] = []
    t0 = time.monotonic()

    async def on_delta(delta: StreamDelta) -> None:
        if not first:
            first.append(time.monotonic())
        if delta.content:
            text = streamer.feed(delta.content)
            if text:
                await run.emit(ev.AnswerDelta, text=text)

    try:
        response = await run.deps.chat.stream(messages, max_tokens=max_tokens, on_delta=on_delta)
    except ChatError as exc:
        latency = (time.monotonic() - t0) * 1000
        if streamer.started:
            await run.emit(ev.AnswerRetracted, reason=f"the model call failed: {exc.message}")
        failed_usage = _failed_usage(run, exc, streamer.text, prompt_tokens)
        failed_cost = 0.0
        if failed_usage is not None:
            _spend(c, failed_usage)
            failed_cost = cost_of(failed_usage, run.deps.price)
            run.cost += failed_cost
        await run.emit(
            ev.ModelCallFinished,
            turn=turn,
            attempt=attempt,
            ok=False,
            usage=failed_usage,
            usage_counted=failed_usage is not None,
            cost=failed_cost,
            latency_ms=latency,
            first_token_ms=(first[0] - t0) * 1000 if first else None,
            reply=streamer.text,
            error_code=exc.code,
            error_message=exc.message,
            error_cause=exc.cause,
            will_retry=exc.retryable and attempt < run.deps.limits.model_attempts,
        )
        return exc
    latency = (time.monotonic() - t0) * 1000
    usage, counted = _usage(run, response, prompt_tokens)
    _spend(c, usage)
    cost = cost_of(usage, run.deps.price)
    run.cost += cost
    parsed = parse_reply(response.content)
    if isinstance(parsed, FinishAction):
        rest = streamer.flush()
        if rest:
            await run.emit(ev.AnswerDelta, text=rest)
    elif streamer.started:
        await run.emit(ev.AnswerRetracted, reason="the reply did not follow the protocol")
    await run.emit(
        ev.ModelCallFinished,
        turn=turn,
        attempt=attempt,
        ok=True,
        usage=usage,
        usage_counted=counted,
        cost=cost,
        latency_ms=latency,
        first_token_ms=(first[0] - t0) * 1000 if first else None,
        finish_reason=response.finish_reason,
        model=response.model,
        response_id=response.response_id,
        reply=response.content,
        reasoning=response.reasoning_content,
    )
    return response


def _spend(c: Counters, usage: ChatUsage) -> None:
    c.used_tokens += usage.prompt_tokens + usage.completion_tokens
    c.prompt_tokens += usage.prompt_tokens
    c.completion_tokens += usage.completion_tokens
    c.cache_hit_tokens += usage.prompt_cache_hit_tokens
    c.reasoning_tokens += usage.reasoning_tokens


# Failures that never reached the vendor (ChatError.cause names them).
_NEVER_SENT = frozenset({"dns", "refused", "proxy", "tls"})
# Codes of failures after the request was sent with no HTTP error status: the vendor may be
# generating (timeout), or answered 200 and then broke off (connection, bad_response, an error
# event in the stream).
_MAY_BILL = frozenset({"timeout", "connection", "bad_response", "server_error"})


def _failed_usage(run: _Run, exc: ChatError, streamed: str, prompt_tokens: int) -> ChatUsage | None:
    """What a failed call counts against the budget: None when the vendor refused it (an
    HTTP error status: 4xx, 429, 5xx) or it never reached the vendor; otherwise the prompt
    as the tokenizer counts it plus whatever streamed, because a vendor that accepted the
    call may bill it even when nothing (or only part of the answer) arrived. A failed call
    carries no usage of the vendor's, so the tokenizer is the only count there is."""
    accepted = bool(streamed) or (
        exc.status is None and exc.code in _MAY_BILL and exc.cause not in _NEVER_SENT
    )
    if not accepted:
        return None
    completion = run.deps.counter.count(streamed) if streamed else 0
    return ChatUsage(
        prompt_tokens=prompt_tokens,
        completion_tokens=completion,
        total_tokens=prompt_tokens + completion,
    )


def _usage(run: _Run, response: ChatResponse, prompt_tokens: int) -> tuple[ChatUsage, bool]:
    if response.usage is not None:
        return response.usage, False
    count = run.deps.counter.count
    reasoning = count(response.reasoning_content)
    completion = count(response.content) + reasoning
    return (
        ChatUsage(
            prompt_tokens=prompt_tokens,
            completion_tokens=completion,
            total_tokens=prompt_tokens + completion,
            reasoning_tokens=reasoning,
        ),
        True,
    )


async def _after_reply(run: _Run, turn: int, response: ChatResponse, final: bool) -> State | Done:
    parsed = parse_reply(response.content)
    if isinstance(parsed, FinishAction):
        if run.final_reason is not None:
            limit = _FINAL_REASONS[run.final_reason]
            return Done(run.final_reason, parsed.answer, f"Answered in a final turn: {limit}")
        return Done("clarification" if parsed.clarification else "finished", parsed.answer, "")
    if final:
        assert run.final_reason is not None
        what = (
            "asked for another tool"
            if isinstance(parsed, ToolAction)
            else f"broke the protocol ({parsed.message})"
        )
        return Done(
            run.final_reason,
            None,
            f"The model {what} in the final turn, where only an answer is allowed; the "
            "request ends without an answer. Raise the budget or tool-call limit, or narrow "
            "the question, and ask again.",
        )
    reply_tokens = await run.count_message(response.content)
    run.history.add("assistant", response.content, "reply", tokens=reply_tokens)
    if isinstance(parsed, ProtocolViolation):
        return await _violation(run, turn, "protocol_error", None, parsed.message)
    return ToolStep(turn, parsed)


async def _violation(
    run: _Run, turn: int, status: HarnessStatus, tool: str | None, message: str
) -> State | Done:
    """A reply that is not a valid whitelisted tool call (nor a Finish): it raises the streak
    of consecutive protocol errors (two end the request) and counts toward max_tool_calls
    like a tool call, so a model that loops on it makes at most max_tool_calls + 2 calls
    (automatic retries of failed calls aside)."""
    c = run.counters
    run.protocol_streak += 1
    c.protocol_errors += 1
    await run.emit(
        ev.ProtocolErrorSeen, turn=turn, message=message, consecutive=run.protocol_streak
    )
    if run.protocol_streak >= run.deps.limits.max_consecutive_protocol_errors:
        return Done(
            "protocol_error",
            None,
            f"The model broke the response protocol {run.protocol_streak} times in a row "
            f"(last: {message}); the request ends without an answer.",
        )
    await run.observe(problem(status, tool, message))
    limit = run.budgets.max_tool_calls
    if c.actions > limit:
        await run.finalize(
            "tool_call_limit",
            f"The limit of {limit} tool calls for one request is reached (replies that were "
            "not a valid tool call count too). Finish now with what you have and say what is "
            "missing.",
        )
    return ModelTurn()


@dataclass(frozen=True)
class ToolStep:
    turn: int
    action: ToolAction

    async def step(self, run: _Run) -> State | Done:
        name, args = self.action.name, self.action.args
        c, budgets = run.counters, run.budgets
        if name not in WHITELIST:
            message = (
                f"There is no tool named {name!r}. The only tools are: "
                f"{', '.join(WHITELIST)}. Use one of them or finish."
            )
            await self._refused(run, "tool_unavailable", message, observe=False)
            return await _violation(run, self.turn, "tool_unavailable", name, message)
        run.protocol_streak = 0
        if c.actions >= budgets.max_tool_calls:
            message = (
                f"The limit of {budgets.max_tool_calls} tool calls for one request is reached "
                f"(replies that were not a valid tool call count too); {name} was not run. "
                "Finish now with what you have and say what is missing."
            )
            await self._refused(run, "tool_call_limit", message)
            await run.finalize("tool_call_limit", message)
            return ModelTurn()
        c.tool_calls += 1
        call = c.tool_calls
        await run.emit(ev.ToolCallStarted, turn=self.turn, call=call, tool=name, args=args)
        t0 = time.monotonic()
        result: ToolCallOutcome | None = None
        attempts = 0
        failure = ""
        for attempt in range(1, run.deps.limits.tool_attempts + 1):
            attempts = attempt
            try:
                result = await run.deps.run_tool(name, args)
            except Exception as exc:  # a bug or broken snapshot, not a business error
                result, failure = None, f"{type(exc).__name__}: {exc}"
                break
            error = error_of(result.result)
            if error is None or not error.retryable:
                break
            if attempt < run.deps.limits.tool_attempts:
                c.tool_retries += 1
                await anyio.sleep(_tool_retry_wait(run.deps.limits, result.internal))
        latency = (time.monotonic() - t0) * 1000
        if result is None:
            message = (
                f"The system failed while running {name} ({failure}). Finish and tell the user "
                "that the request could not be completed."
            )
            await run.emit(
                ev.ToolCallFinished,
                turn=self.turn,
                call=call,
                tool=name,
                args=args,
                harness_status="harness_internal_error",
                outcome="exception",
                attempts=attempts,
                latency_ms=latency,
            )
            await run.observe(problem("harness_internal_error", name, message))
            await run.finalize("internal_error", message)
            return ModelTurn()
        payload = result.json
        if len(payload) > _THREAD_TOKENIZE_CHARS:
            suspicious = await anyio.to_thread.run_sync(scan_result, result.result)
        else:
            suspicious = scan_result(result.result)
        await run.emit(
            ev.ToolCallFinished,
            turn=self.turn,
            call=call,
            tool=name,
            args=args,
            harness_status="ok",
            outcome=outcome_of(result.result),
            token_estimate=result.token_estimate,
            attempts=attempts,
            latency_ms=latency,
            internal=result.internal,
            payload=payload,
            suspicious=suspicious,
        )
        await self._admit(run, name, result, suspicious)
        return ModelTurn()

    async def _admit(
        self,
        run: _Run,
        name: str,
        result: ToolCallOutcome,
        suspicious: tuple[Suspicion, ...] = (),
    ) -> None:
        """THE admission: the whole result enters history, or nothing of it."""
        note = warning(suspicious) if suspicious else None
        text = render_observation(ok(name, result.json, note), new_nonce())
        tokens = await run.count_message(text)
        used = run.counters.used_tokens
        decision = admit(
            run.budgets,
            used_tokens=used,
            prompt_tokens=run.history.prompt_tokens_with(tokens),
            result_tokens=tokens,
        )
        await run.emit(
            ev.AdmissionDecided,
            turn=self.turn,
            tool=name,
            verdict=decision.verdict,
            prompt_tokens=decision.prompt_tokens,
            result_tokens=tokens,
            needed=decision.needed,
            available=decision.available,
            used_tokens=used,
        )
        if decision.accepted:
            run.history.add("user", text, "observation", tokens=tokens)
            run.evidence.add_returned(name, result.result)
            return
        message = refusal_message(decision, name)
        if decision.verdict == "context_budget_exceeded":
            await run.observe(problem("context_budget_exceeded", name, message))
        else:
            await run.observe(problem("request_budget_exceeded", name, message))
            await run.finalize("budget", message)

    async def _refused(
        self, run: _Run, status: HarnessStatus, message: str, *, observe: bool = True
    ) -> None:
        name, args = self.action.name, self.action.args
        await run.emit(ev.ToolCallStarted, turn=self.turn, call=0, tool=name, args=args)
        await run.emit(
            ev.ToolCallFinished,
            turn=self.turn,
            call=0,
            tool=name,
            args=args,
            harness_status=status,
            outcome="refused",
        )
        if observe:
            await run.observe(problem(status, name, message))


def _tool_retry_wait(limits: Limits, internal: ToolInternals) -> float:
    """Seconds before a tool's automatic retry: the upstream's Retry-After when the tool
    reported one (a 429 retried at once only meets the limit again), else the default."""
    named = internal.retry_after
    wait = named if isinstance(named, int | float) else limits.retry_delay_s
    return float(min(max(wait, 0.0), limits.max_retry_delay_s))


# -- the loop ------------------------------------------------------------------------------


async def run_request(deps: Deps, request: Request, emit: Emit) -> ev.RequestFinished:
    """Run one request to its end and return (and emit) its RequestFinished event.

    Cancellation is re-raised after a RequestFinished(cancelled) has been offered to `emit`
    (for at most a second, shielded); any other exception is a bug and ends the request with
    termination reason internal_error.
    """
    run = _Run(deps, request, emit)
    state: State | Done = Start()
    try:
        while not isinstance(state, Done):
            state = await state.step(run)
    except anyio.get_cancelled_exc_class():
        cancelled = Done("cancelled", None, "The request was cancelled; there is no answer.")
        with anyio.move_on_after(1.0, shield=True):
            await emit(_finished(run, cancelled))
        raise
    except Exception as exc:
        state = Done(
            "internal_error",
            None,
            f"Citewise failed while answering ({type(exc).__name__}: {exc}); there is no "
            "answer. Please report this with the trace of the request.",
        )
    finished = _finished(run, state)
    await emit(finished)
    return finished


def _finished(run: _Run, state: Done) -> ev.RequestFinished:
    snapshot = run.deps.snapshot
    citations = tuple(resolve(state.answer, run.evidence, snapshot)) if state.answer else ()
    return ev.RequestFinished(
        request_id=run.request.request_id,
        at=run.at(),
        termination_reason=state.reason,
        answer=state.answer,
        message=state.message,
        citations=citations,
        counters=msgspec.structs.replace(run.counters),
        cost=run.cost,
        currency=run.deps.price.currency,
        snapshot_id=snapshot.manifest.snapshot_id,
    )
