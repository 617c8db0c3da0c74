"""The settings page's maintenance section: which version runs and whether a newer one is
installed or published (asked only when the button is pressed), the backups with a restore
that asks first, and the room the import caches take with a clearing that asks first. The
prompt-bundle rollback lives in web/settings_bundles.py.

Nothing here updates or installs anything.
"""

from __future__ import annotations

from nicegui import run, ui

from actors import (
    App,
    AppError,
    CacheUsage,
    UpgradeError,
    VersionReport,
    WriterBusy,
    app_version,
    backups,
    check_for_updates,
    create_backup,
    install_folder,
    restore_backup,
)
from web.error_view import show_error
from web.i18n import Texts


def build(app: App, t: Texts) -> None:
    with ui.card().classes("w-full").mark("maintenance"):
        ui.label(t("mnt.title")).classes("text-base font-semibold")
        ui.label(t("mnt.version", version=app_version())).mark("running-version")
        result = ui.column().classes("gap-1 text-sm").mark("version-report")

        async def check_now() -> None:
            config = app.config
            report: VersionReport | None = await run.io_bound(
                check_for_updates,
                app_version(),
                folder=install_folder(),
                feed_url=config.updates.feed_url,
                proxy=config.network.proxy or None,
                ca_bundle=config.network.ca_bundle or None,
            )
            if report is None:  # the app is shutting down
                return
            result.clear()
            with result:
                for build_ in report.newer_installed:
                    ui.label(t("mnt.installed", version=build_.version, path=build_.path))
                if report.available is not None:
                    a = report.available
                    ui.label(t("mnt.available", version=a.version, url=a.url))
                elif not report.feed_url:
                    ui.label(t("mnt.no_feed"))
                elif report.feed_error:
                    ui.label(report.feed_error).classes("text-red-700")
                else:
                    ui.label(t("mnt.up_to_date"))
                ui.label(t("mnt.never_auto")).classes("opacity-70")

        ui.button(t("mnt.check"), icon="update", on_click=check_now).mark("version-check")
        _backups(app, t)
        _caches(app, t)


def _backups(app: App, t: Texts) -> None:
    root = app.data.root
    with ui.row().classes("items-center gap-2 mt-2"):
        ui.label(t("mnt.backups")).classes("font-semibold")

        async def backup_now() -> None:
            try:
                info = await run.io_bound(create_backup, root)
            except (UpgradeError, WriterBusy, OSError) as exc:
                show_error(t, exc, retry=backup_now)
                return
            if info is None:  # the app is shutting down
                return
            ui.notify(t("mnt.backed_up", id=info.backup_id), type="positive", multi_line=True)
            listing.refresh()

        ui.button(t("mnt.backup_now"), icon="backup", on_click=backup_now).props("flat dense").mark(
            "backup-now"
        )

    # Made per page: a module-level refreshable would also refresh pages of gone clients.
    @ui.refreshable
    def listing() -> None:
        _backup_list(app, t)

    listing()


def _backup_list(app: App, t: Texts) -> None:
    root = app.data.root
    found = backups(root)
    if not found:
        ui.label(t("mnt.no_backups")).classes("text-sm").mark("no-backups")
    for info in reversed(found):
        with ui.row().classes("items-center gap-2"):
            ui.label(f"{info.backup_id} — {info.reason}").classes("font-mono text-sm")
            ui.button(
                t("mnt.restore"), on_click=lambda i=info.backup_id: _confirm(app, t, i)
            ).props("flat dense").mark(f"restore-{info.backup_id}")


def _confirm(app: App, t: Texts, backup_id: str) -> None:
    with ui.dialog() as dialog, ui.card():
        ui.label(t("mnt.restore_confirm", id=backup_id))

        async def go() -> None:
            dialog.close()
            await app.aclose()  # open databases must not be replaced under it
            try:
                await run.io_bound(restore_backup, app.data.root, backup_id)
            except (UpgradeError, WriterBusy, OSError) as exc:
                show_error(t, exc)
                return
            ui.notify(t("mnt.restored", id=backup_id), type="positive", multi_line=True)

        with ui.row():
            ui.button(t("mnt.restore"), on_click=go).mark("restore-confirm")
            ui.button(t("mnt.cancel"), on_click=dialog.close)
    dialog.open()


def megabytes(t: Texts, n: int) -> str:
    """A size as a person reads it: kilobytes under one megabyte (not "0.0 MB")."""
    if n < 1_048_576:
        return t("mnt.kilobytes", n=f"{n / 1024:,.0f}")
    return t("mnt.megabytes", n=f"{n / 1_048_576:,.1f}")


def _caches(app: App, t: Texts) -> None:
    """What the import caches take (actors/caches.py), and clearing them after asking."""

    @ui.refreshable
    def sizes() -> None:
        u: CacheUsage = app.cache_usage()
        ui.label(
            t(
                "mnt.cache_sizes",
                total=megabytes(t, u.total),
                embeddings=megabytes(t, u.embeddings),
                pages=megabytes(t, u.recognised_pages),
                documents=megabytes(t, u.documents),
            )
        ).classes("text-sm").mark("cache-sizes")

    async def clear() -> None:
        try:
            freed = await app.clear_caches()
        except (AppError, WriterBusy, OSError) as exc:
            show_error(t, exc)
            return
        ui.notify(t("mnt.cache_cleared", total=megabytes(t, freed.total)), type="positive")
        sizes.refresh()

    def confirm() -> None:
        total = megabytes(t, app.cache_usage().total)
        with ui.dialog() as dialog, ui.card():
            ui.label(t("mnt.cache_confirm", total=total))

            async def go() -> None:
                dialog.close()
                await clear()

            with ui.row():
                ui.button(t("mnt.cache_clear"), on_click=go).mark("cache-clear-confirm")
                ui.button(t("mnt.cancel"), on_click=dialog.close)
        dialog.open()

    with ui.row().classes("items-center gap-2 mt-2"):
        ui.label(t("mnt.caches")).classes("font-semibold")
        ui.button(t("mnt.cache_clear"), icon="cleaning_services", on_click=confirm).props(
            "flat dense"
        ).mark("cache-clear")
    sizes()
