"""Import pace against raw PyMuPDF extraction, and a one-document add against a full rebuild.

Everything runs through the real App (parse workers, chunker, embedding cache, snapshot build,
activation) in temporary data directories. "Embedding excluded" means the embedding cache was
warmed by an earlier import of the same text, so the measured run only looks vectors up.
"""

from __future__ import annotations

import io
import os
import shutil
import statistics
import tempfile
import time
import zipfile
from pathlib import Path

import anyio
import pymupdf

from actors.app import App
from actors.ingest import ImportResult
from bench.runner import CORPUS, Report
from engine.config import parse_config
from engine.paths import DataDir

DOCS = CORPUS / "docs"
PDFS = sorted(DOCS.glob("*.pdf"))


def _app(root: Path) -> App:
    return App(DataDir(root), parse_config({}, {}))


def _import(root: Path, paths: list[Path]) -> tuple[float, ImportResult]:
    async def go() -> ImportResult:
        app = _app(root)
        try:
            return await app.import_paths(paths)
        finally:
            await app.aclose()

    t0 = time.perf_counter()
    result = anyio.run(go, backend="trio")
    return time.perf_counter() - t0, result


def _cpu_s() -> float:
    """CPU seconds used so far by this process and its finished children (parse workers)."""
    try:
        import resource
    except ImportError:  # Windows: this process only
        return time.process_time()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def _copy_cache(src: Path, dst: Path) -> None:
    (dst / "cache").mkdir(parents=True, exist_ok=True)
    shutil.copy2(src / "cache" / "embeddings.sqlite", dst / "cache" / "embeddings.sqlite")


def _raw_pymupdf(paths: list[Path]) -> tuple[float, int, int]:
    t0 = time.perf_counter()
    pages = chars = 0
    for path in paths:
        with pymupdf.open(path) as doc:
            for page in doc:
                chars += len(page.get_text())
                pages += 1
    return time.perf_counter() - t0, pages, chars


# Timed imports (and raw extractions) per run of import_pace; the figures are medians. Each pair
# runs back to back, so both sides see the same machine load.
PACE_ROUNDS = 5


def import_pace(report: Report, quick: bool) -> None:
    report.title = "Import pace versus raw PyMuPDF text extraction"
    rounds = 1 if quick else PACE_ROUNDS
    raw_times: list[float] = []
    our_times: list[float] = []
    raw_cpu: list[float] = []
    our_cpu: list[float] = []
    with tempfile.TemporaryDirectory(prefix="citewise-bench-") as tmp:
        folder = Path(tmp) / "pdfs"
        folder.mkdir()
        for p in PDFS:
            shutil.copy2(p, folder / p.name)
        warm = Path(tmp) / "warm"
        embed_s, warmed = _import(warm, [folder])  # also embeds with the local model
        blocks = warmed.stats.blocks_chunked
        for k in range(rounds):
            cpu0 = _cpu_s()
            raw_s, pages, chars = _raw_pymupdf(PDFS)
            cpu1 = _cpu_s()
            timed = Path(tmp) / f"timed{k}"
            _copy_cache(warm, timed)
            cpu2 = _cpu_s()
            ours_s, result = _import(timed, [folder])
            raw_cpu.append(cpu1 - cpu0)
            our_cpu.append(_cpu_s() - cpu2)
            assert result.stats.embedding_cache_hits == result.stats.blocks_chunked
            assert result.stats.blocks_chunked == blocks and result.status == "ready"
            raw_times.append(raw_s)
            our_times.append(ours_s)
    raw_pace, our_pace = pages / statistics.median(raw_times), pages / statistics.median(our_times)
    report.figure("pages", pages)
    report.figure("rounds", rounds)
    report.figure("raw_pymupdf_pages_per_s", round(raw_pace, 1))
    report.figure("citewise_pages_per_s_embedding_excluded", round(our_pace, 1))
    report.figure("raw_pymupdf_s_per_round", [round(t, 3) for t in raw_times])
    report.figure("citewise_s_per_round", [round(t, 3) for t in our_times])
    cpu_ratio = statistics.median(our_cpu) / statistics.median(raw_cpu)
    cores = os.cpu_count() or 1
    report.figure("raw_pymupdf_cpu_s", round(statistics.median(raw_cpu), 3))
    report.figure("citewise_cpu_s_incl_workers", round(statistics.median(our_cpu), 3))
    report.figure("citewise_cpu_per_raw_cpu", round(cpu_ratio, 2))
    report.figure("best_ratio_these_cores_allow", round(min(1.0, cores / cpu_ratio), 3))
    report.figure("citewise_blocks", blocks)
    report.figure("local_model_import_blocks_per_s", round(blocks / embed_s, 1))
    report.figure("local_model_import_pages_per_s", round(pages / embed_s, 1))
    report.target(
        "Citewise pace / raw PyMuPDF pace (embedding excluded, medians)",
        our_pace / raw_pace,
        0.5,
        at_most=False,
    )
    report.notes.append(
        f"Corpus PDFs ({', '.join(p.name for p in PDFS)}): {pages} pages, {chars} characters. "
        "Raw = pymupdf page.get_text() over every page, one process. Citewise = the whole import "
        "into an empty data directory (hash, parse in worker processes started by the import, "
        "a long PDF split into page ranges across them, with outline and heading detection, "
        "chunk with the DeepSeek tokenizer, embedding-cache look-ups, BM25 + vector build, "
        f"activation). {rounds} rounds of raw then Citewise back to back; paces from the "
        "median times. CPU figures count this process and its parse workers: raw extraction "
        "uses one core, the import spreads its larger CPU work over all cores, so its pace "
        "can reach at most cores / (Citewise CPU / raw CPU) of raw, and less when other "
        "processes share the machine."
    )


def _perturb(src: Path, dst: Path, marker: str) -> None:
    """Copy src to dst with `marker` added to its text, so replicas are distinct documents."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    suffix = src.suffix.lower()
    if suffix == ".pdf":
        with pymupdf.open(src) as doc:
            doc[-1].insert_text((72, 72), marker)
            doc.save(dst)
    elif suffix in (".docx", ".epub"):
        with zipfile.ZipFile(src) as zin:
            infos = zin.infolist()
            biggest = max(
                (i for i in infos if i.filename.endswith((".xml", ".xhtml", ".html"))),
                key=lambda i: i.file_size,
            )
            buf = io.BytesIO()
            with zipfile.ZipFile(buf, "w") as zout:
                for info in infos:
                    data = zin.read(info)
                    if info.filename == biggest.filename:
                        text = data.decode("utf-8")
                        if suffix == ".docx":
                            tag = f"<w:p><w:r><w:t>{marker}</w:t></w:r></w:p>"
                            text = text.replace("<w:sectPr", tag + "<w:sectPr", 1)
                        else:
                            text = text.replace("</body>", f"<p>{marker}</p></body>", 1)
                        data = text.encode("utf-8")
                    zout.writestr(info, data)
        dst.write_bytes(buf.getvalue())
    else:
        dst.write_bytes(src.read_bytes() + f"\n\n{marker}\n".encode())


def _replicate(dest: Path, copies: int) -> Path:
    files = [p for p in sorted(DOCS.rglob("*")) if p.is_file()]
    for k in range(copies):
        for f in files:
            _perturb(f, dest / f"copy{k:02d}" / f.relative_to(DOCS), f"replica marker r{k}")
    return dest


def incremental_add(report: Report, quick: bool) -> None:
    report.title = "Adding one document versus a full rebuild"
    copies = 2 if quick else 10
    with tempfile.TemporaryDirectory(prefix="citewise-bench-") as tmp:
        root = Path(tmp)
        corpus = _replicate(root / "corpus", copies)
        extra = root / "extra" / "new-note.md"
        _perturb(DOCS / "nodejs-md" / "readline.md", extra, "a new note")

        # Warm the embedding cache: replicas differ only in their marker block. The new
        # document is embedded too, so "add one" also runs with cached embeddings.
        warm = root / "warm"
        _import(warm, [corpus, extra])

        # Index work: both with cached embeddings.
        full_home = root / "full"
        _copy_cache(warm, full_home)
        full_s, full = _import(full_home, [corpus])
        add_s, added = _import(full_home, [extra])
        assert added.stats.embedding_cache_hits == added.stats.blocks_chunked > 0
        report.figure("documents", full.stats.documents_succeeded)
        report.figure("blocks", full.stats.blocks_chunked)
        report.figure("full_rebuild_s_cached_embeddings", round(full_s, 2))
        report.figure("add_one_s_cached_embeddings", round(add_s, 2))
        report.target("add one / full rebuild (cached embeddings)", add_s / full_s, 0.1)

        # End to end: both without cached embeddings (one replica, to keep embedding time sane).
        cold_full = root / "cold-full"
        one = root / "one-copy"
        _replicate(one, 1)
        cold_full_s, cold = _import(cold_full, [one])
        cold_add_s, _ = _import(cold_full, [extra])
        report.figure("full_rebuild_s_no_cache_1x", round(cold_full_s, 2))
        report.figure("add_one_s_no_cache", round(cold_add_s, 2))
        report.target("add one / full rebuild (no cache, 1× corpus)", cold_add_s / cold_full_s, 0.1)
        assert added.stats.documents_reused == 0 and cold.status == "ready"
    report.notes.append(
        f"Corpus replicated ×{copies}; every replica perturbed (a marker paragraph appended to "
        "text formats, inserted into the PDF's last page, the DOCX body and the EPUB's largest "
        "chapter), so no replica is a cache hit for parsing. 'Full rebuild' imports everything "
        "into an empty collection; 'add one' imports one new Markdown document into the full "
        "collection (a new snapshot: merge of carried-over documents + the new one). With "
        "cached embeddings, the cache was warmed with the replicas and the new document alike; "
        "without, both start from an empty cache (the add loads the local model and embeds the "
        "new document)."
    )
