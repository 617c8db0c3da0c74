"""A scanned PDF being recognised: progress counts each page, pause holds the workers between
pages, cancel mid-document leaves the library as it was, and the next import takes the pages
already recognised from the OCR cache instead of recognising them again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pymupdf
import pytest

from actors import App, ImportProgress
from actors.catalog import Catalog
from engine.parsing.ocr_cache import OcrCache
from tests.corpus import make_app
from tests.scans import EN_PDF, add_scan, save

pytestmark = pytest.mark.anyio
_mupdf: Any = pymupdf
PAUSE_S = 6.0  # longer than a page takes here: a pause that did not hold shows


@pytest.fixture
def anyio_backend() -> str:
    return "trio"


def three_page_scan(path: Path) -> Path:
    """Three different small image-only pages (a line or two of English each)."""
    out = _mupdf.open()
    for page in (30, 31, 32):
        add_scan(out, EN_PDF, (page, 150, 60, 36), dpi=100)
    return save(out, path)


async def _progress_until(app: App, check: Any, timeout_s: float = 120.0) -> ImportProgress:
    job = app.current_import
    assert job is not None
    with anyio.fail_after(timeout_s):
        while True:
            p = job.progress
            if p is not None and check(p):
                return p
            await anyio.sleep(0.05)


async def test_a_scan_interrupted_mid_document_is_not_recognised_again(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    scan = three_page_scan(docs / "scan.pdf")
    notes = docs / "notes.md"
    notes.write_text("# Notes\n\nA library that already holds a document.\n", encoding="utf-8")
    app = make_app(tmp_path / "home")
    catalog = Catalog(app.data, "default")
    async with app.running():
        await app.import_paths([notes])
        before = catalog.active_id()
        job = app.start_import([scan])
        first = await _progress_until(app, lambda p: p.ocr_pages >= 1)
        assert first.ocr_pages_total == 3
        job.pause()
        await anyio.sleep(PAUSE_S)  # the page in hand is finished, the next one waits
        held = job.progress
        assert held is not None and held.state == "paused" and held.ocr_pages <= 2
        job.resume()
        await _progress_until(app, lambda p: p.ocr_pages >= 2)
        job.cancel()
        await job.finished.wait()
        assert job.state == "cancelled"
        assert catalog.active_id() == before  # the library is as it was
        recognised = OcrCache(app.data.ocr_cache).count()
        assert 2 <= recognised <= 3

        seen: list[ImportProgress] = []
        result = await app.import_paths([scan], on_progress=seen.append)
    assert result.status == "ready", result
    last = seen[-1]
    assert (last.ocr_pages, last.ocr_pages_total) == (3, 3)
    assert last.ocr_pages_cached == recognised  # not recognised a second time…
    assert OcrCache(app.data.ocr_cache).count() == 3  # …and only the rest recognised now
    assert any(p.ocr_pages_per_s for p in seen) or recognised == 3
