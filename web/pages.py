"""The routes of the UI: each page builder bound to one UiService.

Registering is a function (not import-time decorators) so that a launcher or a test decides
which service the pages talk to. It registers pages only; it never starts a server.
"""

from __future__ import annotations

from fastapi.responses import RedirectResponse
from nicegui import ui

from actors.ui_service import UiService
from web import ask_page, library_page, settings_page, traces_page, wizard_page

PAGE_TIMEOUT_S = 20.0  # building a page reads snapshots from disk; never the 3 s default


def needs_wizard(service: UiService) -> bool:
    """First run: the wizard was never finished and no collection has documents yet."""
    if service.first_run_done():
        return False
    return all(service.status(name).active_snapshot is None for name in service.collections())


def register(service: UiService) -> None:
    @ui.page("/", response_timeout=PAGE_TIMEOUT_S)
    def ask(q: str | None = None) -> RedirectResponse | None:
        if needs_wizard(service):
            return RedirectResponse("/wizard", status_code=303)
        ask_page.build(service, q)
        return None

    @ui.page("/library", response_timeout=PAGE_TIMEOUT_S)
    def library() -> None:
        library_page.build(service)

    @ui.page("/settings", response_timeout=PAGE_TIMEOUT_S)
    def settings() -> None:
        settings_page.build(service)

    @ui.page("/traces", response_timeout=PAGE_TIMEOUT_S)
    def traces(id: str | None = None) -> None:
        traces_page.build(service, id)

    @ui.page("/wizard", response_timeout=PAGE_TIMEOUT_S)
    def wizard(step: str | None = None) -> None:
        wizard_page.build(service, step)
