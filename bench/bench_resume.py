"""Big documents and interrupted imports, in one run: how often progress moves while one big
document embeds (and what blocks/s and ETA it shows), how much a resumed import reuses after
a kill -9 mid-document, and OCR pages/s with the OCR cache cold and warm.

Embedding goes to the loopback OpenAI-compatible server of tests/servers (a fixed delay per
batch stands in for a vendor), so the figures are the pipeline's, not a model's. The kill is
made at the named point `embedding.batch:after-cache-write`, half-way through the document's
batches. The OCR figures recognise the same small scanned pages twice: once with an empty
OCR cache, once with the cache the first pass filled (the peer: the same work without it).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from itertools import pairwise
from pathlib import Path
from typing import Any

import anyio
import pymupdf

from bench.runner import CORPUS, REPO, Report

_mupdf: Any = pymupdf
BATCH = 8
DELAY_S = 0.15  # per embedding request
EN_PDF = CORPUS / "docs" / "debian-reference.en.pdf"


def _big_document(path: Path, sections: int) -> Path:
    lines = ["# A long handbook"]
    for s in range(sections):
        lines += [
            f"## Chapter {s}",
            f"Chapter {s} explains topic {s * 13 + 1} in its own words, step by step. " * 4,
            f"It ends with a summary of point {s}, which no other chapter repeats. " * 4,
        ]
    path.write_text("\n\n".join(lines) + "\n", encoding="utf-8")
    return path


def _env(home: Path, url: str, dims: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CITEWISE_")}
    env.update(
        {
            "CITEWISE_HOME": str(home),
            "CITEWISE_EMBEDDING_PROVIDER": "openai_compatible",
            "CITEWISE_EMBEDDING_BASE_URL": url,
            "CITEWISE_EMBEDDING_MODEL": "bench-embedding",
            "CITEWISE_EMBEDDING_DIMENSIONS": str(dims),
            "CITEWISE_EMBEDDING_API_KEY": "sk-bench",
            "CITEWISE_EMBEDDING_BATCH_SIZE": str(BATCH),
            "CITEWISE_EMBEDDING_CONCURRENCY": "1",
        }
    )
    return env


def _cadence(report: Report, doc: Path, home: Path, url: str, dims: int) -> int:
    """Import `doc` in this process, recording every progress event; returns its blocks."""
    from actors.app import App
    from engine.config import parse_config
    from engine.paths import DataDir

    os.environ["CITEWISE_EMBEDDING_API_KEY"] = "sk-bench"
    config = parse_config(
        {
            "embedding": {
                "provider": "openai_compatible",
                "base_url": url,
                "model": "bench-embedding",
                "dimensions": dims,
                "batch_size": BATCH,
                "concurrency": 1,
            }
        },
        {},
    )
    app = App(DataDir(home), config)
    events: list[tuple[float, Any]] = []

    async def go() -> Any:
        try:
            return await app.import_paths(
                [doc], on_progress=lambda p: events.append((time.perf_counter(), _copy(p)))
            )
        finally:
            await app.aclose()

    started = time.perf_counter()
    result = anyio.run(go, backend="trio")
    seconds = time.perf_counter() - started
    embedding = [(t, p) for t, p in events if p.state == "running" and p.blocks_to_embed]
    moved = [
        t for (_, prev), (t, p) in pairwise(embedding) if p.blocks_embedded != prev.blocks_embedded
    ]
    gaps = [b - a for a, b in pairwise(moved)]
    rates = [p.blocks_per_s for _, p in embedding if p.blocks_per_s]
    etas = [p.eta_s for _, p in embedding if p.eta_s is not None]
    began = embedding[0][0] if embedding else started  # the document's first blocks chunked
    first_eta = next((t - began for t, p in embedding if p.eta_s is not None), None)
    blocks = int(result.stats.blocks_chunked)
    report.figure("cadence_blocks", blocks)
    report.figure("cadence_import_s", round(seconds, 2))
    report.figure("cadence_events_while_embedding", len(embedding))
    report.figure("cadence_events_with_more_blocks", len(moved))
    report.figure("cadence_median_gap_s", round(statistics.median(gaps), 3) if gaps else None)
    report.figure("cadence_max_gap_s", round(max(gaps), 3) if gaps else None)
    report.figure(
        "cadence_first_eta_after_embedding_began_s",
        None if first_eta is None else round(first_eta, 2),
    )
    report.figure(
        "cadence_median_blocks_per_s", round(statistics.median(rates), 1) if rates else None
    )
    report.figure("cadence_distinct_etas", len(set(etas)))
    if gaps:
        report.target("longest wait for progress while embedding (s)", max(gaps), 1.0)
    return blocks


def _copy(p: Any) -> Any:
    """A snapshot of a progress event (the reporter keeps updating its one object)."""
    import msgspec

    return msgspec.structs.replace(p)


def _resume(report: Report, doc: Path, tmp: Path, url: str, dims: int, blocks: int) -> None:
    from engine.crashpoints import AT_ENV
    from engine.embedding.batching import BATCH_CACHED_POINT

    home = tmp / "resume-home"
    batches = -(-blocks // BATCH)
    kill_at = max(1, batches // 2)
    env = _env(home, url, dims)
    argv = [sys.executable, "-m", "cli", "import", "--json"]
    started = time.perf_counter()
    killed = subprocess.run(
        [*argv, str(doc)],
        cwd=REPO,
        env={**env, AT_ENV: f"{BATCH_CACHED_POINT}#{kill_at}"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    killed_s = time.perf_counter() - started
    started = time.perf_counter()
    resumed = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    resumed_s = time.perf_counter() - started
    result = json.loads(resumed.stdout) if resumed.returncode == 0 else {}
    stats = result.get("stats", {})
    report.figure("resume_killed_returncode", killed.returncode)
    report.figure("resume_batches", batches)
    report.figure("resume_killed_after_batches", kill_at)
    report.figure("resume_killed_run_s", round(killed_s, 2))
    report.figure("resume_run_s", round(resumed_s, 2))
    report.figure("resume_vectors_reused", stats.get("embedding_cache_hits"))
    report.figure("resume_blocks_embedded_again", stats.get("blocks_embedded"))
    report.figure(
        "resume_reuse_share",
        round(stats.get("embedding_cache_hits", 0) / blocks, 3) if blocks else None,
    )
    report.target(
        "vectors of finished batches reused",
        stats.get("embedding_cache_hits", 0),
        min(kill_at * BATCH, blocks),
        at_most=False,
    )


def _scan(pages: list[int], out: Path) -> Path:
    scan = _mupdf.open()
    with _mupdf.open(str(EN_PDF)) as source:
        for p in pages:
            page = source[p]
            clip = _mupdf.Rect(60, 60, page.rect.width - 60, 260)
            pix = page.get_pixmap(dpi=150, clip=clip, colorspace=_mupdf.csGRAY)
            target = scan.new_page(width=clip.width, height=clip.height)
            target.insert_image(target.rect, stream=pix.tobytes("png"))
    scan.save(str(out))
    scan.close()
    return out


def _ocr_cold_warm(report: Report, tmp: Path, quick: bool) -> None:
    from engine.parsing import ParseLimits, ocr_engine_version
    from engine.parsing.ocr import recognise_page, recognise_unreadable
    from engine.parsing.ocr_signals import PageCounts

    if not ocr_engine_version():
        report.notes.append("OCR: rapidocr-onnxruntime is not installed; not measured.")
        return
    pages = [30, 45] if quick else [30, 45, 60, 75]
    scan = _scan(pages, tmp / "scan.pdf")
    with _mupdf.open(str(scan)) as doc:
        recognise_page(doc[0])  # the engine loads once, outside the timings
    limits = ParseLimits(ocr_cache=str(tmp / "ocr.sqlite"), ocr_progress=str(tmp / "pages"))
    rows = []
    for label in ("cold", "warm"):
        Path(limits.ocr_progress).unlink(missing_ok=True)
        with _mupdf.open(str(scan)) as doc:
            started = time.perf_counter()
            recognise_unreadable(
                doc, range(doc.page_count), [[] for _ in range(doc.page_count)], [], limits
            )
            seconds = time.perf_counter() - started
        counts = PageCounts(Path(limits.ocr_progress))
        counts.read()
        rate = len(pages) / seconds
        report.figure(f"ocr_{label}_pages_per_s", round(rate, 2))
        report.figure(f"ocr_{label}_pages_from_cache", counts.cached)
        rows.append([label, len(pages), counts.cached, round(seconds, 2), round(rate, 2)])
    report.table(
        "OCR of the same scanned pages, OCR cache cold then warm",
        ["cache", "pages", "from cache", "seconds", "pages/s"],
        rows,
    )


def resume_reuse(report: Report, quick: bool) -> None:
    from tests.servers.embedding_server import Delay, EmbeddingServer

    report.title = "Big document: progress cadence, resume reuse after kill -9, OCR cache"
    report.figure("load_average_1min", round(os.getloadavg()[0], 2))
    sections = 240 if quick else 1200
    server = EmbeddingServer().start()
    try:
        server.script(*[Delay(DELAY_S)] * 100_000)
        with tempfile.TemporaryDirectory(prefix="citewise-bench-") as raw:
            tmp = Path(raw)
            doc = _big_document(tmp / "handbook.md", sections)
            blocks = _cadence(report, doc, tmp / "cadence-home", server.url, server.dimensions)
            _resume(report, doc, tmp, server.url, server.dimensions, blocks)
            _ocr_cold_warm(report, tmp, quick)
    finally:
        server.stop()
    report.notes.append(
        f"Embedding: loopback server, {DELAY_S * 1000:.0f} ms per request, batches of {BATCH}, "
        "one request at a time. The cadence counts progress events in which blocks_embedded "
        "grew while the one document embedded (events are handed out at most every 0.5 s). "
        "The resume kills the CLI at the named point after half the batches, then resumes; "
        "vectors_reused is the resumed run's embedding_cache_hits."
    )
