"""A real OpenAI-compatible `/chat/completions` server on 127.0.0.1 for tests, scripted per request.

Each chat request takes the next scripted reply (a Text answer, streamed as real SSE or sent as
one JSON body per the request's `stream` flag, or a fault); an empty script answers 500 "script
exhausted" so a test fails loudly. Every request is recorded with its exact bytes, and every SSE
chunk with the time it was written. It never listens on anything but loopback.
"""

from __future__ import annotations

import json
import math
import select
import socket
import ssl
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NoReturn
from urllib.parse import urlsplit

import pytest

DEFAULT_MODELS = ("deepseek-chat", "deepseek-reasoner")
CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")  # OpenAI-style and DeepSeek-style
MODELS_PATHS = ("/v1/models", "/models")


@dataclass(frozen=True)
class Usage:
    """Usage the server reports; None fields are computed (see `default_usage`)."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cache_hit: int | None = None  # prompt_cache_hit_tokens (default 0)
    cache_miss: int | None = None  # prompt_cache_miss_tokens (default prompt - hit)
    reasoning_tokens: int | None = None  # completion_tokens_details (default: reasoning's count)


@dataclass(frozen=True)
class Text:
    """An answer. Streamed as: a role chunk, `reasoning` then `text` in `chunk_chars`-character
    chunks (each after `chunk_delay_s`), a finish chunk, a usage chunk when the request asked
    for include_usage and `usage` is not None, then `data: [DONE]`.

    `cut_after_chunks=K` ends the answer after K SSE events (non-streaming: after half the
    body): the connection is closed mid-body, or with `cut_cleanly` the HTTP body ends properly
    but without [DONE]. `ignore_stream` answers one JSON body even when a stream was asked for.
    """

    text: str = ""
    reasoning: str = ""
    chunk_chars: int = 8
    chunk_delay_s: float = 0.0
    usage: Usage | None = Usage()
    finish_reason: str = "stop"
    cut_after_chunks: int | None = None
    cut_cleanly: bool = False
    ignore_stream: bool = False


@dataclass(frozen=True)
class Status:
    """An HTTP error with an OpenAI-style JSON error body; `echo_key` puts the request's
    Authorization header into the message, as some vendors echo (part of) the key back."""

    status: int
    message: str = "scripted error"
    code: str | None = None
    retry_after: str | None = None
    echo_key: bool = False


@dataclass(frozen=True)
class Delay:
    """Wait `seconds` before sending any header (cut short when the client leaves or the server
    stops), then behave as `then`."""

    seconds: float
    then: Reply = field(default_factory=lambda: Text("late answer"))


@dataclass(frozen=True)
class Drop:
    """Close the connection without an answer; `reset` sends a TCP RST instead of a FIN."""

    reset: bool = False


@dataclass(frozen=True)
class Malformed:
    """Status 200 with a body that is not JSON (streaming: one SSE event with that data)."""

    body: bytes = b'{"choices": [{"message": {"content": "tru'


@dataclass(frozen=True)
class EmptyChoices:
    """Status 200 with `choices: []` (streaming: only a usage chunk and [DONE])."""


@dataclass(frozen=True)
class Raw:
    """Exactly these body bytes with this status and content type (e.g. hand-written SSE)."""

    body: bytes
    content_type: str = "text/event-stream"
    status: int = 200


Reply = Text | Status | Delay | Drop | Malformed | EmptyChoices | Raw
ReplyFunction = Callable[[dict[str, Any]], Reply]  # the request's JSON body → the reply


@dataclass
class RecordedRequest:
    """One request as the server received it. `target` is the raw request target (absolute
    when it came through a proxy), `path` its path. `chunk_times` holds time.monotonic() as
    each SSE event of the answer went to the socket and `chunks` the bytes of each event (an
    event the client can have read is always recorded). `disconnected` is set when the server
    saw the client close the connection early; `finished` when the handler is done."""

    method: str
    target: str
    path: str
    headers: dict[str, str]  # lower-case names
    raw: bytes
    body: Any  # the decoded JSON, or None when the body was not JSON
    received_at: float
    chunk_times: list[float] = field(default_factory=list)
    chunks: list[bytes] = field(default_factory=list)
    disconnected: threading.Event = field(default_factory=threading.Event)
    finished: threading.Event = field(default_factory=threading.Event)


def prompt_tokens_for(body: dict[str, Any]) -> int:
    """The prompt usage the server reports: one token per 4 characters of message content."""
    messages = body.get("messages") or []
    chars = sum(len(str(m.get("content", ""))) for m in messages if isinstance(m, dict))
    return max(1, chars // 4)


def completion_tokens_for(text: str) -> int:
    return math.ceil(len(text) / 4)


def default_usage(reply: Text, body: dict[str, Any]) -> dict[str, Any] | None:
    """The `usage` object for `reply` (DeepSeek's shape, cache fields included)."""
    if reply.usage is None:
        return None
    u = reply.usage
    prompt = prompt_tokens_for(body) if u.prompt_tokens is None else u.prompt_tokens
    reasoning = (
        completion_tokens_for(reply.reasoning) if u.reasoning_tokens is None else u.reasoning_tokens
    )
    completion = (
        completion_tokens_for(reply.text) + reasoning
        if u.completion_tokens is None
        else u.completion_tokens
    )
    hit = 0 if u.cache_hit is None else u.cache_hit
    miss = max(prompt - hit, 0) if u.cache_miss is None else u.cache_miss
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_cache_hit_tokens": hit,
        "prompt_cache_miss_tokens": miss,
    }
    if reasoning:
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    return usage


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), max(1, size))]


class _Server(ThreadingHTTPServer):
    daemon_threads = False  # server_close() joins every handler thread
    block_on_close = True

    def __init__(self, owner: ChatServer, tls: ssl.SSLContext | None) -> None:
        self.owner = owner
        self.tls = tls
        super().__init__(("127.0.0.1", 0), _Handler)

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, address = super().get_request()
        if self.tls is not None:
            # A failed handshake (an untrusted certificate) drops this connection only.
            sock = self.tls.wrap_socket(sock, server_side=True)
        return sock, address

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that timed out or was cancelled and hung up is expected, not a failure.
        self.owner.handler_errors += 1


class _Stop(Exception):
    """The client went away or the server is stopping: stop answering."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # chunked SSE, as real servers send it; one request per
    server: _Server  # connection (Connection: close), so no idle keep-alive threads linger
    _record: RecordedRequest | None = None
    _rid = "chatcmpl-scripted-0"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    # -- entry points ------------------------------------------------------------------------

    def do_GET(self) -> None:
        self._receive("GET")
        try:
            owner = self.server.owner
            if not self._authorised():
                return
            if self._path() not in MODELS_PATHS:
                self._json(404, _error(f"no route GET {self._path()}", "not_found"))
                return
            models = [{"id": m, "object": "model", "owned_by": "scripted"} for m in owner.models]
            self._json(200, {"object": "list", "data": models})
        except _Stop:
            pass
        finally:
            self._done()

    def do_POST(self) -> None:
        body = self._receive("POST")
        try:
            owner = self.server.owner
            if not self._authorised():
                return
            if self._path() not in CHAT_PATHS:
                self._json(404, _error(f"no route POST {self._path()}", "not_found"))
                return
            if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
                self._json(400, _error("messages must be a list", "invalid_request_error"))
                return
            if owner.models and body.get("model") not in owner.models:
                offered = ", ".join(owner.models)
                self._json(
                    400,
                    _error(
                        f"Model Not Exist: {body.get('model')!r} (this server offers {offered})",
                        "invalid_request_error",
                    ),
                )
                return
            reply, self._rid = owner._next(body)
            while isinstance(reply, Delay):
                self._pause(reply.seconds)
                reply = reply.then
            self._behave(reply, body)
        except _Stop:
            pass
        finally:
            self._done()

    # -- request side ------------------------------------------------------------------------

    def _receive(self, method: str) -> Any:
        self.close_connection = True
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        self._record = RecordedRequest(
            method=method,
            target=self.path,
            path=self._path(),
            headers={k.lower(): v for k, v in self.headers.items()},
            raw=raw,
            body=body,
            received_at=time.monotonic(),
        )
        self.server.owner._record(self._record)
        return body

    def _path(self) -> str:
        return urlsplit(self.path).path  # absolute-form targets come through a proxy

    def _authorised(self) -> bool:
        key = self.server.owner.api_key
        if key is None or self.headers.get("Authorization") == f"Bearer {key}":
            return True
        self._json(401, _error("Authentication Fails (the API key is invalid)", "invalid_key"))
        return False

    def _done(self) -> None:
        if self._record is not None:
            self._record.finished.set()

    # -- answers -----------------------------------------------------------------------------

    def _behave(self, reply: Reply, body: dict[str, Any]) -> None:
        streaming = bool(body.get("stream"))
        match reply:
            case Drop(reset=reset):
                if reset:
                    self.connection.setsockopt(
                        socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                    )
                self.connection.close()
            case Status(status=status, message=message, code=code, retry_after=retry_after):
                if reply.echo_key:
                    message = f"{message} (key: {self.headers.get('Authorization', '')})"
                headers = {"Retry-After": retry_after} if retry_after is not None else {}
                self._json(status, _error(message, code), headers)
            case Malformed(body=raw):
                if streaming:
                    self._start_stream()
                    self._event(raw)
                    self._event(b"[DONE]")
                    self._end_stream()
                else:
                    self._send(200, raw)
            case EmptyChoices():
                usage = default_usage(Text(), body)
                if streaming:
                    self._start_stream()
                    self._event(json.dumps(self._chunk(body, [], usage)).encode())
                    self._event(b"[DONE]")
                    self._end_stream()
                else:
                    self._json(200, {**self._completion_head(body), "choices": [], "usage": usage})
            case Raw(body=raw, content_type=content_type, status=status):
                self._send(status, raw, content_type=content_type)
            case Text():
                if streaming and not reply.ignore_stream:
                    self._stream_text(reply, body)
                else:
                    self._complete_text(reply, body)
            case _:
                raise AssertionError(f"unknown reply {reply!r}")

    def _completion_head(self, body: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": self._rid,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", ""),
            "system_fingerprint": "fp_scripted",
        }

    def _complete_text(self, reply: Text, body: dict[str, Any]) -> None:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if reply.reasoning:
            message["reasoning_content"] = reply.reasoning
        answer = {
            **self._completion_head(body),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": reply.finish_reason,
                }
            ],
        }
        usage = default_usage(reply, body)
        if usage is not None:
            answer["usage"] = usage
        raw = json.dumps(answer).encode()
        if reply.cut_after_chunks is not None:
            self._send(200, raw, cut_at=len(raw) // 2)
        else:
            self._send(200, raw)

    def _stream_text(self, reply: Text, body: dict[str, Any]) -> None:
        options = body.get("stream_options")
        include_usage = isinstance(options, dict) and bool(options.get("include_usage"))
        empty_usage = {"usage": None} if include_usage else {}
        events: list[tuple[float, dict[str, Any]]] = [
            (0.0, self._chunk(body, [_choice({"role": "assistant", "content": ""})], None))
        ]
        for piece in _pieces(reply.reasoning, reply.chunk_chars):
            delta = {"content": None, "reasoning_content": piece}
            events.append((reply.chunk_delay_s, self._chunk(body, [_choice(delta)], None)))
        for piece in _pieces(reply.text, reply.chunk_chars):
            events.append(
                (reply.chunk_delay_s, self._chunk(body, [_choice({"content": piece})], None))
            )
        events.append((0.0, self._chunk(body, [_choice({}, reply.finish_reason)], None)))
        usage = default_usage(reply, body)
        if include_usage and usage is not None:
            events.append((0.0, self._chunk(body, [], usage)))
        self._start_stream()
        cut = reply.cut_after_chunks
        for n, (delay, event) in enumerate(events):
            if cut is not None and n >= cut:
                break
            if delay:
                self._pause(delay)
            if "usage" not in event:
                event.update(empty_usage)
            self._event(json.dumps(event, ensure_ascii=False).encode())
        else:
            if cut is None or cut > len(events):
                self._event(b"[DONE]")
                self._end_stream()
                return
        if reply.cut_cleanly:
            self._end_stream()
        # Otherwise the handler returns and the socket closes in the middle of the body.

    def _chunk(
        self, body: dict[str, Any], choices: list[dict[str, Any]], usage: dict[str, Any] | None
    ) -> dict[str, Any]:
        chunk: dict[str, Any] = {
            "id": self._rid,
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body.get("model", ""),
            "system_fingerprint": "fp_scripted",
            "choices": choices,
        }
        if usage is not None:
            chunk["usage"] = usage
        return chunk

    # -- the wire ----------------------------------------------------------------------------

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(payload).encode(), headers=headers)

    def _send(
        self,
        status: int,
        raw: bytes,
        *,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
        cut_at: int | None = None,
    ) -> None:
        headers = {
            "Content-Type": content_type,
            "Content-Length": str(len(raw)),
            "Connection": "close",
            **(headers or {}),
        }
        self._head(status, headers)
        self._write(raw if cut_at is None else raw[:cut_at])

    def _start_stream(self) -> None:
        self._head(
            200,
            {
                "Content-Type": "text/event-stream; charset=utf-8",
                "Cache-Control": "no-cache",
                "Transfer-Encoding": "chunked",
                "Connection": "close",
            },
        )

    def _head(self, status: int, headers: dict[str, str]) -> None:
        try:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
        except OSError:
            self._gone()

    def _event(self, data: bytes) -> None:
        event = b"data: " + data + b"\n\n"
        record = self._record
        if record is None:
            self._write(b"%X\r\n%s\r\n" % (len(event), event))
            return
        # Recorded before the write, so a client that has read it always finds it recorded.
        with self.server.owner._lock:
            record.chunk_times.append(time.monotonic())
            record.chunks.append(event)
        try:
            self._write(b"%X\r\n%s\r\n" % (len(event), event))
        except _Stop:
            with self.server.owner._lock:
                record.chunk_times.pop()
                record.chunks.pop()
            raise

    def _end_stream(self) -> None:
        self._write(b"0\r\n\r\n")

    def _write(self, data: bytes) -> None:
        try:
            self.wfile.write(data)
        except OSError:
            self._gone()

    def _gone(self) -> NoReturn:
        if self._record is not None:
            self._record.disconnected.set()
        raise _Stop

    def _pause(self, seconds: float) -> None:
        """Sleep, watching for the client hanging up (EOF or RST) and for the server stopping."""
        owner = self.server.owner
        deadline = time.monotonic() + seconds
        plain = not isinstance(self.connection, ssl.SSLSocket)
        while (remaining := deadline - time.monotonic()) > 0:
            if owner._stopping.is_set():
                raise _Stop
            step = min(remaining, 0.02)
            if not plain:
                owner._stopping.wait(step)
                continue
            readable, _, _ = select.select([self.connection], [], [], step)
            if readable:
                try:
                    peeked = self.connection.recv(1, socket.MSG_PEEK)
                except OSError:
                    peeked = b""
                if not peeked:
                    self._gone()
                time.sleep(step)  # unexpected bytes from the client: keep waiting


def _choice(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    return {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}


def _error(message: str, code: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "code": code}}


class ChatServer:
    """The scriptable server. `url` is an OpenAI-style base URL (ends in /v1); `origin` has no
    path (DeepSeek-style base URL, or a proxy address). `models` are the model names it accepts
    (empty: any); with `api_key` set, another key gets 401."""

    def __init__(
        self,
        *,
        models: Sequence[str] = DEFAULT_MODELS,
        api_key: str | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.models = list(models)
        self.api_key = api_key
        self.handler_errors = 0
        self._lock = threading.Lock()
        self._script: deque[Reply | ReplyFunction] = deque()
        self._requests: list[RecordedRequest] = []
        self._ids = 0
        self._stopping = threading.Event()
        self._httpd = _Server(self, tls)
        self._scheme = "https" if tls is not None else "http"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def origin(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"{self._scheme}://{host!s}:{port}"

    @property
    def url(self) -> str:
        return self.origin + "/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received (chat and model list), in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def remaining(self) -> int:
        """Scripted replies not used yet."""
        with self._lock:
            return len(self._script)

    def script(self, *replies: Reply | ReplyFunction) -> None:
        """Queue replies for the next chat requests, in order; a function gets the request's
        JSON body and returns the reply. Once the script is empty, requests get a 500."""
        with self._lock:
            self._script.extend(replies)

    def clear_script(self) -> int:
        """Drop the replies not used yet (a benchmark's next scenario starts clean); how many."""
        with self._lock:
            left = len(self._script)
            self._script.clear()
            return left

    def start(self) -> ChatServer:
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

    def _next(self, body: dict[str, Any]) -> tuple[Reply, str]:
        """The reply for this chat request and its response id."""
        with self._lock:
            item = self._script.popleft() if self._script else None
            self._ids += 1
            rid = f"chatcmpl-scripted-{self._ids}"
        if item is None:
            return Status(500, "script exhausted: the test scripted fewer replies than calls"), rid
        return (item(body) if callable(item) else item), rid


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    """A running ChatServer, stopped (threads joined, sockets closed) after the test."""
    server = ChatServer().start()
    try:
        yield server
    finally:
        server.stop()
