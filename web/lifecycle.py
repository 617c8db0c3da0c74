"""The App's actors inside NiceGUI's lifespan: started with the server, stopped with it.

NiceGUI runs its start and stop hooks in different tasks, and anyio's task groups must be
entered and left in one; so the app runs in one task of its own (`App.serve`), which the stop
hook asks to end and then waits for. That task is not one of NiceGUI's background tasks, which
its shutdown cancels before any hook of ours runs: stopping the app pauses a running import and
writes the queued trace records, and neither may be cut short.
"""

from __future__ import annotations

import asyncio
import logging
import weakref

from nicegui import app as nicegui_app

from actors import App

STOP_TIMEOUT_S = 15.0
_log = logging.getLogger(__name__)
_served: weakref.WeakSet[App] = weakref.WeakSet()


def run_with_server(app: App) -> None:
    """Run `app`'s actors from the server's start until its stop (call before `ui.run`, or
    while serving: then they start at once). Once per app; a second call does nothing."""
    if app in _served:
        return
    _served.add(app)
    task: asyncio.Task[None] | None = None

    def start() -> None:
        nonlocal task
        task = asyncio.get_running_loop().create_task(app.serve(), name="citewise-app")
        task.add_done_callback(_report)

    async def stop() -> None:
        app.stop()
        if task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(task), STOP_TIMEOUT_S)
            except TimeoutError:
                task.cancel()

    if nicegui_app.is_started:
        start()
    else:
        nicegui_app.on_startup(start)
    nicegui_app.on_shutdown(stop)


def _report(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        _log.error("the app's actors stopped", exc_info=task.exception())
