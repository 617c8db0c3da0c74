"""The traces page's totals and timeline: what the request cost and used, and a waterfall of its
spans with durations; each span's raw attributes one click away under "details"."""

from __future__ import annotations

import json

from nicegui import ui

from actors import TraceRecord, TraceTotals, WaterfallRow, trace_totals, waterfall
from web.error_view import details_toggle
from web.i18n import Texts
from web.trace_words import duration, money, number, said

_BAR = {"ok": "bg-blue-400", "error": "bg-red-400", "unset": "bg-slate-300"}
_KIND_BAR = {"llm_call": "bg-violet-400", "tool_call": "bg-teal-400", "admission": "bg-amber-400"}


def totals_grid(t: Texts, totals: TraceTotals) -> None:
    snapshot = totals.snapshot_id or "–"
    if totals.snapshot_status:
        snapshot += " · " + said(t, "tr.snapshot_status.", totals.snapshot_status)
    items = [
        ("tr.total.time", duration(totals.duration_ms)),
        ("tr.total.model_calls", number(totals.model_calls)),
        (
            "tr.total.tool_calls",
            number(totals.tool_calls)
            + (t("tr.total.refused", n=totals.refused_calls) if totals.refused_calls else ""),
        ),
        (
            "tr.total.chat_tokens",
            t(
                "tr.total.chat_tokens_value",
                total=number(totals.chat_tokens),
                input=number(totals.input_tokens),
                cached=number(totals.cache_read_tokens),
                output=number(totals.output_tokens),
            ),
        ),
        ("tr.total.embedding_tokens", number(totals.embedding_tokens)),
        ("tr.total.cost", money(totals.cost, totals.currency)),
        ("tr.total.snapshot", snapshot),
        ("tr.total.bundle", totals.prompt_bundle or "–"),
        ("tr.total.model", totals.model or "–"),
        ("tr.total.mode", said(t, "tr.mode.", totals.mode)),
    ]
    with ui.grid(columns="auto 1fr").classes("gap-x-4 gap-y-0 text-sm").mark("trace-totals"):
        for key, value in items:
            ui.label(t(key)).classes("text-slate-500")
            ui.label(value).mark("total-" + key.rsplit(".", 1)[1])


def _title(t: Texts, row: WaterfallRow) -> str:
    kind = said(t, "tr.kind.", row.kind)
    if row.kind == "turn" and row.detail:
        kind = t("tr.turn_title", n=row.detail)
    elif row.kind in ("tool_call", "admission") and row.detail:
        kind += " · " + said(t, "tr.tool.", row.detail)
    elif row.detail:
        kind += " · " + row.detail
    status = said(t, "tr.span_status.", row.status)
    return f"{kind} · {duration(row.duration_ms)} · {status}"


def timeline_card(t: Texts, record: TraceRecord) -> None:
    rows = waterfall(record)
    with ui.card().classes("w-full gap-1").mark("span-tree"):
        ui.label(t("tr.timeline")).classes("text-base font-semibold")
        ui.label(t("tr.timeline_hint")).classes("text-xs text-slate-500")
        for row in rows:
            with ui.row().classes("w-full no-wrap items-start gap-2").mark("timeline-row"):
                with (
                    ui.expansion(_title(t, row))
                    .props("dense")
                    .classes("w-[22rem] shrink-0 text-xs")
                    .style(f"padding-left: {row.depth * 0.9}rem")
                    .mark("span-row")
                ):
                    ui.label(t("tr.offset", ms=f"{row.offset_ms:.0f}")).classes("text-xs")
                    raw = {"kind": row.kind, "status": row.status, **row.attributes}
                    if row.status_message:
                        raw["status_message"] = row.status_message
                    details_toggle(t, json.dumps(raw, ensure_ascii=False, indent=1))
                colour = _BAR.get(row.status, "bg-slate-300")
                if row.status == "ok":
                    colour = _KIND_BAR.get(row.kind, colour)
                with ui.element("div").classes("grow relative h-4 mt-2 bg-slate-100 rounded"):
                    ui.element("div").classes(f"absolute h-4 rounded {colour}").style(
                        f"left: {row.left * 100:.2f}%; width: {row.width * 100:.2f}%"
                    ).mark("waterfall-bar")


def totals_of(record: TraceRecord) -> TraceTotals:
    return trace_totals(record)
