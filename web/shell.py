"""The frame every page shares: header with navigation, collection and language, and the one
way pages report errors (web/error_view.py: what happened and one thing to do, the technical
details only behind a toggle).

It never reads settings or data itself; everything comes from the App.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from nicegui import ui

from actors import App
from web.error_view import error_panel, error_sentence, show_error
from web.i18n import LANGUAGES, Texts

__all__ = ["error_panel", "error_sentence", "frame", "guarded", "show_error", "texts"]

NAV = (
    ("/", "nav.ask", "chat"),
    ("/library", "nav.library", "folder"),
    ("/traces", "nav.traces", "timeline"),
    ("/settings", "nav.settings", "settings"),
)


def texts(app: App) -> Texts:
    return Texts(app.config.ui.language)


def frame(app: App, t: Texts, current: str) -> None:
    """Header and page title; call first in every page builder."""
    ui.page_title(f"{t('app.title')} — {t(_title_key(current))}")
    with ui.header().classes("items-center gap-2 bg-slate-800 px-4 py-2"):
        ui.label(t("app.title")).classes("text-lg font-semibold mr-4")
        for path, key, icon in NAV:
            button = ui.button(t(key), icon=icon, on_click=lambda p=path: ui.navigate.to(p))
            button.props("flat no-caps" + (" outline" if path == current else "")).classes(
                "text-white"
            )
            button.mark(f"nav-{path.strip('/') or 'ask'}")
        ui.space()
        ui.label(f"{t('shell.collection')}: {app.current_collection()}").classes(
            "text-sm opacity-80"
        ).mark("current-collection")

        async def switch(e: Any) -> None:
            if e.value != app.config.ui.language:
                await guarded(t, app.save_settings, {"ui": {"language": e.value}})
                ui.navigate.reload()

        ui.select(dict(LANGUAGES), value=app.config.ui.language, on_change=switch).props(
            "dense dark options-dense borderless"
        ).classes("w-24").mark("language")


def _title_key(path: str) -> str:
    for p, key, _ in NAV:
        if p == path:
            return key
    return "nav.wizard"


async def guarded(t: Texts, func: Callable[..., Any], *args: Any, **kw: Any) -> Any:
    """Run `func` (sync or async); on failure tell the person (with Retry where trying again
    may help) and return None."""
    try:
        result = func(*args, **kw)
        if isinstance(result, Awaitable):
            return await result
        return result
    except Exception as exc:  # shown to the person; cancellation still propagates
        show_error(t, exc, retry=lambda: guarded(t, func, *args, **kw))
        return None
