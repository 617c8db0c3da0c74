"""Adding documents: drag-and-drop upload or a file/folder path, then live progress of the
background import (documents, pages, blocks, embedding tokens, ETA, each document's stage)
with pause, resume and cancel.

The import runs as a task owned by the app, so leaving the page never stops it; this panel
only polls and renders its state.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from nicegui import ui

from actors import App, ImportJob, ImportProgress
from web.i18n import Texts
from web.shell import show_error

POLL_S = 0.4
DOCUMENTS_SHOWN = 40
MAX_UPLOAD_BYTES = 512 << 20


def eta_text(seconds: float) -> str:
    s = max(0, round(seconds))
    if s < 60:
        return f"{s} s"
    m, s = divmod(s, 60)
    if m < 60:
        return f"{m} min {s:02d} s"
    h, m = divmod(m, 60)
    return f"{h} h {m:02d} min"


class ImportPanel:
    def __init__(self, app: App, t: Texts, on_finished: Callable[[], None]) -> None:
        self.app = app
        self.t = t
        self.on_finished = on_finished
        self._reported: ImportJob | None = None
        self._shown_documents: tuple[tuple[str, str], ...] = ()
        with ui.card().classes("w-full").mark("import-panel"):
            ui.label(t("lib.import")).classes("text-base font-semibold")
            ui.upload(
                label=t("lib.upload"),
                multiple=True,
                auto_upload=True,
                max_file_size=MAX_UPLOAD_BYTES,
                on_multi_upload=self._uploaded,
            ).props("accept=.pdf,.epub,.docx,.md,.markdown,.txt,.html,.htm,.xhtml").classes(
                "w-full"
            ).mark("upload")
            with ui.row().classes("w-full items-center no-wrap"):
                self.path = (
                    ui.input(t("lib.path")).props("clearable").classes("grow").mark("import-path")
                )
                ui.button(t("lib.start"), icon="file_upload", on_click=self._start_path).mark(
                    "import-button"
                )
            ui.label(t("lib.path_hint")).classes("text-xs text-slate-500")
            self.resume_row = ui.row().classes("w-full items-center")
            self.progress = ui.column().classes("w-full gap-1").mark("import-progress")
            with self.progress:
                self.state = ui.label().classes("font-medium").mark("import-state")
                self.documents_label = ui.label().classes("text-sm").mark("import-documents")
                self.documents_bar = ui.linear_progress(value=0, show_value=False)
                self.bytes_bar = ui.linear_progress(value=0, show_value=False).props("color=teal")
                self.stats = ui.label().classes("text-sm").mark("import-stats")
                self.eta = ui.label().classes("text-xs text-slate-500").mark("import-eta")
                with ui.row():
                    self.pause_button = ui.button(
                        t("lib.pause"), icon="pause", on_click=self._pause
                    ).mark("pause-button")
                    self.resume_button = ui.button(
                        t("lib.resume"), icon="play_arrow", on_click=self._resume
                    ).mark("resume-button")
                    self.cancel_button = ui.button(
                        t("lib.cancel"), icon="close", color="negative", on_click=self._cancel
                    ).mark("cancel-button")
                self.per_document = ui.column().classes("w-full gap-0 text-xs")
            self.result = ui.label().classes("text-sm").mark("import-result")
        self._show_resume_offer()
        # The page shows the library as it is right after building this panel, so an import
        # that finished earlier is reported here without calling back into a page still under
        # construction (its callback would refer to this panel before it exists).
        self._render(notify=False)
        ui.timer(POLL_S, self._render)

    # -- starting ------------------------------------------------------------------------------
    def start(self, paths: Sequence[Path]) -> bool:
        try:
            self.app.start_import(paths)
        except Exception as exc:  # e.g. another import is running: say so
            show_error(self.t, exc)
            return False
        self.result.set_text("")
        self._render()
        return True

    def _start_path(self) -> None:
        raw = (self.path.value or "").strip().strip('"')
        if not raw:
            ui.notify(self.t("lib.no_path"))
            return
        if self.start([Path(raw).expanduser()]):
            self.path.set_value("")

    async def _uploaded(self, e: Any) -> None:
        saved: list[Path] = []
        for file in e.files:
            try:
                target = self.app.upload_path(file.name)
                await file.save(target)
            except Exception as exc:  # one bad name must not lose the other files
                show_error(self.t, exc)
                continue
            saved.append(target)
        if saved:
            self.start(saved)
        e.sender.reset()

    def _show_resume_offer(self) -> None:
        self.resume_row.clear()
        job = self.app.current_import
        if job is not None and not job.finished.is_set():
            return
        if not self.app.pending_import():
            return
        with self.resume_row:
            ui.label(self.t("lib.resume_interrupted")).classes("text-sm")
            ui.button(
                self.t("lib.resume_button"), on_click=lambda: self._resume_interrupted()
            ).props("outline").mark("resume-interrupted")

    def _resume_interrupted(self) -> None:
        if self.start([]):
            self.resume_row.clear()

    # -- controls ------------------------------------------------------------------------------
    def _job(self) -> ImportJob | None:
        return self.app.current_import

    def _pause(self) -> None:
        job = self._job()
        if job is not None:
            job.pause()
        self._render()

    def _resume(self) -> None:
        job = self._job()
        if job is not None:
            job.resume()
        self._render()

    def _cancel(self) -> None:
        job = self._job()
        if job is not None:
            job.cancel()
        self._render()

    # -- rendering -----------------------------------------------------------------------------
    def _render(self, notify: bool = True) -> None:
        job = self._job()
        t = self.t
        active = job is not None and not job.finished.is_set()
        self.progress.set_visibility(job is not None)
        if job is None:
            return
        state = job.state
        key = f"lib.state.{state}"
        self.state.set_text(t(key, error=job.error) if state == "failed" else t(key))
        self.pause_button.set_visibility(active and state == "running")
        self.resume_button.set_visibility(active and state == "paused")
        self.cancel_button.set_visibility(active)
        if job.progress is not None:
            self._render_progress(job.progress, active)
        if job.finished.is_set() and self._reported is not job:
            self._reported = job
            self._report(job)
            if notify:
                self.on_finished()

    def _render_progress(self, p: ImportProgress, active: bool) -> None:
        t = self.t
        done = p.documents_done + p.documents_failed
        self.documents_label.set_text(
            t(
                "lib.progress.documents",
                done=done,
                total=p.documents_total,
                failed=p.documents_failed,
            )
        )
        self.documents_bar.set_value(done / p.documents_total if p.documents_total else 0)
        self.bytes_bar.set_value(p.bytes_done / p.bytes_total if p.bytes_total else 0)
        self.stats.set_text(
            t("lib.progress.stats", pages=p.pages, blocks=p.blocks, tokens=p.embedding_tokens)
        )
        if not active:
            self.eta.set_text("")
        elif p.eta_s is None:
            self.eta.set_text(t("lib.progress.eta_unknown"))
        else:
            self.eta.set_text(t("lib.progress.eta", eta=eta_text(p.eta_s)))
        shown = tuple(p.documents.items())
        if shown == self._shown_documents:
            return
        self._shown_documents = shown
        self.per_document.clear()
        with self.per_document:
            for source, stage in shown[:DOCUMENTS_SHOWN]:
                ui.label(f"{source} — {t('lib.doc_state.' + stage)}").mark("import-document")
            if len(p.documents) > DOCUMENTS_SHOWN:
                ui.label(f"… +{len(p.documents) - DOCUMENTS_SHOWN}")

    def _report(self, job: ImportJob) -> None:
        t = self.t
        r = job.result
        if job.error is not None or r is None:
            self.result.set_text("")
            return
        if r.status is None:
            self.result.set_text(t("lib.result_unchanged"))
        elif r.status == "failed":
            self.result.set_text(t("lib.result_failed"))
        else:
            self.result.set_text(
                t(
                    "lib.result",
                    id=r.snapshot_id,
                    status=r.status,
                    ok=r.stats.documents_succeeded,
                    failed=r.stats.documents_failed,
                    skipped=len(r.skipped),
                )
            )
