"""A real OpenAI-compatible `/embeddings` server on 127.0.0.1 for tests, scriptable per request.

Each request takes the next scripted behaviour (then the default: deterministic unit vectors
from a hash of each text) and is recorded with its headers and body. It runs in a background
thread on an ephemeral port; the `embedding_server` fixture stops it and joins every thread.
It never listens on anything but loopback.
"""

from __future__ import annotations

import hashlib
import json
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

DEFAULT_DIMENSIONS = 8


@dataclass(frozen=True)
class Ok:
    """A normal answer; `reverse` lists the vectors last-first (each keeps its `index`)."""

    reverse: bool = False


@dataclass(frozen=True)
class Status:
    """An HTTP error with an OpenAI-style JSON error body.

    `echo_key` puts the request's Authorization header into the error message, as some vendors
    echo (part of) the key back.
    """

    status: int
    message: str = "scripted error"
    code: str | None = None
    retry_after: str | None = None
    echo_key: bool = False


@dataclass(frozen=True)
class Delay:
    """Wait `seconds` (cut short when the server stops), then behave as `then`."""

    seconds: float
    then: Behaviour = field(default_factory=Ok)


@dataclass(frozen=True)
class Drop:
    """Close the connection without an answer; `reset` sends a TCP RST instead of a FIN."""

    reset: bool = False


@dataclass(frozen=True)
class Malformed:
    """Status 200 with a body that is not an embeddings response."""

    body: bytes = b'{"data": [{"embedding": [0.1, '


@dataclass(frozen=True)
class WrongDimension:
    """Vectors one longer than asked for (or exactly `dimensions` long)."""

    dimensions: int | None = None


@dataclass(frozen=True)
class WrongCount:
    """Status 200 with `missing` fewer vectors than texts were sent (one text at least)."""

    missing: int = 1


@dataclass(frozen=True)
class MissingUsage:
    """A normal answer without the `usage` object."""


Behaviour = Ok | Status | Delay | Drop | Malformed | WrongDimension | WrongCount | MissingUsage


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    raw: bytes
    body: Any  # the decoded JSON, or None when the body was not JSON
    received_at: float = 0.0  # time.monotonic() when the body had been read


def vector_for(text: str, dimensions: int) -> list[float]:
    """The server's embedding of `text`: deterministic, unit length."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
    v = np.random.default_rng(seed).standard_normal(dimensions)
    return [float(x) for x in v / np.linalg.norm(v)]


def tokens_for(texts: Sequence[str]) -> int:
    """The usage the server reports for `texts`: one token per 4 characters, at least 1 each."""
    return sum(max(1, len(t) // 4) for t in texts)


class _Server(ThreadingHTTPServer):
    daemon_threads = False  # server_close() joins every handler thread
    block_on_close = True

    def __init__(self, owner: EmbeddingServer) -> None:
        self.owner = owner
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that timed out and hung up is expected here, not a test failure.
        self.owner.handler_errors += 1


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # one request per connection: no idle keep-alive threads
    server: _Server
    _answering = False

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        owner._record(
            RecordedRequest(
                method="POST",
                path=self.path,
                headers={k.lower(): v for k, v in self.headers.items()},
                raw=raw,
                body=body,
                received_at=time.monotonic(),
            )
        )
        owner._arrive()
        self._answering = True
        try:
            behaviour = owner._next()
            while isinstance(behaviour, Delay):
                if owner._stopping.wait(behaviour.seconds):
                    return
                behaviour = behaviour.then
            if self.path.rstrip("/") != "/v1/embeddings":
                self._send(404, {"error": {"message": f"no route {self.path}", "code": None}})
            elif not isinstance(body, dict) or not isinstance(body.get("input"), list):
                self._send(400, {"error": {"message": "input must be a list", "code": None}})
            else:
                self._behave(behaviour, body)
        finally:
            self._answered()

    def _answered(self) -> None:
        """The request stops counting as in flight just before its answer (or hang-up) goes
        out, so a client that waits for the answer can never overlap with it."""
        if self._answering:
            self._answering = False
            self.server.owner._leave()

    def _behave(self, behaviour: Behaviour, body: dict[str, Any]) -> None:
        owner = self.server.owner
        texts = [str(t) for t in body["input"]]
        dims = int(body.get("dimensions") or owner.dimensions)
        match behaviour:
            case Drop(reset=reset):
                if reset:
                    self.connection.setsockopt(
                        socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                    )
                self._answered()
                self.connection.close()
                self.close_connection = True
            case Status(status=status, message=message, code=code, retry_after=retry_after):
                if behaviour.echo_key:
                    message = f"{message} (key: {self.headers.get('Authorization', '')})"
                headers = {"Retry-After": retry_after} if retry_after is not None else {}
                self._send(
                    status, {"error": {"message": message, "type": "x", "code": code}}, headers
                )
            case Malformed(body=raw):
                self._send_raw(200, raw)
            case WrongDimension(dimensions=wrong):
                self._send(200, self._answer(texts, wrong or dims + 1, usage=True))
            case WrongCount(missing=missing):
                answer = self._answer(texts, dims, usage=True)
                del answer["data"][max(len(texts) - missing, 0) :]
                self._send(200, answer)
            case MissingUsage():
                self._send(200, self._answer(texts, dims, usage=False))
            case Ok(reverse=reverse):
                answer = self._answer(texts, dims, usage=True)
                if reverse:
                    answer["data"].reverse()
                self._send(200, answer)
            case _:
                raise AssertionError(f"unknown behaviour {behaviour!r}")

    def _answer(self, texts: list[str], dims: int, *, usage: bool) -> dict[str, Any]:
        answer: dict[str, Any] = {
            "object": "list",
            "model": "scripted",
            "data": [
                {"object": "embedding", "index": i, "embedding": vector_for(t, dims)}
                for i, t in enumerate(texts)
            ],
        }
        if usage:
            n = tokens_for(texts)
            answer["usage"] = {"prompt_tokens": n, "total_tokens": n}
        return answer

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self._send_raw(status, json.dumps(payload).encode(), headers)

    def _send_raw(self, status: int, raw: bytes, headers: dict[str, str] | None = None) -> None:
        self._answered()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(raw)
        except OSError:
            self.server.owner.handler_errors += 1  # the client went away (e.g. it timed out)


class EmbeddingServer:
    """The scriptable server. `url` is an OpenAI-style base URL (ends in /v1)."""

    def __init__(self, dimensions: int = DEFAULT_DIMENSIONS) -> None:
        self.dimensions = dimensions
        self.handler_errors = 0
        self._lock = threading.Lock()
        self._script: deque[Behaviour] = deque()
        self._requests: list[RecordedRequest] = []
        self._in_flight = 0
        self._max_in_flight = 0
        self._stopping = threading.Event()
        self._httpd = _Server(self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def max_in_flight(self) -> int:
        """The most requests that were being answered at the same time."""
        with self._lock:
            return self._max_in_flight

    def script(self, *behaviours: Behaviour) -> None:
        """Queue behaviours for the next requests, in order; afterwards requests get Ok()."""
        with self._lock:
            self._script.extend(behaviours)

    def start(self) -> EmbeddingServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._thread.is_alive():
            self._httpd.shutdown()
            self._thread.join()
        self._httpd.server_close()  # joins the handler threads

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _next(self) -> Behaviour:
        with self._lock:
            return self._script.popleft() if self._script else Ok()

    def _arrive(self) -> None:
        with self._lock:
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1


@pytest.fixture
def embedding_server() -> Iterator[EmbeddingServer]:
    """A running EmbeddingServer, stopped (threads joined, socket closed) after the test."""
    server = EmbeddingServer().start()
    try:
        yield server
    finally:
        server.stop()
