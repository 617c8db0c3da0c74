"""Re-run from the traces page: choose how many runs, see what they will cost (from this
trace's usage) before starting, follow them, then read the result — pass rate against the
original, failure types, each answer beside the original with its differences marked, and the
citations that changed. Nothing starts without a click; reloading the page starts nothing.

Answers are untrusted text: escaped before they are marked up."""

from __future__ import annotations

import html

from nicegui import ui

from actors import App, DiffPiece, RerunReport, TraceRecord, answer_diff, citation_change
from actors import trace_id_for as trace_id_of
from web.error_view import details_toggle
from web.i18n import Texts
from web.shell import show_error
from web.trace_words import money, number, reason

MAX_RUNS = 20  # the page's limit; `citewise trace rerun` allows more
DEFAULT_RUNS = 3


def diff_html(pieces: list[DiffPiece]) -> str:
    """The pieces as escaped text, added ones green, removed ones red and struck through."""
    out = []
    for piece in pieces:
        text = html.escape(piece.text)
        if piece.op == "added":
            out.append(f'<span class="bg-green-100 text-green-900">{text}</span>')
        elif piece.op == "removed":
            out.append(f'<span class="bg-red-100 text-red-900 line-through">{text}</span>')
        else:
            out.append(text)
    return "".join(out)


def _failure(t: Texts, kind: str) -> str:
    return t("tr.fail.invalid_citations") if kind == "invalid_citations" else reason(t, kind)


def rerun_card(app: App, t: Texts, record: TraceRecord) -> None:
    s = record.summary
    trace_id = s.trace_id
    with ui.card().classes("w-full gap-2").mark("rerun"):
        ui.label(t("tr.rerun")).classes("text-base font-semibold")
        if s.kind != "request" or not s.question:
            ui.label(t("tr.rerun_impossible")).classes("text-sm")
            return
        ui.label(t("tr.rerun_intro")).classes("text-xs text-slate-500")
        with ui.row().classes("items-center gap-3"):
            runs = (
                ui.number(t("tr.rerun_runs"), value=DEFAULT_RUNS, min=1, max=MAX_RUNS, step=1)
                .props("dense outlined")
                .classes("w-32")
                .mark("rerun-runs")
            )
            start = ui.button(t("tr.rerun_start")).props("no-caps").mark("rerun-start")
        estimate = ui.label().classes("text-sm").mark("rerun-estimate")
        progress = ui.linear_progress(value=0, show_value=False).mark("rerun-progress")
        progress.visible = False
        progress_label = ui.label().classes("text-xs").mark("rerun-progress-label")
        result = ui.column().classes("w-full gap-2").mark("rerun-result")

        def count() -> int:
            try:
                return max(1, min(MAX_RUNS, int(runs.value or 1)))
            except (TypeError, ValueError):
                return 1

        def show_estimate() -> None:
            e = app.rerun_estimate(trace_id, count())
            estimate.text = t(
                "tr.rerun_estimate",
                runs=e.runs,
                calls=e.model_calls_per_run,
                tokens=number(e.tokens),
                cost=money(e.cost, e.currency),
            )

        async def go() -> None:
            n = count()
            start.disable()
            runs.disable()
            result.clear()
            progress.visible = True
            progress.value = 0
            progress_label.text = t("tr.rerun_running", i=0, n=n)

            async def on_run(i: int, _outcome: object) -> None:
                progress.value = i / n
                progress_label.text = t("tr.rerun_running", i=i, n=n)

            try:
                report = await app.rerun_trace(trace_id, n, on_run=on_run)
                original = await app.trace_answer(trace_id)
            except Exception as exc:  # shown to the person; the card can be used again
                show_error(t, exc)
                progress_label.text = ""
                return
            finally:
                start.enable()
                runs.enable()
                progress.visible = False
            progress_label.text = ""
            with result:
                report_view(t, report, original, s.currency)

        runs.on_value_change(show_estimate)
        start.on_click(go)
        show_estimate()


def report_view(t: Texts, report: RerunReport, original_answer: str | None, currency: str) -> None:
    original = report.original
    rate = f"{report.pass_rate * 100:.0f}"
    ui.label(t("tr.rerun_result", passed=report.passed, runs=report.runs, rate=rate)).classes(
        "text-sm font-semibold"
    ).mark("rerun-summary")
    if original is not None:
        key = "tr.rerun_original_passed" if original.passed else "tr.rerun_original_failed"
        ui.label(t(key, flipped=len(report.flipped))).classes("text-sm")
    if report.failure_types:
        kinds = ", ".join(f"{_failure(t, k)} × {n}" for k, n in report.failure_types.items())
        ui.label(t("tr.rerun_failures", kinds=kinds)).classes("text-sm").mark("rerun-failures")
    ui.label(t("tr.rerun_distinct", n=report.distinct_answers)).classes("text-xs")
    if not report.same_configuration:
        ui.label(t("tr.rerun_config_changed")).classes("text-sm bg-amber-100 p-1 rounded")
    if report.notes:
        details_toggle(t, "\n".join(report.notes))
    for i, run in enumerate(report.outcomes, start=1):
        verdict = t("tr.run_passed") if run.passed else t("tr.run_failed")
        if not run.answered:
            verdict += " · " + reason(t, run.termination_reason)
        elif run.invalid_citations:
            verdict += " · " + t("tr.fail.invalid_citations")
        run_trace = trace_id_of(run.request_id)
        with ui.card().classes("w-full gap-1 p-2").mark("rerun-run"):
            with ui.row().classes("w-full items-center gap-3"):
                ui.label(
                    t(
                        "tr.run_line",
                        i=i,
                        verdict=verdict,
                        tokens=number(run.tokens),
                        cost=money(run.cost, currency),
                    )
                ).classes("text-sm font-medium")
                ui.link(t("tr.run_open"), f"/traces?id={run_trace}").classes("text-xs").mark(
                    "rerun-trace-link"
                )
                ui.link(
                    t("tr.run_compare"), f"/traces?id={report.trace_id}&compare={run_trace}"
                ).classes("text-xs").mark("rerun-compare-link")
            if original is not None:
                change = citation_change(original.citations, run.citations)
                if change.changed:
                    ui.label(
                        t(
                            "tr.citations_changed",
                            added=", ".join(change.added) or "–",
                            removed=", ".join(change.removed) or "–",
                        )
                    ).classes("text-xs text-amber-800").mark("rerun-citations-changed")
                elif i not in report.answer_changed:
                    ui.label(t("tr.answer_same")).classes("text-xs text-green-800")
            answers_side_by_side(t, original_answer, run.answer)


def answers_side_by_side(
    t: Texts,
    before: str | None,
    after: str | None,
    heads: tuple[str, str] = ("tr.answer_original", "tr.answer_this_run"),
) -> None:
    with ui.grid(columns=2).classes("w-full gap-3 text-xs").mark("answers-side-by-side"):
        ui.label(t(heads[0])).classes("font-semibold")
        ui.label(t(heads[1])).classes("font-semibold")
        ui.label(before if before is not None else t("tr.answer_not_kept")).classes(
            "whitespace-pre-wrap"
        )
        if after is None:
            ui.label(t("tr.answer_none")).classes("text-slate-500")
        elif before is None:
            ui.label(after).classes("whitespace-pre-wrap")
        else:
            ui.html(diff_html(answer_diff(before, after))).classes("whitespace-pre-wrap").mark(
                "answer-diff"
            )
