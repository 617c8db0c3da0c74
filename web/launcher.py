"""Starting the UI server: loopback only, a free or given port, a per-launch token printed as a
URL (the native window is pointed at it), the loopback guard in front of everything, and the
app's service started and stopped with NiceGUI's lifespan.

It refuses any host but 127.0.0.1; it never binds a public interface.
"""

from __future__ import annotations

import importlib.util
import socket
import sys
import time
from collections.abc import Callable

from nicegui import app, ui

from actors.ui_service import UiService
from web.pages import register
from web.security import LOOPBACK_HOST, Launch, LoopbackGuard


class LaunchRefused(Exception):
    """The requested way of serving is not allowed (e.g. a non-loopback host)."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK_HOST, 0))
        port: int = s.getsockname()[1]
        return port


def native_available() -> bool:
    return importlib.util.find_spec("webview") is not None


def serve(
    *,
    port: int | None = None,
    browser: bool = False,
    host: str = LOOPBACK_HOST,
    say: Callable[[str], None] | None = None,
    started: float | None = None,
) -> None:
    """Run the UI until the window closes or the process is interrupted."""
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
    native = False
    if not browser:
        native = native_available()
        if not native:
            say(
                "The native window needs pywebview (install Citewise with the `native` extra); "
                "serving the browser UI instead."
            )
    service = UiService.from_environment()
    launch = Launch(port)
    register(service)
    app.add_middleware(LoopbackGuard, launch=launch)

    async def on_startup() -> None:
        await service.start()
        say(f"Citewise is ready ({time.monotonic() - began:.1f} s after start).")

    app.on_startup(on_startup)
    app.on_shutdown(service.aclose)
    if native:
        app.native.window_args["url"] = launch.url()
    # The URL goes to stdout (for scripts and tests); notices go to stderr.
    print(f"Open Citewise at: {launch.url()}", flush=True)
    ui.run(
        host=LOOPBACK_HOST,
        port=port,
        reload=False,
        show=False,
        native=native,
        title="Citewise",
        show_welcome_message=False,
        uvicorn_logging_level="warning",
        reconnect_timeout=10.0,
    )
