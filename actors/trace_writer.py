"""The trace writer actor: harness events and import progress in, traces written in the background.

`submit()` never waits: when its bounded channel is full the item is dropped, counted, and the
trace marked partial. Recording and SQLite writes run in batches in one worker thread; a failing
or stalled store never raises into, or delays, a request — `health()` reports what was lost."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.to_thread
import msgspec
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from engine.errors import OtlpExportError, TraceStoreError
from engine.harness import EVENT_DECODER, Event
from engine.trace.model import DropsAdd, Span, TraceMode, WriteOp, trace_id_for
from engine.trace.otlp import OtlpExporter
from engine.trace.recorder import IngestEnded, IngestRecorder, IngestSample, RequestRecorder
from engine.trace.store import TraceStore

# Items waiting for the writer. A request makes ~10 events per turn, so this holds dozens of
# requests; it only fills when the store stalls, and then submit() drops instead of waiting.
TRACE_BUFFER = 1024
BATCH_MAX = 256  # items recorded and written per transaction
STORE_RETRY_S = 5.0  # after a failed open, wait this long before trying again
PRUNE_INTERVAL_S = 600.0
MAX_OPEN_TRACES = 256  # traces whose final event never came are forgotten beyond this
SECRETS_REFRESH_S = 30.0
DRAIN_TIMEOUT_S = 5.0  # on close, how long pending items may take to reach the store
REDACTED = b"[REDACTED]"
MIN_SECRET_CHARS = 8  # shorter values are no API key; replacing them would mangle traces

Item = Event | IngestSample | IngestEnded
_Queued = tuple[float, str, Item]  # (wall-clock seconds at submit, trace id, item)


class WriterHealth(msgspec.Struct, kw_only=True):
    """What the UI shows when tracing is not keeping up or not working."""

    available: bool  # the store is open and the last write succeeded
    accepted: int  # items taken by submit()
    dropped: int  # items refused by submit() or lost with a failed write
    failed_batches: int
    last_error: str | None
    traces_partial: int  # traces marked partial so far
    exported: int = 0  # traces sent to OTLP
    export_failures: int = 0
    redactions: int = 0  # items in which a secret was found and replaced


Recorder = RequestRecorder | IngestRecorder


class TraceWriter:
    """Run `run()` in a task group (or use `open_trace_writer`); call `submit()` from the
    event loop's thread (any task; it is not thread-safe)."""

    def __init__(
        self,
        open_store: Callable[[], TraceStore],
        *,
        mode: TraceMode = "metadata",
        buffer: int = TRACE_BUFFER,
        retention_days: int = 30,
        max_bytes: int = 500 * 1024 * 1024,
        exporter: OtlpExporter | None = None,
        secrets: Callable[[], Iterable[str | None]] | None = None,
    ) -> None:
        self.mode: TraceMode = mode
        self.buffer = buffer
        self._open_store = open_store
        self._retention_days = retention_days
        self._max_bytes = max_bytes
        self._exporter = exporter
        self._secrets_source = secrets
        self._send: MemoryObjectSendStream[_Queued]
        self._receive: MemoryObjectReceiveStream[_Queued]
        self._send, self._receive = anyio.create_memory_object_stream[_Queued](buffer)
        self._lock = threading.Lock()  # guards _pending_drops (event loop and worker thread)
        self._pending_drops: dict[str, int] = {}
        self._limiter = anyio.CapacityLimiter(1)
        self._stopped = anyio.Event()
        # owned by the worker thread
        self._store: TraceStore | None = None
        self._store_failed_at = 0.0
        self._recorders: OrderedDict[str, Recorder] = OrderedDict()
        self._secrets: list[bytes] = []
        self._secrets_at = -SECRETS_REFRESH_S
        self._pruned_at = -PRUNE_INTERVAL_S
        self._partial: set[str] = set()
        # counters (ints: read from any thread)
        self._accepted = 0
        self._processed = 0
        self._dropped = 0
        self._failed_batches = 0
        self._last_error: str | None = None
        self._available = True
        self._exported = 0
        self._export_failures = 0
        self._redactions = 0

    # -- the request side ------------------------------------------------------------------

    def submit(self, event: Event) -> bool:
        """Queue one harness event; False when it was dropped (the trace becomes partial)."""
        return self._put(trace_id_for(event.request_id), event)

    def submit_ingest(self, item: IngestSample | IngestEnded) -> bool:
        return self._put(trace_id_for(item.job_id), item)

    def _put(self, trace_id: str, item: Item) -> bool:
        try:
            self._send.send_nowait((time.time(), trace_id, item))
        except (anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._drop(trace_id, 1)
            return False
        self._accepted += 1
        return True

    def _drop(self, trace_id: str, count: int) -> None:
        with self._lock:
            self._dropped += count
            self._pending_drops[trace_id] = self._pending_drops.get(trace_id, 0) + count

    def health(self) -> WriterHealth:
        return WriterHealth(
            available=self._available,
            accepted=self._accepted,
            dropped=self._dropped,
            failed_batches=self._failed_batches,
            last_error=self._last_error,
            traces_partial=len(self._partial),
            exported=self._exported,
            export_failures=self._export_failures,
            redactions=self._redactions,
        )

    async def flush(self, timeout_s: float = DRAIN_TIMEOUT_S) -> bool:
        """Wait until everything accepted so far has been handled (written or counted lost)."""
        target = self._accepted
        with anyio.move_on_after(timeout_s):
            while self._processed < target:
                await anyio.sleep(0.005)
            return True
        return False

    async def stopped(self) -> None:
        """Return once run() has written everything and closed the store."""
        await self._stopped.wait()

    def close(self) -> None:
        """No more items: run() writes what is queued and returns."""
        self._send.close()

    # -- the writer side -------------------------------------------------------------------

    async def run(self) -> None:
        """Consume until close(); each batch is recorded and written in the worker thread."""
        try:
            async with self._receive:
                while True:
                    try:
                        first = await self._receive.receive()
                    except anyio.EndOfStream:
                        break
                    batch = [first]
                    while len(batch) < BATCH_MAX:
                        try:
                            batch.append(self._receive.receive_nowait())
                        except (anyio.WouldBlock, anyio.EndOfStream):
                            break
                    await self._in_thread(self._write, batch)
                self._store_failed_at = 0.0  # the last write tries the store once more
                await self._in_thread(self._write, [])  # drops counted after the last batch
        finally:
            with anyio.move_on_after(DRAIN_TIMEOUT_S, shield=True):
                await self._in_thread(self._close_store)
            self._stopped.set()

    async def _in_thread(self, func: Callable[..., None], *args: Any) -> None:
        # abandon_on_cancel: a store stalled in SQLite must not hold up the app's shutdown.
        await anyio.to_thread.run_sync(func, *args, limiter=self._limiter, abandon_on_cancel=True)

    def _take_drops(self) -> dict[str, int]:
        with self._lock:
            drops, self._pending_drops = self._pending_drops, {}
        return drops

    def _write(self, batch: list[_Queued]) -> None:
        """Worker thread: record, then write; never raises."""
        try:
            self._write_batch(batch)
        except Exception as exc:  # a recorder bug must not kill the writer
            self._last_error = f"{type(exc).__name__}: {exc}"
            self._failed_batches += 1
            for _, trace_id, _ in batch:
                self._drop(trace_id, 1)
        finally:
            self._processed += len(batch)

    def _write_batch(self, batch: list[_Queued]) -> None:
        # Nothing to redact, no key store to ask (asking loads every keyring backend).
        secrets = self._current_secrets() if batch else []
        ops: list[WriteOp] = []
        finished: list[Recorder] = []
        for received, trace_id, item in batch:
            if secrets:
                item = self._redact(item, secrets)
            recorder = self._recorder(trace_id, item)
            if isinstance(item, IngestSample | IngestEnded):
                if not isinstance(recorder, IngestRecorder):
                    continue  # an import reusing a request's id: nothing sane to record
                ops.extend(recorder.feed(item, received))
            elif isinstance(recorder, RequestRecorder):
                ops.extend(recorder.feed(item, received))
            else:
                continue
            if recorder.finished:
                finished.append(recorder)
                self._recorders.pop(trace_id, None)
        drops = self._take_drops()
        ops.extend(DropsAdd(trace_id=t, count=n) for t, n in drops.items())
        if not ops:
            return
        store = self._ensure_store()
        if store is None:
            self._lose(batch, drops)
            return
        try:
            store.apply(ops)
        except TraceStoreError as exc:
            self._available = False
            self._last_error = str(exc)
            self._lose(batch, drops)
            return
        self._available = True
        self._partial.update(drops)
        for recorder in finished:
            self._export(recorder.spans())
        self._maybe_prune(store)

    def _lose(self, batch: list[_Queued], drops: dict[str, int]) -> None:
        """A batch that never reached the store: its traces are partial once it works again."""
        self._failed_batches += 1
        lost: dict[str, int] = dict(drops)
        for _, trace_id, _ in batch:
            lost[trace_id] = lost.get(trace_id, 0) + 1
        with self._lock:
            for trace_id, n in lost.items():
                self._pending_drops[trace_id] = self._pending_drops.get(trace_id, 0) + n
            self._dropped += len(batch)

    def _recorder(self, trace_id: str, item: Item) -> Recorder:
        recorder = self._recorders.get(trace_id)
        if recorder is None:
            if isinstance(item, IngestSample | IngestEnded):
                recorder = IngestRecorder(trace_id, self.mode)
            else:
                recorder = RequestRecorder(trace_id, self.mode)
            self._recorders[trace_id] = recorder
            while len(self._recorders) > MAX_OPEN_TRACES:
                self._recorders.popitem(last=False)
        return recorder

    def _ensure_store(self) -> TraceStore | None:
        if self._store is not None:
            return self._store
        now = time.monotonic()
        if self._store_failed_at and now - self._store_failed_at < STORE_RETRY_S:
            return None
        try:
            store = self._open_store()
        except (TraceStoreError, OSError) as exc:
            self._store_failed_at = now
            self._available = False
            self._last_error = str(exc)
            return None
        try:
            store.claim_writer()  # traces of a killed process are marked partial
        except (TraceStoreError, OSError) as exc:
            self._last_error = str(exc)
        self._store = store
        return store

    def _close_store(self) -> None:
        if self._exporter is not None:
            self._exporter.close()
        if self._store is not None:
            self._store.close()
            self._store = None

    def _maybe_prune(self, store: TraceStore) -> None:
        now = time.monotonic()
        if now - self._pruned_at < PRUNE_INTERVAL_S:
            return
        self._pruned_at = now
        try:
            store.prune(retention_days=self._retention_days, max_bytes=self._max_bytes)
        except TraceStoreError as exc:
            self._last_error = str(exc)

    def _export(self, spans: list[Span]) -> None:
        if self._exporter is None:
            return
        try:
            self._exporter.export(spans)
        except OtlpExportError as exc:
            self._export_failures += 1
            self._last_error = str(exc)
        else:
            self._exported += 1

    # -- secrets ---------------------------------------------------------------------------

    def _current_secrets(self) -> list[bytes]:
        if self._secrets_source is None:
            return []
        now = time.monotonic()
        if now - self._secrets_at >= SECRETS_REFRESH_S:
            self._secrets_at = now
            try:
                found = [
                    s.encode() for s in self._secrets_source() if s and len(s) >= MIN_SECRET_CHARS
                ]
            except Exception as exc:  # a keyring backend failing must not stop tracing
                self._last_error = f"could not read the keys to keep them out of traces: {exc}"
                found = self._secrets
            self._secrets = found
        return self._secrets

    def _redact(self, item: Item, secrets: list[bytes]) -> Item:
        """The item with every secret replaced, decoded back into its own type."""
        raw = msgspec.json.encode(item)
        if not any(s in raw for s in secrets):
            return item
        for s in secrets:
            raw = raw.replace(s, REDACTED)
        self._redactions += 1
        if isinstance(item, IngestSample | IngestEnded):
            redacted: Item = msgspec.json.decode(raw, type=type(item))
            return redacted
        return EVENT_DECODER.decode(raw)


@asynccontextmanager
async def open_trace_writer(
    open_store: Callable[[], TraceStore], **options: Any
) -> AsyncIterator[TraceWriter]:
    """A running TraceWriter; leaving the block writes what is queued (for at most
    DRAIN_TIMEOUT_S) and closes the store."""
    writer = TraceWriter(open_store, **options)
    async with anyio.create_task_group() as tg:
        tg.start_soon(writer.run)
        try:
            yield writer
        finally:
            writer.close()
            with anyio.move_on_after(DRAIN_TIMEOUT_S, shield=True):
                await writer.stopped()
            tg.cancel_scope.cancel()
