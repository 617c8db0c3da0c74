"""What an import says it did with documents whose bytes the library already held: embedded
again for another model or vector layout, or read again with every scanned page recognised,
never "added" (which is for new and changed documents)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pymupdf
import pytest

from actors.app import App
from actors.catalog import Catalog
from actors.import_progress import ImportResult
from engine.parsing import PARSER_VERSIONS
from engine.paths import DataDir
from tests.corpus import make_app
from tests.scans import EN_PDF, add_scan, save
from web.i18n import Texts
from web.import_panel import closing_message
from web.library_page import changes_text

pytestmark = pytest.mark.anyio
_mupdf: Any = pymupdf
ONE_LINE = (30, 0, 60, 30)  # one line of English body text a page: recognised in seconds


@pytest.fixture
def anyio_backend() -> str:
    return "trio"


def notes(folder: Path, **files: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


async def imported(app: App, *paths: Path) -> ImportResult:
    try:
        return await app.import_paths(list(paths))
    finally:
        await app.aclose()


async def test_documents_embedded_again_for_a_new_layout_are_not_counted_as_added(
    tmp_path: Path,
) -> None:
    old = notes(tmp_path / "old", **{"a.md": "# A\n\nAbout otters.\n", "b.md": "# B\n\nOn owls.\n"})
    root = tmp_path / "home"
    first = await imported(make_app(root, embedding={"granularity": "block"}), old)
    assert first.counts().added == 2 and first.counts().re_embedded == 0
    shutil.rmtree(old)
    new = notes(tmp_path / "new", **{"c.md": "# C\n\nCranes in winter.\n"})
    second = await imported(make_app(root, embedding={"granularity": "sentence"}), new)
    assert second.status == "ready", second
    c = second.counts()
    assert (c.library, c.added, c.re_embedded, c.unchanged) == (3, 1, 2, 0)
    assert second.re_embedded == ["a.md", "b.md"]
    assert closing_message(Texts("en"), second) == (
        "3 documents in the library; 1 added; 2 documents embedded again for the new "
        "embedding model or vector layout."
    )
    assert "2 篇已按新的向量模型或向量布局重新向量化" in closing_message(Texts("zh"), second)


async def test_a_file_imported_again_unchanged_under_a_new_layout_is_re_embedded_not_added(
    tmp_path: Path,
) -> None:
    folder = notes(tmp_path / "docs", **{"a.md": "# A\n\nAbout otters.\n"})
    root = tmp_path / "home"
    await imported(make_app(root, embedding={"granularity": "block"}), folder)
    again = await imported(make_app(root, embedding={"granularity": "sentence"}), folder)
    c = again.counts()
    assert (c.added, c.re_embedded, c.read_again) == (0, 1, 0)
    edited = notes(tmp_path / "docs", **{"a.md": "# A\n\nAbout otters and their dens.\n"})
    changed = await imported(make_app(root, embedding={"granularity": "sentence"}), edited)
    assert (changed.counts().added, changed.counts().re_embedded) == (1, 0)  # new bytes


async def test_recognise_all_pages_says_pages_were_read_again_and_how_many_blocks_changed(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    out = _mupdf.open()
    add_scan(out, EN_PDF, ONE_LINE)
    add_scan(out, EN_PDF, (31, 0, 60, 30))  # text the page limit leaves unread at first
    save(out, folder / "scan.pdf")
    root = tmp_path / "home"
    first = await imported(make_app(root, ingest={"ocr_max_pages": 1}), folder)
    assert first.counts().added == 1
    app = make_app(root, ingest={"ocr_max_pages": 1})
    again = await imported(app, *app.recognise_all_pages(["scan.pdf"]))
    assert again.activated, again
    c = again.counts()
    assert (c.added, c.read_again, c.re_embedded, c.unchanged) == (0, 1, 0, 0)
    assert c.blocks_changed >= 1  # the second page's text is new
    en = closing_message(Texts("en"), again)
    assert en.startswith("1 document in the library; pages recognised again in 1 document, ")
    assert "added" not in en
    assert "已重新识别 1 篇文档的页面" in closing_message(Texts("zh"), again)
    # and History says what that snapshot changed, in both languages
    latest = next(s for s in app.snapshots() if s.active)
    assert latest.changes.read_again == ("scan.pdf",) and not latest.changes.edited
    assert changes_text(Texts("en"), latest.changes) == "1 read again"
    assert changes_text(Texts("zh"), latest.changes) == "重新读取 1 篇"


LONG = "# Rivers\n\n" + "".join(
    f"River {k} runs {k * 3} miles from the hills to the sea, past {k + 2} towns.\n\n"
    for k in range(60)
)


async def test_a_file_imported_again_after_the_block_size_changed_is_read_again(
    tmp_path: Path,
) -> None:
    folder = notes(tmp_path / "docs", **{"rivers.md": LONG, "short.md": "# S\n\nA line.\n"})
    root = tmp_path / "home"
    first = await imported(make_app(root, ingest={"block_target_tokens": 256}), folder)
    unchanged = await imported(make_app(root, ingest={"block_target_tokens": 256}), folder)
    assert unchanged.snapshot_id == first.snapshot_id  # read the same way: nothing to build
    # smaller blocks (Settings): the same bytes are cut again, not carried over as they were
    again = await imported(make_app(root, ingest={"block_target_tokens": 64}), folder)
    assert again.activated and again.snapshot_id != first.snapshot_id, again
    c = again.counts()
    assert (c.added, c.re_read, c.read_again, c.re_embedded, c.unchanged) == (0, 2, 0, 0, 0)
    assert again.re_read == ["rivers.md", "short.md"]
    assert c.blocks_changed >= 2  # the long file is cut into more, smaller blocks
    assert again.stats.blocks_chunked > first.stats.blocks_chunked  # cut into smaller blocks
    en = closing_message(Texts("en"), again)
    assert en.startswith(
        "2 documents in the library; 2 documents read again as this version of Citewise reads "
        "them, "
    )
    assert "added" not in en
    assert "已按当前版本的读取方式重新读取 2 篇文档" in closing_message(Texts("zh"), again)


async def test_a_newer_parser_reads_an_unchanged_file_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = notes(tmp_path / "docs", **{"a.md": "# A\n\nAbout otters.\n"})
    root = tmp_path / "home"
    await imported(make_app(root), folder)
    # what an update of Citewise with a better Markdown reader looks like to the importer
    monkeypatch.setitem(PARSER_VERSIONS, "markdown", PARSER_VERSIONS["markdown"] + "-next")
    again = await imported(make_app(root), folder)
    assert again.activated, again
    assert (again.re_read, again.counts().added) == (["a.md"], 0)
    with Catalog(DataDir(root), "default").pin_active() as snap:
        assert snap is not None
        assert [d.parser_version for d in snap.documents] == [PARSER_VERSIONS["markdown"]]
