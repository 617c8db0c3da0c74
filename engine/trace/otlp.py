"""Optional OTLP/HTTP (JSON) export of finished traces, with their GenAI attribute names.

Off unless OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT is set; needs only
httpx. Header values (often credentials) are never logged, traced or put into an error message.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import unquote

import httpx

from engine.errors import OtlpExportError
from engine.trace.model import Span, SpanStatus

TRACES_PATH = "/v1/traces"
_STATUS_CODES: dict[SpanStatus, int] = {"unset": 0, "ok": 1, "error": 2}
_SPAN_KIND_INTERNAL = 1
_SPAN_KIND_CLIENT = 3  # a call out of the process: the model, the embedding service


def _nanos(seconds: float) -> str:
    return str(round(seconds * 1_000_000_000))


def any_value(value: Any) -> dict[str, Any]:
    """An attribute value in OTLP JSON (int64 as a decimal string, as the spec asks)."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list | tuple):
        return {"arrayValue": {"values": [any_value(v) for v in value]}}
    if value is None:
        return {"stringValue": ""}
    return {"stringValue": str(value)}


def key_values(attributes: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": any_value(v)} for k, v in attributes.items()]


def otlp_span(span: Span) -> dict[str, Any]:
    out: dict[str, Any] = {
        "traceId": span.trace_id,
        "spanId": span.span_id,
        "name": span.name,
        "kind": _SPAN_KIND_CLIENT if span.kind == "llm_call" else _SPAN_KIND_INTERNAL,
        "startTimeUnixNano": _nanos(span.start),
        "endTimeUnixNano": _nanos(span.end if span.end is not None else span.start),
        "attributes": key_values({"citewise.span.kind": span.kind, **span.attributes}),
        "events": [
            {"timeUnixNano": _nanos(e.at), "name": e.name, "attributes": key_values(e.attributes)}
            for e in span.events
        ],
        "status": {"code": _STATUS_CODES[span.status], "message": span.status_message},
    }
    if span.parent_id:
        out["parentSpanId"] = span.parent_id
    return out


def otlp_payload(spans: Sequence[Span], *, service_version: str = "") -> dict[str, Any]:
    """An ExportTraceServiceRequest in OTLP's JSON encoding."""
    resource = {"service.name": "citewise"}
    if service_version:
        resource["service.version"] = service_version
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": key_values(resource)},
                "scopeSpans": [
                    {
                        "scope": {"name": "citewise.trace", "version": service_version},
                        "spans": [otlp_span(s) for s in spans],
                    }
                ],
            }
        ]
    }


class OtlpExporter:
    """POSTs spans to `endpoint` (the full URL, usually ending in /v1/traces). Blocking: run it
    in a worker thread (the trace writer does)."""

    def __init__(
        self,
        endpoint: str,
        *,
        headers: Mapping[str, str] | None = None,
        timeout_s: float = 5.0,
        service_version: str = "",
    ) -> None:
        self.endpoint = endpoint
        self.service_version = service_version
        self._client = httpx.Client(timeout=timeout_s, headers=dict(headers or {}))

    def __repr__(self) -> str:
        return f"OtlpExporter(endpoint={self.endpoint!r})"

    def export(self, spans: Sequence[Span]) -> None:
        if not spans:
            return
        payload = otlp_payload(spans, service_version=self.service_version)
        try:
            response = self._client.post(self.endpoint, json=payload)
        except httpx.HTTPError as exc:
            raise OtlpExportError(
                f"could not reach the OTLP endpoint {self.endpoint}: {type(exc).__name__}"
            ) from None
        if not 200 <= response.status_code < 300:
            raise OtlpExportError(
                f"the OTLP endpoint {self.endpoint} answered HTTP {response.status_code}"
            )

    def close(self) -> None:
        self._client.close()


def parse_headers(raw: str) -> dict[str, str]:
    """OTEL_EXPORTER_OTLP_HEADERS: `key=value` pairs separated by commas, URL-encoded."""
    out: dict[str, str] = {}
    for item in raw.split(","):
        key, sep, value = item.partition("=")
        if sep and key.strip():
            out[unquote(key.strip())] = unquote(value.strip())
    return out


def exporter_from_environment(
    environ: Mapping[str, str] | None = None, *, service_version: str = ""
) -> OtlpExporter | None:
    """The exporter the standard OTEL_EXPORTER_OTLP_* variables ask for, or None (the default)."""
    env = os.environ if environ is None else environ
    endpoint = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    if not endpoint:
        base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
        if not base:
            return None
        endpoint = base.rstrip("/") + TRACES_PATH
    headers = parse_headers(
        env.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS") or env.get("OTEL_EXPORTER_OTLP_HEADERS", "")
    )
    return OtlpExporter(endpoint, headers=headers, service_version=service_version)
