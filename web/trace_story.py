"""The answer's story on the traces page: turn by turn what the model decided, which tool it
used and how, what came back, what the budget admitted, what each call cost; then which
sentence of the answer cites which block (a click opens the source viewer).

Trace content (thoughts, answers, titles) is untrusted text: shown as plain text, never HTML.
"""

from __future__ import annotations

import re

from nicegui import ui

from actors import AdmissionStep, App, Citation, ModelStep, StoryBlock, ToolStep, TraceStory
from web.i18n import Texts
from web.source_viewer import open_source
from web.trace_words import block_label, duration, money, number, outcome, reason, tool_action

SHOWN_BLOCKS = 8  # per tool call; the rest are counted


def story_card(app: App, t: Texts, story: TraceStory, snapshot_id: str | None) -> None:
    with ui.card().classes("w-full gap-2").mark("trace-story"):
        ui.label(t("tr.story")).classes("text-base font-semibold")
        if not story.thoughts_recorded:
            ui.label(t("tr.story_metadata")).classes("text-xs text-slate-500")
        for turn in story.turns:
            title = t("tr.turn_title", n=turn.number)
            if turn.final:
                title += " · " + t("tr.turn_final")
            with (
                ui.column()
                .classes("w-full gap-1 border-l-4 border-blue-200 pl-3")
                .mark("story-turn")
            ):
                ui.label(title).classes("text-sm font-semibold")
                if turn.protocol_errors:
                    ui.label(t("tr.protocol_errors", n=turn.protocol_errors)).classes(
                        "text-xs text-amber-800"
                    )
                for step in turn.steps:
                    if isinstance(step, ModelStep):
                        _model(t, step, story.currency)
                    elif isinstance(step, ToolStep):
                        _tool(app, t, step, snapshot_id)
                    else:
                        _admission(t, step)
        _ending(app, t, story, snapshot_id)


def _model(t: Texts, step: ModelStep, currency: str) -> None:
    with ui.column().classes("gap-0").mark("story-model"):
        if step.thought:
            ui.label(t("tr.decided", thought=step.thought)).classes(
                "text-sm whitespace-pre-wrap"
            ).mark("story-thought")
        elif step.thought is None:
            ui.label(t("tr.decided_unknown")).classes("text-sm text-slate-500")
        if not step.ok:
            ui.label(
                t("tr.model_failed", code=reason(t, step.error_code or "model_error"))
            ).classes("text-sm text-red-800")
        line = t(
            "tr.model_usage",
            input=number(step.input_tokens),
            cached=number(step.cache_read_tokens),
            output=number(step.output_tokens),
            cost=money(step.cost, currency),
            time=duration(step.latency_ms),
        )
        if step.attempt > 1:
            line = t("tr.attempt", n=step.attempt) + " · " + line
        ui.label(line).classes("text-xs text-slate-600").mark("story-usage")


def _open(app: App, t: Texts, block: StoryBlock, snapshot_id: str | None) -> None:
    doc_id, _, block_id = block.citation.partition("#")
    citation = Citation(
        index=0, citation=block.citation, doc_id=doc_id, block_id=block_id, valid=True
    )
    ui.timer(0, lambda: open_source(app, t, citation, snapshot_id), once=True)


def _blocks(
    app: App, t: Texts, blocks: list[StoryBlock], snapshot_id: str | None, marker: str
) -> None:
    for i, block in enumerate(blocks[:SHOWN_BLOCKS], start=1):
        ui.link(f"{i}. {block_label(t, block)}").classes(
            "text-xs text-blue-800 cursor-pointer no-underline"
        ).on("click", lambda b=block: _open(app, t, b, snapshot_id)).mark(marker)
    if len(blocks) > SHOWN_BLOCKS:
        ui.label(t("tr.more_blocks", n=len(blocks) - SHOWN_BLOCKS)).classes("text-xs")


def _tool(app: App, t: Texts, step: ToolStep, snapshot_id: str | None) -> None:
    with ui.column().classes("gap-0 pl-2").mark("story-tool"):
        ui.label(tool_action(t, step.tool, step.args)).classes("text-sm font-medium")
        if step.harness_status != "ok":
            words = t("tr.refused_action", why=reason(t, step.harness_status))
            ui.label(words).classes("text-sm text-amber-800").mark("story-result")
        elif step.outcome == "ok" and step.blocks:
            ui.label(t("tr.returned", n=len(step.blocks))).classes("text-sm").mark("story-result")
            _blocks(app, t, step.blocks, snapshot_id, "story-block")
        else:
            tone = "text-red-800" if step.outcome not in ("ok", "no_match") else "text-slate-700"
            ui.label(outcome(t, step.outcome)).classes(f"text-sm {tone}").mark("story-result")
        if step.embedding_tokens:
            ui.label(t("tr.embedding_used", n=number(step.embedding_tokens))).classes(
                "text-xs text-slate-600"
            )


def _admission(t: Texts, step: AdmissionStep) -> None:
    if step.verdict == "accepted":
        words = t("tr.admitted", tokens=number(step.result_tokens), left=number(step.left))
        tone = "text-green-800"
    else:
        key = "tr.refused_request" if step.verdict == "request_budget_exceeded" else "tr.refused"
        words = t(key, needed=number(step.needed), available=number(step.available))
        tone = "text-red-800"
    ui.label(words).classes(f"text-sm pl-2 {tone}").mark("story-admission")


def _plain(text: str) -> str:
    """A sentence of the answer without Markdown's emphasis marks (it is shown as plain text)."""
    return re.sub(r"(\*\*|__|`)(.+?)\1", r"\2", text)


def _ending(app: App, t: Texts, story: TraceStory, snapshot_id: str | None) -> None:
    with ui.column().classes("w-full gap-1").mark("story-ending"):
        ui.label(t("tr.answer_title")).classes("text-sm font-semibold")
        if story.status != "ok":
            ui.label(t("tr.no_answer", reason=reason(t, story.termination_reason))).classes(
                "text-sm text-red-800"
            )
        by_id = {c.citation: c for c in story.citations}
        if story.sentences:
            for sentence in story.sentences:
                with ui.row().classes("w-full items-baseline gap-1").mark("story-sentence"):
                    ui.label(_plain(sentence.text)).classes("text-sm")
                    for cid in sentence.citations:
                        cited = by_id.get(cid)
                        if cited is not None and cited.valid:
                            ui.chip(
                                f"[{cited.index}] {block_label(t, cited.block)}",
                                on_click=lambda b=cited.block: _open(app, t, b, snapshot_id),
                            ).props("dense outline clickable").classes("text-xs").mark(
                                "story-citation"
                            )
                        else:
                            ui.chip(t("tr.citation_invalid")).props(
                                "dense outline color=red"
                            ).classes("text-xs").mark("story-citation-invalid")
                    if not sentence.citations:
                        ui.label(t("tr.uncited")).classes("text-xs text-slate-500")
        elif story.citations:
            ui.label(t("tr.answer_unknown")).classes("text-xs text-slate-500")
            for cited in story.citations:
                label = (
                    f"[{cited.index}] {block_label(t, cited.block)}"
                    if cited.valid
                    else t("tr.citation_invalid")
                )
                ui.label(label).classes("text-xs").mark("story-citation")
        elif story.status == "ok":
            ui.label(t("tr.no_citations")).classes("text-xs text-slate-500")
