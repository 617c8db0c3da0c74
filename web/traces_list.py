"""The request list of the traces page: search by question words, filter by status, date and
cost, sort; each row in local time with its status, cost and a badge when the trace is partial
or records were dropped."""

from __future__ import annotations

import datetime as dt
from typing import Any

from nicegui import ui

from actors import App, TraceSummary
from web.i18n import Texts, when
from web.shell import show_error
from web.trace_words import money, number, reason, said

LIST_LIMIT = 100
PERIODS = {"any": None, "today": 0, "week": 7, "month": 30}
ORDERS = ("newest", "oldest", "cost", "tokens", "duration")
STATUSES = ("any", "ok", "error", "running")


def _since(period: str) -> float | None:
    days = PERIODS.get(period)
    if days is None:
        return None
    midnight = dt.datetime.now().astimezone().replace(hour=0, minute=0, second=0, microsecond=0)
    return (midnight - dt.timedelta(days=days)).timestamp()


def _row(t: Texts, s: TraceSummary, chosen: bool) -> None:
    with (
        ui.card()
        .classes("w-full p-2 gap-0 cursor-pointer " + ("bg-blue-50" if chosen else ""))
        .on("click", lambda tid=s.trace_id: ui.navigate.to(f"/traces?id={tid}"))
        .mark("trace-row")
    ):
        ui.label(s.question or said(t, "tr.kind.", s.kind)).classes(
            "text-sm font-medium line-clamp-2"
        )
        with ui.row().classes("items-center gap-1"):
            tone = {"ok": "green", "error": "red"}.get(s.status, "grey")
            ui.badge(said(t, "tr.status.", s.status), color=tone).props("outline").classes(
                "text-xs"
            ).mark("trace-status")
            if s.partial or s.dropped:
                ui.badge(t("tr.badge_partial"), color="orange").classes("text-xs").mark(
                    "trace-badge-partial"
                )
            if s.mode == "full":
                ui.badge(t("tr.badge_full"), color="blue").props("outline").classes("text-xs")
        ui.label(
            t(
                "tr.row",
                started=when(t, s.started_at),
                reason=reason(t, s.termination_reason),
                tokens=number(s.tokens),
                cost=money(s.cost, s.currency),
            )
        ).classes("text-xs text-slate-500")


def trace_list(app: App, t: Texts, selected: str | None) -> None:
    ui.label(t("tr.list")).classes("text-base font-semibold")
    state: dict[str, Any] = {"text": "", "status": "any", "period": "any", "cost": None}
    state["order"] = "newest"
    with ui.column().classes("w-full gap-1").mark("trace-filters"):
        ui.input(t("tr.search"), on_change=lambda e: _set("text", e.value)).props(
            "dense outlined clearable debounce=300"
        ).classes("w-full").mark("trace-search")
        with ui.row().classes("w-full no-wrap gap-1"):
            ui.select(
                {k: t(f"tr.filter.status.{k}") for k in STATUSES},
                value="any",
                label=t("tr.filter.status"),
                on_change=lambda e: _set("status", e.value),
            ).props("dense outlined").classes("w-1/3").mark("trace-filter-status")
            ui.select(
                {k: t(f"tr.filter.period.{k}") for k in PERIODS},
                value="any",
                label=t("tr.filter.period"),
                on_change=lambda e: _set("period", e.value),
            ).props("dense outlined").classes("w-1/3").mark("trace-filter-period")
            ui.select(
                {k: t(f"tr.order.{k}") for k in ORDERS},
                value="newest",
                label=t("tr.filter.order"),
                on_change=lambda e: _set("order", e.value),
            ).props("dense outlined").classes("w-1/3").mark("trace-order")
        ui.number(
            t("tr.filter.min_cost"), min=0, step=0.001, on_change=lambda e: _set("cost", e.value)
        ).props("dense outlined clearable").classes("w-full").mark("trace-filter-cost")

    @ui.refreshable
    def rows() -> None:
        filters: dict[str, Any] = {"order": state["order"], "since": _since(state["period"])}
        if state["text"]:
            filters["text"] = state["text"]
        if state["status"] != "any":
            filters["status"] = state["status"]
        if state["cost"]:
            filters["min_cost"] = float(state["cost"])
        try:
            traces = app.traces(LIST_LIMIT, **filters)
        except Exception as exc:  # a damaged store: the page still opens and says so
            show_error(t, exc)
            return
        if not traces:
            key = (
                "tr.none_found" if any(v for v in filters.values() if v != "newest") else "tr.none"
            )
            ui.label(t(key)).classes("text-sm").mark("no-traces")
        for s in traces:
            _row(t, s, selected is not None and s.trace_id.startswith(selected))

    def _set(key: str, value: Any) -> None:
        state[key] = value or ("any" if key in ("status", "period") else value)
        if key == "order" and not value:
            state[key] = "newest"
        rows.refresh()

    rows()
