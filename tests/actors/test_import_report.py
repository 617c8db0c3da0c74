"""Each document's import report is kept in the snapshot and read back with it: a scan whose
pages went past the OCR page limit says so, a book says its pictures were not read, status
counts the documents with warnings, and "recognise all pages" imports the scan again whole
while every other document stays."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pymupdf
import pytest

from actors.catalog import Catalog
from engine.parsing import ocr_engine_version
from tests.corpus import make_app
from tests.scans import EN_PDF, add_blank, add_scan, save

pytestmark = pytest.mark.anyio
_mupdf: Any = pymupdf
REALWORLD = Path(__file__).resolve().parents[1] / "realworld"
# One line of English body text a page: recognised in seconds.
ONE_LINE = (30, 0, 60, 30)


@pytest.fixture
def anyio_backend() -> str:
    return "trio"


async def test_reports_survive_the_snapshot_and_recognise_all_pages_lifts_the_limit(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    out = _mupdf.open()
    add_scan(out, EN_PDF, ONE_LINE)
    add_blank(out)  # needs OCR too: the one the limit leaves out, quick to recognise later
    save(out, folder / "scan.pdf")
    shutil.copy(REALWORLD / "epub" / "idpf-haruko-html-jpeg.epub", folder / "book.epub")
    (folder / "notes.md").write_text("# Notes\n\nPlain text, nothing to warn about.\n")
    app = make_app(tmp_path / "home", ingest={"ocr_max_pages": 1})
    try:
        first = await app.import_paths([folder])
        docs = {d.source: d for d in app.documents()}
        status = app.status()
    finally:
        await app.aclose()
    assert first.status == "ready", first
    scan = docs["scan.pdf"].report
    assert scan is not None
    assert (scan.pages, scan.pages_with_text, scan.pages_ocr) == (2, 1, 1)
    assert scan.ocr_engine == ocr_engine_version() and scan.ocr_confidence is not None
    assert scan.parse_seconds is not None and scan.parse_seconds > 0  # from the manifest
    (limit,) = [w for w in scan.warnings if w.code == "ocr_page_limit"]
    assert limit.pages == (2,) and limit.count == 1
    book = docs["book.epub"].report
    assert book is not None and [w.code for w in book.warnings] == ["images_not_read"]
    notes = docs["notes.md"].report
    assert notes is not None and notes.warnings == () and notes.chars > 20
    assert status.active_snapshot is not None
    assert status.active_snapshot.documents_with_warnings == 2

    app = make_app(tmp_path / "home", ingest={"ocr_max_pages": 1})
    try:
        paths = app.recognise_all_pages(["scan.pdf"])
        again = await app.import_paths(paths)
        docs = {d.source: d for d in app.documents()}
        status = app.status()
        assert again.snapshot_id is not None
        verified = await app.verify(again.snapshot_id)  # parse times are outside the hash
    finally:
        await app.aclose()
    assert again.status == "ready" and again.activated, again
    assert verified.ok, verified.problems
    assert sorted(docs) == ["book.epub", "notes.md", "scan.pdf"]
    whole = docs["scan.pdf"].report
    assert whole is not None
    assert (whole.pages_with_text, whole.pages_ocr) == (1, 1)  # the blank page was read
    assert not [w for w in whole.warnings if w.code == "ocr_page_limit"]
    assert status.active_snapshot is not None
    assert status.active_snapshot.documents_with_warnings == 1
    manifest = Catalog(app.data, "default").active_manifest()
    assert manifest is not None
    listed = {d.source: d for d in manifest.documents}
    assert listed["book.epub"].warnings == 1 and listed["scan.pdf"].warnings == 0
