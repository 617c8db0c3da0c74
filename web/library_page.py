"""The library page: collections (switch, create, rename, delete), adding documents with live
progress, failed documents with their reasons and a retry, the documents with their outlines,
metadata edits (title, source label, aliases) and removal, the snapshot history with activate
(rollback) and clean-up, and direct tool use.

Every destructive action asks first. Nothing here changes data except through the App.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from nicegui import ui

from actors import App, DocumentView
from web.i18n import Texts
from web.import_panel import ImportPanel
from web.shell import frame, guarded, show_error, texts
from web.tools_panel import ToolsPanel


def build(app: App) -> None:
    t = texts(app)
    frame(app, t, "/library")
    with ui.column().classes("w-full max-w-5xl mx-auto gap-4"):
        _collections(app, t)
        panel_holder = ui.column().classes("w-full")
        failed = ui.column().classes("w-full").mark("failed-documents")
        documents = ui.column().classes("w-full").mark("documents")
        snapshots = ui.column().classes("w-full").mark("snapshots")
        tools = ui.column().classes("w-full")

    def refresh() -> None:
        _failed(app, t, failed, panel)
        docs = _documents(app, t, documents, refresh)
        _snapshots(app, t, snapshots, refresh)
        tools.clear()
        with tools:
            ToolsPanel(app, t, docs)

    with panel_holder:
        panel = ImportPanel(app, t, on_finished=refresh)
    refresh()


def confirm(t: Texts, message: str, action: Callable[[], Awaitable[None] | None]) -> None:
    """Ask before doing something that cannot be undone from this page."""
    with ui.dialog() as dialog, ui.card():
        dialog.mark("confirm-dialog")
        ui.label(message)
        with ui.row():

            async def yes() -> None:
                dialog.close()
                await guarded(t, action)

            ui.button(t("lib.confirm"), on_click=yes, color="negative").mark("confirm-yes")
            ui.button(t("lib.keep"), on_click=dialog.close).props("flat")
    dialog.open()


def _collections(app: App, t: Texts) -> None:
    current = app.current_collection()
    with ui.card().classes("w-full").mark("collections"):
        ui.label(t("lib.collections")).classes("text-base font-semibold")
        with ui.row().classes("items-end gap-2"):
            chooser = ui.select(app.collections(), value=current).mark("collection-select")

            def switch() -> None:
                if not chooser.value or chooser.value == current:
                    return
                try:
                    app.use_collection(chooser.value)
                except Exception as exc:  # e.g. deleted meanwhile: say so
                    show_error(t, exc)
                    return
                ui.navigate.reload()

            ui.button(t("lib.switch"), on_click=switch).props("outline").mark("collection-switch")
            name = ui.input(t("lib.new_name")).mark("collection-name")

            def run(action: Callable[[], None]) -> None:
                try:
                    action()
                except Exception as exc:  # invalid or taken name: say so
                    show_error(t, exc)
                    return
                ui.navigate.reload()

            ui.button(
                t("lib.create"), on_click=lambda: run(lambda: app.create_collection(name.value))
            ).props("outline").mark("collection-create")
            ui.button(
                t("lib.rename"),
                on_click=lambda: run(lambda: app.rename_collection(current, name.value)),
            ).props("outline").mark("collection-rename")
            ui.button(
                t("lib.delete"),
                color="negative",
                on_click=lambda: confirm(
                    t,
                    t("lib.delete_confirm", name=current),
                    lambda: run(lambda: app.delete_collection(current)),
                ),
            ).props("outline").mark("collection-delete")


def _failed(app: App, t: Texts, box: ui.column, panel: ImportPanel) -> None:
    box.clear()
    try:
        failures = app.failed()
    except Exception as exc:  # a damaged pointer: say what to do
        show_error(t, exc)
        return
    if not failures:
        return
    with box, ui.card().classes("w-full"):
        ui.label(t("lib.failed")).classes("text-base font-semibold text-red-800")
        for f in failures:
            with ui.row().classes("w-full items-center no-wrap").mark("failed-document"):
                ui.label(
                    t(
                        "lib.failed_row",
                        source=f.source,
                        stage=f.stage,
                        reason=f.reason,
                        message=f.message,
                    )
                ).classes("grow text-sm")
                if f.retryable:

                    def retry(source: str = f.source) -> None:
                        try:
                            paths = app.retry_paths([source])
                        except Exception as exc:  # the file moved: say so
                            show_error(t, exc)
                            return
                        panel.start(paths)

                    ui.button(t("lib.retry"), icon="refresh", on_click=retry).props(
                        "outline dense"
                    ).mark("retry-button")


def _documents(
    app: App, t: Texts, box: ui.column, refresh: Callable[[], None]
) -> list[DocumentView]:
    box.clear()
    try:
        docs = app.documents()
    except Exception as exc:  # shown; the rest of the page still works
        show_error(t, exc)
        return []
    with box, ui.card().classes("w-full"):
        ui.label(f"{t('lib.documents')} ({len(docs)})").classes("text-base font-semibold")
        if not docs:
            ui.label(t("lib.no_documents")).classes("text-sm").mark("no-documents")
        for d in docs:
            with ui.row().classes("w-full items-start no-wrap").mark("document-row"):
                with ui.expansion(d.title, icon="description").classes("grow") as exp:
                    ui.label(
                        t(
                            "lib.doc_meta",
                            source=d.source,
                            format=d.format,
                            blocks=d.blocks,
                            sections=d.sections,
                        )
                    ).classes("text-xs text-slate-500")
                    if d.source_label and d.source_label != d.source:
                        ui.label(t("lib.doc_label", label=d.source_label)).classes(
                            "text-xs text-slate-500"
                        ).mark("document-label")
                    if d.aliases:
                        ui.label(t("lib.doc_aliases", aliases=", ".join(d.aliases))).classes(
                            "text-xs text-slate-500"
                        ).mark("document-aliases")
                    outline = ui.column().classes("w-full gap-0").mark("outline")
                    exp.on_value_change(_outline_loader(app, t, d.doc_id, outline))

                async def remove(source: str = d.source) -> None:
                    await app.remove([source])
                    ui.notify(t("lib.removed", source=source), type="positive")
                    refresh()

                ui.button(
                    t("lib.edit"),
                    icon="edit",
                    on_click=lambda d=d: _edit_dialog(app, t, d, refresh),
                ).props("flat dense").mark("edit-button")
                ui.button(
                    t("lib.remove"),
                    icon="delete",
                    on_click=lambda source=d.source, remove=remove: confirm(
                        t, t("lib.remove_confirm", source=source), remove
                    ),
                ).props("flat dense color=negative").mark("remove-button")
    return docs


def _edit_dialog(app: App, t: Texts, doc: DocumentView, refresh: Callable[[], None]) -> None:
    """Title, source label and aliases (one per line). Saving makes a new snapshot that carries
    everything else over; the edit also holds for later imports of the same file."""
    with ui.dialog() as dialog, ui.card().classes("w-[36rem] max-w-full"):
        dialog.mark("edit-dialog")
        ui.label(t("lib.edit_title", source=doc.source)).classes("text-base font-semibold")
        title = ui.input(t("lib.edit_field_title"), value=doc.title).classes("w-full")
        label = ui.input(t("lib.edit_field_label"), value=doc.source_label or doc.source)
        label.classes("w-full")
        aliases = ui.textarea(t("lib.edit_field_aliases"), value="\n".join(doc.aliases))
        aliases.classes("w-full").props("autogrow")
        ui.label(t("lib.edit_note")).classes("text-xs text-slate-500")
        title.mark("edit-title")
        label.mark("edit-label")
        aliases.mark("edit-aliases")

        async def save() -> None:
            result = await guarded(
                t,
                app.edit_document,
                doc.doc_id,
                title=title.value or "",
                source_label=label.value or "",
                aliases=(aliases.value or "").splitlines(),
            )
            if result is None:
                return  # the error was shown; the dialog stays open to correct it
            dialog.close()
            ui.notify(
                t("lib.edited", title=result.title) if result.changed else t("lib.edit_unchanged"),
                type="positive",
            )
            refresh()

        with ui.row():
            ui.button(t("lib.edit_save"), icon="save", on_click=save).mark("edit-save")
            ui.button(t("lib.keep"), on_click=dialog.close).props("flat")
    dialog.open()


def _outline_loader(app: App, t: Texts, doc_id: str, target: ui.column) -> Callable[[], None]:
    """Fill a document's outline the first time it is opened."""

    def fill() -> None:
        if target.default_slot.children:
            return
        try:
            entries = app.outline(doc_id)
        except Exception as exc:  # the snapshot changed meanwhile
            show_error(t, exc)
            return
        with target:
            for s in entries:
                ui.label(f"{s.title} ({s.blocks})").classes("text-sm").style(
                    f"padding-left: {(s.depth - 1) * 1.2}rem"
                ).tooltip(s.first_sentence).mark("outline-entry")

    return fill


def _snapshots(app: App, t: Texts, box: ui.column, refresh: Callable[[], None]) -> None:
    box.clear()
    try:
        items = list(reversed(app.snapshots()))  # newest first
    except Exception as exc:  # shown; the rest of the page still works
        show_error(t, exc)
        return
    with box, ui.card().classes("w-full"):
        with ui.row().classes("w-full items-center"):
            ui.label(t("lib.snapshots")).classes("text-base font-semibold")
            ui.space()

            async def gc() -> None:
                report = await guarded(t, app.gc)
                if report is not None:
                    ui.notify(
                        t(
                            "lib.gc_done",
                            deleted=len(report.deleted),
                            kept=len(report.kept),
                            pinned=len(report.pinned),
                        )
                    )
                    refresh()

            ui.button(t("lib.gc"), icon="cleaning_services", on_click=gc).props(
                "outline dense"
            ).mark("gc-button")
        for s in items:
            with ui.row().classes("w-full items-center no-wrap").mark("snapshot-row"):
                ui.label(
                    t(
                        "lib.snapshot_row",
                        created=s.created_at,
                        status=s.status,
                        documents=s.documents,
                        blocks=s.blocks,
                        failed=s.failed,
                    )
                ).classes("grow text-sm")
                if s.active:
                    ui.badge(t("lib.active")).mark("active-snapshot")
                elif s.status in ("ready", "ready_partial"):

                    def activate(sid: str = s.id) -> None:
                        try:
                            app.activate(sid)
                        except Exception as exc:  # e.g. damaged snapshot: say so
                            show_error(t, exc)
                            return
                        ui.notify(t("lib.activated", id=sid), type="positive")
                        refresh()

                    ui.button(t("lib.activate"), on_click=activate).props("outline dense").mark(
                        "activate-button"
                    )
