"""One question and its answer on the ask page: the streamed Markdown (rendered safely, with
a blinking cursor while it streams), citation chips (title · section · page, never raw ids)
that open the source viewer, the disclosures, the cost line and trace link (for answers from
history too), the Markdown download, and the live budget gauge that says what it measures.

It renders LiveAnswer state and recorded turns; it never decides anything about the request.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Awaitable, Callable
from typing import Literal

from nicegui import Client, context, ui

from actors import Budgets, Citation, ConversationTurn, Event, ExportLabels, trace_id_for
from web.error_view import (
    details_toggle,
    ended_action,
    ended_sentence,
    go_button,
    reason_words,
)
from web.i18n import Texts, when
from web.live_answer import Gauge, LiveAnswer
from web.safe_markdown import sanitize_html, to_html

PATH_SEPARATOR = " / "
RENDER_INTERVAL_S = 0.08
OpenSource = Callable[[Citation, str | None], Awaitable[None]]
Export = Callable[[], Awaitable[None] | None]

CURSOR = '<span class="cw-cursor"></span>'
_STYLES = """
@keyframes cw-blink { 0%, 59% { opacity: 1 } 60%, 100% { opacity: 0.25 } }
.cw-cursor::after { content: "▍"; color: #2563eb; margin-left: 1px;
  animation: cw-blink 1s infinite; }
"""
_styled: weakref.WeakSet[Client] = weakref.WeakSet()
_TRAILING_CLOSERS = re.compile(r"(?:</[a-z0-9]+>\s*)+$")


def answer_styles() -> None:
    """The streaming cursor's style, once per page."""
    client = context.client
    if client not in _styled:
        _styled.add(client)
        ui.add_css(_STYLES)


def with_cursor(markup: str) -> str:
    """The rendered answer with the streaming cursor after its last character (inside the
    last paragraph or list item, not on a line of its own)."""
    match = _TRAILING_CLOSERS.search(markup)
    if match is None:
        return markup + CURSOR
    return markup[: match.start()] + CURSOR + markup[match.start() :]


def chip_label(t: Texts, c: Citation) -> str:
    """How a person sees a citation: title · section · pages (never the raw id); a block the
    model only located with scan_term says so after where it is."""
    if c.located_not_read:
        return f"[{c.index}?] {_place(t, c)} · {t('ask.located')}"
    if not c.valid:
        return f"[{c.index}?] {t('ask.unverified')}"
    return f"[{c.index}] {_place(t, c)}"


def _place(t: Texts, c: Citation) -> str:
    parts = [c.title or c.source_label]
    section = c.section_path or c.section_title
    if section.startswith(c.title + PATH_SEPARATOR):
        section = section[len(c.title + PATH_SEPARATOR) :]
    if section and section != c.title:
        parts.append(section)
    shown = c.pages_shown()
    if shown is not None:  # as printed in the book, which the source viewer also gives
        first, last = shown
        parts.append(
            t("ask.page", page=first) if first == last else t("ask.pages", start=first, end=last)
        )
    return " · ".join(p for p in parts if p)


def citation_chips(
    t: Texts,
    citations: tuple[Citation, ...] | list[Citation],
    snapshot_id: str | None,
    on_open: OpenSource,
) -> None:
    if not citations:
        return
    with ui.row().classes("w-full gap-1 items-center").mark("citations"):
        ui.label(t("ask.sources")).classes("text-xs font-semibold mr-1")
        for c in citations:
            if c.valid:
                chip = ui.chip(
                    chip_label(t, c),
                    icon="description",
                    on_click=lambda c=c: on_open(c, snapshot_id),
                ).props("clickable outline color=primary")
                chip.tooltip(c.preview)
                chip.mark("citation-chip")
            elif c.located_not_read:
                chip = ui.chip(
                    chip_label(t, c),
                    icon="manage_search",
                    on_click=lambda c=c: on_open(c, snapshot_id),
                ).props("clickable outline color=orange")
                chip.tooltip(t("ask.located_hint"))
                chip.mark("citation-chip-located")
            else:
                chip = ui.chip(chip_label(t, c), icon="help_outline").props("outline color=grey")
                chip.tooltip(t("ask.unverified_hint"))
                chip.mark("citation-chip-unverified")


def markdown_html(text: str) -> ui.html:
    """A Markdown view whose content is sanitised server-side on every change."""
    return ui.html(to_html(text), sanitize=sanitize_html).classes("nicegui-markdown w-full")


class GaugeView:
    """Three bars: context size, tokens used by the request, tool calls; each says in words
    what it measures and what happens at its limit."""

    def __init__(self, t: Texts, budgets: Budgets | None = None) -> None:
        self.t = t
        with ui.card().classes("w-full gap-1").mark("budget-gauge"):
            ui.label(t("gauge.title")).classes("text-sm font-semibold")
            ui.label(t("gauge.intro")).classes("text-xs text-slate-600").mark("gauge-intro")
            self.context_label = ui.label().classes("text-xs font-medium mt-1")
            self.context_bar = ui.linear_progress(value=0, show_value=False)
            ui.label(t("gauge.context_hint")).classes("text-xs text-slate-500").mark("gauge-hint")
            self.request_label = ui.label().classes("text-xs font-medium mt-1")
            self.request_bar = ui.linear_progress(value=0, show_value=False)
            ui.label(t("gauge.request_hint")).classes("text-xs text-slate-500").mark("gauge-hint")
            self.tools_label = ui.label().classes("text-xs font-medium mt-1")
            self.tools_bar = ui.linear_progress(value=0, show_value=False)
            ui.label(t("gauge.tools_hint")).classes("text-xs text-slate-500").mark("gauge-hint")
        if budgets is not None:  # the limits, before anything is used
            self.show(Gauge(budgets))

    def show(self, g: Gauge) -> None:
        t, b = self.t, g.budgets
        self.context_label.set_text(
            t("gauge.context", used=g.context_tokens, limit=b.max_context_tokens)
        )
        self.context_bar.set_value(g.context_share)
        self.request_label.set_text(
            t("gauge.request", used=g.used_tokens, limit=b.max_request_tokens)
        )
        self.request_bar.set_value(g.request_share)
        self.tools_label.set_text(t("gauge.tools", used=g.tool_calls, limit=b.max_tool_calls))
        self.tools_bar.set_value(g.tools_share)


class AnswerView:
    """The card of one question; feed it the request's events."""

    def __init__(
        self,
        t: Texts,
        state: LiveAnswer,
        question: str,
        gauge: GaugeView,
        on_open: OpenSource,
    ) -> None:
        self.t = t
        self.state = state
        self.gauge = gauge
        self.on_open = on_open
        self._dirty = False
        self._streaming = True
        answer_styles()
        with ui.card().classes("w-full gap-2 cw-answer") as self.card:
            self.card.mark("answer-card")
            ui.label(question).classes("font-medium text-slate-700").mark("question")
            self.activity = ui.label().classes("text-xs text-slate-500").mark("activity")
            self.answer = markdown_html("").mark("answer")
            self.answer.set_content(CURSOR)
            self.notes = ui.column().classes("w-full gap-1")
            self.sources = ui.column().classes("w-full")
            self.actions = ui.row().classes("w-full gap-2")
        self._timer = ui.timer(RENDER_INTERVAL_S, self._render_if_dirty)
        gauge.show(state.gauge)

    async def on_event(self, event: Event) -> None:
        self.state.feed(event)
        self._dirty = True
        if self.state.finished is not None:
            self._render_final()

    def _render_if_dirty(self) -> None:
        if not self._dirty:
            return
        self._dirty = False
        markup = to_html(self.state.text)
        self.answer.set_content(with_cursor(markup) if self._streaming else markup)
        a = self.state.activity
        self.activity.set_text(self.t(a.key, **a.values) if a is not None else "")
        self.gauge.show(self.state.gauge)

    def _end_stream(self) -> None:
        self._streaming = False
        self._dirty = True
        self._render_if_dirty()
        self._timer.cancel()

    def _render_final(self) -> None:
        self._end_stream()
        f = self.state.finished
        assert f is not None
        t = self.t
        with self.notes:
            if self.state.disclose_budget:
                detail = "; ".join(self.state.refused) or (self.state.finalizing or "")
                detail = detail.rstrip(". ")
                ui.label(t("ask.refused_banner", detail=detail)).classes(
                    "text-sm bg-amber-100 p-2 rounded w-full"
                ).mark("budget-banner")
            if self.state.trimmed:
                ui.label(t("ask.trimmed", reason=self.state.trimmed)).classes("text-xs")
            if f.answer is None:
                state = self.state
                said = ended_sentence(
                    t, f.termination_reason, state.model_error, state.model_error_cause
                )
                ui.label(said).classes("text-sm text-red-700").mark("no-answer")
                go = ended_action(f.termination_reason, state.model_error)
                if go is not None:
                    go_button(t, go)
                details_toggle(t, f"{f.termination_reason}: {f.message}")
            elif f.termination_reason not in ("finished", "clarification"):
                ui.label(
                    t("ask.under_limit", reason=reason_words(t, f.termination_reason))
                ).classes("text-sm")
            c = f.counters
            summary_line(t, c.agent_turns, c.tool_calls, c.used_tokens, f.cost, f.currency)
            trace_link(t, trace_id_for(f.request_id))
        with self.sources:
            citation_chips(t, f.citations, f.snapshot_id, self.on_open)

    def add_export(self, on_export: Export) -> None:
        """The download button, once the answer is recorded in its conversation."""
        with self.actions:
            export_button(self.t, on_export)

    def trace_partial(self, dropped: int) -> None:
        with self.notes:
            ui.label(self.t("ask.trace_partial", dropped=dropped)).classes(
                "text-xs text-amber-800"
            ).mark("trace-partial-note")

    def stopped(self) -> None:
        self._end_stream()
        self.activity.set_text("")
        with self.notes:
            ui.label(self.t("ask.stopped")).classes("text-sm text-amber-800").mark("stopped")

    def failed(self, message: str, go: Literal["settings", "library"] | None = None) -> None:
        """The question could not be asked: why, and the button to where it can be put right."""
        self._end_stream()
        self.activity.set_text("")
        with self.notes:
            ui.label(message).classes("text-sm text-red-700").mark("ask-error")
            if go is not None:
                go_button(self.t, go)


def summary_line(
    t: Texts, turns: int, tools: int, tokens: int, cost: float, currency: str
) -> ui.label:
    """The cost line: turns, tool calls, chat tokens and what the answer cost."""
    text = t(
        "ask.summary",
        turns=turns,
        tools=tools,
        tokens=tokens,
        cost=f"{cost:.4f}",
        currency=currency,
    )
    return ui.label(text).classes("text-xs text-slate-500").mark("answer-summary")


def trace_link(t: Texts, trace_id: str) -> ui.link:
    return ui.link(t("ask.trace"), f"/traces?id={trace_id}").classes("text-xs").mark("trace-link")


def export_button(t: Texts, on_export: Export) -> ui.button:
    return (
        ui.button(t("ask.export_answer"), icon="download", on_click=on_export)
        .props("flat dense no-caps size=sm")
        .mark("export-answer")
    )


def past_turn(
    t: Texts,
    turn: ConversationTurn,
    answer: str | None,
    citations: list[Citation],
    on_open: OpenSource,
    on_export: Export,
) -> None:
    """An answer from the conversation's history: the same card as a live one, with the cost
    line and trace link it was recorded with (older records have no cost line)."""
    with ui.card().classes("w-full gap-2 cw-answer").mark("answer-card"):
        ui.label(turn.question).classes("font-medium text-slate-700").mark("question")
        if answer is None:
            ui.label(
                t("ask.no_answer_recorded", reason=reason_words(t, turn.termination_reason))
            ).classes("text-sm text-red-700").mark("no-answer")
        else:
            markdown_html(answer).mark("answer")
        with ui.column().classes("w-full gap-1"):
            ui.label(when(t, turn.created_at)).classes("text-xs text-slate-500").mark("answer-when")
            if turn.cost_known:
                summary_line(
                    t, turn.agent_turns, turn.tool_calls, turn.used_tokens, turn.cost, turn.currency
                )
            trace_link(t, turn.trace)
        citation_chips(t, citations, turn.snapshot_id, on_open)
        if answer is not None:
            with ui.row().classes("w-full gap-2"):
                export_button(t, on_export)


def export_labels(t: Texts) -> ExportLabels:
    """The export's words in the UI language."""
    return ExportLabels(
        sources=t("ask.sources"),
        unverified=t("ask.unverified"),
        page=t("ask.page"),
        pages=t("ask.pages"),
        no_answer=t("export.no_answer"),
    )


def export_meta(t: Texts, turn: ConversationTurn) -> str:
    """The line under each exported answer: when it was asked and what it cost."""
    asked = when(t, turn.created_at)
    if not turn.cost_known:
        return asked
    cost = t(
        "ask.summary",
        turns=turn.agent_turns,
        tools=turn.tool_calls,
        tokens=turn.used_tokens,
        cost=f"{turn.cost:.4f}",
        currency=turn.currency,
    )
    return t("export.meta", when=asked, cost=cost)
