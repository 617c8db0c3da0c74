"""The traces page: the request list, and for one trace why its answer came out as it did —
totals, the story turn by turn, the timeline, evidence and retrieval replay, re-run, comparison
with another trace, the raw attributes under "details" and the diagnostic bundle to download.

Each part lives in its own module (traces_list, trace_story, trace_timeline, trace_evidence,
trace_rerun, trace_compare); this one lays them out. Trace content is plain text, never HTML.
"""

from __future__ import annotations

from pathlib import Path

from nicegui import ui

from actors import App, TraceRecord
from web import trace_compare, trace_evidence, trace_rerun, trace_story, trace_timeline
from web.i18n import Texts, when
from web.shell import frame, show_error, texts
from web.trace_words import reason, said
from web.traces_list import trace_list


def build(app: App, trace_id: str | None = None, compare: str | None = None) -> None:
    t = texts(app)
    frame(app, t, "/traces")
    with ui.row().classes("w-full no-wrap items-start gap-4"):
        with ui.column().classes("w-96 shrink-0 gap-1").mark("trace-list"):
            trace_list(app, t, trace_id)
        with ui.column().classes("grow min-w-0 gap-3"):
            if trace_id:
                _detail(app, t, trace_id, compare)
            else:
                ui.label(t("tr.pick")).classes("text-sm text-slate-500")
                trace_evidence.mode_switch(app, t)


def _detail(app: App, t: Texts, trace_id: str, compare: str | None) -> None:
    try:
        record = app.trace(trace_id)
    except Exception as exc:  # unknown id: say so
        show_error(t, exc)
        return
    s = record.summary
    full_id = s.trace_id
    comparison = ui.column().classes("w-full gap-2").mark("comparison-output")
    if compare:
        ui.timer(
            0,
            lambda: trace_compare.comparison(app, t, full_id, compare, comparison),
            once=True,
        )
    with ui.card().classes("w-full gap-2").mark("trace-detail"):
        ui.label(s.question or said(t, "tr.kind.", s.kind)).classes("text-base font-semibold")
        ui.label(
            t(
                "tr.headline",
                started=when(t, s.started_at, seconds=True),
                status=said(t, "tr.status.", s.status),
                reason=reason(t, s.termination_reason),
            )
        ).classes("text-sm").mark("trace-headline")
        if s.partial or s.dropped:
            ui.label(t("tr.partial", dropped=s.dropped)).classes(
                "text-sm bg-amber-100 p-2 rounded"
            ).mark("trace-partial")
        trace_timeline.totals_grid(t, trace_timeline.totals_of(record))
        trace_evidence.mode_switch(app, t)
        buttons = ui.row().classes("gap-2")
        replay = ui.column().classes("w-full gap-1").mark("replay-output")
        with buttons:
            ui.button(
                t("tr.evidence"), on_click=lambda: trace_evidence.evidence(app, t, full_id, replay)
            ).props("outline no-caps").mark("evidence-replay")
            ui.button(
                t("tr.retrieval"),
                on_click=lambda: trace_evidence.retrieval(app, t, full_id, replay),
            ).props("outline no-caps").mark("retrieval-replay")
            ui.button(t("tr.bundle"), on_click=lambda: _bundle(app, t, full_id)).props(
                "outline no-caps"
            ).mark("bundle-download")
    if s.kind == "request":  # an import has no answer to explain; its timeline says it all
        story = ui.column().classes("w-full").mark("story-output")
        ui.timer(0, lambda: _story(app, t, record, story), once=True)
    trace_timeline.timeline_card(t, record)
    trace_rerun.rerun_card(app, t, record)
    with ui.card().classes("w-full gap-2").mark("compare"):
        ui.label(t("tr.compare")).classes("text-base font-semibold")
        ui.label(t("tr.compare_intro")).classes("text-xs text-slate-500")
        trace_compare.picker(app, t, full_id, s.question)


async def _story(app: App, t: Texts, record: TraceRecord, box: ui.column) -> None:
    try:
        story = await app.trace_story(record.summary.trace_id)
    except Exception as exc:  # shown to the person; the rest of the page stands
        show_error(t, exc)
        return
    with box:
        trace_story.story_card(app, t, story, record.summary.snapshot_id)


async def _bundle(app: App, t: Texts, trace_id: str) -> None:
    try:
        report = await app.bundle_trace(trace_id)
    except Exception as exc:  # shown to the person
        show_error(t, exc)
        return
    path = Path(report.path)
    ui.download(path.read_bytes(), path.name, "application/zip")
    ui.notify(t("tr.bundle_ready", name=path.name), type="positive")
