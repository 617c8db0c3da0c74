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
import threading
import time
import webbrowser
from collections.abc import Callable
from typing import Any

import anyio.to_thread
from nicegui import app as nicegui_app
from nicegui import core, ui

from actors import App
from web.i18n import Texts
from web.pages import register
from web.security import LOOPBACK_HOST, Launch, LoopbackGuard
from web.upgrade_page import open_or_explain
from web.window import NativeWindow, WindowProblem, wait_for_port


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

        language = app.config.ui.language if app is not None else "en"

        def no_window(problem: WindowProblem) -> None:
            say(
                f"The native window cannot open: {problem}. Serving the browser UI instead; "
                "open the address below in your browser."
            )
            fall_back_when_listening(problem, launch.url(), Texts(language))

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


# -- no window: the browser instead ----------------------------------------------------------
def fall_back_when_listening(
    problem: WindowProblem, url: str, t: Texts, **how: Any
) -> threading.Thread:
    """`fall_back_to_browser` once the server answers at `url` (a browser opened before would
    show the person an error page), from a thread of its own."""

    def when_listening() -> None:
        if wait_for_port(url):
            fall_back_to_browser(problem, url, t, **how)

    thread = threading.Thread(target=when_listening, daemon=True)
    thread.start()
    return thread


def fall_back_to_browser(
    problem: WindowProblem,
    url: str,
    t: Texts,
    *,
    platform: str = sys.platform,
    open_browser: Callable[[str], bool] = webbrowser.open,
    tell: Callable[[str, str], None] | None = None,
) -> str | None:
    """Where a person started Citewise by its icon (Windows: Citewise.exe has no console, so
    the printed address reaches no one), open the token URL in their default browser and tell
    them, in their language, what happened and the one thing that brings the window back.
    Elsewhere the terminal that started it shows the address (said above). The message shown,
    or None."""
    if platform != "win32":
        return None
    opened = open_browser(url)
    message = window_message(problem, t, url=None if opened else url)
    (tell or _message_box)(t("window.title"), message)
    return message


def window_message(problem: WindowProblem, t: Texts, *, url: str | None = None) -> str:
    """What happened and what to do; `url` when no browser could be opened for the person."""
    cause = t("window.no_webview2") if problem.code == "no_webview2" else t("window.failed")
    where = t("window.open_address", url=url) if url else t("window.in_browser")
    return f"{cause}\n\n{where}"


def _message_box(title: str, text: str) -> None:
    """A Windows message box, from a thread of its own so serving does not wait for OK."""
    import ctypes

    def show() -> None:
        mb_iconinformation, mb_setforeground = 0x40, 0x10000
        ctypes.windll.user32.MessageBoxW(  # type: ignore[attr-defined]
            None, text, title, mb_iconinformation | mb_setforeground
        )

    threading.Thread(target=show, daemon=True).start()
