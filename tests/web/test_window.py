"""The native window's Windows path, exercised here on Linux: pywebview is asked for Edge
WebView2 (EdgeChromium) on Windows and Qt on Linux; a missing WebView2 runtime is found in the
registry before any toolkit starts (a registry given to the code, as Windows would answer);
then the person's default browser opens the token URL and a message in their language says
what happened and the one thing to do, with no program's error names in it.
"""

from __future__ import annotations

import re
import socket
import time

import pytest

from web.i18n import Texts
from web.launcher import fall_back_to_browser, fall_back_when_listening, window_message
from web.security import Launch
from web.window import (
    NO_WEBVIEW2,
    WEBVIEW2_CLIENT,
    NativeWindow,
    WindowProblem,
    backend_for,
    missing_prerequisite,
    webview2_version,
)

PER_MACHINE = rf"SOFTWARE\WOW6432Node\Microsoft\EdgeUpdate\Clients\{WEBVIEW2_CLIENT}"
PER_USER = rf"Software\Microsoft\EdgeUpdate\Clients\{WEBVIEW2_CLIENT}"
NO_WEBVIEW2_PROBLEM = WindowProblem("no_webview2", NO_WEBVIEW2)
# What a person on a Windows laptop must never be shown: a program's inner names.
INNER_NAMES = re.compile(
    r"exception|error|traceback|pywebview|pythonnet|winforms|edgechromium|mshtml|registry|"
    r"\.dll|\bHKEY|\bNone\b|\bqt\b",
    re.IGNORECASE,
)


def registry(values: dict[tuple[str, str], str]) -> object:
    """A registry that holds `values` ((hive, key) → the `pv` text) and nothing else."""

    def read(hive: str, key: str, name: str) -> str | None:
        return values.get((hive, key)) if name == "pv" else None

    return read


def test_windows_asks_pywebview_for_webview2_and_linux_for_qt() -> None:
    assert backend_for("win32", {}) == "edgechromium"
    assert backend_for("linux", {}) == "qt"
    assert backend_for("darwin", {}) is None  # pywebview's own choice (Cocoa)
    assert backend_for("win32", {"PYWEBVIEW_GUI": "Qt"}) == "qt"  # pywebview's own switch


@pytest.mark.parametrize(
    ("values", "found"),
    [
        ({("HKEY_LOCAL_MACHINE", PER_MACHINE): "131.0.2903.86"}, "131.0.2903.86"),
        ({("HKEY_CURRENT_USER", PER_USER): "120.0.2210.91"}, "120.0.2210.91"),
        ({("HKEY_LOCAL_MACHINE", PER_MACHINE): "0.0.0.0"}, None),  # uninstalled leaves this
        ({("HKEY_LOCAL_MACHINE", PER_MACHINE): ""}, None),
        ({("HKEY_CURRENT_USER", PER_USER): "80.0.361.0"}, None),  # older than pywebview takes
        ({}, None),
    ],
    ids=["per-machine", "per-user", "zero-version", "empty", "too-old", "absent"],
)
def test_the_webview2_runtime_is_found_where_microsoft_says_it_is_registered(
    values: dict[tuple[str, str], str], found: str | None
) -> None:
    assert webview2_version(registry(values)) == found  # type: ignore[arg-type]


def test_on_windows_without_webview2_no_window_process_starts_and_the_cause_is_named() -> None:
    empty = registry({})
    assert missing_prerequisite({}, "win32", empty) == NO_WEBVIEW2_PROBLEM  # type: ignore[arg-type]
    with_runtime = registry({("HKEY_LOCAL_MACHINE", PER_MACHINE): "131.0.2903.86"})
    assert missing_prerequisite({}, "win32", with_runtime) is None  # type: ignore[arg-type]

    said: list[str] = []
    window = NativeWindow(said.append, 0.0, platform="win32", read_registry=empty)  # type: ignore[arg-type]
    failures: list[WindowProblem] = []
    window.open("http://127.0.0.1:1/?token=t", on_closed=lambda: None, on_failed=failures.append)
    assert failures == [NO_WEBVIEW2_PROBLEM]  # at once: no toolkit was started to find out
    assert window._process is None
    window.end()


def test_without_a_window_windows_opens_the_token_url_in_the_browser_and_says_why() -> None:
    url = Launch(54321).url()
    opened: list[str] = []
    told: list[tuple[str, str]] = []

    def browser(address: str) -> bool:
        opened.append(address)
        return True

    shown = fall_back_to_browser(
        NO_WEBVIEW2_PROBLEM,
        url,
        Texts("en"),
        platform="win32",
        open_browser=browser,
        tell=lambda title, text: told.append((title, text)),
    )
    assert opened == [url]  # the token URL itself: the browser trades it for the cookie
    assert told == [("Citewise", shown)]
    assert shown is not None and "WebView2 Runtime" in shown and "web browser" in shown
    assert url not in shown  # the browser has it; nothing to copy by hand


def test_when_no_browser_opens_the_message_gives_the_address() -> None:
    url = Launch(54321).url()
    told: list[str] = []
    fall_back_to_browser(
        WindowProblem("toolkit_failed", "the window toolkit failed to start (x)"),
        url,
        Texts("zh"),
        platform="win32",
        open_browser=lambda _: False,
        tell=lambda _, text: told.append(text),
    )
    [message] = told
    assert url in message and "浏览器" in message


def test_elsewhere_the_terminal_shows_the_address_and_no_browser_is_started() -> None:
    def browser(address: str) -> bool:
        raise AssertionError("no browser is started outside Windows")

    shown = fall_back_to_browser(
        NO_WEBVIEW2_PROBLEM, Launch(1).url(), Texts("en"), platform="linux", open_browser=browser
    )
    assert shown is None


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("code", ["no_webview2", "toolkit_failed"])
def test_the_message_says_what_happened_and_one_thing_to_do_in_plain_words(
    lang: str, code: str
) -> None:
    problem = WindowProblem(code, "the window toolkit failed to start (WebView2Exception)")  # type: ignore[arg-type]
    message = window_message(problem, Texts(lang))
    assert not INNER_NAMES.search(message), message
    assert "WebView2Exception" not in message  # the log's detail stays in the log
    cause, where = message.split("\n\n")
    doing = "To get the window:" if lang == "en" else "如需使用窗口:"
    assert cause.count(doing) == 1  # one thing to do
    assert ("browser" if lang == "en" else "浏览器") in where
    if code == "no_webview2":
        assert "Microsoft Edge WebView2 Runtime" in cause
    if lang == "zh":
        latin = set(re.findall(r"[A-Za-z]{3,}", message))
        assert latin <= {"Citewise", "Microsoft", "Edge", "WebView", "Runtime", "Evergreen"}


def test_the_browser_is_opened_only_once_the_server_listens() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = Launch(port).url()
    opened: list[str] = []

    def browser(address: str) -> bool:
        opened.append(address)
        return True

    waiting = fall_back_when_listening(
        NO_WEBVIEW2_PROBLEM,
        url,
        Texts("en"),
        platform="win32",
        open_browser=browser,
        tell=lambda *_: None,
    )
    time.sleep(0.5)
    assert opened == []  # nothing listens yet: a browser now would show an error page
    with socket.socket() as server:
        server.bind(("127.0.0.1", port))
        server.listen()
        waiting.join(timeout=10)
    assert opened == [url]
