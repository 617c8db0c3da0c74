"""What an import reports: its progress while it runs, its result at the end, and its pause gate.

The pipeline tells a `ProgressReporter` what happened to each document; the reporter keeps one
`ImportProgress` current and hands it out at most every PROGRESS_INTERVAL_S (at once when the
run changes state). Reporting never fails an import: writing progress for others is best effort.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence

import anyio
import msgspec

from actors.discovery import Target
from index.records import BuildStats, DocumentRecord, FailedDocument, SkippedFile, SnapshotStatus

PROGRESS_INTERVAL_S = 0.5


class ImportProgress(msgspec.Struct, kw_only=True):
    collection: str
    state: str = "starting"  # starting | running | paused | building | done | cancelled | failed
    documents_total: int = 0
    documents_done: int = 0
    documents_failed: int = 0
    documents_reused: int = 0
    pages: int = 0
    blocks: int = 0
    blocks_embedded: int = 0
    embedding_tokens: int = 0
    bytes_total: int = 0
    bytes_done: int = 0
    elapsed_s: float = 0.0
    eta_s: float | None = None
    current: list[str] = []
    documents: dict[
        str, str
    ] = {}  # source -> queued | parsing | embedding | done | failed | reused


class ImportResult(msgspec.Struct, kw_only=True):
    collection: str
    snapshot_id: str | None
    status: SnapshotStatus | None  # None when nothing changed and no snapshot was built
    activated: bool
    failed_documents: list[FailedDocument]
    skipped: list[SkippedFile]
    stats: BuildStats
    message: str = ""


class PauseGate:
    """Stages wait here between documents while the import is paused."""

    def __init__(self) -> None:
        self._resumed = anyio.Event()
        self._resumed.set()

    @property
    def paused(self) -> bool:
        return not self._resumed.is_set()

    def pause(self) -> None:
        if not self.paused:
            self._resumed = anyio.Event()

    def resume(self) -> None:
        self._resumed.set()

    async def wait(self) -> None:
        while self.paused:
            await self._resumed.wait()


class ProgressReporter:
    """Keeps one run's `ImportProgress` and emits it to `on_progress` and to `publish` (the
    journal's progress file, read by other processes)."""

    def __init__(
        self,
        collection: str,
        gate: PauseGate,
        on_progress: Callable[[ImportProgress], None] | None,
        publish: Callable[[bytes], None],
    ) -> None:
        self.progress = ImportProgress(collection=collection)
        self._gate = gate
        self._on_progress = on_progress
        self._publish = publish
        self._started = time.monotonic()
        self._last_emit = 0.0

    def start(self, targets: Sequence[Target], failed: Sequence[FailedDocument]) -> None:
        """The run knows its documents: those found, and those that failed before parsing."""
        p = self.progress
        p.documents_total = len(targets) + len(failed)
        p.documents_failed = len(failed)
        p.bytes_total = sum(t.size for t in targets)
        p.documents = {t.source: "queued" for t in targets}
        p.documents.update({f.source: "failed" for f in failed})
        self.state("running")

    def state(self, state: str) -> None:
        """The run as a whole moved on (running, building, done): emitted at once."""
        self.progress.state = state
        self.emit(force=True)

    def document(self, source: str, state: str) -> None:
        """One document entered a stage (parsing, embedding)."""
        self.progress.documents[source] = state
        self.emit()

    def embedded(self, blocks_embedded: int, embedding_tokens: int) -> None:
        """The run's embedding totals so far (shown with the next emission)."""
        self.progress.blocks_embedded = blocks_embedded
        self.progress.embedding_tokens = embedding_tokens

    def failed(self, target: Target) -> None:
        p = self.progress
        p.documents_failed += 1
        p.bytes_done += target.size
        p.documents[target.source] = "failed"
        self.emit()

    def finished(self, target: Target, record: DocumentRecord, *, reused: bool) -> None:
        p = self.progress
        p.documents_done += 1
        p.documents_reused += reused
        p.pages += record.pages or 0
        p.blocks += len(record.blocks)
        p.bytes_done += target.size
        p.documents[target.source] = "reused" if reused else "done"
        self.emit()

    def emit(self, force: bool = False) -> None:
        now = time.monotonic()
        p = self.progress
        p.elapsed_s = round(now - self._started, 3)
        if self._gate.paused and p.state == "running":
            p.state = "paused"
        elif not self._gate.paused and p.state == "paused":
            p.state = "running"
        p.current = [s for s, st in p.documents.items() if st in ("parsing", "embedding")]
        if p.bytes_done and p.bytes_total > p.bytes_done:
            rate = p.bytes_done / max(p.elapsed_s, 1e-6)
            p.eta_s = round((p.bytes_total - p.bytes_done) / rate, 1)
        elif p.bytes_total and p.bytes_done >= p.bytes_total:
            p.eta_s = 0.0
        if not force and now - self._last_emit < PROGRESS_INTERVAL_S:
            return
        self._last_emit = now
        if self._on_progress is not None:
            self._on_progress(p)
        with contextlib.suppress(OSError):  # progress for other processes is best effort
            self._publish(msgspec.json.encode(p))
