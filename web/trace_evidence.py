"""Evidence replay on the traces page, as the conversation the model saw (instructions folded,
observations read out as the blocks they carried); the switch that keeps full diagnostics for
the next questions; and retrieval replay with the blocks of then and now side by side.

Trace content is untrusted text: shown as plain text, never HTML."""

from __future__ import annotations

import json
from typing import Literal

from nicegui import ui

from actors import App, ConversationMessage, conversation_of
from web.error_view import details_toggle
from web.i18n import Texts
from web.shell import show_error
from web.trace_words import block_label, outcome, reason, said, tool_name

SHOWN_TEXT = 600  # characters of a block's text shown before "details"


def mode_switch(app: App, t: Texts) -> None:
    """Full diagnostics for the next questions: one click, saved, and shown as it is."""
    overridden = "trace.mode" in app.env_overrides()
    with ui.row().classes("items-center gap-2").mark("diagnostics-mode"):
        switch = ui.switch(t("tr.full_switch"), value=app.config.trace.mode == "full").mark(
            "diagnostics-switch"
        )
        state = ui.label().classes("text-xs text-slate-600").mark("diagnostics-state")

        def show() -> None:
            key = "tr.full_on" if app.config.trace.mode == "full" else "tr.full_off"
            state.text = t(key) + (" " + t("tr.mode_env") if overridden else "")

        async def change() -> None:
            wanted: Literal["metadata", "full"] = "full" if switch.value else "metadata"
            if wanted == app.config.trace.mode:
                return
            try:
                await app.set_trace_mode(wanted)
            except Exception as exc:  # shown to the person; the switch goes back
                show_error(t, exc)
            switch.value = app.config.trace.mode == "full"
            show()

        switch.on_value_change(change)
        if overridden:
            switch.disable()
        show()


def _message(t: Texts, message: ConversationMessage) -> None:
    if message.kind == "system":
        with (
            ui.expansion(t("tr.msg.system"))
            .props("dense")
            .classes("w-full text-xs")
            .mark("evidence-system")
        ):
            ui.label(message.text).classes("text-xs whitespace-pre-wrap")
        return
    if message.kind == "observation" and message.observation is not None:
        obs = message.observation
        with (
            ui.column().classes("w-full gap-0 bg-teal-50 p-2 rounded").mark("evidence-observation")
        ):
            head = t("tr.msg.observation", tool=tool_name(t, obs.tool) if obs.tool else "–")
            ui.label(head).classes("text-xs font-semibold")
            if obs.harness_status != "ok":
                ui.label(reason(t, obs.harness_status)).classes("text-xs text-amber-800")
            elif not obs.blocks:
                ui.label(outcome(t, obs.outcome)).classes("text-xs")
            for block in obs.blocks:
                ui.label(block_label(t, block)).classes("text-xs font-medium")
                text = block.text[:SHOWN_TEXT] + ("…" if len(block.text) > SHOWN_TEXT else "")
                ui.label(text).classes("text-xs whitespace-pre-wrap pl-2 text-slate-700")
            if obs.message:
                ui.label(obs.message).classes("text-xs whitespace-pre-wrap text-slate-600")
            details_toggle(t, json.dumps(obs.payload, ensure_ascii=False, indent=1))
        return
    role = "tr.msg.model" if message.kind == "reply" else "tr.msg.user"
    tone = "bg-violet-50" if message.kind == "reply" else "bg-slate-50"
    with ui.column().classes(f"w-full gap-0 {tone} p-2 rounded").mark("evidence-message"):
        ui.label(t(role)).classes("text-xs font-semibold")
        ui.label(message.text).classes("text-xs whitespace-pre-wrap")


def evidence(app: App, t: Texts, trace_id: str, box: ui.column) -> None:
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
                mode_switch(app, t)
                details_toggle(t, replay.message)
            return
        ui.label(t("tr.evidence_intro")).classes("text-xs text-slate-500")
        last = len(replay.model_inputs) - 1
        for i, call in enumerate(replay.model_inputs):
            with (
                ui.expansion(
                    t("tr.model_input", turn=call.turn, attempt=call.attempt), value=i == last
                )
                .classes("w-full")
                .mark("evidence-model-input")
            ):
                for message in conversation_of(call.messages or []):
                    _message(t, message)
                if call.problem:
                    ui.label(t("tr.evidence_problem")).classes("text-xs text-red-700")
                    details_toggle(t, call.problem)
        if replay.answer is not None:
            with (
                ui.column().classes("w-full gap-0 bg-green-50 p-2 rounded").mark("evidence-answer")
            ):
                ui.label(t("tr.msg.answer")).classes("text-xs font-semibold")
                ui.label(replay.answer).classes("text-xs whitespace-pre-wrap")
        details_toggle(t, replay.message)


async def retrieval(app: App, t: Texts, trace_id: str, box: ui.column) -> None:
    box.clear()
    with box:
        ui.spinner()
    try:
        replay = await app.retrieval_replay(trace_id)
    except Exception as exc:  # shown to the person
        box.clear()
        show_error(t, exc)
        return
    box.clear()
    with box:
        changed = sum(not (d.same_blocks and d.same_order) for d in replay.calls)
        if not replay.snapshot_available:
            words = t("tr.retrieval_gone", snapshot=replay.snapshot_id or "–")
        elif not replay.calls:
            words = t("tr.retrieval_none")
        elif replay.identical:
            words = t("tr.retrieval_same", n=len(replay.calls))
        else:
            words = t("tr.retrieval_changed", changed=changed, n=len(replay.calls))
        ui.label(words).classes("text-sm").mark("retrieval-message")
        for diff in replay.calls:
            same = diff.same_blocks and diff.same_order
            verdict = t("tr.same") if same else t("tr.differs")
            ui.label(
                t(
                    "tr.diff",
                    call=diff.call,
                    tool=tool_name(t, diff.tool),
                    verdict=verdict,
                    added=len(diff.added),
                    removed=len(diff.removed),
                )
            ).classes("text-xs font-medium").mark("retrieval-diff")
            with (
                ui.grid(columns=2).classes("w-full gap-x-4 gap-y-0 text-xs").mark("retrieval-sides")
            ):
                ui.label(t("tr.then")).classes("font-semibold")
                ui.label(t("tr.now")).classes("font-semibold")
                for i in range(max(len(diff.recorded_blocks), len(diff.replayed_blocks))):
                    for side, other in (
                        (diff.recorded_blocks, diff.replayed_blocks),
                        (diff.replayed_blocks, diff.recorded_blocks),
                    ):
                        cell = side[i] if i < len(side) else ""
                        moved = bool(cell) and (i >= len(other) or other[i] != cell)
                        tone = "bg-amber-100" if moved else ""
                        if cell and cell not in other:
                            tone = "bg-red-100" if side is diff.recorded_blocks else "bg-green-100"
                        ui.label(f"{i + 1}. {cell}" if cell else "").classes(tone).mark(
                            "retrieval-cell" + ("-changed" if tone else "")
                        )
            if diff.recorded_outcome != diff.replayed_outcome:
                ui.label(
                    t(
                        "tr.outcome_changed",
                        then=said(t, "tr.outcome.", diff.recorded_outcome),
                        now=said(t, "tr.outcome.", diff.replayed_outcome),
                    )
                ).classes("text-xs text-amber-800")
        details_toggle(t, replay.message)
