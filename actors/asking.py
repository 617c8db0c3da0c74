"""Asking a question: the App-level command behind `citewise ask` and the ask page.

Pins the collection's active snapshot for the whole request, wires the chat client, the five
tools, the prompt bundle and the conversation's earlier Q&A into one harness run, and records
the question and final answer in the conversation. It never reads a key from anywhere but
engine.secrets and never puts one into an event.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any

import anyio.to_thread
import msgspec

from actors.app import App
from actors.catalog import Catalog
from actors.conversations import ConversationStore, ConversationTurn
from actors.errors import AppError, CatalogError, ConversationError
from actors.harness import open_request
from actors.spending import spending_for
from engine.chat import ChatClient
from engine.clock import utc_timestamp
from engine.errors import ChatError, PromptBundleError
from engine.harness import (
    Budgets,
    Counters,
    Deps,
    EarlierTurn,
    Event,
    Limits,
    Request,
    RequestFinished,
    RequestStarted,
    ToolCallOutcome,
)
from engine.prompts.bundle import PromptBundle
from engine.prompts.registry import active_bundle
from engine.secrets import ENV_NAMES, get_key
from engine.tools import TOOL_CONTRACT_VERSION, ToolContext, render_tools, run_tool
from engine.trace.manifest import manifest_extra as trace_manifest_extra
from engine.trace.model import trace_id_for
from engine.versions import app_version
from index.snapshot import Snapshot

OnEvent = Callable[[Event], Awaitable[None]]


class AskResult(msgspec.Struct, frozen=True, kw_only=True):
    finished: RequestFinished
    conversation_id: str
    collection: str


def _valid_text(text: str) -> bool:
    """False for lone surrogates (undecodable bytes from argv or a broken paste)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def chat_client(app: App) -> ChatClient:
    """The chat client of the app's settings and the stored DeepSeek key."""
    key = get_key("deepseek")
    if not key:
        raise AppError(
            "no DeepSeek API key is set: run `citewise keys set deepseek` (or, where the "
            f"system has no credential store, set {ENV_NAMES['deepseek']})",
            code="no_key",
        )
    c, n = app.config.chat, app.config.network
    try:
        return ChatClient(
            base_url=c.base_url,
            model=c.model,
            api_key=key,
            timeout_s=c.timeout_s,
            temperature=c.temperature,
            proxy=n.proxy or None,
            ca_bundle=n.ca_bundle or None,
        )
    except ChatError as exc:
        raise AppError(exc.message) from None


def _active_bundle(app: App) -> PromptBundle:
    """The promoted baseline, else the shipped one; a tampered promoted bundle is refused."""
    try:
        return active_bundle(app.data)
    except PromptBundleError as exc:
        raise AppError(str(exc)) from None


def _limits(app: App, override: Limits | None) -> Limits:
    return override if override is not None else Limits(budgets=Budgets.from_config(app.config))


def deps_for(
    app: App,
    snapshot: Snapshot,
    chat: ChatClient,
    *,
    bundle: PromptBundle | None = None,
    limits: Limits | None = None,
) -> Deps:
    """The harness dependencies of one request on a pinned snapshot."""
    ctx = ToolContext(
        snapshot=snapshot,
        embedder=app.embedder(),
        counter=app.counter(),
        max_query_chars=app.config.retrieval.max_query_chars,
    )

    async def tool(name: str, args: dict[str, Any]) -> ToolCallOutcome:
        return await run_tool(ctx, name, args)

    return Deps(
        chat=chat,
        run_tool=tool,
        tool_descriptions=render_tools(top_k=ctx.params.top_k),
        counter=app.counter(),
        snapshot=snapshot,
        bundle=bundle if bundle is not None else _active_bundle(app),
        price=app.config.chat.price,
        limits=_limits(app, limits),
        manifest_extra=trace_manifest_extra(
            app.config, tool_contract_version=TOOL_CONTRACT_VERSION
        ),
    )


def _unavailable(collection: str, question_id: str, damage: str | None) -> RequestFinished:
    """The end of a question that cannot start: no snapshot yet, or (`damage`) one that
    cannot be opened, which says what is damaged and how to repair it."""
    if damage is None:
        message = (
            f"The knowledge base of collection {collection!r} has no usable snapshot yet, so "
            "there is nothing to answer from and no model call was made. Import documents with "
            "`citewise import PATH` (or the Library page) and ask again."
        )
    else:
        message = f"No model call was made: {damage}"
    return RequestFinished(
        request_id=question_id,
        at=0.0,
        termination_reason="collection_unavailable",
        answer=None,
        message=message,
        counters=Counters(),
    )


def _started_without_snapshot(app: App, request: Request) -> RequestStarted:
    """The start of a question that ends before any model call: what the run would depend
    on, without the snapshot, bundle and models it never reached."""
    manifest = {
        "app_version": app_version(),
        "request_id": request.request_id,
        **trace_manifest_extra(app.config, tool_contract_version=TOOL_CONTRACT_VERSION),
    }
    return RequestStarted(
        request_id=request.request_id,
        at=0.0,
        question=request.question,
        conversation_id=request.conversation_id,
        manifest=manifest,
    )


@contextlib.contextmanager
def _pin_active(catalog: Catalog) -> Iterator[tuple[Snapshot | None, str | None]]:
    """The active snapshot pinned, or None and (when there is one but it cannot be opened)
    what is damaged and how to repair it."""
    with contextlib.ExitStack() as stack:
        damage: str | None = None
        try:
            snapshot = stack.enter_context(catalog.pin_active())
        except CatalogError as exc:
            snapshot = None
            sid = _active_id(catalog)
            damage = str(exc) if sid is None else catalog.unavailable(sid, exc)
        yield snapshot, damage


def _active_id(catalog: Catalog) -> str | None:
    try:
        return catalog.active_id()
    except CatalogError:
        return None  # the pointer itself is damaged: its error already says how to repair


async def ask(
    app: App,
    question: str,
    *,
    conversation_id: str | None = None,
    collection: str | None = None,
    on_event: OnEvent | None = None,
    chat: ChatClient | None = None,
    bundle: PromptBundle | None = None,
    limits: Limits | None = None,
) -> AskResult:
    """Answer `question` on the collection's active snapshot (pinned for the whole request).

    Events stream to `on_event` as they happen (back-pressure: a slow callback slows the
    request). `conversation_id` continues a conversation (its earlier questions and final
    answers go into the prompt); without it a new conversation starts. Cancelling the caller
    cancels the request. `chat` (not closed here) replaces the client of the settings.
    """
    if not question.strip():
        raise AppError("the question is empty", code="empty_question")
    if not _valid_text(question):
        raise AppError(
            "the question holds bytes that are not text (a terminal not set to UTF-8, or a "
            "broken paste); retype it, or set the terminal to UTF-8",
            code="question_not_text",
        )
    name = app.resolve_collection(collection)
    store = ConversationStore(app.data, name)
    cid = conversation_id or store.new_id()
    try:
        known = conversation_id is None or store.exists(conversation_id)
    except ConversationError as exc:
        raise AppError(str(exc)) from None
    if not known:
        raise AppError(
            f"there is no conversation {conversation_id!r} in collection {name!r}",
            code="no_conversation",
        )
    earlier: Sequence[EarlierTurn] = await anyio.to_thread.run_sync(store.earlier, cid)
    request = Request(question=question, conversation_id=cid, earlier=tuple(earlier))
    # Off the event loop: the key store and the client's TLS setup can take many milliseconds.
    client = chat if chat is not None else await anyio.to_thread.run_sync(chat_client, app)
    try:
        finished = await _run(app, name, request, client, on_event, bundle, limits)
    finally:
        if chat is None:
            await client.aclose()
    turn = ConversationTurn(
        request_id=finished.request_id,
        question=question,
        answer=finished.answer,
        termination_reason=finished.termination_reason,
        snapshot_id=finished.snapshot_id,
        created_at=utc_timestamp(),
        agent_turns=finished.counters.agent_turns,
        tool_calls=finished.counters.tool_calls,
        used_tokens=finished.counters.used_tokens,
        cost=finished.cost,
        currency=finished.currency,
        trace_id=trace_id_for(finished.request_id),
    )
    await anyio.to_thread.run_sync(store.append, cid, turn)
    return AskResult(finished=finished, conversation_id=cid, collection=name)


async def _run(
    app: App,
    collection: str,
    request: Request,
    client: ChatClient,
    on_event: OnEvent | None,
    bundle: PromptBundle | None,
    limits: Limits | None,
) -> RequestFinished:
    with _pin_active(app.catalog(collection)) as (snapshot, damage):
        if snapshot is None:
            finished = _unavailable(collection, request.request_id, damage)
            if on_event is not None:
                # Started and finished, so the trace records the question with its reason.
                await on_event(_started_without_snapshot(app, request))
                await on_event(finished)
            return finished
        deps = deps_for(app, snapshot, client, bundle=bundle, limits=limits)
        async with open_request(deps, request, spending=spending_for(app)) as running:
            async for event in running.events:
                if on_event is not None:
                    await on_event(event)
            return await running.wait()
