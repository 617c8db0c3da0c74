"""Two traces side by side on the traces page (the same question under two prompt bundles, two
snapshots, or a re-run): what changed in the manifest, the tool calls, the blocks, the answers.
"""

from __future__ import annotations

import json
from typing import Any

from nicegui import ui

from actors import App, TraceComparison, TraceSummary
from web.i18n import Texts, when
from web.shell import show_error
from web.trace_rerun import answers_side_by_side
from web.trace_words import outcome, tool_action

CANDIDATES = 50


def _value(value: Any) -> str:
    if value is None:
        return "–"
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "…"


def picker(app: App, t: Texts, trace_id: str, question: str) -> None:
    """Choose another trace to compare with: the same question's first, then the rest."""
    try:
        others = [s for s in app.traces(CANDIDATES) if s.trace_id != trace_id]
    except Exception as exc:  # a damaged store: said once, by the list
        del exc
        return
    others.sort(key=lambda s: s.question != question)  # stable: newest first within each

    def label(s: TraceSummary) -> str:
        mark = "★ " if s.question == question else ""
        return f"{mark}{when(t, s.started_at)} · {s.question[:60]}"

    options = {s.trace_id: label(s) for s in others}
    with ui.row().classes("items-center gap-2").mark("compare-picker"):
        if not options:
            ui.label(t("tr.compare_none")).classes("text-xs text-slate-500")
            return
        choice = (
            ui.select(options, label=t("tr.compare_with"))
            .props("dense outlined")
            .classes("w-96")
            .mark("compare-select")
        )

        def go() -> None:
            if choice.value:
                ui.navigate.to(f"/traces?id={trace_id}&compare={choice.value}")

        ui.button(t("tr.compare_go"), on_click=go).props("outline no-caps").mark("compare-go")


async def comparison(app: App, t: Texts, first: str, second: str, box: ui.column) -> None:
    try:
        result = await app.compare_traces(first, second)
    except Exception as exc:  # an unknown id: said, the page stays
        show_error(t, exc)
        return
    with box:
        view(t, result)


def view(t: Texts, c: TraceComparison) -> None:
    with ui.card().classes("w-full gap-2").mark("trace-comparison"):
        ui.label(t("tr.compare_title", first=c.first_id[:8], second=c.second_id[:8])).classes(
            "text-base font-semibold"
        )
        if not c.same_question:
            ui.label(t("tr.compare_other_question")).classes("text-sm text-amber-800")
        ui.label(
            t("tr.compare_config_same" if c.same_configuration else "tr.compare_config")
        ).classes("text-sm").mark("compare-config")
        if c.manifest_changes:
            with (
                ui.grid(columns=3)
                .classes("w-full gap-x-4 gap-y-0 text-xs")
                .mark("compare-manifest")
            ):
                for head in ("tr.compare_setting", "tr.compare_first", "tr.compare_second"):
                    ui.label(t(head)).classes("font-semibold")
                for change in c.manifest_changes:
                    ui.label(change.key).classes("font-mono")
                    ui.label(_value(change.first)).classes("bg-red-50 break-all")
                    ui.label(_value(change.second)).classes("bg-green-50 break-all")
        ui.label(t("tr.compare_calls")).classes("text-sm font-semibold")
        with ui.grid(columns=2).classes("w-full gap-x-4 gap-y-1 text-xs").mark("compare-calls"):
            for pair in c.calls:
                for call in (pair.first, pair.second):
                    tone = "" if pair.same else "bg-amber-50"
                    if call is None:
                        ui.label("–").classes(tone)
                        continue
                    with ui.column().classes(f"gap-0 {tone}").mark("compare-call"):
                        ui.label(tool_action(t, call.tool, call.args)).classes("font-medium")
                        ui.label(
                            t("tr.compare_call_blocks", n=len(call.blocks))
                            if call.outcome == "ok"
                            else outcome(t, call.outcome)
                        )
            if not c.calls:
                ui.label(t("tr.compare_no_calls"))
        ui.label(
            t("tr.compare_blocks", first=len(c.first_blocks), second=len(c.second_blocks))
        ).classes("text-sm font-semibold")
        with ui.grid(columns=2).classes("w-full gap-x-4 text-xs").mark("compare-blocks"):
            ui.label(t("tr.compare_only_first", blocks=", ".join(c.only_first) or "–"))
            ui.label(t("tr.compare_only_second", blocks=", ".join(c.only_second) or "–"))
        if c.same_answer is None:
            said = t("tr.compare_answer_unknown")
        else:
            said = t("tr.compare_answer_same" if c.same_answer else "tr.compare_answer_differs")
        ui.label(said).classes("text-sm font-semibold").mark("compare-answer")
        if c.citations.changed:
            ui.label(
                t(
                    "tr.citations_changed",
                    added=", ".join(c.citations.added) or "–",
                    removed=", ".join(c.citations.removed) or "–",
                )
            ).classes("text-xs text-amber-800")
        if c.first_answer is not None or c.second_answer is not None:
            heads = ("tr.compare_first", "tr.compare_second")
            answers_side_by_side(t, c.first_answer, c.second_answer, heads)
