"""Starting the UI server: loopback only, a free or given port, a per-launch token printed as a
URL, the loopback guard in front of everything, and the app's service started and stopped with
NiceGUI's lifespan. The native window (pywebview, in NiceGUI's window process) is pointed at
the token URL, so it trades the token for the session cookie exactly as a browser does.

It refuses any host but 127.0.0.1; it never binds a public interface. It never leaves the
window process behind: stopping the server closes the window, and closing the window stops it.
"""

from __future__ import annotations

import importlib.util
import multiprocessing
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from multiprocessing.process import BaseProcess

import anyio.to_thread
from nicegui import app, ui

from actors.ui_service import UiService
from web.pages import register
from web.security import LOOPBACK_HOST, Launch, LoopbackGuard
from web.upgrade_page import open_or_explain

PROBE_TIMEOUT_S = 20.0
WINDOW_CLOSE_TIMEOUT_S = 10.0
# Starts pywebview's GUI toolkit the way the window process will (Qt or GTK on Linux, WebView2
# on Windows) and names it; a toolkit that cannot start here fails this instead of the window.
_PROBE = (
    "import importlib\n"
    "guilib = importlib.import_module('webview.guilib')\n"
    "print(guilib.initialize().__name__.rsplit('.', 1)[-1])\n"
)


class LaunchRefused(Exception):
    """The requested way of serving is not allowed (e.g. a non-loopback host)."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK_HOST, 0))
        port: int = s.getsockname()[1]
        return port


class NativeProbe:
    """Whether a native window can open here, found out in a short-lived child process (a GUI
    toolkit that cannot reach a display aborts the process that tries) while the server loads."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self._problem: str | None = _missing_prerequisite(os.environ if env is None else env)
        self._process: subprocess.Popen[str] | None = None
        if self._problem is None:
            self._process = subprocess.Popen(
                [sys.executable, "-c", _PROBE],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )

    def problem(self) -> str | None:
        """None when the window can open; otherwise why not, for a person to read."""
        if self._process is None:
            return self._problem
        try:
            out, err = self._process.communicate(timeout=PROBE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.communicate()
            return f"the window toolkit did not start within {PROBE_TIMEOUT_S:.0f} s"
        if self._process.returncode != 0 or not out.strip():
            return f"the window toolkit failed to start ({_gist(err)})"
        return None


def _missing_prerequisite(env: Mapping[str, str]) -> str | None:
    if importlib.util.find_spec("webview") is None:
        return (
            "pywebview is not installed (install Citewise with the `native` extra: "
            "pip install 'citewise[native]')"
        )
    if sys.platform.startswith(("linux", "freebsd", "openbsd")) and not (
        env.get("DISPLAY") or env.get("WAYLAND_DISPLAY")
    ):
        return "there is no graphical display here (neither DISPLAY nor WAYLAND_DISPLAY is set)"
    return None


def _gist(stderr: str) -> str:
    """The line of a toolkit's error output that says what went wrong (a display it cannot
    reach, a platform plugin it cannot load), else its last line."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for pattern in ("could not connect", "cannot open display", "could not load", "error"):
        found = next((ln for ln in reversed(lines) if pattern in ln.lower()), None)
        if found is not None:
            return found[:300]
    return lines[-1][:300] if lines else "no error message"


class NativeWindow:
    """NiceGUI's window process, closed with the server (its web engine's helpers go with it)."""

    def __init__(self, say: Callable[[str], None], began: float) -> None:
        self._say = say
        self._began = began
        self._before = set(multiprocessing.active_children())
        self._process: BaseProcess | None = None
        self._shown = False

    def started(self) -> None:
        """Called at server start-up, after NiceGUI has spawned the window process."""
        fresh = [p for p in multiprocessing.active_children() if p not in self._before]
        self._process = fresh[0] if fresh else None

    def connected(self) -> None:
        """The window's page connected its websocket (past the guard): it is usable."""
        if not self._shown:
            self._shown = True
            self._say(f"The Citewise window is open ({time.monotonic() - self._began:.1f} s).")

    async def close(self) -> None:
        if app.native.main_window is not None:
            app.native.main_window.destroy()
        process = self._process
        if process is None:
            return
        await anyio.to_thread.run_sync(process.join, WINDOW_CLOSE_TIMEOUT_S)
        if process.is_alive():  # a hung toolkit: end it rather than leave it running
            process.terminate()
            await anyio.to_thread.run_sync(process.join, 3.0)
        if process.is_alive():
            process.kill()
            await anyio.to_thread.run_sync(process.join, 3.0)


def serve(
    *,
    port: int | None = None,
    browser: bool = False,
    host: str = LOOPBACK_HOST,
    say: Callable[[str], None] | None = None,
    started: float | None = None,
    service: UiService | None = None,
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
    if not browser and hasattr(os, "geteuid") and os.geteuid() == 0:
        # Chromium (inside Qt WebEngine) refuses to run as root with its sandbox on.
        os.environ.setdefault("QTWEBENGINE_DISABLE_SANDBOX", "1")
    probe = None if browser else NativeProbe()
    # Data an older Citewise wrote is upgraded only after the person confirms on that page.
    service = service or open_or_explain(register)
    launch = Launch(port)
    if service is not None:
        register(service)
    app.add_middleware(LoopbackGuard, launch=launch)
    window: NativeWindow | None = None
    if probe is not None:
        problem = probe.problem()
        if problem is None:
            window = NativeWindow(say, began)
        else:
            say(
                f"The native window cannot open: {problem}. Serving the browser UI instead; "
                "open the address below in your browser."
            )

    async def on_startup() -> None:
        if window is not None:
            window.started()
        if service is not None:
            await service.start()
        say(f"Citewise is ready ({time.monotonic() - began:.1f} s after start).")

    app.on_startup(on_startup)
    if window is not None:
        app.on_connect(window.connected)
        app.on_shutdown(window.close)
        app.native.window_args["url"] = launch.url()
    if service is not None:
        app.on_shutdown(service.aclose)
    # The URL goes to stdout (for scripts, tests, or a browser next to the window); notices go
    # to stderr.
    print(f"Open Citewise at: {launch.url()}", flush=True)
    ui.run(
        host=LOOPBACK_HOST,
        port=port,
        reload=False,
        show=False,
        native=window is not None,
        window_size=(1200, 800) if window is not None else None,
        title="Citewise",
        show_welcome_message=False,
        uvicorn_logging_level="warning",
        reconnect_timeout=10.0,
    )
