"""The harness runner: runs one request's agent loop as a task and streams its events over a
bounded channel to one consumer; cancelling (or leaving the block) stops the model stream and
the tool cleanly.

The channel holds EVENT_BUFFER events; when it is full the loop waits (back-pressure: a slow
consumer slows the answer, nothing is dropped). No task outlives `open_request`. It is also the
one admission point for spending: caps are checked before the request starts, and what its
model calls cost is recorded when it ends, however it ends.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import anyio.to_thread
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from actors.spending import Spending
from engine.harness import (
    Deps,
    Event,
    ModelCallFinished,
    Request,
    RequestFinished,
    run_request,
)

EVENT_BUFFER = 64


class RunningRequest:
    """A request in flight: iterate `events` until RequestFinished; `cancel()` stops it."""

    def __init__(
        self, request: Request, events: MemoryObjectReceiveStream[Event], scope: anyio.CancelScope
    ) -> None:
        self.request = request
        self.events = events
        self._scope = scope
        self.finished: RequestFinished | None = None
        self.cost = 0.0  # of the model calls made so far

    @property
    def request_id(self) -> str:
        return self.request.request_id

    def cancel(self) -> None:
        """Stop the request: the model stream is closed, the running tool is cancelled, and a
        RequestFinished(cancelled) is the last event."""
        self._scope.cancel()

    async def wait(self) -> RequestFinished:
        """Drain the events (for callers that only want the outcome)."""
        async for _ in self.events:
            pass
        if self.finished is None:
            raise RuntimeError(f"request {self.request_id} ended without a final event")
        return self.finished


async def _drive(
    deps: Deps,
    running: RunningRequest,
    send: MemoryObjectSendStream[Event],
    scope: anyio.CancelScope,
) -> None:
    async def emit(event: Event) -> None:
        if isinstance(event, RequestFinished):
            running.finished = event
        elif isinstance(event, ModelCallFinished):
            running.cost += event.cost
        # A consumer that has left means the request is being stopped: nothing to deliver.
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            await send.send(event)

    async with send:
        with scope:
            await run_request(deps, running.request, emit)


@asynccontextmanager
async def open_request(
    deps: Deps, request: Request, *, spending: Spending | None = None
) -> AsyncIterator[RunningRequest]:
    """Start `request` as a task; leaving the block cancels it if it is still running and
    waits until it has stopped. With `spending`, a reached cap raises SpendingCapReached
    before anything starts, and the request's cost goes to the ledger when it ends."""
    if spending is not None:
        await anyio.to_thread.run_sync(spending.admit)
    send, receive = anyio.create_memory_object_stream[Event](EVENT_BUFFER)
    scope = anyio.CancelScope()
    running = RunningRequest(request, receive, scope)
    tg: TaskGroup
    try:
        async with receive, anyio.create_task_group() as tg:
            tg.start_soon(_drive, deps, running, send, scope)
            try:
                yield running
            finally:
                scope.cancel()
                receive.close()  # a send blocked on a full channel fails at once
    finally:
        if spending is not None and running.cost > 0:
            with anyio.CancelScope(shield=True):  # money spent is recorded even when stopped
                await anyio.to_thread.run_sync(
                    spending.record, request.request_id, running.cost, deps.price.currency
                )
