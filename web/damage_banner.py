"""The banner a page shows when the library's current version (the active snapshot) cannot be
opened: what happened in words, and the one repair — go back to the newest usable version, or
import the documents again when there is none. The technical problem sits under "details"."""

from __future__ import annotations

from nicegui import ui

from actors import App, DamageView
from web.error_view import details_toggle
from web.i18n import Texts, when
from web.shell import guarded


def damage_banner(app: App, t: Texts, *, on_library_page: bool) -> DamageView | None:
    """Show the banner when the active snapshot is damaged; the damage, or None."""
    damage = app.damage()
    if damage is None:
        return None
    fallback = damage.fallback
    with (
        ui.card().classes("w-full bg-red-50 border border-red-300 p-3 gap-1").mark("damage-banner")
    ):
        ui.label(t("damage.title")).classes("font-medium text-red-900")
        if fallback is not None:
            moment = when(t, fallback.created_at)
            ui.label(t("damage.go_back", when=moment, n=fallback.documents)).classes(
                "text-sm text-red-900"
            )

            async def go_back() -> None:
                if await guarded(t, app.activate, fallback.id) is not None:
                    ui.notify(t("damage.went_back", when=moment), type="positive")
                    ui.navigate.reload()

            ui.button(
                t("damage.go_back_button", when=moment), icon="history", on_click=go_back
            ).props("no-caps").mark("damage-go-back")
        else:
            ui.label(t("damage.reimport")).classes("text-sm text-red-900")
            if not on_library_page:
                ui.button(
                    t("damage.open_library"),
                    icon="folder",
                    on_click=lambda: ui.navigate.to("/library"),
                ).mark("damage-open-library")
        details_toggle(t, f"{damage.snapshot_id}: {damage.problem}")
    return damage
