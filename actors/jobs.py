"""The handles App's commands return: an import job and a question. Each runs as a task in the
App's task group (or the caller's), says where it stands, can be paused, stopped or cancelled,
and streams its events over a bounded channel.

Progress is a state, not a log: when a slow reader lets the progress channel fill, the newest
sample replaces nothing and is dropped (counted); the next one carries the whole state again."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from actors.asking import AskResult, ask
from actors.import_progress import ImportProgress, ImportResult, PauseGate
from actors.journal import Journal
from actors.tracing import IngestTracer, trace_writer, traced
from engine.harness.events import Event

if TYPE_CHECKING:
    from actors.app import App

JobState = Literal["running", "paused", "building", "done", "cancelled", "failed"]

PROGRESS_BUFFER = 16  # samples a reader of `progress_events()` may fall behind by
EVENT_BUFFER = 64  # harness events a reader of `AskRun.events()` may fall behind by


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
    """One question, run by the App's harness runner (a task in its task group).

    `events()` streams what happens (one reader, from the start) over a channel of
    `EVENT_BUFFER` events: a reader that falls behind holds the question up (back-pressure),
    a reader that leaves lets it finish unobserved. `wait()` gives the result, or None when
    stopped; `stop()` cancels it (no answer is recorded then). The question keeps running
    when its page is closed or reloaded, so its answer is recorded all the same.
    """

    def __init__(
        self, app: App, question: str, conversation_id: str | None, collection: str
    ) -> None:
        self.app = app
        self.question = question
        self.conversation_id = conversation_id
        self.collection = collection
        self.trace_dropped = 0
        self.result: AskResult | None = None
        self.exception: Exception | None = None  # what ended it when it did not finish
        self.finished = anyio.Event()
        self._scope = anyio.CancelScope()
        self._send, self._receive = anyio.create_memory_object_stream[Event](EVENT_BUFFER)
        self._reading = False

    @property
    def stopped(self) -> bool:
        return self._scope.cancel_called

    def stop(self) -> None:
        self._scope.cancel()

    def events(self) -> MemoryObjectReceiveStream[Event]:
        """Every event of this question from its start until it ends; one reader, who uses it
        as `async with run.events() as events: async for event in events: …` (leaving the
        block lets the question go on unobserved)."""
        if self._reading:
            raise RuntimeError("a question's events have one reader")
        self._reading = True
        return self._receive

    async def wait(self) -> AskResult | None:
        """The result once the question ended, None when it was stopped; raises a UserError
        when asking could not start, or the bug that ended it."""
        if not self._reading:  # nobody reads the events: the question must not wait for one
            self._reading = True
            self._receive.close()
        await self.finished.wait()
        if self.exception is not None:
            raise self.exception
        return self.result

    async def run(self) -> None:
        """The harness runner's work for this question (App.ask starts it).

        Every event goes to the app's trace writer first (never waiting); `trace_dropped`
        says how many trace records were lost, so the page can warn that the trace is partial.
        """
        try:
            with self._scope:
                async with trace_writer(self.app) as writer:
                    dropped_before = writer.health().dropped
                    try:
                        self.result = await ask(
                            self.app,
                            self.question,
                            conversation_id=self.conversation_id,
                            collection=self.collection,
                            on_event=traced(writer, self._publish),
                        )
                    finally:
                        self.trace_dropped = writer.health().dropped - dropped_before
        except Exception as exc:  # kept for `wait()`: the app's other actors go on
            self.exception = _single(exc)
        finally:
            self.finished.set()
            self._send.close()

    async def _publish(self, event: Event) -> None:
        # A reader that left lets the question go on without one.
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            await self._send.send(event)


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
