"""The loopback guard: pure ASGI middleware in front of every HTTP request and websocket.

It admits a request only when its Host is this server's loopback address, its Origin (when sent)
is this server, and it carries the per-launch session cookie, which only the token URL printed
at launch hands out. It never lets a request through on a missing or malformed header.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

COOKIE_NAME = "citewise_session"
TOKEN_PARAM = "token"
LOOPBACK_HOST = "127.0.0.1"

# Kept strict but compatible with NiceGUI (it needs inline scripts and eval for Vue templates):
# no remote images, no plugins, no framing, no <base> hijack, forms only to ourselves.
CONTENT_SECURITY_POLICY = (
    "img-src 'self' data: blob:; object-src 'none'; frame-ancestors 'none'; "
    "base-uri 'self'; form-action 'self'"
)

_REFUSAL = (
    "<!doctype html><meta charset=utf-8><title>Citewise</title>"
    "<body style='font-family:sans-serif;max-width:40em;margin:3em auto'>"
    "<h2>Citewise: {title}</h2><p>{en}</p><p>{zh}</p>"
)


class Launch:
    """The secrets of one launch: the URL token (printed once) and the cookie it is traded for."""

    def __init__(self, port: int, token: str | None = None, session: str | None = None) -> None:
        self.port = port
        self.token = token or secrets.token_urlsafe(32)
        self.session = session or secrets.token_urlsafe(32)

    @property
    def origins(self) -> frozenset[str]:
        return frozenset({f"http://{LOOPBACK_HOST}:{self.port}", f"http://localhost:{self.port}"})

    @property
    def hosts(self) -> frozenset[str]:
        return frozenset({f"{LOOPBACK_HOST}:{self.port}", f"localhost:{self.port}"})

    def url(self, path: str = "/") -> str:
        """The URL to open: it carries the token once; the cookie does the rest."""
        return f"http://{LOOPBACK_HOST}:{self.port}{path}?{TOKEN_PARAM}={self.token}"


def _header(scope: Scope, name: bytes) -> str | None:
    """The single value of a header; None when absent, '' when repeated (never trusted)."""
    values = [v for k, v in scope.get("headers", ()) if k.lower() == name]
    if not values:
        return None
    if len(values) > 1:
        return ""
    try:
        return bytes(values[0]).decode("latin-1")
    except (TypeError, ValueError):
        return ""


def _cookie(scope: Scope, name: str) -> str | None:
    found: str | None = None
    for k, v in scope.get("headers", ()):
        if k.lower() != b"cookie":
            continue
        jar: SimpleCookie = SimpleCookie()
        try:
            jar.load(bytes(v).decode("latin-1"))
        except Exception:  # a malformed Cookie header proves nothing
            continue
        if name in jar:
            found = jar[name].value
    return found


class LoopbackGuard:
    """ASGI middleware: Host allow-list, Origin check, token-for-cookie exchange, cookie check.

    Applies to `http` and `websocket` scopes alike (NiceGUI's socket.io traffic, both the
    polling transport and the websocket upgrade, goes through here); `lifespan` passes.
    """

    def __init__(self, app: ASGIApp, launch: Launch) -> None:
        self.app = app
        self.launch = launch

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope.get("type")
        if kind not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        host = _header(scope, b"host")
        if host not in self.launch.hosts:
            await self._refuse(scope, receive, send, 421, "wrong_host")
            return
        origin = _header(scope, b"origin")
        if origin is not None and origin not in self.launch.origins:
            await self._refuse(scope, receive, send, 403, "foreign_origin")
            return
        if kind == "websocket" and origin is None:
            await self._refuse(scope, receive, send, 403, "foreign_origin")
            return
        if kind == "http" and self._token_in_query(scope):
            await self._exchange(scope, send)
            return
        session = _cookie(scope, COOKIE_NAME)
        if session is None or not hmac.compare_digest(
            session.encode(), self.launch.session.encode()
        ):
            await self._refuse(scope, receive, send, 403, "no_session")
            return
        await self.app(scope, receive, self._with_headers(send) if kind == "http" else send)

    def _token_in_query(self, scope: Scope) -> bool:
        query = bytes(scope.get("query_string", b"")).decode("latin-1")
        tokens = [v for k, v in parse_qsl(query, keep_blank_values=True) if k == TOKEN_PARAM]
        return len(tokens) == 1 and hmac.compare_digest(
            tokens[0].encode(), self.launch.token.encode()
        )

    async def _exchange(self, scope: Scope, send: Send) -> None:
        """Trade the token for the session cookie and redirect to the same URL without it."""
        query = bytes(scope.get("query_string", b"")).decode("latin-1")
        rest = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k != TOKEN_PARAM]
        location = _local_path(str(scope.get("path") or "/")) + (
            f"?{urlencode(rest)}" if rest else ""
        )
        cookie = f"{COOKIE_NAME}={self.launch.session}; Path=/; HttpOnly; SameSite=Strict"
        await send(
            {
                "type": "http.response.start",
                "status": 303,
                "headers": [
                    (b"location", location.encode("latin-1")),
                    (b"set-cookie", cookie.encode("latin-1")),
                    (b"cache-control", b"no-store"),
                    (b"referrer-policy", b"no-referrer"),
                    (b"content-length", b"0"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": b""})

    def _with_headers(self, send: Send) -> Send:
        async def wrapped(message: Message) -> None:
            if message.get("type") == "http.response.start":
                headers = list(message.get("headers", []))
                headers += [
                    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
                    (b"x-frame-options", b"DENY"),
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"no-referrer"),
                ]
                message["headers"] = headers
            await send(message)

        return wrapped

    async def _refuse(
        self, scope: Scope, receive: Receive, send: Send, status: int, reason: str
    ) -> None:
        if scope["type"] == "websocket":
            # Closing before accepting makes the server answer the handshake with 403.
            await receive()  # websocket.connect
            await send({"type": "websocket.close", "code": 1008, "reason": reason})
            return
        body = _refusal_page(reason).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"text/html; charset=utf-8"),
                    (b"content-length", str(len(body)).encode()),
                    (b"cache-control", b"no-store"),
                    (b"x-citewise-refused", reason.encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def _local_path(path: str) -> str:
    """The redirect target after the exchange: a path on this server, never another site.

    `//evil.example/` or `/\\evil.example` would be read by a browser as another host, and a
    decoded CR/LF would split the header; both become plain, re-quoted local paths."""
    if not path.startswith("/") or path.startswith("//") or "\\" in path:
        return "/"
    return quote(path, safe="/:@!$&'()*+,;=-._~")


def _refusal_page(reason: str) -> str:
    if reason == "no_session":
        return _REFUSAL.format(
            title="open the link from the terminal",
            en="This page needs the link Citewise printed when it started (it contains a "
            "one-time token). Open that link in this browser; reloading works afterwards.",
            zh="请使用 Citewise 启动时在终端打印的链接(含一次性令牌)打开此页面;"
            "之后刷新即可正常使用。",
        )
    if reason == "wrong_host":
        return _REFUSAL.format(
            title="wrong address",
            en="Citewise answers only on 127.0.0.1 or localhost with its own port. Use the link "
            "it printed when it started.",
            zh="Citewise 只接受 127.0.0.1 或 localhost 加其端口的访问;请使用启动时打印的链接。",
        )
    return _REFUSAL.format(
        title="request from another site refused",
        en="Another web site tried to talk to Citewise; it was refused. Open Citewise from "
        "the link it printed.",
        zh="其他网站尝试访问 Citewise,已被拒绝。请使用启动时打印的链接打开 Citewise。",
    )
