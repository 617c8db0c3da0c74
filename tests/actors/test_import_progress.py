"""Import progress: what a watcher is shown, how often, and that reporting never fails a run."""

from __future__ import annotations

from pathlib import Path

from actors.discovery import Target
from actors.import_progress import (
    PACE_WINDOW_S,
    ImportProgress,
    ImportResult,
    PauseGate,
    ProgressReporter,
)
from index.records import BlockRecord, BuildStats, DocumentRecord, FailedDocument, SkippedFile


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
    assert report.progress.documents["a.md"] == "parsing"
    report.finished(TARGETS[0], RECORD, reused=True)
    report.failed(TARGETS[1], FailedDocument(source="b.md", stage="parse", reason="corrupt"))
    report.state("building")
    p = seen[-1]
    assert len(seen) == 2 and p.state == "building"
    assert (p.documents_done, p.documents_reused, p.documents_failed, p.pages) == (1, 1, 1, 2)
    assert p.bytes_done == 400 and p.current == []
    assert p.eta_s is None  # only the build is left, and how long it takes is not measured


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


# -- the pace, the time left and the bar, on a clock the test moves --------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def clocked(gate: PauseGate | None = None) -> tuple[ProgressReporter, FakeClock, list[float]]:
    """A reporter on a fake clock, and the ETAs it handed out (None left out)."""
    clock = FakeClock()
    etas: list[float] = []

    def seen(p: ImportProgress) -> None:
        if p.eta_s is not None:
            etas.append(p.eta_s)

    report = ProgressReporter("default", gate or PauseGate(), seen, lambda _: None, clock=clock)
    return report, clock, etas


BOOK = Target(Path("/book.pdf"), "book.pdf", 2_000_000)
NOTES = Target(Path("/notes.md"), "notes.md", 20_000)


def record(source: str, blocks: int, pages: int | None = None) -> DocumentRecord:
    return DocumentRecord(
        doc_id="d-" + source,
        content_hash="h",
        source=source,
        source_label=source,
        title=source,
        pages=pages,
        blocks=tuple(
            BlockRecord(block_index=i, block_id=f"b{i}", section=0, text="x", tokens=40)
            for i in range(blocks)
        ),
    )


def test_the_time_left_follows_the_measured_pace_and_the_bar_ends_at_exactly_one() -> None:
    report, clock, etas = clocked()
    p = report.progress
    report.start([BOOK, NOTES], [])
    report.pages_read("book.pdf", 0, 200)
    assert p.eta_s is None  # nothing measured yet: no made-up figure
    for read in (50, 100, 150, 200):
        clock.now += 0.5
        report.pages_read("book.pdf", read, 200)
    assert p.pages == p.pages_total == 200 and p.pages_per_s is not None
    report.parsed("book.pdf", record("book.pdf", 1000, 200))
    # the notes are not read yet: their blocks are guessed from the book's blocks per byte
    for done in range(50, 301, 50):  # 50 blocks a second
        clock.now += 1.0
        report.embedding("book.pdf", done, done * 40)
    steady = p.eta_s
    assert steady is not None and 12 < steady < 16  # 700 book blocks (+~10 notes) at 50/s
    for done in range(310, 361, 10):  # the pace drops to 10 blocks a second
        clock.now += 1.0
        report.embedding("book.pdf", done, done * 40)
    clock.now += PACE_WINDOW_S  # …and stays there: the window forgets the fast start
    report.embedding("book.pdf", 560, 560 * 40)
    slowed = p.eta_s
    assert slowed is not None and slowed > 2 * steady
    assert len(set(etas)) > 5  # recomputed as it went, not a first estimate kept
    assert 0 < p.fraction < 1 and p.embedding_tokens == 560 * 40
    report.finished(BOOK, record("book.pdf", 1000, 200), reused=False)
    report.parsed("notes.md", record("notes.md", 8))
    report.embedding("notes.md", 8, 320)
    report.finished(NOTES, record("notes.md", 8), reused=False)
    report.state("building")
    assert 0.9 < p.fraction <= 0.99  # all but the build: nearly full, never full
    report.state("done")
    assert (p.fraction, p.eta_s) == (1.0, 0.0)
    assert (p.blocks_embedded, p.blocks_to_embed, p.blocks) == (1008, 1008, 1008)


def test_a_stall_makes_the_time_left_grow_between_events() -> None:
    report, clock, _ = clocked()
    p = report.progress
    report.start([NOTES], [])
    report.parsed("notes.md", record("notes.md", 100))
    for done in (20, 40):
        clock.now += 1.0
        report.embedding("notes.md", done, 0)
    before = p.eta_s
    assert before is not None
    clock.now += 10.0  # a batch that takes long: no event, the ticker re-emits
    report.emit()
    assert p.eta_s is not None and p.eta_s > before


def test_between_batches_at_their_usual_interval_the_time_left_counts_down() -> None:
    report, clock, _ = clocked()
    p = report.progress
    report.start([NOTES], [])
    report.parsed("notes.md", record("notes.md", 100))
    for done in (10, 20, 30):  # a batch of 10 every 2 s
        clock.now += 2.0
        report.embedding("notes.md", done, 0)
    at_batch = p.eta_s
    assert at_batch is not None and 13 < at_batch < 15  # 70 blocks at 5 a second
    clock.now += 1.0
    report.emit()
    assert p.eta_s is not None and at_batch - 1.5 < p.eta_s < at_batch  # one second less


def test_the_first_pages_read_are_shown_at_once_despite_the_throttle() -> None:
    report, seen, _ = reporter()
    report.start([Target(Path("/b.pdf"), "b.pdf", 1000)], [])
    report.pages_read("b.pdf", 0, 300)
    report.pages_read("b.pdf", 40, 300)
    assert seen[-1].pages == 40 and seen[-1].pages_total == 300


def test_while_paused_no_time_left_is_claimed_and_the_pace_restarts_on_resume() -> None:
    gate = PauseGate()
    report, clock, _ = clocked(gate)
    p = report.progress
    report.start([NOTES], [])
    report.parsed("notes.md", record("notes.md", 100))
    clock.now += 2.0
    report.embedding("notes.md", 40, 0)
    assert p.eta_s is not None
    fraction = p.fraction
    gate.pause()
    clock.now += 1.0
    report.emit()
    assert (p.state, p.eta_s, p.blocks_per_s) == ("paused", None, None)
    clock.now += 600.0  # a long pause is not slow work
    gate.resume()
    report.emit(force=True)
    assert p.state == "running" and p.eta_s is None  # measured afresh from the resume on
    clock.now += 2.0
    report.embedding("notes.md", 80, 0)
    assert p.eta_s is not None and p.eta_s < 5 and p.fraction >= fraction


def test_each_failure_is_shown_with_its_reason_as_it_happens_and_leaves_the_work_left() -> None:
    report, clock, _ = clocked()
    p = report.progress
    early = FailedDocument(source="x.png", stage="read", reason="unsupported_type")
    report.start([BOOK, NOTES], [early])
    report.parsed("book.pdf", record("book.pdf", 50, 10))
    report.embedding("book.pdf", 10, 0)
    locked = FailedDocument(
        source="book.pdf", stage="embed", reason="unauthorized", message="401 from the vendor"
    )
    clock.now += 1.0
    report.failed(BOOK, locked)
    assert [f.reason for f in p.failures] == ["unsupported_type", "unauthorized"]
    assert p.documents["book.pdf"] == "failed" and p.documents_failed == 2
    assert (p.blocks, p.blocks_to_embed, p.blocks_embedded) == (0, 0, 0)


def test_the_closing_counts_count_the_whole_library() -> None:
    result = ImportResult(
        collection="default",
        snapshot_id="s1",
        status="ready_partial",
        activated=True,
        failed_documents=[],
        skipped=[SkippedFile(source="a.png", reason="unsupported_type")],
        stats=BuildStats(documents_succeeded=3, documents_reused=2, documents_failed=2),
        library_documents=6,
    )
    counts = result.counts()
    assert (counts.library, counts.added, counts.unchanged, counts.failed, counts.skipped) == (
        6,
        1,
        2,
        2,
        1,
    )


def test_blocks_from_the_cache_count_as_done_but_not_towards_the_embedding_pace() -> None:
    report, clock, _ = clocked()
    p = report.progress
    report.start([NOTES], [])
    report.parsed("notes.md", record("notes.md", 1000))
    report.embedding("notes.md", 600, 0, cached=600)  # a resumed run: 600 vectors cached
    for done in (610, 620, 630):  # then 10 blocks a second are embedded
        clock.now += 1.0
        report.embedding("notes.md", done, 0, cached=600)
    assert (p.blocks_embedded, p.blocks_cached) == (630, 600)
    assert p.blocks_per_s == 10.0
    assert p.eta_s is not None and 35 < p.eta_s < 39  # 370 left at 10/s, not at 210/s


def test_scanned_pages_show_their_recognition_pace_and_time_left_before_any_block() -> None:
    report, clock, _ = clocked()
    p = report.progress
    scan = Target(Path("/scan.pdf"), "scan.pdf", 50_000)
    report.start([scan], [])
    report.ocr_pages("scan.pdf", 0, 10)
    for done in (1, 2, 3):  # a page every 4 s
        clock.now += 4.0
        report.ocr_pages("scan.pdf", done, 10)
    assert (p.ocr_pages, p.ocr_pages_total) == (3, 10)
    assert p.ocr_pages_per_s == 0.25
    assert p.eta_s is not None and 26 < p.eta_s < 30  # 7 pages left at 4 s a page
    report.failed(scan, FailedDocument(source="scan.pdf", stage="parse", reason="cancelled"))
    assert p.ocr_pages_total == 3  # the pages it will not recognise leave the work left
