"""The page shown instead of the app when the data directory is not usable as it is: data of
an older Citewise (what the upgrade changes, the backup's size, and a button to confirm), or
data of a newer one (refused, with the backups this version can restore).

Nothing is upgraded until the person presses the button; a newer directory is never touched.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable

from nicegui import run, ui

from actors import (
    App,
    DataTooNew,
    UpgradeError,
    UpgradeRequired,
    backups,
    data_home,
    explain_upgrade,
    open_data,
    run_upgrade,
)
from web.error_view import error_panel
from web.i18n import Lang, Texts


def _language() -> Lang:
    """The language from config.toml as written (it may be in a format this build cannot load)."""
    try:
        data = tomllib.loads((data_home() / "config.toml").read_text(encoding="utf-8"))
        language = data.get("ui", {}).get("language", "en")
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError, AttributeError):
        return "en"
    return "zh" if language == "zh" else "en"


def open_or_explain(register: Callable[[App], None]) -> App | None:
    """The App when the data is usable; else None and the upgrade page is registered
    (after a confirmed upgrade it opens the app and registers the app's pages itself)."""
    try:
        open_data(data_home(), "serve")
    except (UpgradeRequired, DataTooNew, UpgradeError) as exc:
        _register(register, exc)
        return None
    return App.from_environment()


def _register(register: Callable[[App], None], problem: Exception) -> None:
    t = Texts(_language())
    root = data_home()

    def page() -> None:
        ui.page_title(f"{t('app.title')} — {t('upg.title')}")
        with ui.column().classes("w-full max-w-3xl mx-auto gap-4 p-4"):
            ui.label(t("upg.title")).classes("text-xl font-semibold")
            if isinstance(problem, UpgradeRequired):
                _explain_upgrade(t, register)
            else:
                with (
                    ui.column()
                    .classes("w-full gap-1 bg-amber-50 p-2 rounded")
                    .mark("upgrade-refused")
                ):
                    error_panel(t, problem)
                found = backups(root)
                if found:
                    ui.label(t("upg.backups")).classes("font-semibold")
                    for b in found:
                        ui.label(f"{b.backup_id} — {b.reason}").classes("font-mono text-sm")

    for path in ("/", "/upgrade", "/library", "/settings", "/traces", "/wizard"):
        ui.page(path)(page)


def _explain_upgrade(t: Texts, register: Callable[[App], None]) -> None:
    root = data_home()
    try:
        plan = explain_upgrade(root)
    except UpgradeError as exc:
        with ui.column().classes("w-full gap-1").mark("upgrade-error"):
            error_panel(t, exc)
        return
    if plan is None:
        ui.navigate.to("/")
        return
    ui.label(t("upg.intro")).classes("text-base")
    ui.markdown(f"```\n{plan.text()}\n```").classes("w-full text-sm").mark("upgrade-plan")
    status = ui.label().classes("text-sm").mark("upgrade-status")
    problem = ui.column().classes("w-full gap-1")

    async def confirm() -> None:
        button.disable()
        problem.clear()
        status.set_text(t("upg.running"))
        try:
            await run.io_bound(run_upgrade, root)
        except (UpgradeError, OSError) as exc:
            status.set_text("")
            with problem:
                error_panel(t, exc)
            button.enable()
            return
        app = App.from_environment()
        register(app)
        await app.warm()
        ui.notify(t("upg.done"), type="positive")
        ui.navigate.to("/")

    button = ui.button(t("upg.confirm"), icon="upgrade", on_click=confirm).mark("upgrade-confirm")
