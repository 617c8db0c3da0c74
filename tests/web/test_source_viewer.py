"""The source viewer for documents imported with the CLI: the PDF page drawn with the block
marked, and — when the file moved or changed — the reason, in the person's language, with the
block's text instead. Origins are recorded by every import and an older UI record is migrated."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest
from nicegui import ui
from nicegui.testing import User

from actors import App, Citation
from actors.origins import ORIGINS_FILE
from tests.corpus import REPO
from tests.web.conftest import service_for, tool_result
from tests.web.test_app_for_pages import make_pdf
from tests.web.test_ask_page import found, texts_of
from web.i18n import Texts
from web.source_viewer import open_source

pytestmark = pytest.mark.anyio


async def cli_import(home: Path, folder: Path) -> None:
    """`citewise import FOLDER` in its own process, as a person would run it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CITEWISE_")}
    env["CITEWISE_HOME"] = str(home)
    done = await anyio.run_process(
        [sys.executable, "-m", "cli", "import", str(folder)],
        cwd=REPO,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()


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
