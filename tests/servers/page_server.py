"""A tiny HTTP server on 127.0.0.1 that is not a chat API: every request, whatever the path or
method, gets the same scripted answer (a web page, a 404, a 403 with a vendor's JSON error, a
JSON document of another API). For telling a wrong address from a refused key over real sockets.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

HOMEPAGE = (
    b"<!doctype html><html><head><title>Welcome</title></head>"
    b"<body><h1>Welcome to our homepage</h1><p>Nothing to see here.</p></body></html>"
)


@dataclass(frozen=True)
class Page:
    status: int = 200
    content_type: str = "text/html; charset=utf-8"
    body: bytes = HOMEPAGE


def html(status: int = 200, body: bytes = HOMEPAGE) -> Page:
    return Page(status, "text/html; charset=utf-8", body)


def json_page(status: int, document: Any) -> Page:
    return Page(status, "application/json", json.dumps(document).encode("utf-8"))


def vendor_refusal(status: int = 403) -> Page:
    """A vendor's OpenAI-style JSON error for a key it does not accept."""
    error = {"message": "Authentication Fails, the api key is invalid", "type": "auth_error"}
    return json_page(status, {"error": error})


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _answer(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        if length:
            self.rfile.read(length)
        page = self.server.page
        self.server.paths.append(self.path)
        self.send_response(page.status)
        self.send_header("content-type", page.content_type)
        self.send_header("content-length", str(len(page.body)))
        self.end_headers()
        self.wfile.write(page.body)

    do_GET = do_POST = _answer


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, page: Page) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.page = page
        self.paths: list[str] = []


@dataclass
class Served:
    url: str
    paths: list[str]


@contextmanager
def serving(page: Page) -> Iterator[Served]:
    """Serve `page` to every request on a free loopback port until the block ends."""
    server = _Server(page)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01})
    thread.start()
    try:
        yield Served(f"http://127.0.0.1:{server.server_address[1]}", server.paths)
    finally:
        server.shutdown()
        thread.join()
        server.server_close()
