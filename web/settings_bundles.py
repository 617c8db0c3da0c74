"""Prompt bundles on the settings page: the list (which one new questions use), a diff of any
two, promote a frozen bundle to baseline, and roll back to the previous baseline.

Promotion and rollback ask first and show what changes; creating and editing experiments stays
in the `citewise prompts` commands. Template text is shown as plain text, never as HTML.
"""

from __future__ import annotations

from nicegui import ui

from actors import App, BundleInfo
from web.error_view import details_toggle
from web.i18n import Texts
from web.shell import show_error


class BundlesCard:
    def __init__(self, app: App, t: Texts) -> None:
        self.app = app
        self.t = t
        with ui.card().classes("w-full").mark("bundles"):
            ui.label(t("bundle.title")).classes("text-base font-semibold")
            self.body = ui.column().classes("w-full gap-2")
        self.refresh()

    def refresh(self) -> None:
        self.body.clear()
        try:
            bundles = self.app.bundles()
        except Exception as exc:  # a damaged history file: say what to do
            show_error(self.t, exc)
            return
        t = self.t
        active = next((b for b in bundles if b.active), None)
        with self.body:
            for b in bundles:
                self._row(b, active)
            with ui.row().classes("items-center gap-2"):
                ui.button(
                    t("bundle.rollback"), icon="undo", on_click=lambda: self._confirm_rollback()
                ).props("outline dense").mark("bundle-rollback")
                ui.label(t("bundle.rollback_note")).classes("text-xs text-slate-500")
            refs = [b.ref for b in bundles if b.status in ("frozen", "draft")]
            with ui.row().classes("items-end gap-2"):
                first = ui.select(refs, value=active.ref if active else None, label=t("bundle.a"))
                second = ui.select(refs, value=refs[-1] if refs else None, label=t("bundle.b"))
                first.classes("w-64").mark("bundle-diff-a")
                second.classes("w-64").mark("bundle-diff-b")
                output = ui.column().classes("w-full")
                ui.button(
                    t("bundle.diff"),
                    icon="compare_arrows",
                    on_click=lambda: self._show_diff(first.value, second.value, output),
                ).props("outline dense").mark("bundle-diff")

    def _row(self, b: BundleInfo, active: BundleInfo | None) -> None:
        t = self.t
        with ui.row().classes("w-full items-center no-wrap"):
            ui.label(
                t(
                    "bundle.row",
                    ref=b.ref,
                    source=t(f"bundle.source.{b.source}"),
                    status=t(f"bundle.status.{b.status}"),
                )
            ).classes("grow text-sm").mark("bundle-row")
            if b.active:
                ui.badge(t("bundle.active")).mark("bundle-active")
            elif b.status == "frozen" and active is not None:
                ui.button(
                    t("bundle.promote"),
                    on_click=lambda ref=b.ref: self._confirm_promote(ref, active.ref),
                ).props("outline dense").mark("bundle-promote")
        # The author's own words (and a problem's technical story) stay in their language.
        about = "\n".join(part for part in (b.description, b.problem) if part)
        if about:
            details_toggle(t, about)

    def _show_diff(self, a: str | None, b: str | None, output: ui.column) -> None:
        output.clear()
        if not a or not b:
            ui.notify(self.t("bundle.choose_two"))
            return
        try:
            diff = self.app.bundle_diff(a, b)
        except Exception as exc:  # e.g. a bundle changed on disk meanwhile
            show_error(self.t, exc)
            return
        with output:
            if diff.same:
                ui.label(self.t("bundle.same", a=a, b=b)).classes("text-sm").mark("bundle-same")
            else:
                ui.label(diff.text()).classes(
                    "w-full whitespace-pre-wrap font-mono text-xs bg-slate-50 p-2 rounded"
                ).mark("bundle-diff-text")

    def _confirm_promote(self, ref: str, current: str) -> None:
        t = self.t
        try:
            diff = self.app.bundle_diff(current, ref)
        except Exception as exc:  # refused before anything changes
            show_error(t, exc)
            return
        with ui.dialog() as dialog, ui.card().classes("w-[48rem] max-w-full"):
            dialog.mark("bundle-confirm")
            ui.label(t("bundle.promote_confirm", ref=ref, current=current))
            with ui.scroll_area().classes("w-full h-64 border rounded"):
                ui.label(diff.text()).classes("whitespace-pre-wrap font-mono text-xs")

            def yes() -> None:
                dialog.close()
                try:
                    promoted = self.app.promote_bundle(ref)
                except Exception as exc:  # e.g. not frozen any more
                    show_error(t, exc)
                    return
                ui.notify(t("bundle.promoted", ref=promoted), type="positive")
                self.refresh()

            with ui.row():
                ui.button(t("bundle.promote"), on_click=yes).mark("bundle-confirm-yes")
                ui.button(t("lib.keep"), on_click=dialog.close).props("flat")
        dialog.open()

    def _confirm_rollback(self) -> None:
        t = self.t
        with ui.dialog() as dialog, ui.card():
            dialog.mark("bundle-confirm")
            ui.label(t("bundle.rollback_confirm"))

            def yes() -> None:
                dialog.close()
                try:
                    restored = self.app.rollback_bundle()
                except Exception as exc:  # nothing to roll back: say so
                    show_error(t, exc)
                    return
                ui.notify(t("bundle.rolled_back", ref=restored), type="positive")
                self.refresh()

            with ui.row():
                ui.button(t("bundle.rollback"), on_click=yes).mark("bundle-confirm-yes")
                ui.button(t("lib.keep"), on_click=dialog.close).props("flat")
        dialog.open()
