"""Starting the UI server: loopback only, a free or given port, a per-launch token printed as a
URL, the loopback guard in front of everything, and the app's app started and stopped with
NiceGUI's lifespan. The native window (web/window.py, its own process, started before the
server loads) is pointed at the token URL, so it trades the token for the session cookie
exactly as a browser does.

It refuses any host but 127.0.0.1; it never binds a public interface. It never leaves the
window process behind: stopping the server closes the window, and closing the window stops it.
"""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Callable

import anyio.to_thread
from nicegui import app as nicegui_app
from nicegui import core, ui

from actors import App
from web.pages import register
from web.security import LOOPBACK_HOST, Launch, LoopbackGuard
from web.upgrade_page import open_or_explain
from web.window import NativeWindow


class LaunchRefused(Exception):
    """The requested way of serving is not allowed (e.g. a non-loopback host)."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK_HOST, 0))
        port: int = s.getsockname()[1]
        return port


def serve(
    *,
    port: int | None = None,
    browser: bool = False,
    host: str = LOOPBACK_HOST,
    say: Callable[[str], None] | None = None,
    started: float | None = None,
    app: App | None = None,
    native: NativeWindow | None = None,
) -> None:
    """Run the UI until the window closes or the process is interrupted. `native`: a window
    process the caller started early (else one is started here unless `browser`)."""
    say = say or (lambda text: print(text, file=sys.stderr, flush=True))
    began = time.monotonic() if started is None else started
    if host != LOOPBACK_HOST:
        raise LaunchRefused(
            f"Citewise serves only on {LOOPBACK_HOST} (this machine); --host {host} is refused "
            "because it would expose your documents and keys to the network"
        )
    if port is not None and not 0 < port < 65536:
        raise LaunchRefused(f"--port {port} is not a TCP port (1–65535)")
    port = port or free_port()
    window = None if browser else (native or NativeWindow(say, began))
    # Data an older Citewise wrote is upgraded only after the person confirms on that page.
    app = app or open_or_explain(register)
    launch = Launch(port)
    if app is not None:
        register(app)
    nicegui_app.add_middleware(LoopbackGuard, launch=launch)

    async def on_startup() -> None:
        if app is not None:
            await app.warm()
        say(f"Citewise is ready ({time.monotonic() - began:.1f} s after start).")

    nicegui_app.on_startup(on_startup)
    if window is not None:
        native_window = window
        nicegui_app.on_connect(native_window.connected)
        nicegui_app.on_shutdown(lambda: anyio.to_thread.run_sync(native_window.end))

        def window_closed() -> None:  # the person closed the window: stop serving
            if core.loop is not None and not core.loop.is_closed():
                core.loop.call_soon_threadsafe(nicegui_app.shutdown)

        def no_window(problem: str) -> None:
            say(
                f"The native window cannot open: {problem}. Serving the browser UI instead; "
                "open the address below in your browser."
            )

        native_window.open(launch.url(), on_closed=window_closed, on_failed=no_window)
    # The URL goes to stdout (for scripts, tests, or a browser next to the window); notices go
    # to stderr.
    print(f"Open Citewise at: {launch.url()}", flush=True)
    ui.run(
        host=LOOPBACK_HOST,
        port=port,
        reload=False,
        show=False,
        title="Citewise",
        show_welcome_message=False,
        uvicorn_logging_level="warning",
        reconnect_timeout=10.0,
    )
