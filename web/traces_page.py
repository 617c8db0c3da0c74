"""The traces page: the list of requests, and for one trace its span tree (timings, tokens,
cost, budget decisions, tool calls), with evidence replay and retrieval replay.

Trace content (prompts, tool payloads) is untrusted text: shown as plain text, never HTML.
"""

from __future__ import annotations

import json
import re
from typing import Any

from nicegui import ui

from actors import App, TraceRecord
from web.error_view import details_toggle
from web.i18n import TEXTS, Texts, when
from web.shell import frame, show_error, texts

LIST_LIMIT = 100
_SHOWN_ATTRIBUTES = (
    "gen_ai.request.model",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "citewise.cost",
    "gen_ai.tool.name",
    "citewise.tool.args",
    "citewise.tool.outcome",
    "citewise.harness_status",
    "citewise.termination_reason",
    "citewise.error.message",
)


def _said(t: Texts, prefix: str, value: str) -> str:
    """A status, reason, kind or mode in words; an unknown one as it is."""
    return t(prefix + value) if prefix + value in TEXTS else value


def _reason(t: Texts, reason: str | None) -> str:
    return _said(t, "tr.reason.", reason) if reason else "–"


def _span_title(t: Texts, span: Any, t0: float) -> str:
    """What the span was, in words: its kind, then the model, tool or turn it concerns."""
    attributes = span.attributes
    detail = ""
    if span.kind == "llm_call":
        detail = str(attributes.get("gen_ai.request.model", ""))
    elif span.kind in ("tool_call", "admission"):
        detail = str(attributes.get("gen_ai.tool.name", "") or span.name.rpartition(" ")[2])
    elif span.kind == "turn":
        number = re.search(r"\d+", span.name)
        detail = t("tr.turn", n=number.group()) if number else ""
    duration = "…" if span.duration_ms is None else f"{span.duration_ms:.0f} ms"
    kind = "" if span.kind == "turn" and detail else _said(t, "tr.kind.", span.kind)
    parts = [kind, detail, f"+{(span.start - t0) * 1000:.0f} ms", duration]
    return " · ".join(p for p in (*parts, _said(t, "tr.span_status.", span.status)) if p)


def _attribute_value(t: Texts, key: str, value: Any) -> str:
    if key == "citewise.termination_reason":
        return _reason(t, str(value))
    return str(value)


def build(app: App, trace_id: str | None = None) -> None:
    t = texts(app)
    frame(app, t, "/traces")
    with ui.row().classes("w-full no-wrap items-start gap-4"):
        with ui.column().classes("w-96 shrink-0 gap-1").mark("trace-list"):
            _trace_list(app, t, trace_id)
        with ui.column().classes("grow min-w-0"):
            if trace_id:
                _trace_detail(app, t, trace_id)
            else:
                ui.label(t("tr.pick")).classes("text-sm text-slate-500")


def _trace_list(app: App, t: Texts, selected: str | None) -> None:
    ui.label(t("tr.list")).classes("text-base font-semibold")
    try:
        traces = app.traces(LIST_LIMIT)
    except Exception as exc:  # a damaged store: the page still opens and says so
        show_error(t, exc)
        return
    if not traces:
        ui.label(t("tr.none")).classes("text-sm").mark("no-traces")
    for s in traces:
        chosen = selected is not None and s.trace_id.startswith(selected)
        with (
            ui.card()
            .classes("w-full p-2 cursor-pointer " + ("bg-blue-50" if chosen else ""))
            .on("click", lambda tid=s.trace_id: ui.navigate.to(f"/traces?id={tid}"))
            .mark("trace-row")
        ):
            ui.label(s.question or _said(t, "tr.kind.", s.kind)).classes(
                "text-sm font-medium line-clamp-2"
            )
            ui.label(
                t(
                    "tr.row",
                    started=when(t, s.started_at),
                    status=_said(t, "tr.status.", s.status),
                    reason=_reason(t, s.termination_reason),
                    tokens=s.tokens,
                    cost=f"{s.cost:.4f}",
                    currency=s.currency,
                )
            ).classes("text-xs text-slate-500")


def _depths(record: TraceRecord) -> list[tuple[int, Any]]:
    """Spans in tree order (parents before children, siblings by start) with their depth."""
    children: dict[str | None, list[Any]] = {}
    ids = {s.span_id for s in record.spans}
    for span in record.spans:
        parent = span.parent_id if span.parent_id in ids else None
        children.setdefault(parent, []).append(span)
    out: list[tuple[int, Any]] = []

    def walk(parent: str | None, depth: int) -> None:
        for span in sorted(children.get(parent, []), key=lambda s: (s.start, s.span_id)):
            out.append((depth, span))
            walk(span.span_id, depth + 1)

    walk(None, 0)
    return out


def _trace_detail(app: App, t: Texts, trace_id: str) -> None:
    try:
        record = app.trace(trace_id)
    except Exception as exc:  # unknown id: say so
        show_error(t, exc)
        return
    s = record.summary
    with ui.card().classes("w-full").mark("trace-detail"):
        ui.label(s.question or _said(t, "tr.kind.", s.kind)).classes("text-base font-semibold")
        ui.label(
            t(
                "tr.summary",
                status=_said(t, "tr.status.", s.status),
                reason=_reason(t, s.termination_reason),
                tokens=s.tokens,
                cost=f"{s.cost:.4f}",
                currency=s.currency,
                ms=round(s.duration_ms or 0),
                snapshot=s.snapshot_id or "–",
                mode=_said(t, "tr.mode.", s.mode),
            )
        ).classes("text-sm")
        if s.partial or s.dropped:
            ui.label(t("tr.partial", dropped=s.dropped)).classes(
                "text-sm bg-amber-100 p-2 rounded"
            ).mark("trace-partial")
        buttons = ui.row()
        replay = ui.column().classes("w-full gap-1").mark("replay-output")
        with buttons:
            ui.button(
                t("tr.evidence"), on_click=lambda: _evidence(app, t, s.trace_id, replay)
            ).props("outline").mark("evidence-replay")
            ui.button(
                t("tr.retrieval"), on_click=lambda: _retrieval(app, t, s.trace_id, replay)
            ).props("outline").mark("retrieval-replay")
    with ui.card().classes("w-full").mark("span-tree"):
        ui.label(t("tr.spans")).classes("text-base font-semibold")
        t0 = min((sp.start for sp in record.spans), default=0.0)
        for depth, span in _depths(record):
            with (
                ui.expansion(_span_title(t, span, t0))
                .classes("w-full text-sm")
                .style(f"padding-left: {depth * 1.2}rem")
                .mark("span-row")
            ):
                for key in _SHOWN_ATTRIBUTES:
                    if key in span.attributes:
                        value = _attribute_value(t, key, span.attributes[key])
                        ui.label(f"{t('tr.attr.' + key)}: {value}").classes("text-xs")
                raw = {k: v for k, v in span.attributes.items() if k not in _SHOWN_ATTRIBUTES}
                raw = {"name": span.name, "kind": span.kind, "status": span.status, **raw}
                if span.status_message:
                    raw["status_message"] = span.status_message
                details_toggle(t, json.dumps(raw, ensure_ascii=False, indent=1))


def _evidence(app: App, t: Texts, trace_id: str, box: ui.column) -> None:
    box.clear()
    try:
        replay = app.evidence_replay(trace_id)
    except Exception as exc:  # shown to the person
        show_error(t, exc)
        return
    with box:
        if not replay.available:
            with ui.column().classes("w-full gap-1 bg-blue-50 p-2 rounded"):
                ui.label(t("tr.evidence_metadata")).classes("text-sm").mark("evidence-unavailable")
                details_toggle(t, replay.message)
            return
        for call in replay.model_inputs:
            with (
                ui.expansion(t("tr.model_input", turn=call.turn, attempt=call.attempt))
                .classes("w-full")
                .mark("evidence-model-input")
            ):
                for message in call.messages or []:
                    role = _said(t, "tr.role.", message.role)
                    ui.label(f"[{role}]").classes("text-xs font-semibold")
                    ui.label(message.content).classes("text-xs whitespace-pre-wrap")
                if call.problem:
                    ui.label(t("tr.evidence_problem")).classes("text-xs text-red-700")
                    details_toggle(t, call.problem)
        for output in replay.tool_outputs:
            with (
                ui.expansion(t("tr.tool_output", call=output.call, tool=output.tool))
                .classes("w-full")
                .mark("evidence-tool-output")
            ):
                ui.label(json.dumps(output.payload, ensure_ascii=False, indent=1)).classes(
                    "text-xs whitespace-pre-wrap"
                )


async def _retrieval(app: App, t: Texts, trace_id: str, box: ui.column) -> None:
    box.clear()
    try:
        replay = await app.retrieval_replay(trace_id)
    except Exception as exc:  # shown to the person
        show_error(t, exc)
        return
    with box:
        changed = sum(not (d.same_blocks and d.same_order) for d in replay.calls)
        if not replay.snapshot_available:
            said = t("tr.retrieval_gone", snapshot=replay.snapshot_id or "–")
        elif not replay.calls:
            said = t("tr.retrieval_none")
        elif replay.identical:
            said = t("tr.retrieval_same", n=len(replay.calls))
        else:
            said = t("tr.retrieval_changed", changed=changed, n=len(replay.calls))
        ui.label(said).classes("text-sm").mark("retrieval-message")
        details_toggle(t, replay.message)
        for diff in replay.calls:
            verdict = t("tr.same") if diff.same_blocks and diff.same_order else t("tr.differs")
            ui.label(
                t(
                    "tr.diff",
                    call=diff.call,
                    tool=diff.tool,
                    verdict=verdict,
                    added=len(diff.added),
                    removed=len(diff.removed),
                )
            ).classes("text-xs").mark("retrieval-diff")
