"""The benchmark runner behind `citewise bench [NAME…]`.

Each benchmark is a function that measures side by side with its peer in one run and returns
its figures; the runner prints them and writes `<name>.json` and a Markdown summary with the
machine's description into the report folder. Benchmarks write data only into temporary
directories.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path
from typing import Any

from rich.console import Console

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus"

console = Console(stderr=True, highlight=False)


@dataclass
class Report:
    """What one benchmark found: figures (numbers), targets met or missed, and notes."""

    name: str
    title: str
    figures: dict[str, Any] = field(default_factory=dict)
    targets: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    tables: list[dict[str, Any]] = field(default_factory=list)

    def figure(self, key: str, value: Any) -> None:
        self.figures[key] = value
        console.print(f"  {key}: {value}")

    def target(self, what: str, value: float, limit: float, *, at_most: bool = True) -> None:
        met = value <= limit if at_most else value >= limit
        self.targets.append(
            {
                "target": what,
                "value": round(value, 4),
                "limit": limit,
                "met": met,
                "rule": "≤" if at_most else "≥",
            }
        )
        mark = "[green]met[/]" if met else "[red]missed[/]"
        console.print(f"  target {what}: {value:.4g} {'≤' if at_most else '≥'} {limit} → {mark}")

    def table(self, title: str, header: list[str], rows: list[list[Any]]) -> None:
        self.tables.append({"title": title, "header": header, "rows": rows})


# name -> "module:function"; each function takes (Report, quick: bool) and fills the report.
BENCHMARKS: dict[str, str] = {
    "import_pace": "bench.bench_ingest:import_pace",
    "import_pace_realworld": "bench.bench_ingest:import_pace_realworld",
    "import_stages": "bench.bench_ingest:import_stages",
    "incremental_add": "bench.bench_ingest:incremental_add",
    "snapshot_open": "bench.bench_snapshot:snapshot_open",
    "vector_threshold": "bench.bench_snapshot:vector_threshold",
    "turn_overhead": "bench.bench_harness:turn_overhead",
    "first_char_latency": "bench.bench_harness:first_char_latency",
    "search_latency": "bench.bench_retrieval:search_latency",
    "bm25_peers": "bench.bench_retrieval:bm25_peers",
    "scan_throughput": "bench.bench_retrieval:scan_throughput",
    "list_blocks_cost": "bench.bench_retrieval:list_blocks_cost",
    "retrieval_quality": "bench.bench_retrieval_quality:retrieval_quality",
    "trace_throughput": "bench.bench_trace:spans_per_second",
    "trace_overhead": "bench.bench_trace:tracing_overhead",
    "trace_answer_latency": "bench.bench_trace:answer_latency",
    "ui_responsiveness": "bench.bench_ui:ui_responsiveness",
    "crash_iterations": "bench.bench_crash:crash_iterations",
    "crash_point_overhead": "bench.bench_crash:point_overhead",
    "load": "bench.bench_load:concurrent_questions",
    "provider_faults": "bench.bench_faults:faults",
    "injection": "bench.bench_injection:injection",
    "text_quality": "bench.bench_text_quality:text_quality",
    "ocr": "bench.bench_ocr:ocr_recall",
    "ocr_import": "bench.bench_ocr:ocr_import",
    "resume_reuse": "bench.bench_resume:resume_reuse",
    "cold_start": "bench.bench_startup:cold_start",
    "embedding_rate": "bench.bench_embedding:embedding_rate",
    "scale": "bench.bench_scale:scale",
}


def machine() -> dict[str, Any]:
    mem = None
    try:
        with open("/proc/meminfo") as f:
            mem = f.readline().split()[1] + " kB"
    except OSError:
        pass
    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(
                (ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu
            )
    except OSError:
        pass
    return {
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory": mem,
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }


def _markdown(report: Report, info: dict[str, Any], seconds: float) -> str:
    lines = [f"# {report.title}", "", f"Benchmark `{report.name}`, {seconds:.1f} s.", ""]
    lines += ["## Machine", ""] + [f"- {k}: {v}" for k, v in info.items()] + [""]
    if report.targets:
        lines += [
            "## Targets",
            "",
            "| target | value | rule | limit | met |",
            "|---|---|---|---|---|",
        ]
        for t in report.targets:
            lines.append(
                f"| {t['target']} | {t['value']} | {t['rule']} | {t['limit']} | "
                f"{'yes' if t['met'] else 'NO'} |"
            )
        lines.append("")
    lines += ["## Figures", "", "| figure | value |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in report.figures.items()] + [""]
    for t in report.tables:
        lines += [f"## {t['title']}", "", "| " + " | ".join(t["header"]) + " |"]
        lines.append("|" + "---|" * len(t["header"]))
        lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in t["rows"]]
        lines.append("")
    if report.notes:
        lines += ["## Notes", ""] + [f"- {n}" for n in report.notes] + [""]
    return "\n".join(lines)


def run_benchmarks(names: list[str], *, quick: bool = False, out_dir: Path | None = None) -> int:
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        console.print(f"unknown benchmark(s) {', '.join(unknown)}; known: {', '.join(BENCHMARKS)}")
        return 2
    # Benchmarks run from a source checkout: they read ../shared/corpus and reuse the scripted
    # loopback servers of tests/servers as zero-latency peers.
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    out_dir = out_dir or Path(os.environ.get("CITEWISE_BENCH_OUT", REPO / "bench" / "reports"))
    out_dir.mkdir(parents=True, exist_ok=True)
    info = machine()
    summary = []
    for name in names or list(BENCHMARKS):
        module, func = BENCHMARKS[name].split(":")
        bench: Callable[[Report, bool], None] = getattr(import_module(module), func)
        report = Report(name=name, title=name)
        console.print(f"[bold]{name}[/]")
        t0 = time.perf_counter()
        bench(report, quick)
        seconds = time.perf_counter() - t0
        payload = {
            "name": name,
            "title": report.title,
            "quick": quick,
            "seconds": round(seconds, 2),
            "machine": info,
            "figures": report.figures,
            "targets": report.targets,
            "tables": report.tables,
            "notes": report.notes,
        }
        (out_dir / f"{name}.json").write_text(json.dumps(payload, indent=2, ensure_ascii=False))
        (out_dir / f"{name}.md").write_text(_markdown(report, info, seconds), encoding="utf-8")
        summary.append(payload)
    (out_dir / "summary.md").write_text(
        "\n\n".join((out_dir / f"{p['name']}.md").read_text(encoding="utf-8") for p in summary),
        encoding="utf-8",
    )
    console.print(f"reports written to {out_dir}")
    return 0
