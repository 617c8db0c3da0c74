"""A library growing to hundreds of thousands of blocks: what each size costs.

Per size, each step in its own fresh process (so its peak memory is its own): the snapshot
built from parsed blocks with their vectors given (an import whose embeddings are all cached,
parsing aside), a one-document add on top of it (copy-on-write from that parent), and a
serving process that opens the snapshot and answers searches and scans. One report with a
chart of cost against size.
"""

from __future__ import annotations

import multiprocessing
import os
import resource
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.runner import REPO, Report

SHIPPED_THRESHOLD = 30_000  # retrieval.exact_search_max_blocks as shipped
ADD_BLOCKS = 120  # the one document added: a long Markdown chapter
DIM = 512
# Sizes above 30k carry an HNSW graph; 31k is the "31k-block collection".
SIZES = (10_000, 31_000, 100_000, 300_000)
QUICK_SIZES = (2_000, 31_000)
_QUERIES = (
    "package configuration file",
    "network interface setup",
    "event loop timers",
    "garbage collection threads",
    "安装 网络 设置",
    "how do I read a file line by line",
    "kernel module parameters",
    "unicode strings and bytes",
)


def _peak_rss_mb() -> float:
    """This process's peak resident memory (Linux reports kB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _rss_mb() -> float:
    try:
        fields = Path("/proc/self/statm").read_text().split()
    except OSError:
        return float("nan")
    return int(fields[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _cpu_s() -> float:
    """CPU seconds this process has used, every thread's, user and system."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _build(directory: str, n: int, parent: str | None, extra: int) -> dict[str, Any]:
    from bench.synthetic import build_synthetic

    base = _peak_rss_mb()
    cpu = _cpu_s()
    t0 = time.perf_counter()
    manifest = build_synthetic(
        Path(directory),
        n,
        dim=DIM,
        exact_search_max_blocks=SHIPPED_THRESHOLD,
        parent=None if parent is None else Path(parent),
        extra_blocks=extra,
    )
    seconds = time.perf_counter() - t0
    cpu = _cpu_s() - cpu
    graph = manifest.vector_graph
    return {
        "seconds": seconds,
        "cpu_s": cpu,
        "peak_mb": _peak_rss_mb(),
        "start_mb": base,
        "files_mb": sum(manifest.files.values()) / 1e6,
        "graph_mb": manifest.files.get("vectors.usearch", 0) / 1e6,
        "kind": manifest.vector_index,
        "graph_threads": graph.threads if graph else None,
        "from_parent": graph.from_parent if graph else False,
    }


def _serve(directory: str, rounds: int) -> dict[str, Any]:
    """Open, first search, then timed searches and scans, as a serving process does them."""
    from engine.tools.contracts import ScanTermArgs
    from engine.tools.retrieval import search
    from engine.tools.scan_term import scan_term
    from index.snapshot import Snapshot

    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((len(_QUERIES) * rounds, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    # The libraries a server has loaded before its first search (usearch is imported lazily):
    # timed apart, so open and first search show the snapshot's own costs.
    t0 = time.perf_counter()
    import index.vectors

    loader = getattr(index.vectors, "load_usearch", None)
    if loader is not None:
        loader()
    libraries_s = time.perf_counter() - t0
    before = _rss_mb()
    t0 = time.perf_counter()
    snap = Snapshot.open(Path(directory))
    open_s = time.perf_counter() - t0
    params = snap.manifest.retrieval
    assert params is not None
    t0 = time.perf_counter()
    search(snap, _QUERIES[0], vectors[0], None, params)
    first_s = time.perf_counter() - t0
    times = []
    for i in range(len(vectors)):
        t0 = time.perf_counter()
        search(snap, _QUERIES[i % len(_QUERIES)], vectors[i], None, params)
        times.append(time.perf_counter() - t0)
    scans = {}
    folded_mb = len(snap._store().folded) / 1e6
    # "package" occurs in many blocks; a replica marker in exactly one.
    for name, term in (("frequent", "package"), ("rare", "r3x499")):
        t0 = time.perf_counter()
        result = scan_term(snap, ScanTermArgs(term=term))
        seconds = time.perf_counter() - t0
        hits = len(getattr(result, "hits", ()))
        scans[name] = {"seconds": seconds, "hits": hits, "mb_per_s": folded_mb / seconds}
    serving_mb = _rss_mb()
    snap.close()
    reopen = []
    for _ in range(5):
        t0 = time.perf_counter()
        again = Snapshot.open(Path(directory))
        reopen.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        search(again, _QUERIES[1], vectors[1], None, params)
        reopen_first = time.perf_counter() - t0
        again.close()
    return {
        "libraries_ms": libraries_s * 1000,
        "reopen_ms": statistics.median(reopen) * 1000,
        "first_search_after_reopen_ms": reopen_first * 1000,
        "open_ms": open_s * 1000,
        "first_search_ms": first_s * 1000,
        "search_p50_ms": statistics.median(times) * 1000,
        "search_p99_ms": float(np.percentile(times, 99)) * 1000,
        "searches": len(times),
        "scans": scans,
        "folded_mb": folded_mb,
        "rss_before_open_mb": before,
        "rss_serving_mb": serving_mb,
        "peak_mb": _peak_rss_mb(),
    }


def _median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run of median wall time, with every run's wall times (spread) and the median CPU
    seconds and peak memory of all of them."""
    ordered = sorted(runs, key=lambda r: r["seconds"])
    middle = dict(ordered[(len(ordered) - 1) // 2])
    middle["runs"] = [r["seconds"] for r in runs]
    middle["cpu_s"] = statistics.median(r["cpu_s"] for r in runs)
    middle["peak_mb"] = statistics.median(r["peak_mb"] for r in runs)
    return middle


def _spread(run: dict[str, Any]) -> str:
    """A median wall time and, over several runs, their range."""
    times = run["runs"]
    if len(times) == 1:
        return f"{run['seconds']:.2f}"
    return f"{run['seconds']:.2f} ({min(times):.2f}–{max(times):.2f})"


def _in_child(func: Any, *args: Any) -> dict[str, Any]:
    context = multiprocessing.get_context("spawn")
    with context.Pool(1) as pool:
        result: dict[str, Any] = pool.apply(func, args)
    return result


def _sizes(quick: bool) -> list[int]:
    wanted = os.environ.get("CITEWISE_SCALE_SIZES")
    if wanted:
        return [int(s) for s in wanted.split(",")]
    return list(QUICK_SIZES if quick else SIZES)


def scale(report: Report, quick: bool) -> None:
    report.title = "Cost against library size"
    budget_s = float(os.environ.get("CITEWISE_SCALE_BUDGET_S", "900"))
    # Full build and one-document add alternate this many times per size: on a shared machine
    # the load changes between two runs minutes apart, and alternating pairs with medians
    # keeps the add/full ratio from reading one quiet and one busy minute.
    repeats = int(os.environ.get("CITEWISE_SCALE_REPEATS", "1"))
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    skipped: list[int] = []
    last_s = 0.0
    with tempfile.TemporaryDirectory(prefix="citewise-bench-") as tmp:
        for n in _sizes(quick):
            spent = time.perf_counter() - started
            # Costs grow at least linearly: skip a size the rest of the budget cannot cover.
            if rows and spent + last_s * n / rows[-1]["blocks"] > budget_s:
                skipped.append(n)
                continue
            size_started = time.perf_counter()
            base, added = Path(tmp) / f"b{n}", Path(tmp) / f"a{n}"
            fulls, adds = [], []
            for _ in range(repeats):
                shutil.rmtree(base, ignore_errors=True)
                shutil.rmtree(added, ignore_errors=True)
                fulls.append(_in_child(_build, str(base), n, None, 0))
                adds.append(_in_child(_build, str(added), n, str(base), ADD_BLOCKS))
            full, add = _median_run(fulls), _median_run(adds)
            served = _in_child(_serve, str(added), 4 if quick else 12)
            rows.append({"blocks": n, "full": full, "add": add, "serve": served})
            last_s = time.perf_counter() - size_started
            shutil.rmtree(base, ignore_errors=True)
            shutil.rmtree(added, ignore_errors=True)
            _figures(report, rows[-1])
    rows.sort(key=lambda r: r["blocks"])  # CITEWISE_SCALE_SIZES may run the largest first
    _tables(report, rows)
    chart = _chart(rows, report)
    report.figure("chart", chart)
    report.notes.append(
        "Library: bench/synthetic.py: corpus paragraphs (Markdown chapters and the Chinese "
        "Debian reference) in documents of 500 blocks with a two-level section every 8 "
        "blocks, every block of every copy perturbed by its own marker token (r{doc}x{block}), "
        "so no copy deduplicates another; random unit vectors (dim 512): the index work does "
        "not depend on their meaning, but random vectors are HNSW's hardest case. 'Full "
        "build' = build_snapshot of every document with its vectors given (what an import "
        "whose embeddings are all cached does after parsing; parsing itself is not part of "
        f"it). 'Add one' = the same documents plus one new {ADD_BLOCKS}-block document, built "
        "with the full snapshot as parent (blocks, BM25 postings and HNSW graph carried "
        "over, copy-on-write). Serve = a fresh process opening the one-document-added "
        "snapshot and running hybrid search_blocks retrieval (8 queries × rounds, random "
        "query vectors) and the scan_term tool; its resident memory is measured after, "
        "not the NiceGUI server's. Open and first search are timed after the libraries "
        "load (usearch is imported lazily; its import is its own column), then re-timed on "
        "re-opens of the same snapshot in the same process. Peak memory is each step's "
        "process's peak RSS "
        "(ru_maxrss), interpreter and libraries included; for builds it also holds the "
        "benchmark's own synthetic records and float32 vectors of every block. Exact "
        f"search up to {SHIPPED_THRESHOLD} blocks (the shipped threshold), HNSW above. "
        f"Builds: full build and add alternated {repeats} time(s) per size, wall seconds "
        "median (min–max); CPU s = the build process's user+system seconds over all its "
        "threads (median), which other processes on the machine inflate far less than wall "
        "time."
    )
    if skipped:
        report.notes.append(
            f"Sizes {', '.join(map(str, skipped))} were not run: the remaining time budget "
            f"({budget_s:.0f} s, CITEWISE_SCALE_BUDGET_S) could not cover them at the cost "
            "the previous size showed."
        )


def _figures(report: Report, row: dict[str, Any]) -> None:
    n, full, add, serve = row["blocks"], row["full"], row["add"], row["serve"]
    report.figure(f"full_build_s_{n}", round(full["seconds"], 2))
    report.figure(f"add_one_s_{n}", round(add["seconds"], 2))
    report.figure(f"add_one_over_full_{n}", round(add["seconds"] / full["seconds"], 4))
    report.figure(f"add_one_over_full_cpu_{n}", round(add["cpu_s"] / full["cpu_s"], 4))
    report.figure(f"add_one_peak_mb_{n}", round(add["peak_mb"]))
    report.figure(f"search_p50_ms_{n}", round(serve["search_p50_ms"], 2))
    report.figure(f"open_ms_{n}", round(serve["open_ms"], 2))
    report.figure(f"first_search_ms_{n}", round(serve["first_search_ms"], 2))
    report.figure(
        f"first_search_after_reopen_ms_{n}", round(serve["first_search_after_reopen_ms"], 2)
    )
    if n > SHIPPED_THRESHOLD:
        report.target(
            f"add one / full build at {n} blocks (cached embeddings)",
            add["seconds"] / full["seconds"],
            0.1,
        )


def _tables(report: Report, rows: list[dict[str, Any]]) -> None:
    report.table(
        "Build and one-document add (index work, embeddings given)",
        [
            "blocks",
            "vectors",
            "graph threads",
            "full build s",
            "full peak MB",
            "add one s",
            "add peak MB",
            "add / full",
            "full build CPU s",
            "add one CPU s",
            "add / full CPU",
            "graph extended",
            "files MB",
            "graph MB",
        ],
        [
            [
                r["blocks"],
                r["full"]["kind"],
                r["full"]["graph_threads"] or "-",
                _spread(r["full"]),
                round(r["full"]["peak_mb"]),
                _spread(r["add"]),
                round(r["add"]["peak_mb"]),
                round(r["add"]["seconds"] / r["full"]["seconds"], 4),
                round(r["full"]["cpu_s"], 1),
                round(r["add"]["cpu_s"], 1),
                round(r["add"]["cpu_s"] / r["full"]["cpu_s"], 4),
                "yes" if r["add"]["from_parent"] else "-",
                round(r["add"]["files_mb"], 1),
                round(r["add"]["graph_mb"], 1),
            ]
            for r in rows
        ],
    )
    report.table(
        "Serving (fresh process)",
        [
            "blocks",
            "load libraries ms",
            "open ms",
            "first search ms",
            "re-open ms (median of 5)",
            "first search after re-open ms",
            "search p50 ms",
            "search p99 ms",
            "scan frequent s (hits)",
            "scan rare s (hits)",
            "scan frequent MB/s",
            "RSS before open MB",
            "RSS serving MB",
        ],
        [
            [
                r["blocks"],
                round(r["serve"]["libraries_ms"]),
                round(r["serve"]["open_ms"], 2),
                round(r["serve"]["first_search_ms"], 1),
                round(r["serve"]["reopen_ms"], 2),
                round(r["serve"]["first_search_after_reopen_ms"], 1),
                round(r["serve"]["search_p50_ms"], 2),
                round(r["serve"]["search_p99_ms"], 2),
                f"{r['serve']['scans']['frequent']['seconds']:.3f} "
                f"({r['serve']['scans']['frequent']['hits']})",
                f"{r['serve']['scans']['rare']['seconds']:.3f} "
                f"({r['serve']['scans']['rare']['hits']})",
                round(r["serve"]["scans"]["frequent"]["mb_per_s"]),
                round(r["serve"]["rss_before_open_mb"]),
                round(r["serve"]["rss_serving_mb"]),
            ]
            for r in rows
        ],
    )


def _series(rows: list[dict[str, Any]]) -> dict[str, list[float]]:
    return {
        "full build (s)": [r["full"]["seconds"] for r in rows],
        "add one document (s)": [r["add"]["seconds"] for r in rows],
        "search p50 (ms)": [r["serve"]["search_p50_ms"] for r in rows],
        "search p99 (ms)": [r["serve"]["search_p99_ms"] for r in rows],
        "first search after open (ms)": [r["serve"]["first_search_ms"] for r in rows],
        "scan frequent term (ms)": [r["serve"]["scans"]["frequent"]["seconds"] * 1e3 for r in rows],
        "scan rare term (ms)": [r["serve"]["scans"]["rare"]["seconds"] * 1e3 for r in rows],
        "serving RSS (MB)": [r["serve"]["rss_serving_mb"] for r in rows],
        "add peak RSS (MB)": [r["add"]["peak_mb"] for r in rows],
    }


def _chart(rows: list[dict[str, Any]], report: Report) -> str:
    if not rows:
        return ""
    return _draw([r["blocks"] for r in rows], _series(rows), report)


def _draw(sizes: list[int], series: dict[str, list[float]], report: Report) -> str:
    """A log-log chart of each cost against size, next to the reports; its file name."""
    out = Path(os.environ.get("CITEWISE_BENCH_OUT", REPO / "bench" / "reports"))
    out.mkdir(parents=True, exist_ok=True)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    for label, values in series.items():
        ax.plot(sizes, values, marker="o", label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("blocks in the library")
    ax.set_ylabel("cost (unit in the legend)")
    ax.set_title("Citewise cost against library size")
    ax.axvline(SHIPPED_THRESHOLD, color="grey", linestyle=":", label="exact → HNSW")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    name = "scale.svg"
    fig.savefig(out / name)
    plt.close(fig)
    report.notes.append(f"Chart: ![cost against size]({name}) (log-log).")
    return name


def merge(paths: list[Path]) -> Path:
    """One scale report (tables, figures, targets, chart) from several runs' scale.json, e.g.
    the largest size run in one process beside the smaller ones in another on a shared
    machine. A size in several runs keeps the last run's row, figures and target (e.g. a
    rerun with CITEWISE_SCALE_REPEATS). Writes scale.json and scale.md to CITEWISE_BENCH_OUT
    (bench/reports)."""
    import json

    from bench.runner import _markdown

    parts = [json.loads(p.read_text(encoding="utf-8")) for p in paths]
    report = Report(name="scale", title=parts[0]["title"])
    targets: dict[str, Any] = {}
    for part in parts:
        report.figures.update(part["figures"])
        targets.update((t["target"], t) for t in part["targets"])
    report.targets = list(targets.values())
    report.targets.sort(key=lambda t: int(t["target"].split(" at ")[1].split()[0]))
    for i, first in enumerate(parts[0]["tables"]):
        # A run made before a column was added shows "-" in it.
        header = max((part["tables"][i]["header"] for part in parts), key=len)
        by_size = {
            int(row[0]): [
                dict(zip(part["tables"][i]["header"], row, strict=True)).get(h, "-") for h in header
            ]
            for part in parts
            for row in part["tables"][i]["rows"]
        }
        report.table(first["title"], header, [by_size[n] for n in sorted(by_size)])
    build, serve = report.tables[0], report.tables[1]

    def column(table: dict[str, Any], name: str) -> list[float]:
        at = table["header"].index(name)
        return [float(str(r[at]).split()[0]) for r in table["rows"]]

    series = {
        "full build (s)": column(build, "full build s"),
        "add one document (s)": column(build, "add one s"),
        "search p50 (ms)": column(serve, "search p50 ms"),
        "search p99 (ms)": column(serve, "search p99 ms"),
        "first search after open (ms)": column(serve, "first search ms"),
        "scan frequent term (ms)": [v * 1e3 for v in column(serve, "scan frequent s (hits)")],
        "scan rare term (ms)": [v * 1e3 for v in column(serve, "scan rare s (hits)")],
        "serving RSS (MB)": column(serve, "RSS serving MB"),
        "add peak RSS (MB)": column(build, "add peak MB"),
    }
    sizes = [int(r[0]) for r in build["rows"]]
    seen: set[str] = set()
    for part in parts:
        for note in part["notes"]:
            if note not in seen and not note.startswith("Chart:"):
                seen.add(note)
                report.notes.append(note)
    report.notes.append(
        f"Merged from {len(parts)} runs ({', '.join(str(p) for p in paths)}), run at the same "
        "time on the same machine; each size's steps ran in their own processes."
    )
    report.figure("chart", _draw(sizes, series, report))
    out = Path(os.environ.get("CITEWISE_BENCH_OUT", REPO / "bench" / "reports"))
    seconds = max(float(p["seconds"]) for p in parts)
    merged = {**parts[0], "figures": report.figures, "targets": report.targets,
              "tables": report.tables, "notes": report.notes, "seconds": seconds}  # fmt: skip
    (out / "scale.json").write_text(json.dumps(merged, indent=2, ensure_ascii=False))
    target = out / "scale.md"
    target.write_text(_markdown(report, parts[0]["machine"], seconds), encoding="utf-8")
    return target


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] != ["merge"] or len(sys.argv) < 4:
        raise SystemExit("usage: python -m bench.bench_scale merge A/scale.json B/scale.json ...")
    print(merge([Path(a) for a in sys.argv[2:]]))
