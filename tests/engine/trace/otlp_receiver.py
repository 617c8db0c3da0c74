"""A real OTLP/HTTP (JSON) trace receiver on 127.0.0.1 for tests: it decodes every export
request and keeps the spans, the headers and the raw bytes; `status` sets its HTTP answer."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


class OtlpReceiver:
    def __init__(self) -> None:
        self.status = 200
        self.exports: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.paths: list[str] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length))
                with owner._lock:
                    owner.exports.append(body)
                    owner.headers.append({k.lower(): v for k, v in self.headers.items()})
                    owner.paths.append(self.path)
                status = owner.status
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def spans(self) -> list[dict[str, Any]]:
        """Every span received, decoded from OTLP JSON."""
        with self._lock:
            return [
                span
                for export in self.exports
                for rs in export["resourceSpans"]
                for ss in rs["scopeSpans"]
                for span in ss["spans"]
            ]

    def start(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()


def value_of(any_value: dict[str, Any]) -> Any:
    """An OTLP JSON AnyValue back to a Python value."""
    if "stringValue" in any_value:
        return any_value["stringValue"]
    if "boolValue" in any_value:
        return any_value["boolValue"]
    if "intValue" in any_value:
        return int(any_value["intValue"])
    if "doubleValue" in any_value:
        return float(any_value["doubleValue"])
    if "arrayValue" in any_value:
        return [value_of(v) for v in any_value["arrayValue"].get("values", [])]
    raise AssertionError(f"not an OTLP AnyValue: {any_value}")


def attributes(span: dict[str, Any]) -> dict[str, Any]:
    return {kv["key"]: value_of(kv["value"]) for kv in span.get("attributes", [])}


@pytest.fixture
def otlp_receiver() -> Iterator[OtlpReceiver]:
    receiver = OtlpReceiver().start()
    try:
        yield receiver
    finally:
        receiver.stop()
