"""The ask page: question box (Enter sends, Shift+Enter a new line), streamed answers with
citation chips, budget gauge, stop button, the disclosure banner for an incomplete knowledge
base, and the conversations of the current collection (follow-ups continue the selected one).

One question at a time per page; the request is cancelled by Stop, never left running unseen.
Opening or reloading the page never asks anything: the address names at most a conversation
to show (`/?c=…`); the wizard's first question is handed over once, in memory.
"""

from __future__ import annotations

import datetime as dt
import weakref
from dataclasses import dataclass
from functools import partial
from typing import Literal

from nicegui import ui

from actors import (
    USER_ERRORS,
    App,
    AskRun,
    Citation,
    SpendingCapReached,
    export_name,
    mark_unverified,
)
from web.answer_view import (
    AnswerView,
    GaugeView,
    answer_styles,
    export_labels,
    export_meta,
    past_turn,
)
from web.damage_banner import damage_banner
from web.error_view import error_action, go_button
from web.i18n import Texts, when
from web.live_answer import LiveAnswer
from web.shell import error_sentence, frame, show_error, texts
from web.source_viewer import open_source

HISTORY_SHOWN = 30
IN_FLIGHT_POLL_S = 0.5
# Enter sends; Shift+Enter makes a new line; Enter that confirms an input method's candidate
# (Chinese pinyin: isComposing, keyCode 229) is the input method's, never a send.
ENTER_SENDS = (
    "(e) => { if (e.shiftKey || e.isComposing || e.keyCode === 229) return; "
    "e.preventDefault(); emit(); }"
)

# The wizard's first question, waiting for the ask page to take it (once).
_handed_over: weakref.WeakKeyDictionary[App, str] = weakref.WeakKeyDictionary()
# Questions asked from an ask page that have not ended; a reloaded page follows them.
_in_flight: weakref.WeakKeyDictionary[App, list[AskRun]] = weakref.WeakKeyDictionary()


def hand_over(app: App, question: str) -> None:
    """Have the next ask page that opens ask `question`, once (a reload does not ask again)."""
    _handed_over[app] = question


@dataclass
class _PageState:
    conversation_id: str | None = None
    running: AskRun | None = None


def build(app: App, conversation_id: str | None = None) -> None:
    t = texts(app)
    frame(app, t, "/")
    answer_styles()
    state = _PageState()

    async def open_chip(citation: Citation, snapshot_id: str | None) -> None:
        await open_source(app, t, citation, snapshot_id)

    with ui.row().classes("w-full no-wrap items-start gap-4"):
        with ui.column().classes("w-64 shrink-0"):
            ui.button(t("ask.new"), icon="add", on_click=lambda: start_new()).props(
                "outline no-caps"
            ).classes("w-full").mark("new-conversation")
            ui.label(t("ask.history")).classes("text-sm font-semibold mt-2")
            history = ui.column().classes("w-full gap-1").mark("history")
        with ui.column().classes("grow min-w-0"):
            _key_banner(app, t)
            _partial_banner(app, t)
            with ui.row().classes("w-full justify-end") as conversation_actions:
                ui.button(
                    t("ask.export_conversation"),
                    icon="download",
                    on_click=lambda: export(state.conversation_id),
                ).props("flat dense no-caps").mark("export-conversation")
            conversation_actions.set_visibility(False)
            in_flight = ui.column().classes("w-full gap-3").mark("in-flight")
            thread = ui.column().classes("w-full gap-3").mark("thread")
            gauge = GaugeView(t, app.budgets())
            with ui.column().classes("w-full gap-0 cw-controls"):
                with ui.row().classes("w-full items-end no-wrap"):
                    box = (
                        ui.textarea(placeholder=t("ask.placeholder"))
                        .props("autogrow outlined")
                        .classes("grow")
                        .mark("question-box")
                    )
                    ask_button = ui.button(t("ask.send"), icon="send").mark("ask-button")
                    stop_button = ui.button(t("ask.stop"), icon="stop").mark("stop-button")
                ui.label(t("ask.enter_hint")).classes("text-xs text-slate-500 ml-1").mark(
                    "enter-hint"
                )

    def show_busy(busy: bool) -> None:
        """Only the control that can act looks active: Ask while idle, Stop while running."""
        ask_button.set_enabled(not busy)
        stop_button.set_enabled(busy)
        ask_button.props(f"color={'grey-6' if busy else 'primary'}")
        stop_button.props(f"color={'negative' if busy else 'grey-6'}")
        (ask_button if busy else stop_button).props("outline")
        (stop_button if busy else ask_button).props(remove="outline")

    def show_conversation(cid: str | None) -> None:
        state.conversation_id = cid
        conversation_actions.set_visibility(cid is not None)
        ui.navigate.history.replace(f"/?c={cid}" if cid else "/")

    def refresh_history() -> None:
        history.clear()
        with history:
            items = app.conversations()[:HISTORY_SHOWN]
            if not items:
                ui.label(t("ask.no_history")).classes("text-xs text-slate-500")
            for item in items:
                selected = item.conversation_id == state.conversation_id
                with (
                    ui.item(on_click=lambda cid=item.conversation_id: load(cid))
                    .classes("w-full rounded " + ("bg-blue-50" if selected else ""))
                    .mark("history-item"),
                    ui.item_section(),
                ):
                    ui.item_label(item.first_question).classes("line-clamp-2 text-sm")
                    ui.item_label(
                        t("ask.history_row", n=item.turns, when=when(t, item.updated_at))
                    ).props("caption")

    def start_new() -> None:
        if state.running is not None:
            ui.notify(t("ask.busy"))
            return
        show_conversation(None)
        thread.clear()
        refresh_history()

    def load(cid: str) -> None:
        if state.running is not None:
            ui.notify(t("ask.busy"))
            return
        try:
            turns = app.conversation(cid)
        except Exception as exc:  # a malformed id in the address: say so, show nothing
            show_error(t, exc)
            turns = []
        thread.clear()
        if not turns:
            show_conversation(None)
            refresh_history()
            return
        show_conversation(cid)
        with thread:
            for turn in turns:
                citations = (
                    []
                    if turn.answer is None
                    else app.history_citations(turn.answer, turn.snapshot_id)
                )
                answer = (
                    None
                    if turn.answer is None
                    else mark_unverified(app.numbered(turn.answer), citations)
                )
                past_turn(
                    t,
                    turn,
                    answer,
                    citations,
                    open_chip,
                    partial(export, cid, turn.request_id),
                )
        refresh_history()

    def export(cid: str | None, request_id: str | None = None) -> None:
        """Download one answer (request_id) or the whole conversation as Markdown."""
        if cid is None:
            return
        try:
            turns = app.conversation(cid)
            chosen = [x for x in turns if request_id in (None, x.request_id)]
            first = chosen[0] if chosen else None
            title = (
                None
                if request_id is not None or first is None
                else t("export.conversation_title", when=when(t, first.created_at))
            )
            markdown = app.export_markdown(
                cid,
                export_labels(t),
                meta=lambda turn: export_meta(t, turn),
                **({"request_id": request_id} if request_id is not None else {}),
                **({"title": title} if title is not None else {}),
            )
        except Exception as exc:  # e.g. the conversation was removed meanwhile
            show_error(t, exc)
            return
        question = first.question if first is not None else ""
        stamp = first.created_at if first is not None else dt.datetime.now(dt.UTC).isoformat()
        ui.download.content(markdown.encode("utf-8"), export_name(question, stamp), "text/markdown")

    async def submit() -> None:
        text = (box.value or "").strip()
        if not text:
            ui.notify(t("ask.empty_question"))
            return
        if state.running is not None:
            ui.notify(t("ask.busy"))
            return
        with thread:
            view = AnswerView(t, LiveAnswer(app.budgets()), text, gauge, open_chip)
        box.set_value("")
        show_busy(True)
        flights = _in_flight.setdefault(app, [])
        run: AskRun | None = None
        try:
            run = state.running = app.ask(text, state.conversation_id)
            flights.append(run)
            async with run.events() as events:
                async for event in events:
                    await view.on_event(event)
            result = await run.wait()
        except Exception as exc:  # shown in the answer card; the page stays usable
            view.failed(_ask_error(t, exc), _ask_error_action(exc))
            if not isinstance(exc, USER_ERRORS):
                show_error(t, exc)
            return
        finally:
            if run is not None and run in flights:
                flights.remove(run)
            state.running = None
            show_busy(False)
        if result is None:
            view.stopped()
            return
        if run.trace_dropped:
            view.trace_partial(run.trace_dropped)
        show_conversation(result.conversation_id)
        view.add_export(partial(export, result.conversation_id, result.finished.request_id))
        refresh_history()

    def stop() -> None:
        if state.running is not None:
            state.running.stop()

    def follow(run: AskRun) -> None:
        """A question asked before this page was (re)loaded: say it is still being answered,
        offer Stop, and show its conversation once it ends."""
        with in_flight, ui.card().classes("w-full").mark("still-running") as card:
            ui.label(run.question).classes("font-medium text-slate-700")
            ui.label(t("ask.still_running")).classes("text-sm text-slate-600")
            ui.button(t("ask.stop"), icon="stop", color="negative", on_click=run.stop).props(
                "dense no-caps"
            ).mark("still-running-stop")

        def check() -> None:
            if not run.finished.is_set():
                return
            timer.cancel()
            card.delete()
            if run.result is not None and state.running is None:
                load(run.result.conversation_id)
            else:
                refresh_history()

        timer = ui.timer(IN_FLIGHT_POLL_S, check)

    ask_button.on_click(submit)
    stop_button.on_click(stop)
    box.on("keydown.enter", submit, js_handler=ENTER_SENDS)
    show_busy(False)
    refresh_history()
    for run in list(_in_flight.get(app, [])):
        if not run.finished.is_set():
            follow(run)
    if conversation_id:
        load(conversation_id)
    question = _handed_over.pop(app, None)
    if question:
        box.set_value(question)
        ui.timer(0.1, submit, once=True)


def _ask_error(t: Texts, exc: BaseException) -> str:
    if getattr(exc, "code", None) == "no_key":
        return t("ask.no_key")
    if isinstance(exc, SpendingCapReached):
        spent, cap = f"{exc.spent:.4f} {exc.currency}", f"{exc.cap:g} {exc.currency}"
        return t(f"spend.cap_reached_{exc.period}", spent=spent, cap=cap)
    return error_sentence(t, exc)  # a bug says so; the details are in the dialog shown


def _ask_error_action(exc: BaseException) -> Literal["settings", "library"] | None:
    """Where the person can put right what stopped the question from being asked."""
    action = error_action(exc, can_retry=False)
    if getattr(exc, "code", None) == "no_key" or isinstance(exc, SpendingCapReached):
        return "settings"
    return action if action in ("settings", "library") else None


def _key_banner(app: App, t: Texts) -> None:
    """Answers need a chat key: say so before a question is typed, and what works without."""
    if app.key_is_set("deepseek"):
        return
    with ui.row().classes("w-full items-center gap-2 bg-blue-50 p-2 rounded"):
        ui.label(t("ask.key_needed")).classes("text-sm grow min-w-0").mark("no-key-banner")
        go_button(t, "settings")
        go_button(t, "library").props("flat")


def _partial_banner(app: App, t: Texts) -> None:
    if damage_banner(app, t, on_library_page=False) is not None:
        return
    try:
        active = app.status().active_snapshot
    except USER_ERRORS as exc:
        show_error(t, exc)
        return
    if active is None:
        ui.label(t("ask.no_snapshot")).classes("w-full bg-blue-50 p-2 rounded").mark(
            "no-snapshot-banner"
        )
        return
    if active.status == "ready_partial" and active.failed_documents:
        sources = ", ".join(f["source"] for f in active.failed_documents[:5])
        more = "…" if len(active.failed_documents) > 5 else ""
        with ui.row().classes("w-full items-center gap-2 bg-amber-100 p-2 rounded"):
            ui.label(
                t("ask.partial_banner", n=len(active.failed_documents), sources=sources + more)
            ).classes("grow min-w-0").mark("partial-banner")
            go_button(t, "library")
