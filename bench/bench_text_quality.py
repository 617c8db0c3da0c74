"""The cost of the per-page text-quality check (engine/parsing/quality.py) beside what a PDF
page costs anyway: raw PyMuPDF `get_text()`, and Citewise's whole parse of the page.

Pages are those of the shared corpus's PDFs and of the PDF regression corpus
(tests/realworld/pdf); the check runs on the very rows the parser extracts. Run with
`citewise bench text_quality` or `python -m bench.bench_text_quality`.
"""

from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path
from typing import Any

import pymupdf

from bench.runner import CORPUS, REPO, Report
from engine.errors import ParseError
from engine.parsing import parse_file
from engine.parsing.pdf import _extract
from engine.parsing.quality import page_quality

_mupdf: Any = pymupdf


def _pdfs() -> list[Path]:
    return sorted((CORPUS / "docs").glob("*.pdf")) + sorted(
        (REPO / "tests" / "realworld" / "pdf").glob("*.pdf")
    )


def _best(fn: Any, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def text_quality(report: Report, quick: bool) -> None:
    report.title = "Text-quality check: cost per page beside extraction"
    rounds = 2 if quick else 5
    _mupdf.TOOLS.mupdf_display_errors(False)
    _mupdf.TOOLS.mupdf_display_warnings(False)
    table = []
    totals = {"pages": 0, "check_s": 0.0, "raw_s": 0.0, "parse_s": 0.0}
    for path in _pdfs():
        try:
            doc = _mupdf.open(str(path))
        except Exception:
            continue
        try:
            if doc.needs_pass or doc.page_count == 0:
                continue
            pages, controls, _ = _extract(doc, range(doc.page_count))
            raw_s = _best(lambda d=doc: [p.get_text() for p in d], rounds)
        except Exception:
            continue
        finally:
            doc.close()
        texts = [[row[4] for row in rows] for rows in pages]
        check_s = _best(
            lambda t=texts, c=controls: [page_quality(x, n) for x, n in zip(t, c, strict=True)],
            rounds,
        )

        def parse(p: Path = path) -> None:
            with contextlib.suppress(ParseError):
                parse_file(p)

        parse_s = _best(parse, rounds)
        n = len(pages)
        rejected = sum(
            1 for x, c in zip(texts, controls, strict=True) if not page_quality(x, c).readable
        )
        totals["pages"] += n
        totals["check_s"] += check_s
        totals["raw_s"] += raw_s
        totals["parse_s"] += parse_s
        table.append(
            [
                path.name,
                n,
                rejected,
                round(check_s / n * 1e6, 1),
                round(raw_s / n * 1e3, 3),
                round(parse_s / n * 1e3, 3),
                f"{check_s / parse_s:.2%}",
            ]
        )
    n_pages = totals["pages"]
    report.figure("files", len(table))
    report.figure("pages", n_pages)
    report.figure("rounds_best_of", rounds)
    report.figure("check_us_per_page", round(totals["check_s"] / n_pages * 1e6, 1))
    report.figure("raw_pymupdf_get_text_ms_per_page", round(totals["raw_s"] / n_pages * 1e3, 3))
    report.figure("citewise_parse_ms_per_page", round(totals["parse_s"] / n_pages * 1e3, 3))
    share = totals["check_s"] / totals["parse_s"]
    report.figure("check_share_of_parse", round(share, 4))
    report.target("check time / whole parse time", share, 0.03)
    report.table(
        "Per file (best of the rounds)",
        ["file", "pages", "pages rejected", "check µs/page", "raw get_text ms/page",
         "parse ms/page", "check / parse"],
        table,
    )  # fmt: skip
    report.notes.append(
        "The check runs once per page on the rows extraction already made; 'parse' is "
        "parse_file (extraction, check, furniture, headings, paragraphs) in this process."
    )


if __name__ == "__main__":
    from bench.runner import run_benchmarks

    sys.exit(run_benchmarks(["text_quality"], quick="--quick" in sys.argv))
