"""Terminal rendering of traces for `citewise trace`: the span tree with timings, tokens, cost,
budget decisions, the evidence the answer used and the versions it ran on; and the replays.

Pure formatting with rich: it reads records and never touches the store, the network or a
snapshot. Raw citation ids appear only next to the title and section they resolve to.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from engine.trace import model as m
from engine.trace.model import Span, SpanEvent, TraceSummary
from engine.trace.replay import EvidenceReplay, RerunReport, RetrievalReplay
from engine.trace.store import TraceRecord

_STATUS_STYLE = {"ok": "green", "error": "red", "unset": "yellow", "running": "yellow"}
_ARGS_CHARS = 80


def _n(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) else str(value)


def _ms(value: float | None) -> str:
    if value is None:
        return "open"
    return f"{value / 1000:.2f} s" if value >= 1000 else f"{value:.0f} ms"


def _short(text: str, limit: int = 12) -> str:
    return text[:limit] if text else "–"


def _cost(value: Any, currency: str = "") -> str:
    if not isinstance(value, int | float):
        return ""
    return f"{value:.6f}".rstrip("0").rstrip(".") + (f" {currency}" if currency else "")


def header(record: TraceRecord) -> RenderableType:
    s = record.summary
    man: Mapping[str, Any] = record.manifest or {}
    lines = Text()
    state = s.termination_reason or s.status
    lines.append(f"trace {s.trace_id}", style="bold")
    lines.append(f" · {s.kind} · ")
    lines.append(state, style=_STATUS_STYLE.get(s.status, ""))
    lines.append(f" · {s.started_at} · {_ms(s.duration_ms)} · {s.spans} spans\n")
    if s.question:
        lines.append("question: ", style="bold")
        lines.append(s.question + "\n")
    if s.kind == "request":
        lines.append(f"tokens {_n(s.tokens)} (chat) · cost {_cost(s.cost, s.currency)}\n")
    bundle = man.get("prompt_bundle") or {}
    if man:
        lines.append(
            f"versions: app {man.get('app_version', '?')} (build "
            f"{_short(str(man.get('app_build', '')))}) · prompt bundle "
            f"{bundle.get('id', '?')}@{bundle.get('version', '?')} "
            f"({bundle.get('source', '')}, hash {_short(str(bundle.get('hash', '')))}"
            f"{', parent ' + str(bundle['parent']) if bundle.get('parent') else ''}) · protocol "
            f"{man.get('protocol_version', '?')} · tool contract "
            f"{man.get('tool_contract_version') or '?'}\n"
        )
        chat = man.get("chat") or {}
        emb = man.get("embedding") or {}
        lines.append(
            f"models: chat {chat.get('provider', '?')}/{chat.get('model', '?')} · embedding "
            f"{emb.get('provider', '?')}/{emb.get('model', '?')}"
            f"{' (' + str(emb['dimensions']) + '-d)' if emb.get('dimensions') else ''}\n"
        )
        snap = man.get("snapshot") or {}
        budgets = man.get("budgets") or {}
        lines.append(
            f"snapshot {snap.get('id', '?')} of {snap.get('collection', '?')} "
            f"({snap.get('status', '')}, hash {_short(str(snap.get('content_hash', '')))}) · "
            "budgets "
            + ", ".join(f"{k.replace('_tokens', '')} {_n(v)}" for k, v in budgets.items())
            + "\n"
        )
    lines.append(f"mode {s.mode}")
    if s.manifest_hash:
        lines.append(f" · manifest {_short(s.manifest_hash, 16)}")
    if s.partial:
        lines.append("\n")
        lines.append(
            f"partial trace: {s.dropped} record(s) never reached the store "
            "(the writer was behind or failing); what is shown is incomplete",
            style="bold yellow",
        )
    return lines


def _label(span: Span, t0: float) -> Text:
    a = span.attributes
    text = Text()
    if not span.name.startswith(span.kind):  # "turn 1" says what it is; "chat x" does not
        text.append(f"{span.kind} ", style="dim")
    text.append(span.name, style="bold")
    text.append(f"  +{_ms((span.start - t0) * 1000)} · {_ms(span.duration_ms)} ")
    text.append(span.status, style=_STATUS_STYLE.get(span.status, ""))
    detail = _detail(span)
    if detail:
        text.append("\n" + detail, style="")
    if span.status == "error" and span.status_message:
        text.append(f"\n{span.status_message}", style="red")
    if a.get(m.ERROR_MESSAGE) and span.kind == "llm_call":
        text.append(f"\n{a.get(m.ERROR_CODE)}: {a.get(m.ERROR_MESSAGE)}", style="red")
    return text


def _detail(span: Span) -> str:
    a = span.attributes
    if span.kind == "request":
        return (
            f"turns {a.get(m.COUNTER_PREFIX + 'agent_turns', '?')} · tool calls "
            f"{a.get(m.COUNTER_PREFIX + 'tool_calls', '?')} · model calls "
            f"{a.get(m.COUNTER_PREFIX + 'model_calls', '?')} · tokens in "
            f"{_n(a.get(m.INPUT_TOKENS, 0))} out {_n(a.get(m.OUTPUT_TOKENS, 0))} cache "
            f"{_n(a.get(m.CACHE_READ_TOKENS, 0))} · cost "
            f"{_cost(a.get(m.COST, 0.0), str(a.get(m.CURRENCY, '')))}"
        )
    if span.kind == "turn":
        return f"prompt ≈{_n(a.get(m.PROMPT_TOKENS_ESTIMATED, 0))} tokens" + (
            " · final turn, no tools" if a.get(m.FINAL_TURN) else ""
        )
    if span.kind == "llm_call":
        parts = [f"attempt {a.get(m.ATTEMPT, 1)}"]
        if m.INPUT_TOKENS in a:
            parts.append(
                f"in {_n(a[m.INPUT_TOKENS])} (cache {_n(a.get(m.CACHE_READ_TOKENS, 0))}) out "
                f"{_n(a.get(m.OUTPUT_TOKENS, 0))}"
                + (" (counted locally)" if a.get(m.USAGE_COUNTED) else "")
            )
        if m.COST in a:
            parts.append(_cost(a[m.COST]))
        if m.FIRST_TOKEN_MS in a:
            parts.append(f"first token {_ms(float(a[m.FIRST_TOKEN_MS]))}")
        if a.get(m.FINISH_REASONS):
            parts.append("finish " + ",".join(str(x) for x in a[m.FINISH_REASONS]))
        if a.get(m.WILL_RETRY):
            parts.append("retried")
        parts.append(f"{a.get('citewise.messages.count', '?')} messages")
        return " · ".join(parts)
    if span.kind == "tool_call":
        return _tool_detail(a)
    if span.kind == "admission":
        verdict = a.get(m.ADMISSION_VERDICT, "?")
        return (
            f"{verdict}: result {_n(a.get(m.ADMISSION_RESULT_TOKENS, 0))} tokens → next prompt "
            f"{_n(a.get(m.ADMISSION_PROMPT_TOKENS, 0))}; needed {_n(a.get(m.ADMISSION_NEEDED, 0))}"
            f" of {_n(a.get(m.ADMISSION_AVAILABLE, 0))} available (used so far "
            f"{_n(a.get(m.ADMISSION_USED, 0))})"
        )
    if span.kind == "final":
        n = len(a.get(m.CITATIONS, []))
        bad = a.get(m.CITATIONS_INVALID, 0)
        return (
            f"{a.get(m.TERMINATION, '?')} · answer {_n(a.get(m.ANSWER_CHARS, 0))} chars · "
            f"{n} citation(s)" + (f", {bad} not backed by a returned block" if bad else "")
        )
    if span.kind == "ingest":
        if m.INGEST_STAGE in a:
            return f"{a[m.INGEST_STAGE]}" + (f" ({a[m.ERROR_TYPE]})" if m.ERROR_TYPE in a else "")
        keys = ("documents_total", "documents_done", "documents_failed", "blocks")
        return " · ".join(
            f"{k.replace('_', ' ')} {a['citewise.ingest.' + k]}"
            for k in keys
            if "citewise.ingest." + k in a
        )
    return ""


def _tool_detail(a: Mapping[str, Any]) -> str:
    args = str(a.get(m.TOOL_ARGS, "{}"))
    if len(args) > _ARGS_CHARS:
        args = args[: _ARGS_CHARS - 1] + "…"
    line = f"args {args} → {a.get(m.HARNESS_STATUS, '?')}/{a.get(m.TOOL_OUTCOME, '?')}"
    if m.TOOL_BLOCKS in a:
        line += f" · {len(a[m.TOOL_BLOCKS])} block(s)"
    if m.TOOL_TOKEN_ESTIMATE in a:
        line += f" · ≈{_n(a[m.TOOL_TOKEN_ESTIMATE])} tokens"
    if int(a.get(m.TOOL_ATTEMPTS, 1) or 1) > 1:
        line += f" · {a[m.TOOL_ATTEMPTS]} attempts"
    if m.EMBEDDING_TOKENS in a:
        line += f" · {_n(a[m.EMBEDDING_TOKENS])} embedding tokens"
    blocks = a.get(m.RETRIEVAL_BLOCKS, [])
    for i, citation in enumerate(blocks):
        kw = _at(a, m.RETRIEVAL_KEYWORD_RANKS, i)
        vec = _at(a, m.RETRIEVAL_VECTOR_RANKS, i)
        line += (
            f"\n  {i + 1}. {citation}  fused {float(_at(a, m.RETRIEVAL_FUSED, i) or 0):.4f} · "
            f"keyword {'#' + str(kw) if kw else '–'}"
            + (f" ({float(_at(a, m.RETRIEVAL_KEYWORD_SCORES, i) or 0):.2f})" if kw else "")
            + f" · vector {'#' + str(vec) if vec else '–'}"
            + (
                f" (sim {float(_at(a, m.RETRIEVAL_VECTOR_SIMILARITIES, i) or 0):.3f})"
                if vec
                else ""
            )
        )
    return line


def _at(a: Mapping[str, Any], key: str, i: int) -> Any:
    values = a.get(key, [])
    return values[i] if isinstance(values, list) and i < len(values) else None


def _event_line(e: SpanEvent) -> Text:
    a = e.attributes
    if e.name == "citation":
        ok = a.get("citewise.citation.valid")
        where = " · ".join(
            str(x)
            for x in (
                a.get("citewise.citation.title") or a.get("citewise.citation.source"),
                a.get("citewise.citation.section"),
                _pages(a),
            )
            if x
        )
        text = Text(f"[{a.get('citewise.citation.index', '?')}] ")
        if ok:
            returned = ", ".join(a.get("citewise.citation.returned_by", []))
            text.append(f"{where}", style="cyan")
            text.append(f"  ({a.get('citewise.citation', '')}; returned by {returned})", "dim")
        else:
            text.append(
                f"{a.get('citewise.citation', '')}: not evidence "
                f"({a.get('citewise.citation.problem', 'invalid')})",
                style="red",
            )
        return text
    detail = " · ".join(f"{k.removeprefix('citewise.')}={v}" for k, v in a.items())
    return Text(f"⚑ {e.name}" + (f": {detail}" if detail else ""), style="yellow")


def _pages(a: Mapping[str, Any]) -> str:
    start = a.get("citewise.citation.page_start")
    if start is None:
        return ""
    end = a.get("citewise.citation.page_end", start)
    return f"p. {start}" if end == start else f"pp. {start}–{end}"


def span_tree(spans: Sequence[Span]) -> RenderableType:
    if not spans:
        return Text("(no spans were recorded)", style="yellow")
    children: dict[str | None, list[Span]] = defaultdict(list)
    ids = {s.span_id for s in spans}
    for s in spans:
        children[s.parent_id if s.parent_id in ids else None].append(s)
    for group in children.values():
        group.sort(key=lambda s: (s.start, s.span_id))
    t0 = min(s.start for s in spans)
    roots = children[None]
    tree = Tree(Text("spans", style="bold"), guide_style="dim")

    def add(node: Tree, span: Span) -> None:
        branch = node.add(_label(span, t0))
        for event in span.events:
            branch.add(_event_line(event))
        for child in children.get(span.span_id, []):
            add(branch, child)

    for root in roots:
        add(tree, root)
    return tree


def render_trace(record: TraceRecord) -> RenderableType:
    return Group(header(record), Text(""), span_tree(record.spans))


def render_list(summaries: Sequence[TraceSummary]) -> RenderableType:
    if not summaries:
        return Text("no traces yet: ask a question with `citewise ask`")
    table = Table("trace", "started", "status", "tokens", "cost", "question", box=None)
    for s in summaries:
        status = Text(s.termination_reason or s.status, style=_STATUS_STYLE.get(s.status, ""))
        if s.partial:
            status.append(" (partial)", style="yellow")
        question = s.question if s.kind == "request" else f"[import {s.collection or ''}]"
        table.add_row(
            s.trace_id[:12],
            s.started_at,
            status,
            _n(s.tokens),
            _cost(s.cost),
            Text(question if len(question) <= 60 else question[:59] + "…"),  # never markup
        )
    return table


def render_evidence(replay: EvidenceReplay) -> RenderableType:
    if not replay.available:
        return Text(replay.message, style="yellow")
    parts: list[RenderableType] = [Text(replay.message, style="bold")]
    for item in replay.model_inputs:
        head = Text(
            f"\nmodel call: turn {item.turn}, attempt {item.attempt} · {_n(item.size)} bytes · "
            f"sha256 {item.sha256[:16]} ",
            style="bold",
        )
        head.append(
            "verified" if item.verified else f"NOT AVAILABLE: {item.problem}",
            style="green" if item.verified else "red",
        )
        parts.append(head)
        for message in item.messages or []:
            parts.append(Text(f"── {message.role} ──", style="cyan"))
            parts.append(Text(message.content))
    for out in replay.tool_outputs:
        parts.append(
            Text(
                f"\ntool call {out.call}: {out.tool} {json.dumps(out.args, ensure_ascii=False)}"
                f" → {out.harness_status}",
                style="bold",
            )
        )
        if out.problem:
            parts.append(Text(out.problem, style="red"))
        elif out.payload is not None:
            parts.append(Text(json.dumps(out.payload, ensure_ascii=False, indent=1)))
    if replay.answer is not None:
        parts.append(Text("\nanswer", style="bold"))
        parts.append(Text(replay.answer))
    return Group(*parts)


def render_retrieval(replay: RetrievalReplay) -> RenderableType:
    style = "green" if replay.identical else ("yellow" if replay.snapshot_available else "red")
    parts: list[RenderableType] = [Text(replay.message, style=style)]
    for d in replay.calls:
        verdict = "same" if d.identical else "DIFFERENT"
        line = Text(
            f"call {d.call} (turn {d.turn}) {d.tool} {json.dumps(d.args, ensure_ascii=False)}: "
        )
        line.append(verdict, style="green" if d.identical else "red")
        line.append(
            f" · {len(d.recorded_blocks)} recorded, {len(d.replayed_blocks)} now"
            + (" · payload byte-identical" if d.payload_identical else "")
        )
        if d.recorded_outcome != d.replayed_outcome:
            line.append(f"\n  outcome {d.recorded_outcome} → {d.replayed_outcome}", "red")
        if d.added:
            line.append(f"\n  new: {', '.join(d.added)}", "red")
        if d.removed:
            line.append(f"\n  gone: {', '.join(d.removed)}", "red")
        if d.same_blocks and not d.same_order:
            line.append("\n  same blocks, different order", "red")
        parts.append(line)
    return Group(*parts)


def render_rerun(report: RerunReport) -> RenderableType:
    lines = Text()
    lines.append(
        f"{report.passed}/{report.runs} runs passed ({report.pass_rate:.0%})\n", style="bold"
    )
    if report.failure_types:
        lines.append(
            "failures: " + ", ".join(f"{k} ×{v}" for k, v in report.failure_types.items()) + "\n",
            style="red",
        )
    lines.append(f"distinct answers: {report.distinct_answers}\n")
    if report.original is not None:
        lines.append(
            f"original: {report.original.termination_reason}, "
            f"{'passed' if report.original.passed else 'failed'}\n"
        )
        lines.append(
            f"flipped pass/fail vs. the original: {report.flipped or 'none'} · answer changed: "
            f"{report.answer_changed or 'none'} · citations changed: "
            f"{report.citations_changed or 'none'}\n"
        )
    if not report.same_configuration:
        lines.append("the configuration differs from the original's:\n", style="yellow")
    for note in report.notes:
        lines.append(f"· {note}\n", style="yellow")
    return lines
