"""Evaluation reports: eval.json (the result), report.md (tables; every question run linked to
its trace) and report.png (pass rate per kind, flips, cost and tokens; recall per kind when only
retrieval ran), in one folder per evaluation. Written once; the chart never needs a display.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from engine.evaluation.outcomes import AnswerSummary
from engine.evaluation.result import RESULT_FILE, EvalResult
from index.fsutil import atomic_write

MARKDOWN_FILE = "report.md"
CHART_FILE = "report.png"


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.1%}"


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def trace_link(trace_id: str) -> str:
    """How a report row points at its trace: the command that opens it."""
    return f"`citewise trace show {trace_id}`" if trace_id else "–"


def markdown(result: EvalResult) -> str:
    lines: list[str] = [f"# Evaluation {result.eval_id}", ""]
    m = result.manifest
    if m is not None:
        bundles = ", ".join(f"{b.id}@{b.version} ({b.source}, {b.hash[:12]})" for b in m.bundles)
        lines += [
            f"- created: {m.created_at}",
            f"- gold set: {m.gold.path} ({m.gold.questions} questions, sha256 "
            f"{m.gold.sha256[:12]})",
            f"- snapshot: {m.snapshot.collection}/{m.snapshot.id} ({m.snapshot.status}, "
            f"content hash {m.snapshot.content_hash[:12]})",
            f"- prompt bundle: {bundles or '–'}",
            f"- chat model: {(m.chat or {}).get('model', '–') if not m.retrieval_only else '–'}",
            f"- runs per question: {result.runs or 'retrieval only'}",
            f"- app: {m.app_version} (build {m.app_build[:12] or '–'})",
            "",
        ]
    if result.status == "partial":
        lines += [
            "**Partial:** some runs ended without an answer for reasons outside the "
            "answer checks (model or system errors); see the rows below.",
            "",
        ]
    lines += _retrieval(result)
    if result.answers is not None:
        title = "Answers" if result.compare is None else f"Answers: {result.answers.bundle}"
        lines += _answers(result.answers, title)
    if result.compare is not None:
        lines += _answers(result.compare.answers_b, f"Answers: {result.compare.answers_b.bundle}")
        lines += _compare(result)
    lines += _regressions(result)
    if result.warnings:
        lines += ["## Warnings", "", *[f"- {w}" for w in result.warnings], ""]
    return "\n".join(lines).rstrip() + "\n"


def _retrieval(result: EvalResult) -> list[str]:
    r = result.retrieval
    lines = [
        "## Retrieval (no model)",
        "",
        f"{r.questions} questions with evidence; search_blocks over the whole collection.",
        "",
        "| kind | questions | recall@5 | recall@10 | MRR |",
        "|---|---:|---:|---:|---:|",
        f"| **all** | {r.questions} | {_pct(r.recall_at_5)} | {_pct(r.recall_at_10)} | "
        f"{r.mrr:.3f} |",
    ]
    for kind, k in r.by_kind.items():
        lines.append(
            f"| {kind} | {k.questions} | {_pct(k.recall_at_5)} | {_pct(k.recall_at_10)} | "
            f"{k.mrr:.3f} |"
        )
    missed = [row for row in r.rows if row.rank is None]
    lines += ["", f"Missed at 5: {', '.join(x.id for x in missed) or 'none'}."]
    errors = [row for row in r.rows if row.error]
    for row in errors:
        lines.append(f"- {row.id}: search failed ({_cell(row.error)})")
    lines += [
        "",
        f"### Coverage: {_pct(r.coverage_complete)} enumerated completely",
        "",
        "| question | document | scope | sections found | evidence in scope | blocks | problem |",
        "|---|---|---|---:|---:|---:|---|",
    ]
    for c in r.coverage:
        lines.append(
            f"| {c.id} | {_cell(c.document)} | {_cell(c.scope or '(whole document)')} | "
            f"{len(c.found)}/{len(c.expected)} | {c.evidence_found}/{c.evidence} | {c.blocks} | "
            f"{_cell(c.problem) or 'ok'} |"
        )
    lines += [
        "",
        f"### Scan: {_pct(r.scan_ok)} pass (exact, and ≥ 75% of the raw-text min_count)",
        "",
        "| question | term | count | naive | min_count | ratio | exact | problem |",
        "|---|---|---:|---:|---:|---:|---|---|",
    ]
    for s in r.scan:
        lines.append(
            f"| {s.id} | {_cell(s.term)} | {s.count} | {s.naive_count} | {s.min_count} | "
            f"{s.ratio:.2f} | {'yes' if s.exact else 'NO'} | {_cell(s.problem) or 'ok'} |"
        )
    return [*lines, ""]


def _answers(a: AnswerSummary, title: str) -> list[str]:
    lines = [
        f"## {title}",
        "",
        f"Bundle {a.bundle} ({a.bundle_hash[:12]}), {a.runs} run(s) per question: pass rate "
        f"{_pct(a.pass_rate)}, {len(a.flips)} question(s) flipped between runs"
        + (f" ({', '.join(a.flips)})" if a.flips else "")
        + ".",
        f"Cost {a.cost:.4f} {a.currency} ({a.cost_per_run:.4f} per run); chat tokens "
        f"{a.tokens.total} (prompt {a.tokens.prompt}, of which cache hits {a.tokens.cache_hit}; "
        f"completion {a.tokens.completion}; {a.tokens_per_run:.0f} per run).",
        "",
        "| kind | questions | runs | pass rate | passed every run | flips |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for kind, k in a.by_kind.items():
        lines.append(
            f"| {kind} | {k.questions} | {k.runs} | {_pct(k.pass_rate)} | "
            f"{k.passed_every_run} | {k.flips} |"
        )
    if a.failure_types:
        lines += [
            "",
            "Failure types (question runs): "
            + ", ".join(f"{name} {n}" for name, n in a.failure_types.items())
            + ".",
        ]
    if a.evidence_layers:
        lines += [
            "Where the evidence got to (evidence question runs): "
            + ", ".join(f"{name.replace('_', ' ')} {n}" for name, n in a.evidence_layers.items())
            + "."
        ]
    lines += [
        "",
        "| question | kind | run | passed | failures | termination | tokens | cost | trace |",
        "|---|---|---:|---|---|---|---:|---:|---|",
    ]
    for row in a.rows:
        for c in row.checks:
            lines.append(
                f"| {row.id} | {row.kind} | {c.run} | {'yes' if c.passed else 'no'} | "
                f"{_cell('; '.join(c.details)) or '–'} | {c.termination_reason} | "
                f"{c.total_tokens} | {c.cost:.4f} | {trace_link(c.trace_id)} |"
            )
    return [*lines, ""]


def _compare(result: EvalResult) -> list[str]:
    assert result.compare is not None
    c = result.compare.comparison
    lines = [
        f"## Comparison: {c.a} vs {c.b}",
        "",
        f"Same snapshot and questions. Pass rate {_pct(c.a_pass_rate)} → {_pct(c.b_pass_rate)}; "
        f"{len(c.changed)} question(s) changed outcome ({len(c.improved)} improved, "
        f"{len(c.regressed)} regressed).",
        "",
        f"| kind | {c.a} | {c.b} |",
        "|---|---:|---:|",
    ]
    for kind, (x, y) in c.by_kind.items():
        lines.append(f"| {kind} | {_pct(x)} | {_pct(y)} |")
    if c.changed:
        lines += ["", f"| question | kind | {c.a} | {c.b} |", "|---|---|---|---|"]
        for q in c.changed:
            lines.append(
                f"| {q.id} | {q.kind} | {q.a} ({q.a_passed}/{q.runs}) | "
                f"{q.b} ({q.b_passed}/{q.runs}) |"
            )
    return [*lines, ""]


def _regressions(result: EvalResult) -> list[str]:
    if not result.invalidates and not result.still_valid:
        return []
    lines = ["## Earlier results", ""]
    for inv in result.invalidates:
        parts = []
        if inv.retrieval:
            parts.append("retrieval figures invalid: " + "; ".join(inv.retrieval))
        if inv.answers and inv.answers != inv.retrieval:
            parts.append("answer figures invalid: " + "; ".join(inv.answers))
        lines.append(f"- {inv.eval_id} ({inv.created_at}): {_cell(' — '.join(parts))}")
    if result.still_valid:
        lines.append(f"- still comparable: {', '.join(result.still_valid)}")
    return [*lines, ""]


def chart(result: EvalResult, path: Path) -> None:
    """The PNG: answers (pass rate per kind, flips, cost and tokens per kind), or recall per
    kind when only retrieval ran."""
    # Imported here: matplotlib takes a second to load and only reports need it. The Figure
    # API with the Agg canvas keeps pyplot's global state (and any display) out of it.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    summaries = [s for s in (result.answers,) if s is not None]
    if result.compare is not None:
        summaries.append(result.compare.answers_b)
    if not summaries:
        r = result.retrieval
        kinds = list(r.by_kind)
        fig = Figure(figsize=(8, 4.5))
        ax = fig.subplots()
        width = 0.4
        xs = list(range(len(kinds)))
        ax.bar(
            [x - width / 2 for x in xs],
            [r.by_kind[k].recall_at_5 for k in kinds],
            width,
            label="recall@5",
        )
        ax.bar(
            [x + width / 2 for x in xs],
            [r.by_kind[k].recall_at_10 for k in kinds],
            width,
            label="recall@10",
        )
        ax.set_xticks(xs, kinds)
        ax.set_ylim(0, 1.05)
        ax.set_title(f"Retrieval recall by kind (all: {_pct(r.recall_at_5)} at 5, MRR {r.mrr:.3f})")
        ax.legend()
    else:
        kinds = list(dict.fromkeys(k for s in summaries for k in s.by_kind))
        fig = Figure(figsize=(15, 4.8))
        axes = fig.subplots(1, 3)
        width = 0.8 / len(summaries)
        xs = list(range(len(kinds)))
        for i, s in enumerate(summaries):
            offset = [x - 0.4 + width * (i + 0.5) for x in xs]
            label = f"{s.bundle} ({_pct(s.pass_rate)})"
            axes[0].bar(
                offset,
                [s.by_kind[k].pass_rate if k in s.by_kind else 0 for k in kinds],
                width,
                label=label,
            )
            axes[1].bar(
                offset,
                [s.by_kind[k].flips if k in s.by_kind else 0 for k in kinds],
                width,
                label=s.bundle,
            )
            tokens: dict[str, int] = dict.fromkeys(kinds, 0)
            for row in s.rows:
                tokens[row.kind] += sum(c.total_tokens for c in row.checks)
            axes[2].bar(
                offset,
                [tokens[k] for k in kinds],
                width,
                label=f"{s.bundle}: {s.cost:.4f} {s.currency}, {s.tokens.total} tokens",
            )
        titles = ("Pass rate per kind", "Flips per kind (questions)", "Chat tokens per kind")
        for ax, title in zip(axes, titles, strict=True):
            ax.set_xticks(xs, kinds, rotation=30, ha="right")
            ax.set_title(title)
            ax.legend(fontsize=8)
        axes[0].set_ylim(0, 1.05)
        axes[1].yaxis.set_major_locator(MaxNLocator(integer=True))
        fig.suptitle(f"Evaluation {result.eval_id}: {result.runs} run(s) per question")
    fig.tight_layout()
    FigureCanvasAgg(fig)  # attaches itself to the figure: savefig renders with Agg
    fig.savefig(path, format="png", dpi=100)


def write_report(result: EvalResult, folder: Path) -> EvalResult:
    """Write eval.json, report.md and report.png into `folder` (created); the returned result
    lists the three files in report_files (eval.json holds that list too)."""
    folder.mkdir(parents=True, exist_ok=True)
    files = (folder / RESULT_FILE, folder / MARKDOWN_FILE, folder / CHART_FILE)
    done = msgspec.structs.replace(result, report_files=tuple(str(f) for f in files))
    chart(done, files[2])
    atomic_write(files[1], markdown(done).encode("utf-8"))
    atomic_write(files[0], msgspec.json.format(msgspec.json.encode(done)) + b"\n")
    return done
