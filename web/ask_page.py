"""The ask page: question box, streamed answers with citation chips, budget gauge, stop
button, the disclosure banner for an incomplete knowledge base, and the conversations of the
current collection (follow-ups continue the selected one).

One question at a time per page; the request is cancelled by Stop, never left running unseen.
"""

from __future__ import annotations

from dataclasses import dataclass

from nicegui import ui

from actors import USER_ERRORS, App, AskRun, Citation, SpendingCapReached
from web.answer_view import AnswerView, GaugeView, citation_chips, markdown_html
from web.i18n import Texts
from web.live_answer import LiveAnswer
from web.shell import frame, show_error, texts
from web.source_viewer import open_source

HISTORY_SHOWN = 30


@dataclass
class _PageState:
    conversation_id: str | None = None
    running: AskRun | None = None


def build(app: App, question: str | None = None) -> None:
    t = texts(app)
    frame(app, t, "/")
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
            _partial_banner(app, t)
            thread = ui.column().classes("w-full gap-3").mark("thread")
            gauge = GaugeView(t)
            with ui.row().classes("w-full items-end no-wrap"):
                box = (
                    ui.textarea(placeholder=t("ask.placeholder"))
                    .props("autogrow outlined")
                    .classes("grow")
                    .mark("question-box")
                )
                ask_button = ui.button(t("ask.send"), icon="send").mark("ask-button")
                stop_button = ui.button(t("ask.stop"), icon="stop", color="negative").mark(
                    "stop-button"
                )
                stop_button.disable()

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
                    ui.item_label(t("ask.turns", n=item.turns)).props("caption")

    def start_new() -> None:
        if state.running is not None:
            ui.notify(t("ask.busy"))
            return
        state.conversation_id = None
        thread.clear()
        refresh_history()

    def load(conversation_id: str) -> None:
        if state.running is not None:
            ui.notify(t("ask.busy"))
            return
        state.conversation_id = conversation_id
        thread.clear()
        with thread:
            for turn in app.conversation(conversation_id):
                with ui.card().classes("w-full").mark("answer-card"):
                    ui.label(turn.question).classes("font-medium text-slate-700")
                    if turn.answer is None:
                        ui.label(turn.termination_reason).classes("text-sm text-red-700")
                        continue
                    markdown_html(app.numbered(turn.answer))
                    citation_chips(
                        t,
                        app.history_citations(turn.answer, turn.snapshot_id),
                        turn.snapshot_id,
                        open_chip,
                    )
        refresh_history()

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
        ask_button.disable()
        stop_button.enable()
        try:
            run = state.running = app.ask(text, state.conversation_id)
            async with run.events() as events:
                async for event in events:
                    await view.on_event(event)
            result = await run.wait()
        except Exception as exc:  # shown in the answer card; the page stays usable
            view.failed(_ask_error(t, exc))
            if not isinstance(exc, USER_ERRORS):
                show_error(t, exc)
            return
        finally:
            state.running = None
            ask_button.enable()
            stop_button.disable()
        if result is None:
            view.stopped()
            return
        if run.trace_dropped:
            view.trace_partial(run.trace_dropped)
        state.conversation_id = result.conversation_id
        refresh_history()

    def stop() -> None:
        if state.running is not None:
            state.running.stop()

    ask_button.on_click(submit)
    stop_button.on_click(stop)
    box.on("keydown.ctrl.enter", submit)
    refresh_history()
    if question:
        box.set_value(question)
        ui.timer(0.1, submit, once=True)


def _ask_error(t: Texts, exc: BaseException) -> str:
    message = str(exc)
    if "DeepSeek API key" in message:
        return t("ask.no_key")
    if isinstance(exc, SpendingCapReached):
        spent, cap = f"{exc.spent:.4f} {exc.currency}", f"{exc.cap:g} {exc.currency}"
        return t(f"spend.cap_reached_{exc.period}", spent=spent, cap=cap)
    if isinstance(exc, USER_ERRORS):
        return t("error.prefix", detail=message)
    return t("error.unexpected", detail=f"{type(exc).__name__}: {exc}")


def _partial_banner(app: App, t: Texts) -> None:
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
        ui.label(
            t("ask.partial_banner", n=len(active.failed_documents), sources=sources + more)
        ).classes("w-full bg-amber-100 p-2 rounded").mark("partial-banner")
