"""The handles App's commands return: an import job and a question. Each runs as a task in the
App's task group (or the caller's), says where it stands, can be paused, stopped or cancelled,
and streams its events over a bounded channel.

Progress is a state, not a log: when a slow reader lets the progress channel fill, the newest
sample replaces nothing and is dropped (counted); the next one carries the whole state again."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from actors.asking import AskResult, OnEvent, ask
from actors.ingest import ImportProgress, ImportResult, PauseGate
from actors.journal import Journal
from actors.tracing import IngestTracer, trace_writer, traced

if TYPE_CHECKING:
    from actors.app import App

JobState = Literal["running", "paused", "building", "done", "cancelled", "failed"]

PROGRESS_BUFFER = 16  # samples a reader of `progress_events()` may fall behind by


class ImportJob:
    """One import. `progress` and `state` can be polled; `progress_events()` streams."""

    def __init__(
        self,
        app: App,
        collection: str,
        paths: Sequence[Path],
        *,
        removals: Sequence[str] = (),
        wait_for_writer_s: float = 0.0,
        traced: bool = True,
    ) -> None:
        self.app = app
        self.collection = collection
        self.paths = [Path(p) for p in paths]
        self.removals = list(removals)
        self.wait_for_writer_s = wait_for_writer_s
        self.traced = traced
        self.gate = PauseGate()
        self.progress: ImportProgress | None = None
        self.result: ImportResult | None = None
        self.error: str | None = None
        self.exception: Exception | None = None  # the error that ended the job, for the CLI
        self.finished = anyio.Event()
        self.progress_dropped = 0
        self._scope = anyio.CancelScope()
        self._cancelled = False
        self._listeners: list[MemoryObjectSendStream[ImportProgress]] = []

    @property
    def state(self) -> JobState:
        if self.error is not None:
            return "failed"
        if self._cancelled and self.finished.is_set():
            return "cancelled"
        if self.finished.is_set():
            return "done"
        if self.progress is not None and self.progress.state == "building":
            return "building"
        return "paused" if self.gate.paused else "running"

    def pause(self) -> None:
        self.gate.pause()

    def resume(self) -> None:
        self.gate.resume()

    def cancel(self) -> None:
        """Stop now and forget the unfinished job (finished documents stay cached)."""
        self._cancelled = True
        self.gate.resume()
        self._scope.cancel()

    async def progress_events(self) -> AsyncIterator[ImportProgress]:
        """Every progress sample from now until the job ends (then the iteration ends)."""
        send, receive = anyio.create_memory_object_stream[ImportProgress](PROGRESS_BUFFER)
        if self.finished.is_set():
            send.close()
        else:
            self._listeners.append(send)
        async with receive:
            async for p in receive:
                yield p

    def _on_progress(self, p: ImportProgress) -> None:
        self.progress = p
        for listener in self._listeners:
            try:
                listener.send_nowait(p)
            except anyio.WouldBlock:
                self.progress_dropped += 1
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass

    async def wait(self) -> ImportResult:
        """The result once the job ended; raises what ended it (a UserError, or a bug)."""
        await self.finished.wait()
        if self.exception is not None:
            raise self.exception
        if self.result is None:
            raise anyio.get_cancelled_exc_class()()
        return self.result

    async def run(self) -> None:
        app = self.app
        try:
            with self._scope:
                if self.traced:
                    async with trace_writer(app) as writer:
                        tracer = IngestTracer(writer, self.collection)
                        self.result = await self._import(tracer.wrap(self._on_progress))
                        tracer.finished(self.result)
                else:
                    self.result = await self._import(self._on_progress)
            if self._scope.cancelled_caught:
                Journal(app.data.journal(self.collection)).finish()
        except Exception as exc:
            inner = _single(exc)
            self.exception = inner
            if _is_user_error(inner):
                self.error = str(inner)
            else:  # a bug: the page says so instead of hanging
                self.error = f"unexpected error: {type(inner).__name__}: {inner}"
        finally:
            self.finished.set()
            for listener in self._listeners:
                listener.close()
            self._listeners.clear()

    async def _import(self, on_progress: object) -> ImportResult:
        return await self.app.import_paths(
            self.paths,
            collection=self.collection,
            on_progress=on_progress,  # type: ignore[arg-type]
            gate=self.gate,
            removals=self.removals,
            wait_for_writer_s=self.wait_for_writer_s,
        )


class AskRun:
    """One question; `stop()` cancels it (no answer is recorded then)."""

    def __init__(
        self, app: App, question: str, conversation_id: str | None, collection: str
    ) -> None:
        self.app = app
        self.question = question
        self.conversation_id = conversation_id
        self.collection = collection
        self.trace_dropped = 0
        self._scope = anyio.CancelScope()

    @property
    def stopped(self) -> bool:
        return self._scope.cancel_called

    def stop(self) -> None:
        self._scope.cancel()

    async def run(self, on_event: OnEvent | None) -> AskResult | None:
        """The result, or None when stopped. Raises a UserError when asking cannot start.

        Every event goes to the app's trace writer first (never waiting); `trace_dropped`
        says how many trace records were lost, so the page can warn that the trace is partial.
        """
        with self._scope:
            try:
                async with trace_writer(self.app) as writer:
                    dropped_before = writer.health().dropped
                    try:
                        return await ask(
                            self.app,
                            self.question,
                            conversation_id=self.conversation_id,
                            collection=self.collection,
                            on_event=traced(writer, on_event),
                        )
                    finally:
                        self.trace_dropped = writer.health().dropped - dropped_before
            except ExceptionGroup as group:  # a task group wraps what ask raised
                raise _single(group) from None
        return None


def _is_user_error(error: Exception) -> bool:
    from actors.app import USER_ERRORS

    return isinstance(error, USER_ERRORS)


def _single(error: Exception) -> Exception:
    """The one error inside nested groups (e.g. AppError: no key), else the error itself."""
    leaves = list(_leaves(error))
    return leaves[0] if len(leaves) == 1 else error


def _leaves(error: Exception) -> Iterator[Exception]:
    if isinstance(error, ExceptionGroup):
        for inner in error.exceptions:
            yield from _leaves(inner)
    else:
        yield error
