"""The library page: collections (switch, create, rename, delete), adding documents with live
progress, failed documents with their reasons and a retry, the documents with their import
reports (a warning beside the document, "Recognise all pages" when scanned pages were left
out) and outlines, metadata edits (title, source label, aliases) and removal, the snapshot
history with activate (rollback) and clean-up, and direct tool use.

Every destructive action asks first. Nothing here changes data except through the App.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Sequence

from nicegui import ui

from actors import App, DocumentView, SnapshotChanges, SnapshotView
from web.damage_banner import damage_banner
from web.error_view import details_toggle
from web.i18n import Texts, when
from web.import_panel import ImportPanel, failure_sentence
from web.import_report_view import asks_for_all_pages, caption, report_view
from web.shell import frame, guarded, show_error, texts
from web.tools_panel import ToolsPanel


def build(app: App) -> None:
    t = texts(app)
    frame(app, t, "/library")
    with ui.column().classes("w-full max-w-5xl mx-auto gap-4"):
        damage = ui.column().classes("w-full")
        _collections(app, t)
        panel_holder = ui.column().classes("w-full")
        failed = ui.column().classes("w-full").mark("failed-documents")
        documents = ui.column().classes("w-full").mark("documents")
        snapshots = ui.column().classes("w-full").mark("snapshots")
        tools = ui.column().classes("w-full")

    retrying: set[str] = set()

    def refresh() -> None:
        panel.library_changed()  # a rollback or a removal ends the last import's story
        damage.clear()
        with damage:
            damaged = damage_banner(app, t, on_library_page=True) is not None
        _failed(app, t, failed, panel, retrying)
        documents.clear()
        docs = [] if damaged else _documents(app, t, documents, refresh, panel)
        _snapshots(app, t, snapshots, refresh)
        tools.clear()
        with tools:
            ToolsPanel(app, t, docs)

    def finished() -> None:
        _report_retries(app, t, retrying)
        refresh()

    with panel_holder:
        panel = ImportPanel(app, t, on_finished=finished)
    refresh()


def confirm(
    t: Texts,
    message: str,
    action: Callable[[], Awaitable[None] | None],
    *,
    details: Sequence[str] = (),
    yes_text: str | None = None,
) -> None:
    """Ask before doing something that changes the library: the question says what happens
    in words (`details`: one consequence a line), the button says what it does."""
    with ui.dialog() as dialog, ui.card().classes("max-w-xl"):
        dialog.mark("confirm-dialog")
        ui.label(message).classes("text-base").mark("confirm-message")
        for line in details:
            ui.label(line).classes("text-sm").mark("confirm-detail")
        with ui.row():

            async def yes() -> None:
                dialog.close()
                await guarded(t, action)

            ui.button(yes_text or t("lib.confirm"), on_click=yes, color="negative").props(
                "no-caps"
            ).mark("confirm-yes")
            ui.button(t("lib.keep"), on_click=dialog.close).props("flat no-caps").mark("confirm-no")
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

            def ask_delete() -> None:
                try:
                    documents = len(app.documents(current))
                    snapshots = len(app.snapshots(current))
                except Exception as exc:  # a damaged collection can still be deleted
                    show_error(t, exc)
                    documents = snapshots = 0
                confirm(
                    t,
                    t("lib.delete_confirm", name=current, documents=documents, snapshots=snapshots),
                    lambda: run(lambda: app.delete_collection(current)),
                    yes_text=t("lib.delete_yes"),
                )

            ui.button(t("lib.delete"), color="negative", on_click=ask_delete).props("outline").mark(
                "collection-delete"
            )


def _failed(app: App, t: Texts, box: ui.column, panel: ImportPanel, retrying: set[str]) -> None:
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
                with ui.column().classes("grow gap-0"):
                    ui.label(
                        t(
                            "lib.failed_row",
                            source=f.source,
                            message=failure_sentence(t, f.stage, f.reason),
                        )
                    ).classes("text-sm").mark("failed-sentence")
                    details_toggle(t, f"{f.stage}: {f.reason} — {f.message}")
                if f.retryable:

                    def retry(source: str = f.source) -> None:
                        try:
                            paths = app.retry_paths([source])
                        except Exception as exc:  # the file moved: say so
                            show_error(t, exc)
                            return
                        if panel.start(paths):
                            retrying.add(source)
                            ui.notify(t("lib.retrying", source=source))

                    ui.button(t("lib.retry"), icon="refresh", on_click=retry).props(
                        "outline dense"
                    ).mark("retry-button")


def _documents(
    app: App, t: Texts, box: ui.column, refresh: Callable[[], None], panel: ImportPanel
) -> list[DocumentView]:
    box.clear()
    try:
        docs = app.documents()
    except Exception as exc:  # shown; the rest of the page still works
        show_error(t, exc)
        return []
    with box, ui.card().classes("w-full"):
        with ui.row().classes("items-baseline gap-2"):
            ui.label(f"{t('lib.documents')} ({len(docs)})").classes("text-base font-semibold")
            warned = sum(1 for d in docs if d.report is not None and d.report.warnings)
            if warned:
                ui.label(t("report.with_warnings", n=warned)).classes(
                    "text-sm text-amber-800"
                ).mark("documents-with-warnings")
        if not docs:
            ui.label(t("lib.no_documents")).classes("text-sm").mark("no-documents")
        shared = _shared_titles(docs)
        for d in docs:
            with ui.row().classes("w-full items-start no-wrap").mark("document-row"):
                warning = caption(t, d.report)
                with ui.expansion(
                    d.title,
                    icon="description" if warning is None else "warning",
                    caption=_row_caption(d, warning, shared),
                ).classes("grow") as exp:
                    if warning is not None:
                        exp.props("header-class=text-amber-900").mark("document-warning")
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
                    report_view(t, d.report)
                    outline = ui.column().classes("w-full gap-0").mark("outline")
                    exp.on_value_change(_outline_loader(app, t, d.doc_id, outline))

                if asks_for_all_pages(d.report):

                    def recognise(source: str = d.source) -> None:
                        try:
                            paths = app.recognise_all_pages([source])
                        except Exception as exc:  # the file moved: say so
                            show_error(t, exc)
                            return
                        if panel.start(paths):
                            ui.notify(t("report.recognising", source=source))

                    ui.button(
                        t("report.recognise_all"), icon="document_scanner", on_click=recognise
                    ).props("flat dense").classes("whitespace-nowrap").mark("recognise-all-button")

                async def remove(source: str = d.source) -> None:
                    result = await app.remove([source])
                    if result.already_removed:  # e.g. removed meanwhile in another window
                        ui.notify(t("lib.already_removed", source=source), type="info")
                    else:
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
                        t,
                        t("lib.remove_confirm", source=source),
                        remove,
                        yes_text=t("lib.remove_yes"),
                    ),
                ).props("flat dense color=negative").mark("remove-button")
    return docs


def _title_key(title: str) -> str:
    return " ".join(title.split()).casefold()


def _shared_titles(docs: Sequence[DocumentView]) -> set[str]:
    """The titles (without regard to case and spacing) that more than one document has."""
    counts = Counter(_title_key(d.title) for d in docs)
    return {title for title, n in counts.items() if n > 1}


def _row_caption(doc: DocumentView, warning: str | None, shared: set[str]) -> str | None:
    """The line under a document's title: its first warning, led by its file's name when
    another document has the same title (two books called "Notes" can be told apart without
    opening them)."""
    if _title_key(doc.title) not in shared:
        return warning
    name = doc.source_label or doc.source
    return name if warning is None else f"{name} · {warning}"


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


def _report_retries(app: App, t: Texts, retrying: set[str]) -> None:
    """After an import that retried failed documents: say, for each, how it went."""
    if not retrying:
        return
    sources = sorted(retrying)
    retrying.clear()
    job = app.current_import
    if job is None or job.state != "done":
        for source in sources:
            ui.notify(t("lib.retry_stopped", source=source), type="warning")
        return
    try:
        still = {f.source: f for f in app.failed()}
    except Exception as exc:  # a damaged pointer: say what to do
        show_error(t, exc)
        return
    for source in sources:
        f = still.get(source)
        if f is None:
            ui.notify(t("lib.retry_ok", source=source), type="positive")
        else:
            ui.notify(
                t(
                    "lib.retry_failed",
                    source=source,
                    message=failure_sentence(t, f.stage, f.reason),
                ),
                type="negative",
                multi_line=True,
            )


# Each kind of change a snapshot records: its field, and the sign its tooltip lines start with.
_CHANGE_KINDS = (
    ("added", "+"),
    ("removed", "−"),
    ("edited", "✎"),
    ("read_again", "↻"),
    ("failed", "✗"),
)


def _changed(c: SnapshotChanges) -> list[tuple[str, str, tuple[str, ...]]]:
    """(kind, sign, sources) of every kind of change `c` has."""
    return [(kind, sign, items) for kind, sign in _CHANGE_KINDS if (items := getattr(c, kind))]


def changes_text(t: Texts, c: SnapshotChanges) -> str:
    """What a snapshot changed, in words: "+2 added · −1 removed · 1 edited · 1 failed"."""
    if not c.known:
        return t("lib.change.unknown")
    if c.empty:
        return t("lib.change.none")
    return " · ".join(t(f"lib.change.{kind}", n=len(items)) for kind, _, items in _changed(c))


def _changes_tooltip(c: SnapshotChanges) -> str:
    return "\n".join(f"{sign} {', '.join(items)}" for _, sign, items in _changed(c))


def snapshot_times(t: Texts, items: Sequence[SnapshotView]) -> dict[str, str]:
    """Each snapshot's time as a person reads it; with seconds when two share a minute."""
    plain = {s.id: when(t, s.created_at) for s in items}
    if len(set(plain.values())) == len(plain):
        return plain
    return {s.id: when(t, s.created_at, seconds=True) for s in items}


def rollback_question(t: Texts, target: SnapshotView, at: str) -> tuple[str, list[str]]:
    """The rollback dialog's question and its consequences, in words (never a raw id)."""
    question = t("lib.rollback_confirm", when=at, documents=target.documents)
    since = target.since
    details: list[str] = []
    if since.known:
        if since.added:
            details.append(t("lib.rollback_added", n=len(since.added)))
        if since.removed:
            details.append(t("lib.rollback_removed", n=len(since.removed)))
        if since.edited:
            details.append(t("lib.rollback_edited", n=len(since.edited)))
        if not (since.added or since.removed or since.edited):
            details.append(t("lib.rollback_same"))
    details.append(t("lib.rollback_safe"))
    return question, details


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

            def ask_gc() -> None:
                keep = app.config.snapshots
                details = [t("lib.gc_days", days=keep.keep_days)] if keep.keep_days else []
                confirm(
                    t,
                    t("lib.gc_confirm", n=keep.keep_last),
                    gc,
                    details=[*details, t("lib.gc_safe")],
                    yes_text=t("lib.gc_yes"),
                )

            ui.button(t("lib.gc"), icon="cleaning_services", on_click=ask_gc).props(
                "outline dense"
            ).mark("gc-button")
        times = snapshot_times(t, items)
        for s in items:
            with ui.row().classes("w-full items-center no-wrap").mark("snapshot-row"):
                with ui.column().classes("grow gap-0"):
                    ui.label(
                        t(
                            "lib.snapshot_row",
                            created=times[s.id],
                            status=t(f"lib.snapshot_status.{s.status}"),
                            documents=s.documents,
                            blocks=s.blocks,
                        )
                    ).classes("text-sm").tooltip(s.id).mark("snapshot-summary")
                    changes = ui.label(changes_text(t, s.changes)).classes("text-xs text-slate-500")
                    changes.mark("snapshot-changes")
                    tip = _changes_tooltip(s.changes)
                    if tip:
                        changes.tooltip(tip)
                if s.active:
                    ui.badge(t("lib.active")).mark("active-snapshot")
                elif s.status in ("ready", "ready_partial"):

                    def activate(s: SnapshotView = s) -> None:
                        try:
                            app.activate(s.id)
                        except Exception as exc:  # e.g. damaged snapshot: say so
                            show_error(t, exc)
                            return
                        ui.notify(
                            t("lib.activated", when=times[s.id], documents=s.documents),
                            type="positive",
                        )
                        refresh()

                    def ask_activate(
                        s: SnapshotView = s, activate: Callable[[], None] = activate
                    ) -> None:
                        question, details = rollback_question(t, s, times[s.id])
                        confirm(
                            t, question, activate, details=details, yes_text=t("lib.rollback_yes")
                        )

                    ui.button(t("lib.activate"), icon="history", on_click=ask_activate).props(
                        "outline dense no-caps"
                    ).mark("activate-button")
