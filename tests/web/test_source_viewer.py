"""The source viewer for documents imported with the CLI: the whole PDF page drawn with the
block's lines marked, its printed label, page turning, zoom and the original file; — when the
file moved or changed — the reason, in the person's language, with the block's text instead;
other formats as the block among its neighbours. Origins are recorded by every import and an
older UI record is migrated."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pymupdf
import pytest
from nicegui import app as nicegui_app
from nicegui import ui
from nicegui.testing import User

from actors import App, Citation
from actors.origins import ORIGINS_FILE
from engine.paths import DataDir
from tests.corpus import REPO
from tests.index.test_block_rects import as_written_before_rects
from tests.web.conftest import service_for, tool_result
from tests.web.test_app_for_pages import make_pdf
from tests.web.test_ask_page import found, texts_of
from web.i18n import Texts
from web.source_viewer import ORIGINAL_ROUTE, open_source, register_routes

pytestmark = pytest.mark.anyio
mupdf: Any = pymupdf


# What this module's imports share of a data directory's cache (set by `shared_cache`): the
# embeddings and the local model's restored tokenizer and weights, as a person has them after
# a first import. These tests are about the viewer, and their documents hold the same few
# blocks, so each import starts from what the earlier ones embedded and built.
_SHARED: dict[str, Path] = {}
_SHARED_FILES = ("embeddings.sqlite", "usem3-*")


@pytest.fixture(autouse=True, scope="module")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    _SHARED["cache"] = tmp_path_factory.mktemp("viewer-cache")
    yield
    _SHARED.clear()


def _copy_cache(source: Path, target: Path) -> None:
    """The shared files of cache folder `source` that `target` has not, copied there; an
    embedding cache only when closed whole (nothing left in its write-ahead log)."""
    target.mkdir(parents=True, exist_ok=True)
    for pattern in _SHARED_FILES:
        for path in source.glob(pattern):
            if path.name.endswith(("-wal", "-shm")) or path.with_name(path.name + "-wal").exists():
                continue
            if path.name == "embeddings.sqlite" or not (target / path.name).exists():
                shutil.copy2(path, target / path.name)


async def cli_import(home: Path, folder: Path) -> None:
    """`citewise import FOLDER` in its own process, as a person would run it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CITEWISE_")}
    env["CITEWISE_HOME"] = str(home)
    own = DataDir(home).cache
    shared = _SHARED.get("cache")
    if shared is not None and any(shared.iterdir()) and not own.exists():
        _copy_cache(shared, own)
    done = await anyio.run_process(
        [sys.executable, "-m", "cli", "import", str(folder)],
        cwd=REPO,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    if shared is not None:
        _copy_cache(own, shared)


async def drain_citation(service: App) -> Citation:
    hit = (await tool_result(service, "scan_term", {"term": "drain event"}))["hits"][0]
    return Citation(
        index=1,
        citation=hit["citation"],
        doc_id=hit["doc_id"],
        block_id=hit["block_id"],
        valid=True,
        title=hit["title"],
    )


def viewer_page(service: App, citation: Citation, lang: str = "en") -> None:
    @ui.page("/viewer")
    def page() -> None:
        t = Texts(lang)
        ui.button("open", on_click=lambda: open_source(service, t, citation, None)).mark("open")


@pytest.fixture
def pdf_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    make_pdf(folder / "guide.pdf")
    return folder


async def test_a_cli_imported_pdf_has_its_page_drawn_in_the_viewer(
    ui_user: User, tmp_path: Path, pdf_folder: Path, no_keys: None
) -> None:
    await cli_import(tmp_path / "home", pdf_folder)
    service = service_for(tmp_path / "home")
    origins = json.loads((service.data.collection("default") / ORIGINS_FILE).read_text())
    assert origins == {"guide.pdf": str((pdf_folder / "guide.pdf").resolve())}
    viewer_page(service, await drain_citation(service))

    await ui_user.open("/viewer")
    ui_user.find(marker="open").click()
    await ui_user.should_see(marker="pdf-page", retries=100)
    await ui_user.should_see("The drain event tells a producer")
    assert len(found(ui_user, "cited-block")) == 1 and not found(ui_user, "no-page-image")


async def test_a_moved_pdf_is_said_so_and_its_block_text_shown_instead(
    ui_user: User, tmp_path: Path, pdf_folder: Path, no_keys: None
) -> None:
    await cli_import(tmp_path / "home", pdf_folder)
    service = service_for(tmp_path / "home", ui={"language": "zh"})
    citation = await drain_citation(service)
    original = pdf_folder / "guide.pdf"
    original.rename(tmp_path / "elsewhere.pdf")
    viewer_page(service, citation, "zh")

    await ui_user.open("/viewer")
    ui_user.find(marker="open").click()
    await ui_user.should_see(marker="no-page-image", retries=100)
    why = texts_of(ui_user, "no-page-image")[0]
    assert why.startswith("无法显示页面") and f"已不在 {original.resolve()}" in why
    await ui_user.should_see("The drain event tells a producer")  # the text stands in
    assert not found(ui_user, "pdf-page")


async def test_a_changed_pdf_is_not_drawn(tmp_path: Path, pdf_folder: Path, no_keys: None) -> None:
    await cli_import(tmp_path / "home", pdf_folder)
    service = service_for(tmp_path / "home")
    citation = await drain_citation(service)
    with (pdf_folder / "guide.pdf").open("ab") as f:
        f.write(b"\n% edited after the import\n")
    view = await service.source_view(citation.doc_id, citation.block_id)
    assert view.found and view.pdf_path is None and view.pdf_problem == "changed"
    assert "changed since it was imported" in view.message
    assert any(b.cited and "drain event" in b.text for b in view.blocks)


async def test_an_older_ui_record_of_origins_is_migrated_once(
    tmp_path: Path, pdf_folder: Path, no_keys: None
) -> None:
    home = tmp_path / "home"
    await cli_import(home, pdf_folder)
    collection = home / "collections" / "default"
    (collection / ORIGINS_FILE).unlink()  # as an older version left it: only the UI's file
    legacy = home / "ui" / "origins" / "default.json"
    legacy.parent.mkdir(parents=True)
    legacy.write_text(json.dumps({"guide.pdf": str(pdf_folder / "guide.pdf")}), "utf-8")
    service = service_for(home)

    view = await service.source_view(*(await _ids(service)))

    assert view.pdf_path == str(pdf_folder / "guide.pdf")
    assert not legacy.exists()
    assert json.loads((collection / ORIGINS_FILE).read_text()) == {
        "guide.pdf": str(pdf_folder / "guide.pdf")
    }
    service.rename_collection("default", "manuals")  # the record moves with its collection
    assert (home / "collections" / "manuals" / ORIGINS_FILE).is_file()


async def _ids(service: App) -> tuple[str, str]:
    citation = await drain_citation(service)
    return citation.doc_id, citation.block_id


# -- the whole page, its printed label, zoom, page turning, the original file --------------------
def make_labelled_pdf(path: Path) -> None:
    """A two-page guide printed with labels i and ii (front matter numbering), each page's
    text long enough to be a block of its own at the smallest block size."""
    pdf = mupdf.open()
    for text in (
        "Chapter one. Listeners run in the order in which they were registered, one after "
        "another, each called with the same arguments, before emit returns to its caller.",
        "Chapter two. The drain event tells a producer to resume writing after backpressure, "
        "once the buffered data has been handed to the underlying resource.",
    ):
        page = pdf.new_page()
        page.insert_textbox(mupdf.Rect(72, 72, 520, 700), text, fontsize=12)
    pdf.set_page_labels([{"startpage": 0, "prefix": "", "style": "r", "firstpagenum": 1}])
    pdf.save(str(path))


@pytest.fixture
def labelled_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    make_labelled_pdf(folder / "guide.pdf")
    return folder


def img_style(user: User) -> str:
    [img] = found(user, "pdf-page")
    return " ".join(f"{k}: {v}" for k, v in img._style.items())


async def test_the_whole_page_shows_with_its_printed_label_and_turns_and_zooms(
    ui_user: User, tmp_path: Path, labelled_folder: Path, no_keys: None
) -> None:
    # Small blocks: each page's sentence is a block of its own, on its own page.
    service = service_for(tmp_path / "home", ingest={"block_target_tokens": 32})
    await cli_import(tmp_path / "home", labelled_folder)
    citation = await drain_citation(service)
    view = await service.source_view(citation.doc_id, citation.block_id)
    assert view.page == 2 and view.page_labels == ("i", "ii")
    assert view.rects and {r[0] for r in view.rects} == {2}
    viewer_page(service, citation)

    await ui_user.open("/viewer")
    ui_user.find(marker="open").click()
    await ui_user.should_see(marker="pdf-page", retries=100)
    [label] = texts_of(ui_user, "page-label")
    assert label == f"page {view.page_label(view.page or 0)} (PDF page {view.page})"
    [link] = found(ui_user, "open-original")
    assert link.props["href"].endswith(f"#page={view.page}")
    assert f"doc={citation.doc_id}" in link.props["href"]
    # the whole page: never cropped to a box, sized to fit, then zoomed by steps
    assert "object-fit" not in img_style(ui_user) and "* 1.0)" in img_style(ui_user)
    ui_user.find(marker="zoom-in").click()
    ui_user.find(marker="zoom-in").click()
    assert "* 1.5)" in img_style(ui_user)
    ui_user.find(marker="zoom-fit").click()
    assert "* 1.0)" in img_style(ui_user)

    assert label == "page ii (PDF page 2)"
    await ui_user.should_see("cited · p. ii")  # beside the text too: the printed page
    ui_user.find(marker="prev-page").click()
    await ui_user.should_see("page i (PDF page 1)", retries=100)
    await ui_user.should_see("The cited block is not on this page; it is on page ii", retries=50)
    [link] = found(ui_user, "open-original")
    assert link.props["href"].endswith("#page=1")


async def test_the_page_label_reads_in_chinese(
    ui_user: User, tmp_path: Path, labelled_folder: Path, no_keys: None
) -> None:
    await cli_import(tmp_path / "home", labelled_folder)
    service = service_for(tmp_path / "home", ui={"language": "zh"})
    citation = await drain_citation(service)
    view = await service.source_view(citation.doc_id, citation.block_id)
    viewer_page(service, citation, "zh")

    await ui_user.open("/viewer")
    ui_user.find(marker="open").click()
    await ui_user.should_see(marker="pdf-page", retries=100)
    label = view.page_label(view.page or 0)
    assert texts_of(ui_user, "page-label") == [f"第 {label} 页(PDF 第 {view.page} 页)"]
    await ui_user.should_see("在原始 PDF 中打开此页")


async def test_a_snapshot_from_before_rects_marks_the_block_by_its_text(
    ui_user: User, tmp_path: Path, pdf_folder: Path, no_keys: None
) -> None:
    await cli_import(tmp_path / "home", pdf_folder)
    service = service_for(tmp_path / "home")
    [snapshot] = (tmp_path / "home" / "collections" / "default" / "snapshots").iterdir()
    as_written_before_rects(snapshot)
    citation = await drain_citation(service)
    view = await service.source_view(citation.doc_id, citation.block_id)
    assert view.found and view.rects == () and view.page_labels == ()
    viewer_page(service, citation)

    await ui_user.open("/viewer")
    ui_user.find(marker="open").click()
    await ui_user.should_see(marker="pdf-page", retries=100)
    await ui_user.should_see("marked where it was found on the page", retries=50)
    assert texts_of(ui_user, "page-label") == [f"PDF page {view.page}"]


async def test_the_original_pdf_is_served_only_for_a_cited_block(
    tmp_path: Path, pdf_folder: Path, no_keys: None
) -> None:
    await cli_import(tmp_path / "home", pdf_folder)
    service = service_for(tmp_path / "home")
    citation = await drain_citation(service)
    register_routes(service)
    transport = httpx.ASGITransport(app=nicegui_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        query = {"doc": citation.doc_id, "block": citation.block_id}
        served = await client.get(ORIGINAL_ROUTE, params=query)
        unknown = await client.get(ORIGINAL_ROUTE, params={**query, "block": "nope"})
        (pdf_folder / "guide.pdf").rename(tmp_path / "moved.pdf")
        moved = await client.get(ORIGINAL_ROUTE, params=query)
    assert served.status_code == 200 and served.headers["content-type"] == "application/pdf"
    assert served.content == (tmp_path / "moved.pdf").read_bytes()
    assert served.headers["content-disposition"].startswith("inline")
    assert unknown.status_code == 404 and "cannot be opened" in unknown.text
    assert moved.status_code == 404 and "no longer at" in moved.text


# -- Markdown, HTML, EPUB, DOCX: the block in its document ------------------------------------
async def test_a_markdown_block_is_shown_among_the_blocks_around_it_in_the_document(
    ui_user: User, tmp_path: Path, no_keys: None
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    body = "\n\n".join(f"Paragraph {i} of the first part says thing {i}." * 4 for i in range(6))
    (folder / "notes.md").write_text(
        f"# Notes\n\n## First\n\n{body}\n\n## Second\n\nThe backpressure valve lives here.\n\n"
        "## Third\n\nA closing remark about valves.\n",
        encoding="utf-8",
    )
    await cli_import(tmp_path / "home", folder)
    service = service_for(tmp_path / "home", ingest={"block_target_tokens": 40})
    hit = (await tool_result(service, "scan_term", {"term": "backpressure valve"}))["hits"][0]
    citation = Citation(
        index=1,
        citation=hit["citation"],
        doc_id=hit["doc_id"],
        block_id=hit["block_id"],
        valid=True,
        title=hit["title"],
    )
    viewer_page(service, citation)

    await ui_user.open("/viewer")
    ui_user.find(marker="open").click()
    await ui_user.should_see(marker="cited-block", retries=100)
    await ui_user.should_see("The backpressure valve lives here.")
    await ui_user.should_see("A closing remark about valves.")  # the next section
    await ui_user.should_see("Paragraph 5 of the first part")  # and the one before
    sections = texts_of(ui_user, "context-section")
    assert any(s.endswith("Second") for s in sections) and any(
        s.endswith("Third") for s in sections
    )
    assert not found(ui_user, "pdf-page") and not found(ui_user, "open-original")
