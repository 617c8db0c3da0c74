"""The loopback guard, in-process on its ASGI interface and on a real `serve` process.

The real server runs as `python -m cli.serve --browser --port P` on 127.0.0.1 with its
own data directory; every refusal is checked over a real TCP connection.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.corpus import REPO
from web.security import COOKIE_NAME, Launch, LoopbackGuard

PORT = 8123


# -- in-process: the middleware alone ---------------------------------------------------------
async def _ok_app(scope: Any, receive: Any, send: Any) -> None:
    if scope["type"] == "websocket":
        await receive()
        await send({"type": "websocket.accept"})
        return
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"inner page"})


def _client(launch: Launch) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=LoopbackGuard(_ok_app, launch))
    return httpx.AsyncClient(transport=transport, base_url=f"http://127.0.0.1:{launch.port}")


def _cookie(launch: Launch) -> dict[str, str]:
    return {"cookie": f"{COOKIE_NAME}={launch.session}"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_guard_lets_a_loopback_request_with_the_cookie_through() -> None:
    launch = Launch(PORT)
    async with _client(launch) as client:
        r = await client.get("/library", headers=_cookie(launch))
    assert r.status_code == 200 and r.text == "inner page"
    assert "frame-ancestors 'none'" in r.headers["content-security-policy"]
    assert "img-src 'self' data: blob:" in r.headers["content-security-policy"]


@pytest.mark.anyio
@pytest.mark.parametrize(
    "host",
    ["evil.example", f"evil.example:{PORT}", "127.0.0.1", f"127.0.0.1:{PORT + 1}", "0.0.0.0:8123"],
)
async def test_guard_refuses_any_other_host_header(host: str) -> None:
    launch = Launch(PORT)
    async with _client(launch) as client:
        r = await client.get("/", headers={"host": host, **_cookie(launch)})
    assert r.status_code == 421
    assert "inner page" not in r.text


@pytest.mark.anyio
@pytest.mark.parametrize("origin", ["http://evil.example", "null", f"https://127.0.0.1:{PORT}"])
async def test_guard_refuses_a_foreign_origin_even_with_the_cookie(origin: str) -> None:
    launch = Launch(PORT)
    async with _client(launch) as client:
        r = await client.post(
            "/_nicegui_ws/socket.io/", headers={"origin": origin, **_cookie(launch)}
        )
    assert r.status_code == 403
    assert r.headers["x-citewise-refused"] == "foreign_origin"


@pytest.mark.anyio
async def test_guard_refuses_a_wrong_or_missing_cookie() -> None:
    launch = Launch(PORT)
    async with _client(launch) as client:
        missing = await client.get("/")
        wrong = await client.get("/", headers={"cookie": f"{COOKIE_NAME}=guess"})
        token_as_cookie = await client.get("/", headers={"cookie": f"{COOKIE_NAME}={launch.token}"})
    for r in (missing, wrong, token_as_cookie):
        assert r.status_code == 403
        assert "set-cookie" not in r.headers
        assert "inner page" not in r.text


@pytest.mark.anyio
async def test_token_is_traded_for_the_cookie_and_dropped_from_the_url() -> None:
    launch = Launch(PORT)
    async with _client(launch) as client:
        r = await client.get(f"/wizard?step=chat&token={launch.token}")
    async with _client(launch) as client:
        wrong = await client.get("/?token=not-the-token")
    assert r.status_code == 303
    assert r.headers["location"] == "/wizard?step=chat"
    cookie = r.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE_NAME}={launch.session};")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
    assert wrong.status_code == 403 and "set-cookie" not in wrong.headers


async def _websocket(launch: Launch, headers: list[tuple[bytes, bytes]]) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []
    messages = [{"type": "websocket.connect"}]

    async def receive() -> dict[str, Any]:
        return messages.pop(0) if messages else {"type": "websocket.disconnect"}

    async def send(message: Any) -> None:
        sent.append(dict(message))

    scope = {"type": "websocket", "path": "/_nicegui_ws/socket.io/", "headers": headers}
    await LoopbackGuard(_ok_app, launch)(scope, receive, send)
    return sent


@pytest.mark.anyio
async def test_guard_closes_a_websocket_without_cookie_or_origin_before_accepting() -> None:
    launch = Launch(PORT)
    host = (b"host", f"127.0.0.1:{PORT}".encode())
    origin = (b"origin", f"http://127.0.0.1:{PORT}".encode())
    cookie = (b"cookie", f"{COOKIE_NAME}={launch.session}".encode())
    assert await _websocket(launch, [host, origin, cookie]) == [{"type": "websocket.accept"}]
    for headers in ([host, origin], [host, cookie], [host, (b"origin", b"http://evil"), cookie]):
        sent = await _websocket(launch, headers)
        assert [m["type"] for m in sent] == ["websocket.close"]


# -- a real server process --------------------------------------------------------------------
@dataclass
class Served:
    port: int
    url: str  # with the token
    token: str
    process: subprocess.Popen[str]
    started_s: float

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def serve_env(home: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CITEWISE_", "PYTEST_", "NICEGUI_"))
    }
    env.update(
        CITEWISE_HOME=str(home),
        PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring",
        PYTHONUNBUFFERED="1",
        **extra,
    )
    return env


def start_server(home: Path, env: dict[str, str], timeout_s: float = 60.0) -> Served:
    """Start `serve --browser` and wait until a page answers; the time that took is kept."""
    port = _free_port()
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "cli.serve", "--browser", "--port", str(port)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    match = re.search(r"(http://127\.0\.0\.1:\d+/\?token=(\S+))", line)
    if match is None:
        process.kill()
        raise AssertionError(f"no URL printed: {line!r} {process.stderr.read()!r}")  # type: ignore[union-attr]
    served = Served(port, match.group(1), match.group(2), process, 0.0)
    deadline = started + timeout_s
    while time.monotonic() < deadline:
        try:
            r = httpx.get(served.url, follow_redirects=True, timeout=2)
            if r.status_code == 200:
                served.started_s = time.monotonic() - started
                return served
        except httpx.TransportError:
            pass
        if process.poll() is not None:
            break
        time.sleep(0.1)
    process.kill()
    raise AssertionError(f"server did not come up: {process.stderr.read()!r}")  # type: ignore[union-attr]


def stop_server(served: Served) -> None:
    served.process.terminate()
    try:
        served.process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        served.process.kill()
        served.process.wait()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("serve-home")
    s = start_server(home, serve_env(home))
    try:
        yield s
    finally:
        stop_server(s)


def _session(served: Served) -> str:
    r = httpx.get(served.url, follow_redirects=False, timeout=5)
    assert r.status_code == 303
    return r.cookies[COOKIE_NAME]


def test_real_server_trades_the_token_for_an_httponly_samesite_strict_cookie(
    served: Served,
) -> None:
    r = httpx.get(served.url, follow_redirects=False, timeout=5)
    assert r.status_code == 303 and r.headers["location"] == "/"
    raw = r.headers["set-cookie"]
    assert "HttpOnly" in raw and "SameSite=Strict" in raw
    page = httpx.get(served.base + "/library", cookies={COOKIE_NAME: r.cookies[COOKIE_NAME]})
    assert page.status_code == 200 and page.headers.get("x-nicegui-content") == "page"


def test_real_server_serves_no_page_and_no_socket_without_the_cookie(served: Served) -> None:
    polling = "/_nicegui_ws/socket.io/?EIO=4&transport=polling"
    for path in ("/", "/library", "/settings", "/wizard", polling):
        r = httpx.get(served.base + path, timeout=5)
        assert r.status_code == 403, path
        assert r.headers.get("x-nicegui-content") is None
        assert '"sid"' not in r.text


def test_real_server_refuses_a_foreign_host_header(served: Served) -> None:
    cookie = {COOKIE_NAME: _session(served)}
    r = httpx.get(served.base + "/", headers={"host": "evil.example"}, cookies=cookie, timeout=5)
    assert r.status_code == 421
    rebinding = httpx.get(
        served.base + "/", headers={"host": f"evil.example:{served.port}"}, cookies=cookie
    )
    assert rebinding.status_code == 421


def test_real_server_refuses_a_foreign_origin(served: Served) -> None:
    cookie = {COOKIE_NAME: _session(served)}
    polling = "/_nicegui_ws/socket.io/?EIO=4&transport=polling"
    ours = httpx.get(served.base + polling, cookies=cookie, headers={"origin": served.base})
    assert ours.status_code == 200 and '"sid"' in ours.text
    foreign = httpx.get(
        served.base + polling, cookies=cookie, headers={"origin": "http://evil.example"}
    )
    assert foreign.status_code == 403
    page = httpx.get(served.base + "/", cookies=cookie, headers={"origin": "http://evil.example"})
    assert page.status_code == 403


def _handshake(served: Served, headers: dict[str, str]) -> str:
    """The status line a websocket upgrade to NiceGUI's socket.io gets."""
    lines = [
        "GET /_nicegui_ws/socket.io/?EIO=4&transport=websocket HTTP/1.1",
        f"Host: 127.0.0.1:{served.port}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Version: 13",
        *(f"{k}: {v}" for k, v in headers.items()),
    ]
    with socket.create_connection(("127.0.0.1", served.port), timeout=5) as s:
        s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        return s.recv(4096).decode("latin-1").split("\r\n", 1)[0]


def test_real_server_websocket_handshake_needs_cookie_and_own_origin(served: Served) -> None:
    cookie = f"{COOKIE_NAME}={_session(served)}"
    assert " 101 " in _handshake(served, {"Origin": served.base, "Cookie": cookie})
    assert " 403 " in _handshake(served, {"Origin": served.base})
    assert " 403 " in _handshake(served, {"Origin": "http://evil.example", "Cookie": cookie})
    assert " 403 " in _handshake(served, {"Cookie": cookie})


def test_real_server_listens_on_loopback_127_0_0_1_only(served: Served) -> None:
    with pytest.raises(OSError), socket.create_connection(("127.0.0.2", served.port), timeout=2):
        pass


def test_serve_refuses_a_non_loopback_host(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "cli.serve", "--browser", "--host", "0.0.0.0"],
        cwd=REPO,
        env=serve_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "127.0.0.1" in proc.stderr and "0.0.0.0" in proc.stderr
    assert "Open Citewise" not in proc.stdout
