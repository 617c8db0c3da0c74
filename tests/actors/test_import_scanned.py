"""A scanned Chinese PDF, imported end to end: its pages are recognised in the parse workers,
its text can be found by scan_term, and its blocks keep where they are printed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pymupdf
import pytest

from actors.catalog import Catalog
from engine.parsing import ocr_engine_version
from tests.corpus import make_app
from tests.scans import ZH_CLIP, ZH_PDF, add_scan, save

pytestmark = pytest.mark.anyio
_mupdf: Any = pymupdf


@pytest.fixture
def anyio_backend() -> str:
    return "trio"


async def test_a_scanned_chinese_pdf_is_imported_and_its_phrase_found_by_scan_term(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "scans"
    folder.mkdir()
    out = _mupdf.open()
    add_scan(out, ZH_PDF, ZH_CLIP)
    scan = save(out, folder / "扫描.pdf")
    app = make_app(tmp_path / "home")
    try:
        result = await app.import_paths([scan])
        outcome = await app.run_tool("scan_term", {"term": "跨平台"})
        found = json.loads(outcome.json)
        view = await app.source_view(found["hits"][0]["doc_id"], found["hits"][0]["block_id"])
    finally:
        await app.aclose()
    assert result.status == "ready", result
    found = json.loads(outcome.json)
    assert found["count"] >= 1, found
    (hit,) = found["hits"]
    assert "跨平台" in hit["snippet"]
    manifest = Catalog(app.data, "default").active_manifest()
    assert manifest is not None
    assert manifest.parser_versions["ocr"] == ocr_engine_version()
    with Catalog(app.data, "default").pinned(manifest.snapshot_id) as snap:
        ordinal = snap.block_ordinal(hit["doc_id"], hit["block_id"])
        assert ordinal is not None
        rects = snap.block_rects(ordinal)
    assert rects and all(page == 1 for page, *_ in rects)  # the source viewer can highlight it
    # ... and says the cited text was recognised from a scan, with how sure the engine was
    (cited,) = [b for b in view.blocks if b.cited]
    assert cited.ocr_confidence is not None and 0.5 < cited.ocr_confidence <= 1.0
