"""The native window, in a process of its own that starts before the server loads.

`citewise serve` starts this process first, so the window toolkit (Qt WebEngine on Linux,
WebView2 on Windows) starts while NiceGUI and the app are still importing; the window shows a
"starting" page, and opens the token URL once the server listens. The window trades the token
for the session cookie exactly as a browser does; it gets no other way in.

The parent talks to it over stdin and stdout, one line each:
  stdin   `open URL`   load the app (sent once the URL exists), `close`   close the window
  stdout  `shown`      the toolkit started and the window is on screen
A toolkit that cannot start (no display, a platform plugin that will not load) makes this
process exit before it says `shown`; the parent then serves the browser UI and says why.
Closing the window ends this process, which the parent takes as "stop the server".

Run as `python -m web.window`; it imports nothing of Citewise's, so it starts fast.
`NativeWindow` below is the parent's side; `citewise serve` creates it before anything heavy
is imported.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

TITLE = "Citewise"
SIZE = (1200, 800)
PORT_WAIT_S = 120.0
START_TIMEOUT_S = 30.0  # toolkit start to window on screen; Qt WebEngine is slow on a busy machine
CLOSE_TIMEOUT_S = 10.0
TITLE_POLL_S = 0.3
_STARTING = (
    "<!doctype html><meta charset='utf-8'><title>Citewise</title>"
    "<body style='font-family:sans-serif;display:flex;align-items:center;justify-content:center;"
    "height:90vh;color:#555'><p>Citewise is starting… / Citewise 正在启动…</p></body>"
)


def wait_for_port(url: str) -> bool:
    """True once something listens at the URL's host and port (False after PORT_WAIT_S)."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    deadline = time.monotonic() + PORT_WAIT_S
    while time.monotonic() < deadline:
        try:
            socket.create_connection((host, port), timeout=0.5).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def _follow_parent(window: Any) -> None:
    """Act on the parent's lines; a closed stdin (the parent died) closes the window too."""
    for line in sys.stdin:
        command, _, arg = line.strip().partition(" ")
        if command == "open" and arg and wait_for_port(arg):
            window.load_url(arg)
        elif command == "close":
            break
    window.destroy()


def _follow_title(window: Any, closed: threading.Event) -> None:
    """Show each page's own title (e.g. "Citewise — Setup") in the title bar; the pages set
    it in the document, which the toolkit does not pass on by itself."""
    shown = TITLE
    while not closed.wait(TITLE_POLL_S):
        try:
            title = window.evaluate_js("document.title")
        except Exception:  # the page is between loads, or the window is going
            continue
        if isinstance(title, str) and title and title != shown:
            window.title = shown = title


def main() -> int:
    if sys.platform == "win32" and webview2_version() is None:
        # pywebview would fall back to MSHTML (Internet Explorer), which cannot show the app.
        print(NO_WEBVIEW2, file=sys.stderr, flush=True)
        return 3
    import webview  # the toolkit starts inside webview.start

    window = webview.create_window(TITLE, html=_STARTING, width=SIZE[0], height=SIZE[1])
    assert window is not None

    def shown() -> None:
        print("shown", flush=True)

    closed = threading.Event()
    window.events.shown += shown
    window.events.closed += closed.set
    threading.Thread(target=_follow_parent, args=(window,), daemon=True).start()
    threading.Thread(target=_follow_title, args=(window, closed), daemon=True).start()
    webview.start(gui=backend_for(sys.platform, os.environ))  # type: ignore[arg-type]
    return 0


# -- which toolkit, and whether it can start -------------------------------------------------
# pywebview's GUI per platform: Microsoft Edge WebView2 on Windows (through pythonnet and
# WinForms), Qt WebEngine on Linux (the `native` extra). Elsewhere (macOS) pywebview chooses.
BACKENDS = {"win32": "edgechromium", "linux": "qt"}
# Microsoft's "Detect if a WebView2 Runtime is already installed": the Evergreen runtime's
# client key; its `pv` value is the installed version ("" or 0.0.0.0 when none). Per machine
# (under WOW6432Node on 64-bit Windows, not on 32-bit), or per user.
WEBVIEW2_CLIENT = "{F3017226-FE2A-4295-8BDF-00C3A9A7E4C5}"
WEBVIEW2_KEYS = (
    ("HKEY_LOCAL_MACHINE", rf"SOFTWARE\WOW6432Node\Microsoft\EdgeUpdate\Clients\{WEBVIEW2_CLIENT}"),
    ("HKEY_CURRENT_USER", rf"Software\Microsoft\EdgeUpdate\Clients\{WEBVIEW2_CLIENT}"),
    ("HKEY_LOCAL_MACHINE", rf"SOFTWARE\Microsoft\EdgeUpdate\Clients\{WEBVIEW2_CLIENT}"),
)
WEBVIEW2_MINIMUM = (86, 0, 622, 0)  # the oldest runtime pywebview's EdgeChromium accepts
NO_WEBVIEW2 = "the Microsoft Edge WebView2 Runtime is not installed"
# (hive name, key path, value name) → the value as text, or None when there is none
RegistryReader = Callable[[str, str, str], "str | None"]
ProblemCode = Literal["no_pywebview", "no_display", "no_webview2", "toolkit_failed"]


@dataclass(frozen=True)
class WindowProblem:
    """Why no native window opened: `code` for the person's message (web/launcher.py picks
    the words), `detail` in English for the log."""

    code: ProblemCode
    detail: str

    def __str__(self) -> str:
        return self.detail


def backend_for(platform: str, env: Mapping[str, str]) -> str | None:
    """The GUI to ask pywebview for: PYWEBVIEW_GUI when set (pywebview's own switch), else
    this platform's (None: pywebview's default)."""
    chosen = env.get("PYWEBVIEW_GUI", "").strip().lower()
    return chosen or BACKENDS.get(platform)


def webview2_version(read: RegistryReader | None = None) -> str | None:
    """The installed WebView2 runtime's version, or None when there is none (or one too old
    for pywebview)."""
    read = read or _read_registry
    for hive, key in WEBVIEW2_KEYS:
        version = (read(hive, key, "pv") or "").strip()
        if version and _version_tuple(version) >= WEBVIEW2_MINIMUM:
            return version
    return None


def _version_tuple(version: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in version.split("."))
    except ValueError:
        return ()


def _read_registry(hive: str, key: str, name: str) -> str | None:
    import winreg  # Windows only; webview2_version is called there only

    try:
        with winreg.OpenKey(getattr(winreg, hive), key) as handle:  # type: ignore[attr-defined]
            value, _ = winreg.QueryValueEx(handle, name)  # type: ignore[attr-defined]
    except OSError:  # FileNotFoundError: no such key or value
        return None
    return value if isinstance(value, str) else None


# -- the parent's side (citewise serve) --------------------------------------------------------
class NativeWindow:
    """The window's process, started before the server loads so the toolkit starts meanwhile;
    pointed at the token URL once that exists. Closing the window stops the server; stopping
    the server closes the window (and its web engine's helpers go with it)."""

    def __init__(
        self,
        say: Callable[[str], None],
        began: float,
        *,
        platform: str = sys.platform,
        read_registry: RegistryReader | None = None,
    ) -> None:
        self._say = say
        self._began = began
        self._problem = missing_prerequisite(os.environ, platform, read_registry)
        self._process: subprocess.Popen[str] | None = None
        self._settled = threading.Event()  # shown, or ended
        self._shown = False
        self._stderr: list[str] = []
        self._connected = False
        if self._problem is None:
            env = dict(os.environ)
            if hasattr(os, "geteuid") and os.geteuid() == 0:
                # Chromium (inside Qt WebEngine) refuses to run as root with its sandbox on.
                env.setdefault("QTWEBENGINE_DISABLE_SANDBOX", "1")
            self._process = subprocess.Popen(
                [sys.executable, "-m", "web.window"],
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            threading.Thread(target=self._read_stdout, daemon=True).start()
            threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stdout(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        for line in self._process.stdout:
            if line.strip() == "shown":
                self._shown = True
                self._settled.set()
        self._settled.set()  # ended; `problem` tells the two apart

    def _read_stderr(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        for line in self._process.stderr:
            self._stderr.append(line)
            del self._stderr[:-200]

    def open(
        self,
        url: str,
        *,
        on_closed: Callable[[], None],
        on_failed: Callable[[WindowProblem], None],
    ) -> None:
        """Load the app in the window. From a thread: `on_failed(why)` when no window came up
        (the browser UI is served anyway), else `on_closed()` once the person closes it."""
        process = self._process
        if process is None:
            on_failed(self._problem or WindowProblem("toolkit_failed", "no window toolkit"))
            return
        self._send(f"open {url}")

        def watch() -> None:
            if not self._settled.wait(START_TIMEOUT_S):
                self.end()
                on_failed(
                    WindowProblem(
                        "toolkit_failed",
                        f"the window toolkit did not start within {START_TIMEOUT_S:.0f} s",
                    )
                )
                return
            if not self._shown:
                process.wait()
                said = "".join(self._stderr)
                if NO_WEBVIEW2 in said:  # the window process found no runtime itself
                    on_failed(WindowProblem("no_webview2", NO_WEBVIEW2))
                    return
                on_failed(
                    WindowProblem(
                        "toolkit_failed", f"the window toolkit failed to start ({_gist(said)})"
                    )
                )
                return
            process.wait()
            on_closed()

        threading.Thread(target=watch, daemon=True).start()

    def connected(self) -> None:
        """A page connected its websocket (past the guard): the window is usable."""
        if not self._connected:
            self._connected = True
            self._say(f"The Citewise window is open ({time.monotonic() - self._began:.1f} s).")

    def _send(self, line: str) -> None:
        process = self._process
        if process is None or process.stdin is None or process.poll() is not None:
            return
        try:
            process.stdin.write(line + "\n")
            process.stdin.flush()
        except OSError:  # it has just gone
            pass

    def end(self) -> None:
        """Close the window and wait for its process; a hung toolkit is ended by force."""
        process = self._process
        if process is None:
            return
        self._send("close")
        try:
            process.wait(CLOSE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.terminate()
            try:
                process.wait(3.0)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def missing_prerequisite(
    env: Mapping[str, str],
    platform: str = sys.platform,
    read_registry: RegistryReader | None = None,
) -> WindowProblem | None:
    """What keeps a native window from opening here, found before any toolkit starts."""
    if importlib.util.find_spec("webview") is None:
        return WindowProblem(
            "no_pywebview",
            "pywebview is not installed (install Citewise with the `native` extra: "
            "pip install 'citewise[native]')",
        )
    if platform.startswith(("linux", "freebsd", "openbsd")) and not (
        env.get("DISPLAY") or env.get("WAYLAND_DISPLAY")
    ):
        return WindowProblem(
            "no_display",
            "there is no graphical display here (neither DISPLAY nor WAYLAND_DISPLAY is set)",
        )
    if (
        platform == "win32"
        and backend_for(platform, env) == "edgechromium"
        and webview2_version(read_registry) is None
    ):
        return WindowProblem("no_webview2", NO_WEBVIEW2)
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


if __name__ == "__main__":
    sys.exit(main())
