"""One question and its answer on the ask page: the streamed Markdown (rendered safely),
citation chips (title · section · page, never raw ids) that open the source viewer, the
disclosures, and the live budget gauge.

It renders LiveAnswer state; it never decides anything about the request itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from nicegui import ui

from actors import Citation, Event, trace_id_for
from web.i18n import Texts
from web.live_answer import Gauge, LiveAnswer
from web.safe_markdown import sanitize_html, to_html
from web.source_viewer import pages_text

PATH_SEPARATOR = " / "
RENDER_INTERVAL_S = 0.08
OpenSource = Callable[[Citation, str | None], Awaitable[None]]


def chip_label(t: Texts, c: Citation) -> str:
    """How a person sees a citation: title · section · pages (never the raw id)."""
    if not c.valid:
        return f"[{c.index}?] {t('ask.unverified')}"
    parts = [c.title or c.source_label]
    section = c.section_path or c.section_title
    if section.startswith(c.title + PATH_SEPARATOR):
        section = section[len(c.title + PATH_SEPARATOR) :]
    if section and section != c.title:
        parts.append(section)
    pages = pages_text(t, c.page_start, c.page_end)
    if pages:
        parts.append(pages)
    return f"[{c.index}] " + " · ".join(p for p in parts if p)


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
            else:
                chip = ui.chip(chip_label(t, c), icon="help_outline").props("outline color=grey")
                chip.tooltip(t("ask.unverified_hint"))
                chip.mark("citation-chip-unverified")


def markdown_html(text: str) -> ui.html:
    """A Markdown view whose content is sanitised server-side on every change."""
    return ui.html(to_html(text), sanitize=sanitize_html).classes("nicegui-markdown w-full")


class GaugeView:
    """Three bars: context size, tokens used by the request, tool calls."""

    def __init__(self, t: Texts) -> None:
        self.t = t
        with ui.card().classes("w-full").mark("budget-gauge"):
            ui.label(t("gauge.title")).classes("text-sm font-semibold")
            self.context_label = ui.label().classes("text-xs")
            self.context_bar = ui.linear_progress(value=0, show_value=False)
            self.request_label = ui.label().classes("text-xs")
            self.request_bar = ui.linear_progress(value=0, show_value=False)
            self.tools_label = ui.label().classes("text-xs")
            self.tools_bar = ui.linear_progress(value=0, show_value=False)

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
        with ui.card().classes("w-full") as self.card:
            self.card.mark("answer-card")
            ui.label(question).classes("font-medium text-slate-700").mark("question")
            self.activity = ui.label().classes("text-xs text-slate-500").mark("activity")
            self.answer = markdown_html("").mark("answer")
            self.notes = ui.column().classes("w-full gap-1")
            self.sources = ui.column().classes("w-full")
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
        self.answer.set_content(to_html(self.state.text))
        a = self.state.activity
        self.activity.set_text(self.t(a.key, **a.values) if a is not None else "")
        self.gauge.show(self.state.gauge)

    def _render_final(self) -> None:
        self._render_if_dirty()
        self._timer.cancel()
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
                ui.label(
                    t("ask.no_answer", reason=f.termination_reason, message=f.message)
                ).classes("text-sm text-red-700").mark("no-answer")
            elif f.termination_reason not in ("finished", "clarification"):
                ui.label(t("ask.under_limit", reason=f.termination_reason)).classes("text-sm")
            c = f.counters
            ui.label(
                t(
                    "ask.summary",
                    turns=c.agent_turns,
                    tools=c.tool_calls,
                    tokens=c.used_tokens,
                    cost=f"{f.cost:.4f}",
                    currency=f.currency,
                )
            ).classes("text-xs text-slate-500").mark("answer-summary")
            ui.link(t("ask.trace"), f"/traces?id={trace_id_for(f.request_id)}").classes(
                "text-xs"
            ).mark("trace-link")
        with self.sources:
            citation_chips(t, f.citations, f.snapshot_id, self.on_open)

    def trace_partial(self, dropped: int) -> None:
        with self.notes:
            ui.label(self.t("ask.trace_partial", dropped=dropped)).classes(
                "text-xs text-amber-800"
            ).mark("trace-partial-note")

    def stopped(self) -> None:
        self._render_if_dirty()
        self._timer.cancel()
        self.activity.set_text("")
        with self.notes:
            ui.label(self.t("ask.stopped")).classes("text-sm text-amber-800").mark("stopped")

    def failed(self, message: str) -> None:
        self._render_if_dirty()
        self._timer.cancel()
        self.activity.set_text("")
        with self.notes:
            ui.label(message).classes("text-sm text-red-700").mark("ask-error")
