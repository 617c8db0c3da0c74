"""A trace as a waterfall and its totals: pure functions over a stored TraceRecord.

Rows are in tree order (parents first, siblings by start) with offsets and widths as fractions
of the whole request, so a page only draws them. Chat tokens and embedding tokens stay apart:
they are different vendors' counts and never add up. Nothing here reads a file."""

from __future__ import annotations

import re
from typing import Any

import msgspec

from engine.trace import Span, TraceRecord
from engine.trace import model as m


class WaterfallRow(msgspec.Struct, kw_only=True):
    span_id: str
    depth: int
    kind: str
    status: str
    detail: str  # the model, the tool or the turn number the span concerns; "" when none
    offset_ms: float  # from the request's start
    duration_ms: float | None  # None: never closed
    left: float  # 0..1 of the request's duration
    width: float  # 0..1, at least a sliver so a 0 ms span still shows
    attributes: dict[str, Any]
    status_message: str = ""


class TraceTotals(msgspec.Struct, kw_only=True):
    duration_ms: float | None
    model_calls: int
    tool_calls: int  # dispatched to a tool
    refused_calls: int  # Actions the harness refused before any tool ran
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    chat_tokens: int
    embedding_tokens: int
    cost: float
    currency: str
    snapshot_id: str | None
    collection: str | None
    snapshot_status: str  # ready | ready_partial | "" (not recorded)
    prompt_bundle: str  # id@version, "" when not recorded
    model: str
    mode: str
    partial: bool
    dropped: int


def tree_order(record: TraceRecord) -> list[tuple[int, Span]]:
    """Spans in tree order (parents before children, siblings by start) with their depth."""
    children: dict[str | None, list[Span]] = {}
    ids = {s.span_id for s in record.spans}
    for span in record.spans:
        parent = span.parent_id if span.parent_id in ids else None
        children.setdefault(parent, []).append(span)
    out: list[tuple[int, Span]] = []

    def walk(parent: str | None, depth: int) -> None:
        for span in sorted(children.get(parent, []), key=lambda s: (s.start, s.span_id)):
            out.append((depth, span))
            walk(span.span_id, depth + 1)

    walk(None, 0)
    return out


def span_detail(span: Span) -> str:
    a = span.attributes
    if span.kind == "llm_call":
        return str(a.get(m.REQUEST_MODEL, ""))
    if span.kind in ("tool_call", "admission"):
        return str(a.get(m.TOOL_NAME, "") or "")
    if span.kind == "turn":
        number = a.get(m.TURN)
        if isinstance(number, int):
            return str(number)
        found = re.search(r"\d+", span.name)
        return found.group() if found else ""
    return ""


def waterfall(record: TraceRecord) -> list[WaterfallRow]:
    spans = record.spans
    if not spans:
        return []
    t0 = min(s.start for s in spans)
    ends = [s.end for s in spans if s.end is not None]
    t1 = max([*ends, *(s.start for s in spans)])
    whole = max(t1 - t0, 1e-6)
    rows: list[WaterfallRow] = []
    for depth, span in tree_order(record):
        end = span.end if span.end is not None else t1
        left = (span.start - t0) / whole
        width = max((end - span.start) / whole, 0.004)
        rows.append(
            WaterfallRow(
                span_id=span.span_id,
                depth=depth,
                kind=span.kind,
                status=span.status,
                detail=span_detail(span),
                offset_ms=(span.start - t0) * 1000,
                duration_ms=span.duration_ms,
                left=min(left, 1.0),
                width=min(width, 1.0 - min(left, 0.996)),
                attributes=dict(span.attributes),
                status_message=span.status_message,
            )
        )
    return rows


def _int(attributes: dict[str, Any], key: str) -> int:
    value = attributes.get(key, 0)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def trace_totals(record: TraceRecord) -> TraceTotals:
    s = record.summary
    manifest = record.manifest or {}
    llm = [x for x in record.spans if x.kind == "llm_call"]
    tools = [x for x in record.spans if x.kind == "tool_call"]
    dispatched = [x for x in tools if m.TOOL_CALL_ID in x.attributes]
    root = next((x for x in record.spans if x.kind == "request"), None)
    ra = root.attributes if root is not None else {}

    def tokens(key: str) -> int:
        if key in ra:
            return _int(ra, key)
        return sum(_int(x.attributes, key) for x in llm)

    bundle = manifest.get("prompt_bundle") or {}
    snapshot = manifest.get("snapshot") or {}
    chat = manifest.get("chat") or {}
    return TraceTotals(
        duration_ms=s.duration_ms,
        model_calls=len(llm),
        tool_calls=len(dispatched),
        refused_calls=len(tools) - len(dispatched),
        input_tokens=tokens(m.INPUT_TOKENS),
        output_tokens=tokens(m.OUTPUT_TOKENS),
        cache_read_tokens=tokens(m.CACHE_READ_TOKENS),
        chat_tokens=s.tokens,
        embedding_tokens=sum(_int(x.attributes, m.EMBEDDING_TOKENS) for x in tools),
        cost=s.cost,
        currency=s.currency,
        snapshot_id=s.snapshot_id or snapshot.get("id"),
        collection=s.collection or snapshot.get("collection"),
        snapshot_status=str(snapshot.get("status", "")),
        prompt_bundle=f"{bundle['id']}@{bundle['version']}" if bundle.get("id") else "",
        model=str(chat.get("model", "") or ra.get(m.REQUEST_MODEL, "")),
        mode=s.mode,
        partial=s.partial,
        dropped=s.dropped,
    )
