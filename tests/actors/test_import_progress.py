"""Import progress: what a watcher is shown, how often, and that reporting never fails a run."""

from __future__ import annotations

from pathlib import Path

from actors.discovery import Target
from actors.import_progress import ImportProgress, PauseGate, ProgressReporter
from index.records import DocumentRecord, FailedDocument


def reporter(
    gate: PauseGate | None = None, publish_fails: bool = False
) -> tuple[ProgressReporter, list[ImportProgress], list[bytes]]:
    seen: list[ImportProgress] = []
    published: list[bytes] = []

    def publish(data: bytes) -> None:
        if publish_fails:
            raise OSError("disk full")
        published.append(data)

    return ProgressReporter("default", gate or PauseGate(), seen.append, publish), seen, published


TARGETS = [Target(Path("/a.md"), "a.md", 100), Target(Path("/b.md"), "b.md", 300)]
RECORD = DocumentRecord(
    doc_id="d1", content_hash="h", source="a.md", source_label="a.md", title="A", pages=2
)
BAD = FailedDocument(source="x.png", stage="read", reason="unsupported_type")


def test_the_start_counts_documents_and_bytes_and_is_shown_at_once() -> None:
    report, seen, published = reporter()
    report.start(TARGETS, [BAD])
    p = seen[-1]
    assert (p.state, p.documents_total, p.documents_failed, p.bytes_total) == ("running", 3, 1, 400)
    assert p.documents == {"a.md": "queued", "b.md": "queued", "x.png": "failed"}
    assert len(published) == 1


def test_document_events_between_forced_ones_are_throttled_but_counted() -> None:
    report, seen, _ = reporter()
    report.start(TARGETS, [])
    report.document("a.md", "parsing")
    assert len(seen) == 1  # within PROGRESS_INTERVAL_S of the start: not handed out
    assert report.progress.current == ["a.md"]
    report.finished(TARGETS[0], RECORD, reused=True)
    report.failed(TARGETS[1])
    report.state("building")
    p = seen[-1]
    assert len(seen) == 2 and p.state == "building"
    assert (p.documents_done, p.documents_reused, p.documents_failed, p.pages) == (1, 1, 1, 2)
    assert p.bytes_done == 400 and p.eta_s == 0.0 and p.current == []


def test_a_paused_gate_shows_as_paused_until_resumed() -> None:
    gate = PauseGate()
    report, seen, _ = reporter(gate)
    gate.pause()
    report.start(TARGETS, [])
    assert seen[-1].state == "paused"
    gate.resume()
    report.emit(force=True)
    assert seen[-1].state == "running"


def test_progress_that_cannot_be_written_for_other_processes_does_not_stop_the_run() -> None:
    report, seen, _ = reporter(publish_fails=True)
    report.start(TARGETS, [])
    assert seen[-1].state == "running"
