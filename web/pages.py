"""The routes of the UI: each page builder bound to one App.

Registering is a function (not import-time decorators) so that a launcher or a test decides
which app the pages talk to. It registers pages only; it never starts a server.
"""

from __future__ import annotations

from fastapi.responses import RedirectResponse
from nicegui import ui

from actors import App
from web import ask_page, library_page, settings_page, source_viewer, traces_page, wizard_page
from web.lifecycle import run_with_server

PAGE_TIMEOUT_S = 20.0  # building a page reads snapshots from disk; never the 3 s default


def needs_wizard(app: App) -> bool:
    """First run: the wizard was never finished and no collection has documents yet."""
    if app.first_run_done():
        return False
    return all(app.status(name).active_snapshot is None for name in app.collections())


def register(app: App) -> None:
    run_with_server(app)
    source_viewer.register_routes(app)

    @ui.page("/", response_timeout=PAGE_TIMEOUT_S)
    def ask(c: str | None = None) -> RedirectResponse | None:
        # `c` only shows a conversation: no address asks a question (reloads must not).
        if needs_wizard(app):
            return RedirectResponse("/wizard", status_code=303)
        ask_page.build(app, c)
        return None

    @ui.page("/library", response_timeout=PAGE_TIMEOUT_S)
    def library() -> None:
        library_page.build(app)

    @ui.page("/settings", response_timeout=PAGE_TIMEOUT_S)
    def settings() -> None:
        settings_page.build(app)

    @ui.page("/traces", response_timeout=PAGE_TIMEOUT_S)
    def traces(id: str | None = None, compare: str | None = None) -> None:
        traces_page.build(app, id, compare)

    @ui.page("/wizard", response_timeout=PAGE_TIMEOUT_S)
    def wizard(step: str | None = None) -> None:
        wizard_page.build(app, step)
