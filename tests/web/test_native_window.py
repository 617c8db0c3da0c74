"""The native window: `citewise serve --native` under Xvfb opens a real Qt WebEngine window
showing the app (past the loopback guard: token → cookie, websocket with its Origin), closes
cleanly with the server and stops the server when the person closes it, leaving no process
behind; where no window can open, `serve` says why and serves the browser UI instead.

Needs Xvfb, x11-utils and the `native` extra (pywebview + PyQt6 WebEngine); `./test` installs
them. The screenshot of the window goes to the test's tmp dir (and CITEWISE_TEST_ARTIFACTS).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from PIL import Image, ImageGrab

from tests.corpus import REPO
from tests.web.test_security import serve_env
from web.security import COOKIE_NAME

pytestmark = pytest.mark.slow  # tens of seconds: started first (tests/conftest.py)

QT_ENV = {
    "PYWEBVIEW_GUI": "qt",
    "QT_QPA_PLATFORM": "xcb",
    "QTWEBENGINE_DISABLE_SANDBOX": "1",
    "QTWEBENGINE_CHROMIUM_FLAGS": "--no-sandbox --disable-gpu",
}
SCREEN = "1280x1024x24"
WINDOW_TIMEOUT_S = 120.0  # two busy cores: Qt WebEngine's first start can take a while
ARTIFACTS = (
    Path(os.environ["CITEWISE_TEST_ARTIFACTS"]) / "native-window"
    if os.environ.get("CITEWISE_TEST_ARTIFACTS")
    else None
)


# -- the X display ----------------------------------------------------------------------------
@pytest.fixture
def display() -> Iterator[str]:
    """A private Xvfb display (":N"), stopped after the test."""
    missing = [tool for tool in ("Xvfb", "xwininfo") if shutil.which(tool) is None]
    assert not missing, f"{missing} missing: ./test installs xvfb and x11-utils"
    assert importlib.util.find_spec("webview") is not None, "./test installs the native extra"
    read, write = os.pipe()
    xvfb = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write), "-screen", "0", SCREEN, "-nolisten", "tcp"],
        pass_fds=(write,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write)
    try:
        with os.fdopen(read) as f:
            number = f.readline().strip()
        assert number.isdigit(), "Xvfb did not report its display"
        yield f":{number}"
    finally:
        xvfb.terminate()
        xvfb.wait(timeout=10)


@dataclass
class Window:
    id: int
    title: str
    x: int
    y: int
    width: int
    height: int


def _windows(display: str) -> list[Window]:
    """Top-level windows with a title, from `xwininfo -root -children`."""
    out = subprocess.run(
        ["xwininfo", "-root", "-children", "-display", display],
        capture_output=True,
        text=True,
        timeout=10,
    ).stdout
    found = []
    for m in re.finditer(r"^\s*(0x[0-9a-f]+) \"(.*)\":.*?(\d+)x(\d+)\+(-?\d+)\+(-?\d+)", out, re.M):
        wid, title, w, h, x, y = m.groups()
        found.append(Window(int(wid, 16), title, int(x), int(y), int(w), int(h)))
    return found


def _close_like_a_person(display: str, window: int) -> None:
    """Send the window manager's 'close' (WM_DELETE_WINDOW), as the title bar's × does."""

    class ClientMessage(ctypes.Structure):
        _fields_ = [
            ("type", ctypes.c_int),
            ("serial", ctypes.c_ulong),
            ("send_event", ctypes.c_int),
            ("display", ctypes.c_void_p),
            ("window", ctypes.c_ulong),
            ("message_type", ctypes.c_ulong),
            ("format", ctypes.c_int),
            ("data", ctypes.c_long * 5),
        ]

    class Event(ctypes.Union):
        _fields_ = [("xclient", ClientMessage), ("pad", ctypes.c_long * 24)]

    name = ctypes.util.find_library("X11")
    assert name is not None, "libX11 is missing"
    x11 = ctypes.CDLL(name)
    x11.XOpenDisplay.restype = ctypes.c_void_p
    x11.XOpenDisplay.argtypes = [ctypes.c_char_p]
    x11.XInternAtom.restype = ctypes.c_ulong
    x11.XInternAtom.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
    x11.XSendEvent.argtypes = [
        ctypes.c_void_p,
        ctypes.c_ulong,
        ctypes.c_int,
        ctypes.c_long,
        ctypes.POINTER(Event),
    ]
    x11.XFlush.argtypes = [ctypes.c_void_p]
    x11.XCloseDisplay.argtypes = [ctypes.c_void_p]
    dpy = x11.XOpenDisplay(display.encode())
    assert dpy, f"cannot open display {display}"
    try:
        event = Event()
        event.xclient.type = 33  # ClientMessage
        event.xclient.window = window
        event.xclient.message_type = x11.XInternAtom(dpy, b"WM_PROTOCOLS", 0)
        event.xclient.format = 32
        event.xclient.data[0] = x11.XInternAtom(dpy, b"WM_DELETE_WINDOW", 0)
        event.xclient.data[1] = 0  # CurrentTime
        x11.XSendEvent(dpy, window, 0, 0, ctypes.byref(event))
        x11.XFlush(dpy)
    finally:
        x11.XCloseDisplay(dpy)


def _richness(image: Image.Image) -> tuple[int, float]:
    """Distinct colours (capped at 4096) and the share of the most common one."""
    colors = image.convert("RGB").getcolors(4096)
    if colors is None:
        return 4096, 0.0
    top = max(count for count, _ in colors)
    return len(colors), top / (image.width * image.height)


# -- the serve process ------------------------------------------------------------------------
@dataclass
class Serving:
    process: subprocess.Popen[str]
    url: str
    stderr: list[str] = field(default_factory=list)

    @property
    def base(self) -> str:
        return self.url.split("/?", 1)[0]

    def said(self, fragment: str) -> bool:
        return any(fragment in line for line in list(self.stderr))

    def wait_for(self, fragment: str, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while not self.said(fragment):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"never said {fragment!r}: {''.join(self.stderr)}")
            time.sleep(0.1)


def _serve(home: Path, env: dict[str, str], *args: str) -> Serving:
    """`python -m cli.serve ARGS` in a session of its own (so every process it starts,
    down to the web engine's helpers, can be found afterwards)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "cli.serve", *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert process.stdout is not None and process.stderr is not None
    line = process.stdout.readline()
    match = re.search(r"(http://127\.0\.0\.1:\d+/\?token=\S+)", line)
    if match is None:
        _end_session(process)
        raise AssertionError(f"no URL printed: {line!r} {process.stderr.read()!r}")
    serving = Serving(process, match.group(1))
    stream = process.stderr
    threading.Thread(
        target=lambda: serving.stderr.extend(iter(stream.readline, "")), daemon=True
    ).start()
    return serving


def _session_processes(sid: int) -> list[str]:
    """Processes of this session still running (exited ones awaiting reaping do not count)."""
    alive = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        head, _, rest = stat.rpartition(")")
        fields = rest.split()
        state, session = fields[0], int(fields[3])
        if session == sid and state not in ("Z", "X"):
            alive.append(f"{entry.name} {head.split('(', 1)[-1]} {state}")
    return alive


def _parse_workers(sid: int, timeout_s: float, count: int) -> list[int]:
    """Parse worker processes (anyio's, `-m anyio.to_process`) of this session, waited for
    until there are `count` of them."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = []
        for line in _session_processes(sid):
            pid = int(line.split()[0])
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"anyio.to_process" in argv:
                found.append(pid)
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def _wait_until_gone(sid: int, timeout_s: float) -> list[str]:
    deadline = time.monotonic() + timeout_s
    while (left := _session_processes(sid)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def _end_session(process: subprocess.Popen[str]) -> None:
    """Clean-up after a failed test: whatever is left of the session is killed."""
    if process.poll() is None:
        process.kill()
    process.wait()
    for line in _session_processes(process.pid):
        os.kill(int(line.split()[0]), signal.SIGKILL)


def _page_through_loopback(serving: Serving) -> None:
    """The served app answers with the token URL (→ cookie) and only on 127.0.0.1."""
    r = httpx.get(serving.url, follow_redirects=False, timeout=10)
    assert r.status_code == 303
    page = httpx.get(
        serving.base + r.headers["location"],
        cookies={COOKIE_NAME: r.cookies[COOKIE_NAME]},
        follow_redirects=True,  # / sends a first run to /wizard
        timeout=20,
    )
    assert page.status_code == 200 and page.headers.get("x-nicegui-content") == "page"
    assert httpx.get(serving.base + "/", timeout=10).status_code == 403  # no cookie, no page
    port = int(serving.base.rsplit(":", 1)[1])
    with pytest.raises(httpx.TransportError):
        httpx.get(f"http://127.0.0.2:{port}/", timeout=3)


def _window_shows_the_app(serving: Serving, display: str, shot: Path) -> Window:
    """Wait for the window's page to connect, find the window, and check it is drawn."""
    serving.wait_for("The Citewise window is open", WINDOW_TIMEOUT_S)
    # The page's own title: the wizard (first run) was served to the window past the guard.
    deadline = time.monotonic() + 30
    while True:
        windows = [w for w in _windows(display) if w.title.startswith("Citewise")]
        assert len(windows) == 1, _windows(display)
        window = windows[0]
        if window.title == "Citewise — Setup" or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert window.title == "Citewise — Setup"
    box = (window.x, window.y, window.x + window.width, window.y + window.height)
    deadline = time.monotonic() + 30
    while True:
        image = ImageGrab.grab(bbox=box, xdisplay=display)
        colors, top_share = _richness(image)
        if (colors > 64 and top_share < 0.97) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    image.save(shot)
    if ARTIFACTS is not None:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shutil.copy2(shot, ARTIFACTS / shot.name)
    assert colors > 64 and top_share < 0.97, (colors, top_share, shot)
    return window


def test_native_window_shows_the_app_and_closing_it_stops_everything(
    display: str, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    env = serve_env(home, DISPLAY=display, **QT_ENV)
    env.pop("WAYLAND_DISPLAY", None)
    serving = _serve(home, env, "--native")
    try:
        window = _window_shows_the_app(serving, display, tmp_path / "native-window.png")
        _page_through_loopback(serving)
        assert not serving.said("The native window cannot open")

        _close_like_a_person(display, window.id)
        assert serving.process.wait(timeout=60) == 0
        assert _wait_until_gone(serving.process.pid, 20) == []
        assert not [w for w in _windows(display) if w.title.startswith("Citewise")]
    finally:
        _end_session(serving.process)


def test_stopping_the_server_closes_the_native_window(display: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = serve_env(home, DISPLAY=display, **QT_ENV)
    env.pop("WAYLAND_DISPLAY", None)
    serving = _serve(home, env)  # no flag: native is the default
    try:
        _window_shows_the_app(serving, display, tmp_path / "native-default.png")
        serving.process.send_signal(signal.SIGINT)  # Ctrl-C in the terminal that started it
        assert serving.process.wait(timeout=60) == 0
        assert _wait_until_gone(serving.process.pid, 20) == []
        assert not [w for w in _windows(display) if w.title.startswith("Citewise")]
    finally:
        _end_session(serving.process)


def _dead_display() -> str:
    """A display number no X server listens on."""
    number = next(n for n in range(700, 800) if not Path(f"/tmp/.X11-unix/X{n}").exists())
    return f":{number}"


@pytest.mark.parametrize(
    ("display_env", "reason"),
    [
        ({}, "there is no graphical display here"),
        ({"DISPLAY": _dead_display()}, "the window toolkit failed to start"),
    ],
    ids=["no-display", "display-unreachable"],
)
def test_without_a_native_backend_serve_says_so_and_serves_the_browser_ui(
    tmp_path: Path, display_env: dict[str, str], reason: str
) -> None:
    home = tmp_path / "home"
    env = serve_env(home, **QT_ENV, **display_env)
    for name in ("DISPLAY", "WAYLAND_DISPLAY"):
        if name not in display_env:
            env.pop(name, None)
    serving = _serve(home, env, "--native")
    try:
        serving.wait_for("Citewise is ready", 60)
        assert serving.said(f"The native window cannot open: {reason}")
        assert serving.said("Serving the browser UI instead")
        _page_through_loopback(serving)
        # the parse workers start soon after launch, so the first import does not wait
        cores = os.cpu_count() or 1
        assert len(_parse_workers(serving.process.pid, 60, cores)) == cores
        serving.process.terminate()
        serving.process.wait(timeout=30)
        assert _wait_until_gone(serving.process.pid, 10) == []
        assert not serving.said("The Citewise window is open")
    finally:
        _end_session(serving.process)
