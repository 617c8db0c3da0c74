"""Adding documents: drag-and-drop upload or a file/folder path, then live progress of the
background import (documents, pages read, blocks embedded, embedding tokens, the time left at
the measured pace, each document's stage, and each failure's reason as it happens) with pause,
resume and cancel, and a closing message that counts the whole library.

The import runs as a task owned by the app, so leaving the page never stops it; this panel
only polls and renders its state.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from nicegui import ui

from actors import App, ImportJob, ImportProgress, ImportResult
from web.error_view import error_sentence
from web.i18n import TEXTS, Texts
from web.shell import show_error

POLL_S = 0.4
DOCUMENTS_SHOWN = 40
MAX_UPLOAD_BYTES = 512 << 20
# The upload box's header names its total size and progress ("0.0B / 0.00%" before any file
# is chosen, which reads as a failed transfer); each file's own line shows its progress.
_UPLOAD_STYLE = ".cw-upload .q-uploader__subtitle { display: none; }"


ALMOST_DONE_S = 3.0  # less time left than this is "almost done", not a count of seconds


SLOW_PACE = 0.1  # a second: below it the pace is said as one every so many seconds


def eta_text(t: Texts, seconds: float) -> str:
    s = max(0, round(seconds))
    if s < 60:
        return t("lib.eta.seconds", s=s)
    m, s = divmod(s, 60)
    if m < 60:
        return t("lib.eta.minutes", m=m, s=f"{s:02d}")
    h, m = divmod(m, 60)
    return t("lib.eta.hours", h=h, m=f"{m:02d}")


def failure_sentence(t: Texts, stage: str, reason: str) -> str:
    """What happened to a file and one thing to do, from its failure's stage and reason code."""
    for key in (f"fail.{stage}.{reason}", f"fail.{reason}"):
        if key in TEXTS:
            return t(key)
    return t("fail.unknown")


def closing_message(t: Texts, result: ImportResult) -> str:
    """The whole library's count, then what this import did: documents read again with every
    page recognised, added, embedded again, kept, failed and skipped."""
    c = result.counts()
    parts = [t("lib.closing.library", n=c.library)]
    for key, n in (
        ("lib.closing.added", c.added),
        ("lib.closing.re_embedded", c.re_embedded),
        ("lib.closing.unchanged", c.unchanged),
        ("lib.closing.failed", c.failed),
        ("lib.closing.skipped", c.skipped),
        ("lib.closing.resumed", c.resumed),
        ("lib.closing.vectors_reused", c.vectors_reused),
    ):
        if n:
            parts.append(t(key, n=n))
    if c.read_again:  # after "added": what "Recognise all pages" did to the pages it read
        parts.insert(1, t("lib.closing.read_again", n=c.read_again, blocks=c.blocks_changed))
    elif c.re_read:  # or what the newer reader made of documents the library held
        parts.insert(1, t("lib.closing.re_read", n=c.re_read, blocks=c.blocks_changed))
    return t("lib.closing.separator").join(parts) + t("lib.closing.end")


def work_line(t: Texts, p: ImportProgress) -> str:
    """Pages read, scanned pages recognised, blocks embedded (and kept from the cache)."""
    parts = []
    if p.pages_total:
        parts.append(t("lib.progress.pages", done=_count(p.pages), total=_count(p.pages_total)))
    if p.blocks_to_embed or not parts:  # no "0 / 0 blocks" before any is chunked
        parts.append(
            t(
                "lib.progress.blocks",
                done=_count(p.blocks_embedded),
                total=_count(p.blocks_to_embed),
            )
        )
        parts.append(t("lib.progress.tokens", tokens=_count(p.embedding_tokens)))
    if p.blocks_cached:
        parts.append(t("lib.progress.cached", n=_count(p.blocks_cached)))
    if p.ocr_pages_total:  # after the blocks: a scan is a part of the pages read
        parts.append(
            t("lib.progress.ocr", done=_count(p.ocr_pages), total=_count(p.ocr_pages_total))
        )
        if p.ocr_pages_cached:
            parts.append(t("lib.progress.ocr_cached", n=_count(p.ocr_pages_cached)))
    return " · ".join(parts)


def eta_line(t: Texts, p: ImportProgress) -> str:
    """The time left and the pace it is worked out from (recognition while scanned pages are
    left, else embedding, else reading), or why there is no figure yet."""
    if p.state != "running":
        return ""
    if p.eta_s is None:
        return t("lib.progress.eta_unknown")
    if p.eta_s < ALMOST_DONE_S:
        return t("lib.progress.almost")
    eta = eta_text(t, p.eta_s)
    if p.ocr_pages_per_s and p.ocr_pages < p.ocr_pages_total:
        pace = pace_text(t, "ocr", p.ocr_pages_per_s)
    elif p.blocks_per_s:
        pace = pace_text(t, "blocks", p.blocks_per_s)
    elif p.pages_per_s:
        pace = pace_text(t, "pages", p.pages_per_s)
    else:
        return t("lib.progress.eta", eta=eta)
    return t("lib.progress.eta_pace", eta=eta, pace=pace)


def pace_text(t: Texts, kind: str, rate: float) -> str:
    """So many a second; below SLOW_PACE a second, one every so many seconds (a scanned page
    recognised every 80 s was "0.0 scanned pages a second", which reads as stuck)."""
    if rate < SLOW_PACE:
        return t(f"lib.progress.pace_{kind}_every", every=eta_text(t, 1 / rate))
    return t(f"lib.progress.pace_{kind}", n=pace_figure(rate))


def _count(n: int) -> str:
    return f"{n:,}"


def pace_figure(rate: float) -> str:
    """A pace as a person reads it: whole numbers from 10 a second up, one decimal below
    (a scanned page every 4 s is "0.3", never "0")."""
    return f"{rate:,.0f}" if rate >= 10 else f"{rate:.1f}"


class ImportPanel:
    def __init__(self, app: App, t: Texts, on_finished: Callable[[], None]) -> None:
        self.app = app
        self.t = t
        self.on_finished = on_finished
        self._reported: ImportJob | None = None
        # A finished import whose story the library has moved past (a rollback, a removal,
        # an edit, another collection): its closing line would tell what no longer holds.
        self._past: ImportJob | None = None
        self._left: tuple[ImportJob, str | None] | None = None  # (job, the snapshot it left)
        self._shown_documents: tuple[tuple[str, str], ...] = ()
        self._shown_failures: tuple[int, int] = (0, 0)  # (id of the progress, failures shown)
        with ui.card().classes("w-full").mark("import-panel"):
            ui.label(t("lib.import")).classes("text-base font-semibold")
            ui.add_css(_UPLOAD_STYLE)
            ui.upload(
                label=t("lib.upload"),
                multiple=True,
                auto_upload=True,
                max_file_size=MAX_UPLOAD_BYTES,
                on_multi_upload=self._uploaded,
            ).props("accept=.pdf,.epub,.docx,.md,.markdown,.txt,.html,.htm,.xhtml").classes(
                "w-full cw-upload"
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
                with ui.row().classes("w-full items-center justify-between"):
                    self.documents_label = ui.label().classes("text-sm").mark("import-documents")
                    self.percent = ui.label().classes("text-sm").mark("import-percent")
                self.bar = (
                    ui.linear_progress(value=0, show_value=False, size="10px")
                    .props("rounded instant-feedback")
                    .mark("import-bar")
                )
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
                self.result = ui.label().classes("text-sm font-medium").mark("import-result")
                self.per_document = ui.column().classes("w-full gap-0 text-xs")
                self.failures = ui.column().classes("w-full gap-1").mark("import-failures")
        self._show_resume_offer()
        self.library_changed()
        # The page shows the library as it is right after building this panel, so an import
        # that finished earlier is reported here without calling back into a page still under
        # construction (its callback would refer to this panel before it exists).
        self._render(notify=False)
        ui.timer(POLL_S, self._render)

    def library_changed(self) -> None:
        """The library page shows the library afresh: a finished import is no longer shown
        once the active snapshot is not the one it left (or the collection is another)."""
        job = self._job()
        if job is None or not job.finished.is_set() or job is self._past:
            return
        active = _active(self.app, job)
        if self._left is None or self._left[0] is not job:
            made = _made(job)
            self._left = (job, active if made is None else made)
        if job.collection != self.app.current_collection() or active != self._left[1]:
            self._past = job
            self.progress.set_visibility(False)

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
        self.progress.set_visibility(job is not None and job is not self._past)
        if job is None or job is self._past:
            return
        state = job.state
        key = f"lib.state.{state}"
        if state == "failed":  # what ended it, in the UI's words (a bug says it is one)
            error = error_sentence(t, job.exception) if job.exception is not None else job.error
            self.state.set_text(t(key, error=error))
        else:
            self.state.set_text(t(key))
        self.pause_button.set_visibility(active and state == "running")
        self.resume_button.set_visibility(active and state == "paused")
        self.cancel_button.set_visibility(active)
        if job.progress is not None:
            # the time left only while it runs: a paused job's last sample may still say
            # "running" (the gate closes between samples), and its pace means nothing now
            self._render_progress(job.progress, active and state == "running")
        if job.finished.is_set() and self._reported is not job:
            self._reported = job
            self._report(job)
            if notify:
                self.on_finished()

    def _render_progress(self, p: ImportProgress, running: bool) -> None:
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
        self.bar.set_value(p.fraction)
        self.percent.set_text(t("lib.progress.percent", percent=int(p.fraction * 100)))
        self.stats.set_text(work_line(t, p))
        self.eta.set_text(eta_line(t, p) if running else "")
        self._render_documents(p)
        self._render_failures(p)

    def _render_documents(self, p: ImportProgress) -> None:
        t = self.t
        shown = tuple((s, st) for s, st in p.documents.items() if st != "failed")
        if shown == self._shown_documents:
            return
        self._shown_documents = shown
        self.per_document.clear()
        with self.per_document:
            for source, stage in shown[:DOCUMENTS_SHOWN]:
                ui.label(f"{source} — {t('lib.doc_state.' + stage)}").mark("import-document")
            if len(shown) > DOCUMENTS_SHOWN:
                ui.label(f"… +{len(shown) - DOCUMENTS_SHOWN}")

    def _render_failures(self, p: ImportProgress) -> None:
        """Each failure once, as it comes (rows already shown stay, details toggles too)."""
        t = self.t
        if self._shown_failures[0] != id(p):  # another import's progress: start afresh
            self._shown_failures = (id(p), 0)
            self.failures.clear()
        shown = self._shown_failures[1]
        if len(p.failures) == shown:
            return
        with self.failures:
            for f in p.failures[shown:]:
                with ui.column().classes("w-full gap-0").mark("import-failure"):
                    with ui.row().classes("items-center gap-1 no-wrap"):
                        ui.icon("error_outline", color="negative", size="xs")
                        ui.label(t("lib.fail.row", source=f.source)).classes(
                            "text-sm font-medium text-red-800"
                        )
                    ui.label(failure_sentence(t, f.stage, f.reason)).classes("text-sm").mark(
                        "import-failure-reason"
                    )
                    with (
                        ui.expansion(t("lib.fail.details"))
                        .props("dense")
                        .classes("text-xs text-slate-500")
                        .mark("import-failure-details")
                    ):
                        ui.label(t("lib.fail.details_code", stage=f.stage, reason=f.reason))
                        if f.message:
                            ui.label(f.message)
        self._shown_failures = (id(p), len(p.failures))

    def _report(self, job: ImportJob) -> None:
        r = job.result
        if job.error is not None or r is None:
            self.result.set_text("")
            return
        self.result.set_text(closing_message(self.t, r))


def _made(job: ImportJob) -> str | None:
    """The snapshot a finished import left active, when its result says (None: it does not,
    e.g. it was cancelled, failed, or built a snapshot of failures only)."""
    r = job.result
    if r is None or job.error is not None or not (r.activated or r.status is None):
        return None
    return r.snapshot_id


def _active(app: App, job: ImportJob) -> str | None:
    try:
        return app.catalog(job.collection).active_id()
    except Exception:  # a collection deleted or damaged since: the import is in the past
        return ""
