"""Attacks on the running UI server over real loopback sockets: DNS rebinding, cross-origin
requests and websocket handshakes, forged, stale and leaked tokens, non-loopback binding, and
path traversal in every route that names a file.

One `citewise serve --browser` process runs for the module in its own data directory, which
holds a canary file outside every served root; no response may ever contain it. Every attempt
is counted and must be refused with the status the guard documents (421 wrong host, 403 foreign
origin or no session, 404 for a file that is not served).
"""

from __future__ import annotations

import json
import secrets
import socket
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect
from websockets.typing import Origin

from tests.corpus import REPO
from tests.web.test_security import Served, serve_env, start_server, stop_server
from web.security import COOKIE_NAME

ATTEMPTS: Counter[str] = Counter()
CANARY_TEXT = "citewise-canary-" + secrets.token_hex(12)
WS_PATH = "/_nicegui_ws/socket.io/?EIO=4&transport=websocket"
POLLING_PATH = "/_nicegui_ws/socket.io/?EIO=4&transport=polling"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("attack-home")
    (root / "canary.txt").write_text(CANARY_TEXT, encoding="utf-8")
    # A symlink planted in the data directory, pointing at the canary and at a system file.
    (root / "ui").mkdir()
    (root / "ui" / "canary-link.txt").symlink_to(root / "canary.txt")
    (root / "ui" / "passwd-link").symlink_to("/etc/passwd")
    return root


@pytest.fixture(scope="module")
def served(home: Path) -> Iterator[Served]:
    s = start_server(home, serve_env(home))
    try:
        yield s
    finally:
        stop_server(s)


@pytest.fixture(scope="module")
def cookie(served: Served) -> str:
    r = httpx.get(served.url, follow_redirects=False, timeout=5)
    assert r.status_code == 303
    return r.cookies[COOKIE_NAME]


def _raw(served: Served, request: bytes) -> tuple[int, bytes]:
    """Send bytes as they are (no client normalises them); the status and the whole reply."""
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as s:
        s.sendall(request)
        chunks = []
        while True:
            try:
                data = s.recv(65536)
            except (TimeoutError, ConnectionResetError):
                break
            if not data:
                break
            chunks.append(data)
            if b"\r\n\r\n" in b"".join(chunks) and _complete(b"".join(chunks)):
                break
    reply = b"".join(chunks)
    if not reply:
        return 0, b""  # the server closed the connection without an answer: refused too
    return int(reply.split(b" ", 2)[1]), reply


def _complete(reply: bytes) -> bool:
    head, _, body = reply.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return len(body) >= int(line.split(b":", 1)[1])
    return False


def _leaks(body: bytes) -> bool:
    return CANARY_TEXT.encode() in body or b"root:x:0:0" in body


# -- DNS rebinding: the Host header ------------------------------------------------------------
def _hosts(port: int) -> list[str]:
    return [
        "evil.example",
        f"evil.example:{port}",
        f"127.0.0.1.evil.example:{port}",
        f"localhost.evil.example:{port}",
        f"localhost.:{port}",
        f"127.0.0.1.:{port}",
        f"LOCALHOST:{port}",
        f"127.0.0.1:{port + 1}",
        f"127.0.0.1:0{port}",
        "127.0.0.1",
        "localhost",
        f"[::1]:{port}",
        f"[::ffff:127.0.0.1]:{port}",
        f"[::ffff:7f00:1]:{port}",
        f"0.0.0.0:{port}",
        f"127.1:{port}",
        f"2130706433:{port}",
        f"0x7f000001:{port}",
        f"127.0.0.2:{port}",
        f"user@127.0.0.1:{port}",
        f"127.0.0.1:{port}@evil.example",
        f"127.0.0.1:{port}/",
        "",
    ]


def test_rebinding_host_headers_are_refused_with_421_even_with_a_session(
    served: Served, cookie: str
) -> None:
    for host in _hosts(served.port):
        for path in ("/", "/library", POLLING_PATH, f"/?token={served.token}"):
            request = (
                f"GET {path} HTTP/1.1\r\nHost: {host}\r\nCookie: {COOKIE_NAME}={cookie}\r\n"
                "Connection: close\r\n\r\n"
            ).encode()
            status, reply = _raw(served, request)
            ATTEMPTS["host header"] += 1
            assert status in (400, 421), (host, path, reply[:200])
            assert b"set-cookie" not in reply.lower(), (host, path)
            assert b'"sid"' not in reply and not _leaks(reply)


def test_absent_or_repeated_host_header_is_refused(served: Served, cookie: str) -> None:
    good = f"127.0.0.1:{served.port}"
    requests = [
        # HTTP/1.0 allows a request without Host; the guard must not treat absent as ours.
        f"GET / HTTP/1.0\r\nCookie: {COOKIE_NAME}={cookie}\r\n\r\n",
        f"GET / HTTP/1.1\r\nCookie: {COOKIE_NAME}={cookie}\r\nConnection: close\r\n\r\n",
        f"GET / HTTP/1.1\r\nHost: {good}\r\nHost: evil.example\r\nCookie: {COOKIE_NAME}={cookie}"
        "\r\nConnection: close\r\n\r\n",
        f"GET / HTTP/1.1\r\nHost: evil.example\r\nHost: {good}\r\nCookie: {COOKIE_NAME}={cookie}"
        "\r\nConnection: close\r\n\r\n",
        # An absolute-form target naming our address does not override a foreign Host.
        f"GET http://{good}/ HTTP/1.1\r\nHost: evil.example\r\nCookie: {COOKIE_NAME}={cookie}"
        "\r\nConnection: close\r\n\r\n",
    ]
    for request in requests:
        status, reply = _raw(served, request.encode())
        ATTEMPTS["host header"] += 1
        assert status in (400, 421), (request, reply[:200])
        assert b"x-nicegui-content" not in reply.lower()


# -- cross-origin HTTP and websocket -----------------------------------------------------------
def _foreign_origins(port: int) -> list[str]:
    return [
        "http://evil.example",
        "null",
        "",
        "file://",
        f"https://127.0.0.1:{port}",
        f"http://127.0.0.1:{port + 1}",
        f"http://127.0.0.1:{port}.evil.example",
        f"http://localhost.:{port}",
        f"http://[::1]:{port}",
        f"http://127.0.0.1:{port}/",
        "http://127.0.0.1",
        f"HTTP://127.0.0.1:{port}",
    ]


def test_cross_origin_http_requests_are_refused_with_403(served: Served, cookie: str) -> None:
    jar = {COOKIE_NAME: cookie}
    for origin in _foreign_origins(served.port):
        for method, path in (
            ("GET", "/"),
            ("GET", "/settings"),
            ("POST", "/"),
            ("GET", POLLING_PATH),
            ("POST", POLLING_PATH),
            ("GET", f"/?token={served.token}"),
        ):
            r = httpx.request(
                method, served.base + path, headers={"origin": origin}, cookies=jar, timeout=5
            )
            ATTEMPTS["cross-origin http"] += 1
            assert r.status_code == 403, (origin, method, path)
            assert r.headers.get("x-citewise-refused") == "foreign_origin"
            assert "set-cookie" not in r.headers and '"sid"' not in r.text


def _ws_handshake(served: Served, headers: dict[str, str]) -> int:
    lines = [
        f"GET {WS_PATH} HTTP/1.1",
        f"Host: 127.0.0.1:{served.port}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Version: 13",
        *(f"{k}: {v}" for k, v in headers.items()),
    ]
    with socket.create_connection(("127.0.0.1", served.port), timeout=5) as s:
        s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        status_line = s.recv(4096).split(b"\r\n", 1)[0]
    return int(status_line.split(b" ")[1])


def test_cross_origin_websocket_handshakes_are_refused_before_upgrade(
    served: Served, cookie: str
) -> None:
    jar = f"{COOKIE_NAME}={cookie}"
    assert _ws_handshake(served, {"Origin": served.base, "Cookie": jar}) == 101
    for origin in _foreign_origins(served.port):
        assert _ws_handshake(served, {"Origin": origin, "Cookie": jar}) == 403, origin
        ATTEMPTS["websocket origin"] += 1
    # A real websocket client, as a hostile page's script would use it.
    uri = f"ws://127.0.0.1:{served.port}{WS_PATH}"
    with connect(
        uri, origin=Origin(served.base), additional_headers={"Cookie": jar}, proxy=None
    ) as ws:
        assert str(ws.recv(timeout=5)).startswith("0{")  # engine.io's open packet
    for origin in ("http://evil.example", "null"):
        with pytest.raises(InvalidStatus) as refused:
            connect(uri, origin=Origin(origin), additional_headers={"Cookie": jar}, proxy=None)
        ATTEMPTS["websocket origin"] += 1
        assert refused.value.response.status_code == 403
    for host in (f"evil.example:{served.port}", f"localhost.:{served.port}"):
        status = _ws_handshake_with_host(served, host, jar)
        ATTEMPTS["websocket host"] += 1
        assert status == 421 or status == 403, host


def _ws_handshake_with_host(served: Served, host: str, cookie: str) -> int:
    lines = [
        f"GET {WS_PATH} HTTP/1.1",
        f"Host: {host}",
        f"Origin: http://{host}",
        f"Cookie: {cookie}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Version: 13",
    ]
    with socket.create_connection(("127.0.0.1", served.port), timeout=5) as s:
        s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        return int(s.recv(4096).split(b"\r\n", 1)[0].split(b" ")[1])


# -- tokens and cookies ------------------------------------------------------------------------
def test_forged_leaked_and_misplaced_tokens_get_no_session(served: Served, cookie: str) -> None:
    token = served.token
    attempts: list[tuple[str, dict[str, str]]] = [
        ("/", {}),
        ("/", {"cookie": f"{COOKIE_NAME}="}),
        ("/", {"cookie": f"{COOKIE_NAME}={secrets.token_urlsafe(32)}"}),
        ("/", {"cookie": f"{COOKIE_NAME}={token}"}),  # the URL token is not the session
        ("/", {"cookie": f"{COOKIE_NAME}={cookie}x"}),
        ("/", {"cookie": f"{COOKIE_NAME}={cookie[:-1]}"}),
        ("/", {"cookie": f"{COOKIE_NAME.upper()}={cookie}"}),
        ("/", {"cookie": f"other={cookie}"}),
        ("/", {"referer": f"{served.base}/?token={token}"}),  # a token leaked into a Referer
        ("/", {"authorization": f"Bearer {token}"}),
        ("/", {"x-citewise-token": token}),
        (f"/?token={token.upper()}", {}),
        (f"/?token={token}x", {}),
        (f"/?token={token[:-1]}", {}),
        (f"/?token={token}&token={token}", {}),  # ambiguous: never exchanged
        (f"/?TOKEN={token}", {}),
        (f"/?token=%20{token}", {}),
        (f"/#token={token}", {}),
        ("/?token=", {}),
        (POLLING_PATH, {"origin": served.base}),
    ]
    for path, headers in attempts:
        r = httpx.get(served.base + path, headers=headers, follow_redirects=False, timeout=5)
        ATTEMPTS["token or cookie"] += 1
        assert r.status_code == 403, (path, headers)
        assert r.headers["x-citewise-refused"] == "no_session"
        assert "set-cookie" not in r.headers
        assert r.headers.get("x-nicegui-content") is None and '"sid"' not in r.text
    post = httpx.post(served.base + "/", data={"token": token}, timeout=5)
    ATTEMPTS["token or cookie"] += 1
    assert post.status_code == 403 and "set-cookie" not in post.headers


def test_token_exchange_redirects_only_to_a_local_path(served: Served) -> None:
    for target in ("//evil.example/", "/\\evil.example/", "/%5Cevil.example/"):
        status, reply = _raw(
            served,
            f"GET {target}?token={served.token} HTTP/1.1\r\nHost: 127.0.0.1:{served.port}\r\n"
            "Connection: close\r\n\r\n".encode(),
        )
        ATTEMPTS["open redirect"] += 1
        assert status == 303, reply[:200]
        location = next(
            line.split(b":", 1)[1].strip()
            for line in reply.split(b"\r\n")
            if line.lower().startswith(b"location:")
        )
        assert location.startswith(b"/") and not location.startswith(b"//"), location
        assert b"\\" not in location and b"evil.example" not in location.split(b"?")[0][:2]
    # A decoded CR/LF in the path must not split the redirect's headers.
    status, reply = _raw(
        served,
        f"GET /a%0d%0aSet-Cookie:%20x=1?token={served.token} HTTP/1.1\r\n"
        f"Host: 127.0.0.1:{served.port}\r\nConnection: close\r\n\r\n".encode(),
    )
    ATTEMPTS["open redirect"] += 1
    assert status == 303
    assert b"\r\nset-cookie: x=1" not in reply.lower()


def test_a_token_or_cookie_from_an_earlier_launch_opens_nothing(
    home: Path, served: Served, cookie: str, tmp_path: Path
) -> None:
    """A second launch (fresh secrets) refuses what the first one handed out."""
    second = start_server(tmp_path, serve_env(tmp_path))
    try:
        assert second.token != served.token
        old_token = httpx.get(f"{second.base}/?token={served.token}", follow_redirects=False)
        old_cookie = httpx.get(f"{second.base}/library", cookies={COOKIE_NAME: cookie})
        ATTEMPTS["stale launch"] += 2
        assert old_token.status_code == 403 and "set-cookie" not in old_token.headers
        assert old_cookie.status_code == 403
        assert httpx.get(second.url, follow_redirects=True).status_code == 200
    finally:
        stop_server(second)
    # And once the server is gone, nothing answers on its port at all.
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", second.port), timeout=2):
        pass


# -- binding -----------------------------------------------------------------------------------
def _listening_addresses(port: int) -> set[str]:
    """Local addresses of every LISTEN socket on `port`, from /proc/net/tcp{,6}."""
    found: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            address, hex_port = fields[1].rsplit(":", 1)
            if int(hex_port, 16) == port and fields[3] == "0A":  # 0A = LISTEN
                found.add(address)
    return found


def test_the_server_listens_on_127_0_0_1_only(served: Served) -> None:
    if not Path("/proc/net/tcp").exists():
        pytest.skip("needs /proc/net/tcp (Linux)")
    assert _listening_addresses(served.port) == {"0100007F"}  # 127.0.0.1, little-endian hex


@pytest.mark.parametrize(
    "argv",
    [
        ["--host", "0.0.0.0"],
        ["--host", "::"],
        ["--host", "::1"],
        ["--host", "localhost"],
        ["--host", "127.0.0.2"],
        ["--host", ""],
        ["--host=192.168.1.10"],
    ],
)
def test_serve_refuses_every_non_loopback_host_argument(tmp_path: Path, argv: list[str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "cli", "serve", "--browser", *argv],
        cwd=REPO,
        env=serve_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    ATTEMPTS["bind elsewhere"] += 1
    assert proc.returncode == 2, proc.stderr
    assert "127.0.0.1" in proc.stderr and "Traceback" not in proc.stderr
    assert "Open Citewise" not in proc.stdout


@pytest.mark.parametrize(
    "extra",
    [
        {"CITEWISE_UI_HOST": "0.0.0.0"},
        {"CITEWISE_NETWORK_HOST": "0.0.0.0"},
    ],
)
def test_no_setting_can_ask_for_another_address(tmp_path: Path, extra: dict[str, str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "cli", "serve", "--browser"],
        cwd=REPO,
        env=serve_env(tmp_path, **extra),
        capture_output=True,
        text=True,
        timeout=60,
    )
    ATTEMPTS["bind elsewhere"] += 1
    assert proc.returncode == 2, proc.stderr
    assert "has no key 'host'" in proc.stderr and "Traceback" not in proc.stderr


def test_host_variables_of_the_server_libraries_do_not_move_the_socket(tmp_path: Path) -> None:
    """uvicorn and NiceGUI read no host from the environment for us; prove it stays loopback."""
    if not Path("/proc/net/tcp").exists():
        pytest.skip("needs /proc/net/tcp (Linux)")
    env = serve_env(tmp_path, UVICORN_HOST="0.0.0.0", HOST="0.0.0.0", NICEGUI_HOST="0.0.0.0")
    s = start_server(tmp_path, env)
    try:
        ATTEMPTS["bind elsewhere"] += 1
        assert _listening_addresses(s.port) == {"0100007F"}
    finally:
        stop_server(s)


# -- path traversal ----------------------------------------------------------------------------
def _routes(home: Path) -> list[str]:
    """Every route the UI server has, as NiceGUI registers it (pages included)."""
    script = (
        "import json, sys\n"
        "from nicegui import app\n"
        "from actors import App\n"
        "from web.pages import register\n"
        "register(App.from_environment())\n"
        "print(json.dumps([getattr(r, 'path', '') for r in app.routes]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO,
        env=serve_env(home),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    routes: list[str] = json.loads(out.strip().splitlines()[-1])
    return routes


def _payloads(home: Path) -> list[str]:
    canary = str(home / "canary.txt").lstrip("/")
    up = "../" * 12
    return [
        f"{up}etc/passwd",
        f"{up}{canary}",
        "..%2f" * 12 + "etc%2fpasswd",
        "%2e%2e/" * 12 + "etc/passwd",
        "%2e%2e%2f" * 12 + canary.replace("/", "%2f"),
        "%252e%252e%252f" * 12 + "etc%252fpasswd",
        "....//" * 12 + "etc/passwd",
        "..%5c" * 12 + "etc%5cpasswd",
        "..\\" * 12 + "etc\\passwd",
        "%2fetc%2fpasswd",
        "/etc/passwd",
        "//etc/passwd",
        f"/{canary}",
        "file:///etc/passwd",
        "..%00/etc/passwd",
        "nicegui.js%00.png",
        "%c0%ae%c0%ae/" * 12 + "etc/passwd",
        "..;/" * 12 + "etc/passwd",
        "ui/canary-link.txt",
        "../" * 6 + str(home / "ui" / "canary-link.txt").lstrip("/"),
        "../" * 6 + str(home / "ui" / "passwd-link").lstrip("/"),
    ]


def _fill(route: str, payload: str) -> str:
    out, rest = "", route
    while "{" in rest:
        before, _, after = rest.partition("{")
        _, _, rest = after.partition("}")
        out += before + payload
    return out + rest


def test_path_traversal_in_every_route_that_names_a_file(
    served: Served, cookie: str, home: Path, tmp_path: Path
) -> None:
    routes = _routes(tmp_path)
    file_routes = [r for r in routes if "{" in r or "/static" in r]
    # NiceGUI's library, component, resource, ESM and static routes at least.
    assert len(file_routes) >= 6, routes
    targets = [r + "/{path}" if "{" not in r else r for r in file_routes]
    targets += ["/{path}", "/_nicegui/auto/static/{path}", "/_nicegui/auto/media/{path}"]
    jar = f"{COOKIE_NAME}={cookie}"
    # The control: the static route does serve its own files, so the 404s below are refusals.
    static = next(r for r in targets if r.endswith("/static/{path}") and "auto" not in r)
    served_file = httpx.get(
        served.base + _fill(static, "nicegui.css"), cookies={COOKIE_NAME: cookie}, timeout=5
    )
    assert served_file.status_code == 200 and len(served_file.content) > 100
    for route in targets:
        for payload in _payloads(home):
            path = _fill(route, payload)
            request = (
                f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{served.port}\r\nCookie: {jar}\r\n"
                "Connection: close\r\n\r\n"
            ).encode("utf-8", "surrogateescape")
            status, reply = _raw(served, request)
            ATTEMPTS["path traversal"] += 1
            assert not _leaks(reply), (route, payload)
            assert status in (0, 400, 404, 405), (route, payload, reply[:300])
    # Page parameters that look like file names open nothing either.
    for page, param in (("/traces", "id"), ("/", "q"), ("/wizard", "step")):
        for payload in _payloads(home)[:6]:
            r = httpx.get(
                served.base + page,
                params={param: payload.replace("%2f", "/")},
                cookies={COOKIE_NAME: cookie},
                timeout=20,
            )
            ATTEMPTS["path traversal"] += 1
            assert r.status_code in (200, 303, 404) and not _leaks(r.content), (page, payload)


def test_api_documentation_and_schema_routes_are_not_served(served: Served, cookie: str) -> None:
    for path in ("/docs", "/redoc", "/openapi.json", "/docs/oauth2-redirect"):
        r = httpx.get(served.base + path, cookies={COOKIE_NAME: cookie}, timeout=5)
        ATTEMPTS["api surface"] += 1
        assert r.status_code == 404, path


def test_zz_every_attack_was_tried_and_refused() -> None:
    """Runs last in this module: the tally the hardening report quotes."""
    total = sum(ATTEMPTS.values())
    if len(ATTEMPTS) < 7:
        pytest.skip("only part of this module ran; the tally needs all of it")
    print(f"\nloopback attacks: {total} attempts, {total} refused: {dict(ATTEMPTS)}")
    assert total >= 400
    assert set(ATTEMPTS) >= {
        "host header",
        "cross-origin http",
        "websocket origin",
        "token or cookie",
        "stale launch",
        "bind elsewhere",
        "path traversal",
    }
