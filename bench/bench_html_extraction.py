"""Main-content extraction of web pages: our link-density rule against trafilatura and against
no cut at all, on Mozilla Readability's test pages (test/test-pages/*/source.html, with
expected.html as the article's truth).

Figures per approach: the share of stored text that is article (word-multiset precision), the
share of the article that is stored (recall), the share of the article's headings kept as
section titles, and extraction cost per page. Run:
    python -m bench.bench_html_extraction /path/to/readability/test/test-pages
"""

from __future__ import annotations

import collections
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import lxml.html
import trafilatura

from engine.parsing.html import HtmlExtractor, decode_html, feed_html, new_extractor
from engine.parsing.limits import ParseLimits
from engine.parsing.main_content import link_density_cut

_TOKEN = re.compile(r"[\u3400-\u9fff]|\w+")
_LIMITS = ParseLimits()


def _words(text: str) -> collections.Counter[str]:
    return collections.Counter(_TOKEN.findall(text.lower()))


def _norm(text: str) -> str:
    return " ".join(text.split()).lower()


def _trafilatura(html: str, recall: bool) -> str:
    out = trafilatura.extract(
        html,
        output_format="html",
        include_comments=False,
        include_tables=True,
        favor_recall=recall,
    )
    return out or ""


APPROACHES: dict[str, Callable[[str], str]] = {
    "no cut (before)": lambda html: html,
    "link-density rule": lambda html: link_density_cut(html) or html,
    "trafilatura": lambda html: _trafilatura(html, recall=False),
    "trafilatura favor_recall": lambda html: _trafilatura(html, recall=True),
}


def _extract(html: str) -> HtmlExtractor:
    extractor = new_extractor(_LIMITS)
    feed_html(extractor, html)
    return extractor


def measure(pages: Path) -> dict[str, dict[str, float]]:
    rows: dict[str, list[tuple[float, float, float | None, float]]] = collections.defaultdict(list)
    for page in sorted(p for p in pages.iterdir() if (p / "expected.html").is_file()):
        source = decode_html((page / "source.html").read_bytes())
        expected = lxml.html.fromstring((page / "expected.html").read_text("utf-8"))
        truth = _words(expected.text_content())
        headings = {
            _norm(h.text_content()) for h in expected.iter("h1", "h2", "h3", "h4", "h5", "h6")
        } - {""}
        for name, cut in APPROACHES.items():
            start = time.perf_counter()
            extractor = _extract(cut(source))
            seconds = time.perf_counter() - start
            stored = _words("\n".join(extractor.builder.texts()))
            common = sum((stored & truth).values())
            precision = common / max(1, sum(stored.values()))
            recall = common / max(1, sum(truth.values()))
            titles = {_norm(s.title) for s in extractor.builder.finish(page.name)}
            share = len(headings & titles) / len(headings) if headings else None
            rows[name].append((precision, recall, share, seconds))
    summary: dict[str, dict[str, float]] = {}
    for name, r in rows.items():
        kept: list[float] = [k for _, _, k, _ in r if k is not None]
        summary[name] = {
            "pages": len(r),
            "article_share_mean": statistics.mean(p for p, _, _, _ in r),
            "pages_under_half_article": sum(p < 0.5 for p, _, _, _ in r),
            "recall_mean": statistics.mean(x for _, x, _, _ in r),
            "pages_recall_under_0.9": sum(x < 0.9 for _, x, _, _ in r),
            "headings_kept_mean": statistics.mean(kept) if kept else 0.0,
            "ms_per_page_mean": 1000 * statistics.mean(s for _, _, _, s in r),
            "ms_per_page_median": 1000 * statistics.median(s for _, _, _, s in r),
        }
    return summary


def main() -> None:
    pages = Path(sys.argv[1])
    summary = measure(pages)
    columns = list(next(iter(summary.values())))
    print("| approach | " + " | ".join(columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    for name, figures in summary.items():
        cells = (f"{v:.3f}" if isinstance(v, float) else str(v) for v in figures.values())
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
