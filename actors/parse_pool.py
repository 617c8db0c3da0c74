"""Worker processes for one import's per-document work: parse, chunk and prepare for the build.

A document's CPU work holds the GIL (PyMuPDF and most of our own Python do), so it runs in
anyio's worker processes, not in threads of the app's process: a worker returns the document
chunked into blocks (DeepSeek tokenizer, loaded once per worker) and prepared for the snapshot
build, and a long PDF is parsed as page ranges in several workers, then assembled, chunked and
prepared in one. The longest PDF's page ranges go first: that document is finished early while
the workers parse the rest, instead of being the last (and longest) thing left to do.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import os
import secrets
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import anyio
import anyio.to_process
import anyio.to_thread
import msgspec
import numpy as np
import numpy.typing as npt

from engine.chunker import chunk_document
from engine.document_cache import DocumentCache
from engine.embedding.windows import part_texts
from engine.errors import ChunkError
from engine.gc_pause import gc_paused
from engine.parsing import (
    ParsedDocument,
    ParseLimits,
    PdfPart,
    PdfPlan,
    assemble_pdf,
    may_read_in_ranges,
    parse_file,
    parse_pdf_pages,
    plan_parallel_parse,
    release_kept_pdf,
)
from engine.parsing.ocr_signals import PageCounts, pause_file
from engine.tokens import TokenCounter, preload
from index import blockstore
from index.prepared import (
    PreparedDocument,
    PreparedParts,
    prepare_document,
    prepared_from,
    prepared_parts,
)
from index.records import DocumentRecord, VectorLayout

T = TypeVar("T")
OnPages = Callable[[int, int], None]  # (pages read so far, the document's page count)
# (scanned pages recognised so far, of how many, how many of them came from the OCR cache)
OnOcr = Callable[[int, int, int], None]
OCR_POLL_S = 0.25  # how often the workers' page lines are read while a PDF is parsed

# Priorities, lowest first: (stage, -pages, rank, first page). Plans are quick and tell how
# long a PDF is, so they go first; then finishing a PDF whose pages are all read (it cannot be
# split); then the page ranges of the longest PDF, and the rest in the order their documents
# started.
_PLAN, _FINISH, _WORK = 0, 1, 2

# A PDF of at most this many bytes is parsed whole, without first asking a worker whether to
# read it as page ranges: only a PDF of two ranges' worth of pages (96) is split, which so
# small a file rarely holds, and if it does they are sparse and quick to read in one pass.
# For the small PDFs of a real library the planning round trip was a third of each one's
# time in the workers.
SMALL_PDF_BYTES = 128 << 10


def _read_whole(path: Path, size: int | None) -> bool:
    """Whether `path` (of `size` bytes, when the caller knows it) is parsed in one call (see
    SMALL_PDF_BYTES)."""
    if not may_read_in_ranges(path):
        return True
    if size is None:
        try:
            size = path.stat().st_size
        except OSError:  # the worker reports what is wrong with it
            return False
    return size <= SMALL_PDF_BYTES


def worker_processes() -> int:
    """How many parse processes run at once (anyio's process limit: one per core)."""
    return int(anyio.to_process.current_default_process_limiter().total_tokens)


@dataclass(order=True)
class _Ticket:
    priority: tuple[int, ...]
    seq: int
    event: anyio.Event = field(compare=False)
    granted: bool = field(default=False, compare=False)
    done: bool = field(default=False, compare=False)  # its slot given back, or withdrawn


class PrioritySlots:
    """At most `capacity` holders at once; waiters are admitted lowest priority first, in
    arrival order among equals.

    Asking for a slot (`ask`) is synchronous, so a caller can queue several requests at once
    before any of them is served; `hold` then waits for the ticket's turn and gives the slot
    back at the end. A ticket whose holder is cancelled passes its slot on.
    """

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self._free = capacity
        self._waiting: list[_Ticket] = []
        self._seq = itertools.count()

    def ask(self, priority: tuple[int, ...]) -> _Ticket:
        ticket = _Ticket(priority, next(self._seq), anyio.Event())
        if self._free and not self._waiting:
            self._free -= 1
            self._grant(ticket)
        else:
            heapq.heappush(self._waiting, ticket)
        return ticket

    @contextlib.asynccontextmanager
    async def hold(self, ticket: _Ticket) -> AsyncIterator[None]:
        try:
            await ticket.event.wait()
        except BaseException:
            self.withdraw(ticket)
            raise
        try:
            yield
        finally:
            ticket.done = True
            self._release()

    def withdraw(self, ticket: _Ticket) -> None:
        """Give up a ticket that will not be held: its slot, or its place in the queue."""
        if ticket.done:
            return
        ticket.done = True
        if ticket.granted:
            self._release()
        else:
            self._waiting.remove(ticket)
            heapq.heapify(self._waiting)

    def _grant(self, ticket: _Ticket) -> None:
        ticket.granted = True
        ticket.event.set()

    def _release(self) -> None:
        if self._waiting:
            self._grant(heapq.heappop(self._waiting))
        else:
            self._free += 1


@dataclass(frozen=True)
class Chunking:
    """How to chunk a document once it is parsed (see engine.chunker.chunk_document)."""

    content_hash: str
    source: str
    parser_version: str
    target_tokens: int
    # The build's vector layout: with several vectors per block, the worker also cuts the
    # blocks into the parts to embed (engine.embedding.windows.part_texts), off the app's
    # process, which otherwise does it for every document while the workers wait.
    layout: VectorLayout | None = None
    # A PDF read as page ranges comes back without its preparation for the build, which the
    # caller then asks of the pool (`ParsePool.prepare`): the app looks its vectors up while
    # a worker prepares it, instead of after.
    prepare_apart: bool = False
    # The document cache (engine/document_cache.py) the worker stores the chunked document
    # in, under `cache_key`: written there, it costs the app's process no trip to a thread
    # and no encoding. "" stores nothing.
    cache: str = ""
    cache_key: str = ""


@dataclass(frozen=True)
class _Range:
    """A page range as a worker hands it back: the PdfPart as msgpack (the app passes it on
    to the worker that assembles the document without decoding it; msgspec encodes and
    decodes it several times faster than pickle), and how many pages it holds."""

    encoded: bytes
    pages: int


@dataclass(frozen=True)
class Finished:
    """A document as a worker returns it: its blocks, the build's per-document work (None
    when it is to be asked apart, see Chunking.prepare_apart), and the texts to embed with
    how many each block has (`part_texts` under `layout`, for a layout of several vectors per
    block; else None)."""

    record: DocumentRecord
    prepared: PreparedDocument | None
    parts: tuple[list[str], npt.NDArray[np.int64]] | None = None
    layout: VectorLayout | None = None

    def __getstate__(self) -> dict[str, object]:
        # between processes the record travels as msgpack (several times faster than pickle)
        return {**self.__dict__, "record": msgspec.msgpack.encode(self.record)}

    def __setstate__(self, state: dict[str, object]) -> None:
        encoded = state.pop("record")
        assert isinstance(encoded, bytes)
        record = msgspec.msgpack.decode(encoded, type=DocumentRecord)
        for name, value in {**state, "record": record}.items():
            object.__setattr__(self, name, value)


# -- run in the worker processes ----------------------------------------------------------------


def _finish(
    parsed: ParsedDocument, chunking: Chunking, parse_seconds: float, prepare: bool = True
) -> Finished:
    """Chunk and (with `prepare`) prepare (`parse_seconds`: how long reading it took, for its
    import report); raises only ChunkError (a bug in either fails this document alone)."""
    try:
        record = chunk_document(
            parsed,
            content_hash=chunking.content_hash,
            source=chunking.source,
            source_label=chunking.source,
            parser_version=chunking.parser_version,
            target_tokens=chunking.target_tokens,
            counter=TokenCounter(),
            parse_seconds=parse_seconds,
        )
        if chunking.cache:
            DocumentCache(Path(chunking.cache)).put(chunking.cache_key, record)
        layout = chunking.layout
        parts = None
        if layout is not None and layout.granularity != "block":
            parts = part_texts(record, layout)
        if prepare:
            prepared = prepare_document(record, None if parts is None else parts[1])
        else:  # a record no snapshot may hold still fails here, where it was chunked
            prepared = None
            blockstore.ordered_blocks(record)
        return Finished(record=record, prepared=prepared, parts=parts, layout=layout)
    except ChunkError:
        raise
    except Exception as exc:
        raise ChunkError("chunk_error", f"splitting into blocks failed: {exc}") from exc


def _plan(path: Path, limits: ParseLimits) -> PdfPlan | None:
    release_kept_pdf()
    preload(keep_merges=False)  # this worker will chunk: its tokenizer loads while it reads
    return plan_parallel_parse(path, limits)


def _pages(path: Path, start: int, end: int, limits: ParseLimits, session: str) -> _Range:
    """Pages [start, end) of a PDF; the ranges of one `session` this worker reads share its
    open document (engine.parsing.pdf.parse_pdf_pages), which the worker's next other work
    closes."""
    part = parse_pdf_pages(path, start, end, limits, session=session)
    return _Range(msgspec.msgpack.encode(part), len(part.pages))


def _parse_whole(path: Path, limits: ParseLimits, chunking: Chunking) -> Finished:
    release_kept_pdf()
    with gc_paused():
        started = time.perf_counter()
        parsed = parse_file(path, limits)
        return _finish(parsed, chunking, time.perf_counter() - started)


def _assemble(
    path: Path, limits: ParseLimits, plan: PdfPlan, ranges: list[_Range], chunking: Chunking
) -> Finished:
    release_kept_pdf()
    with gc_paused():
        started = time.perf_counter()
        parts = [msgspec.msgpack.decode(r.encoded, type=PdfPart) for r in ranges]
        parsed = assemble_pdf(path, limits, plan, parts)
        read = sum(part.seconds for part in parts)  # in the workers that read the ranges
        seconds = read + time.perf_counter() - started
        return _finish(parsed, chunking, seconds, prepare=not chunking.prepare_apart)


def _prepare(encoded: bytes, part_counts: npt.NDArray[np.int64] | None) -> PreparedParts:
    """The costly part of a document's preparation for the build (its record as msgpack,
    which both sides encode and decode far faster than pickle)."""
    release_kept_pdf()
    with gc_paused():
        record = msgspec.msgpack.decode(encoded, type=DocumentRecord)
        return prepared_parts(record, part_counts)


def _ping() -> bool:
    return True


def _warm(hold_s: float) -> None:
    """Load what the work needs (importing this module loaded the parsers), then keep the
    process a moment so that warm-up calls made together land in different processes."""
    release_kept_pdf()
    preload(keep_merges=False)  # chunking counts with the tokenizer itself, not the merges
    TokenCounter().count("warm")
    time.sleep(hold_s)


# -- in the app's process -----------------------------------------------------------------------


async def _in_process(func: Callable[..., T], *args: object) -> T:
    """`func(*args)` in a worker process, tried a second time in another worker if the first
    one breaks. An idle worker can have died since its last call (killed from outside, out of
    memory): that must not make the next document look damaged. A file that breaks the reader
    breaks it twice, and then anyio.BrokenWorkerProcess is raised."""
    try:
        return await anyio.to_process.run_sync(func, *args, cancellable=True)
    except anyio.BrokenWorkerProcess:  # anyio has dropped that worker from its pool
        return await anyio.to_process.run_sync(func, *args, cancellable=True)


class ParsePool:
    """The document work of one import run, admitted to the worker processes in priority order
    (rank: the order in which the importer started its documents, 0 first)."""

    def __init__(self, processes: int | None = None) -> None:
        self._slots = PrioritySlots(processes or worker_processes())
        # one event per document being planned now, set once its plan is known
        self._planning: list[anyio.Event] = []

    async def _in_worker(self, ticket: _Ticket, func: Callable[..., T], *args: object) -> T:
        async with self._slots.hold(ticket):
            return await _in_process(func, *args)

    async def document(
        self,
        path: Path,
        limits: ParseLimits,
        rank: int,
        chunking: Chunking,
        on_pages: OnPages | None = None,
        on_ocr: OnOcr | None = None,
        paused: Callable[[], bool] | None = None,
        size: int | None = None,
    ) -> Finished:
        """As `_document`; for a PDF with OCR on, its scanned pages are also counted to
        `on_ocr` as each one is recognised, and while `paused()` the workers hold between
        pages (engine/parsing/ocr_signals.py carries both). `size`: the file's bytes when the
        caller has them (else it is looked up)."""
        if on_ocr is None or not limits.ocr or path.suffix.lower() != ".pdf":
            return await self._document(path, limits, rank, chunking, on_pages, size)
        fd, name = tempfile.mkstemp(prefix="citewise-ocr-", suffix=".pages")
        os.close(fd)
        signals = Path(name)
        counts = PageCounts(signals)
        limits = msgspec.structs.replace(limits, ocr_progress=name)

        def report() -> None:
            if counts.read():
                on_ocr(counts.done, counts.wanted, counts.cached)

        async def watch() -> None:
            pause = pause_file(name)
            while True:
                await anyio.sleep(OCR_POLL_S)
                held = paused is not None and paused()
                with contextlib.suppress(OSError):
                    if held and not pause.exists():
                        pause.touch()
                    elif not held and pause.exists():
                        pause.unlink()
                report()

        failure: Exception | None = None  # raised outside the task group, ungrouped
        finished: Finished | None = None
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(watch)
                try:
                    finished = await self._document(path, limits, rank, chunking, on_pages, size)
                except Exception as exc:
                    failure = exc
                tg.cancel_scope.cancel()
            if failure is not None:
                raise failure
            assert finished is not None
            report()
            return finished
        finally:
            for leftover in (signals, pause_file(name)):
                with contextlib.suppress(OSError):
                    leftover.unlink()

    async def _document(
        self,
        path: Path,
        limits: ParseLimits,
        rank: int,
        chunking: Chunking,
        on_pages: OnPages | None = None,
        size: int | None = None,
    ) -> Finished:
        """The document at `path` parsed, chunked and prepared; a long PDF read as page ranges
        in parallel workers, then assembled into the very document one pass gives
        (engine.parsing.pdf). Raises ParseError, ChunkError or anyio.BrokenWorkerProcess.

        A long PDF's pages are counted to `on_pages(read, total)` as they are read: once when
        its page count is known, then as each range comes back from its worker, long before
        the document is assembled and chunked. (A worker's result is the report: the pages
        cost nothing extra to count, and no other channel to the workers is needed.)"""
        # A file that cannot be read as page ranges goes to a worker in one call, not two: for
        # a folder of small notes the planning round trip was a large part of each one.
        if _read_whole(path, size):
            whole = self._slots.ask((_WORK, 0, rank, 0))
            return await self._in_worker(whole, _parse_whole, path, limits, chunking)
        # The plan's slot is given back only once this document's work is queued, so it goes
        # to the most urgent work then waiting, which may be this document's own.
        async with self._slots.hold(self._slots.ask((_PLAN, 0, rank, 0))):
            planned = anyio.Event()
            self._planning.append(planned)
            try:
                plan = await _in_process(_plan, path, limits)
            finally:
                self._planning.remove(planned)
                planned.set()
            # A document planned meanwhile may be the longer one: once it has queued its
            # ranges, the longest document's go first, so its finishing (the longest work of
            # all) starts early. (Only plans already running are waited for, and each is
            # marked known before its own wait: none waits for a plan that waits back.)
            for other in list(self._planning):
                await other.wait()
            if plan is None:
                whole = self._slots.ask((_WORK, 0, rank, 0))
            else:
                longest_first = -plan.page_count
                tickets = [
                    self._slots.ask((_WORK, longest_first, rank, start)) for start, _ in plan.ranges
                ]
        if plan is None:
            return await self._in_worker(whole, _parse_whole, path, limits, chunking)
        if on_pages is not None:
            on_pages(0, plan.page_count)
        parts: list[_Range] = []
        failures: list[Exception] = []  # the first failing range decides, as one pass would
        session = secrets.token_hex(8)  # a worker keeps the file open for its next range of it
        finish: _Ticket | None = None

        async def extract(ticket: _Ticket, start: int, end: int) -> None:
            nonlocal finish
            try:
                async with self._slots.hold(ticket):
                    parts.append(await _in_process(_pages, path, start, end, limits, session))
                    if on_pages is not None:
                        on_pages(sum(p.pages for p in parts), plan.page_count)
                    if len(parts) == len(plan.ranges):
                        # asked before this slot is given back: finishing is served next
                        finish = self._slots.ask((_FINISH, -plan.page_count, rank, 0))
            except Exception as exc:  # ParseError, BrokenWorkerProcess: raised below, ungrouped
                failures.append(exc)
                tg.cancel_scope.cancel()

        try:
            async with anyio.create_task_group() as tg:
                for ticket, (start, end) in zip(tickets, plan.ranges, strict=True):
                    tg.start_soon(extract, ticket, start, end)
            if failures:
                raise failures[0]
            assert finish is not None
            return await self._in_worker(finish, _assemble, path, limits, plan, parts, chunking)
        finally:  # give back any ticket not held to the end (cancelled before its turn)
            for ticket in [*tickets, *([finish] if finish is not None else [])]:
                self._slots.withdraw(ticket)

    async def reader_starts(self) -> bool:
        """Whether a worker process runs at all now: after a file broke its workers twice,
        this tells a file that crashes the reader from a reader that cannot start (a broken
        install, a program stopping new processes), which would otherwise make every file
        look damaged."""
        try:
            return await _in_process(_ping)
        except anyio.BrokenWorkerProcess:
            return False

    async def prepare(
        self,
        record: DocumentRecord,
        rank: int,
        part_counts: npt.NDArray[np.int64] | None = None,
    ) -> PreparedDocument:
        """`prepare_document(record, part_counts)` for a document that came back without it
        (see Chunking.prepare_apart), its costly part done in a worker process as urgently as
        finishing a document. Raises ValueError as prepare_document, or
        anyio.BrokenWorkerProcess."""
        ticket = self._slots.ask((_FINISH, -(record.pages or 0), rank, 1))
        encoded = msgspec.msgpack.encode(record)
        parts = await self._in_worker(ticket, _prepare, encoded, part_counts)
        return prepared_from(record, parts)


async def warm_parse_workers(processes: int | None = None, hold_s: float = 0.2) -> None:
    """Start the worker processes (parsers and tokenizer loaded) before the first import
    needs them; anyio keeps them for later calls. Best effort: a worker that cannot start now
    is started again by the import that needs it."""
    with contextlib.suppress(Exception):
        async with anyio.create_task_group() as tg:
            for _ in range(processes or worker_processes()):
                tg.start_soon(anyio.to_process.run_sync, _warm, hold_s)
