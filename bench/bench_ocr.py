"""OCR of scanned pages: pages/s and character recall for Chinese and English at several
rendering resolutions, in one run.

Real text pages of the corpus PDFs are rendered to grey images (a 200 dpi "scan"), put into an
image-only PDF, recognised by engine/parsing/ocr.py at each resolution, and compared with the
pages' original text layer: character recall (non-space characters, as a multiset) and, for
English, word recall (words as the text layer spaces them: PP-OCR's recogniser drops narrow
spaces, which search then misses).
"""

from __future__ import annotations

import re
import resource
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pymupdf

from bench.runner import CORPUS, Report
from engine.parsing.ocr import OCR_DPI, READ_DPI, engine_version, recognise_page

_mupdf: Any = pymupdf

DOCS = CORPUS / "docs"
# Body-text pages (0-based) of each language; quick runs take the first two.
PAGES = {
    "zh": (DOCS / "lshort-zh-cn.pdf", [13, 15, 23, 31]),
    "en": (DOCS / "debian-reference.en.pdf", [30, 45, 60, 75]),
}
SCAN_DPI = 200
_WORD = re.compile(r"[A-Za-z0-9]+")


def _char_recall(reference: str, recognised: str) -> float:
    want = Counter("".join(reference.split()))
    got = Counter("".join(recognised.split()))
    return sum(min(n, got[ch]) for ch, n in want.items()) / max(1, sum(want.values()))


def _word_recall(reference: str, recognised: str) -> float:
    want = Counter(w.lower() for w in _WORD.findall(reference))
    got = Counter(w.lower() for w in _WORD.findall(recognised))
    return sum(min(n, got[w]) for w, n in want.items()) / max(1, sum(want.values()))


def _scan(path: Path, pages: list[int], out: Path) -> list[str]:
    """An image-only PDF of `pages` of `path` at `out`; the text layer of each page."""
    texts: list[str] = []
    scan = _mupdf.open()
    with _mupdf.open(str(path)) as source:
        for p in pages:
            page = source[p]
            texts.append(str(page.get_text()))
            pix = page.get_pixmap(dpi=SCAN_DPI, colorspace=_mupdf.csGRAY)
            target = scan.new_page(width=page.rect.width, height=page.rect.height)
            target.insert_image(target.rect, stream=pix.tobytes("png"))
    scan.save(str(out))
    scan.close()
    return texts


def ocr_recall(report: Report, quick: bool) -> None:
    report.title = "OCR: pages/s and character recall, Chinese and English, by resolution"
    # (dpi lines are found at, dpi they are read at)
    dpis = [(100, 100), (100, 200)] if quick else [(100, 100), (150, 150), (100, 200)]
    report.figure("engine", engine_version())
    report.figure("default_dpi", f"find {OCR_DPI}, read {READ_DPI}")
    rows: list[list[Any]] = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="citewise-bench-") as tmp:
        for lang, (path, pages) in PAGES.items():
            chosen = pages[:2] if quick else pages
            scan_path = Path(tmp) / f"scan-{lang}.pdf"
            texts = _scan(path, chosen, scan_path)
            with _mupdf.open(str(scan_path)) as scan:
                if lang == "zh" and not rows:
                    started = time.perf_counter()
                    recognise_page(scan[0])  # loads the engine: not timed below
                    report.figure(
                        "engine_load_and_first_page_s", round(time.perf_counter() - started, 2)
                    )
                for dpi, read_dpi in dpis:
                    seconds = 0.0
                    cpu = time.process_time()
                    recognised: list[str] = []
                    confidences: list[float] = []
                    for k in range(len(chosen)):
                        started = time.perf_counter()
                        found = recognise_page(scan[k], dpi=dpi, read_dpi=read_dpi)
                        seconds += time.perf_counter() - started
                        recognised.append("\n".join(p.text for p in found.paragraphs))
                        confidences.append(found.confidence)
                    cpu = time.process_time() - cpu
                    ref, got = "\n".join(texts), "\n".join(recognised)
                    char = round(_char_recall(ref, got), 3)
                    word = round(_word_recall(ref, got), 3) if lang == "en" else None
                    pps = round(len(chosen) / seconds, 3)
                    rows.append(
                        [
                            lang,
                            f"{dpi}/{read_dpi}",
                            len(chosen),
                            char,
                            word,
                            round(seconds / len(chosen), 2),
                            round(cpu / len(chosen), 2),
                            pps,
                            round(sum(confidences) / len(confidences), 3),
                        ]
                    )
                    report.figure(f"{lang}_{dpi}_{read_dpi}dpi_char_recall", char)
                    if word is not None:
                        report.figure(f"{lang}_{dpi}_{read_dpi}dpi_word_recall", word)
                    report.figure(f"{lang}_{dpi}_{read_dpi}dpi_pages_per_s", pps)
    report.figure("total_s", round(time.perf_counter() - t0, 1))
    report.figure(
        "peak_rss_mb", round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    )
    report.table(
        "Recognition by language and resolution (scan made at 200 dpi)",
        [
            "lang",
            "dpi find/read",
            "pages",
            "char recall",
            "word recall",
            "s/page",
            "CPU s/page",
            "pages/s",
            "confidence",
        ],
        rows,
    )
    by = {(r[0], r[1]): r for r in rows}
    default = f"{OCR_DPI}/{READ_DPI}"
    for lang in ("zh", "en"):
        if (lang, default) in by:
            report.target(
                f"{lang} char recall at {default} dpi", by[(lang, default)][3], 0.9, at_most=False
            )
    report.notes.append(
        "Pages are whole A4 pages of body text. s/page and pages/s are wall-clock on a 2-core "
        "machine shared with other work; CPU s/page (all threads of this process) is the "
        "steadier figure. One process, onnxruntime's default threads. peak_rss_mb is this "
        "process's peak, engine loaded, across every resolution."
    )


def _children_peak_mb() -> float:
    """The largest peak RSS (VmHWM) among this process's live children: the parse workers."""
    import os

    peak = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if fields.get("PPid", "").strip() == str(os.getpid()) and "VmHWM" in fields:
            peak = max(peak, int(fields["VmHWM"].split()[0]))
    return round(peak / 1024, 1)


def ocr_import(report: Report, quick: bool) -> None:
    """A scanned document imported end to end through the App (parse workers, OCR, chunking,
    local embedding, snapshot): seconds, pages/s and the parse workers' peak memory."""
    import anyio

    from actors.app import App
    from engine.config import parse_config
    from engine.paths import DataDir

    pages = 6 if quick else 50
    report.title = f"Import of a {pages}-page scanned PDF, end to end"
    path = PAGES["zh"][0]
    with _mupdf.open(str(path)) as source:
        chosen = [p for p in range(8, source.page_count) if len(source[p].get_text()) > 600]
    chosen = (chosen * (pages // max(1, len(chosen)) + 1))[:pages]
    with tempfile.TemporaryDirectory(prefix="citewise-bench-") as tmp:
        scan_path = Path(tmp) / "docs" / "scanned.pdf"
        scan_path.parent.mkdir()
        _scan(path, chosen, scan_path)
        app = App(DataDir(Path(tmp) / "home"), parse_config({}, {}))
        peak: list[float] = []

        async def go() -> Any:
            try:
                result = await app.import_paths([scan_path])
                peak.append(_children_peak_mb())
                return result
            finally:
                await app.aclose()

        started = time.perf_counter()
        result = anyio.run(go, backend="trio")
        seconds = time.perf_counter() - started
    report.figure("status", result.status)
    report.figure("pages", pages)
    report.figure("seconds", round(seconds, 1))
    report.figure("pages_per_s", round(pages / seconds, 3))
    report.figure("parse_worker_peak_rss_mb", peak[0] if peak else None)
    report.figure(
        "app_process_peak_rss_mb",
        round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    )
    report.notes.append(
        "A PDF under 96 pages is parsed by one worker process: its pages are recognised one "
        "after the other there (page ranges in parallel only for longer PDFs)."
    )
