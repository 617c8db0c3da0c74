"""The source viewer in a real headless Chromium against a real `serve --browser` process: a
citation chip opens the whole PDF page with its printed label, zoom buttons and ctrl+wheel
resize it without cropping, the next page turns, the original PDF opens (only with the
session cookie), and an HTML citation shows its block among its neighbours.

Needs Debian's `chromium` and the `playwright` package (never `playwright install`).
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from playwright.sync_api import sync_playwright

from tests.corpus import DOCS
from tests.servers.chat_server import ChatServer, Text
from tests.web.test_browser_journey import CHROMIUM, CHROMIUM_ARGS
from tests.web.test_security import serve_env, start_server, stop_server
from tests.web.test_source_viewer import cli_import, make_labelled_pdf

pytestmark = pytest.mark.slow


def _search(query: str) -> Any:
    def reply(_: dict[str, Any]) -> Text:
        return Text(f'Thought: look it up.\nAction: search_blocks[{{"query": "{query}"}}]')

    return reply


def _cite(suffix: str, words: str) -> Any:
    def reply(body: dict[str, Any]) -> Text:
        observation = json.loads(body["messages"][-1]["content"].splitlines()[-2])
        blocks = observation["payload"]["blocks"]
        block = next(b for b in blocks if b["source_label"].endswith(suffix) and words in b["text"])
        return Text(f"Thought: found it.\nAction: Finish[See this.【来源:{block['citation']}】]")

    return reply


def test_a_citation_opens_the_whole_page_zooms_turns_and_opens_the_original(
    home: Path, chat_server: ChatServer, tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    make_labelled_pdf(docs / "guide.pdf")
    shutil.copy2(DOCS / "python-faq" / "installed.html", docs / "installed.html")
    (home / "config.toml").write_text("[ingest]\nblock_target_tokens = 32\n", encoding="utf-8")
    anyio.run(cli_import, home, docs)
    env = serve_env(
        home, CITEWISE_CHAT_BASE_URL=chat_server.url, CITEWISE_DEEPSEEK_API_KEY="sk-view-0123456789"
    )
    served = start_server(home, env)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.goto(served.url)
            _pdf_citation(page, chat_server, served.base, tmp_path)
            page.goto(served.base + "/")
            _html_citation(page, chat_server, tmp_path)
            browser.close()
    finally:
        stop_server(served)


def _ask(page: Any, chat_server: ChatServer, question: str, *replies: Any) -> Any:
    chat_server.script(*replies)
    box = page.get_by_placeholder("Ask a question about your documents…")
    box.wait_for(timeout=30_000)
    box.fill(question)
    page.get_by_role("main").get_by_role("button", name="Ask", exact=True).click()
    chip = page.locator(".q-chip", has_text="[1]").last
    chip.wait_for(timeout=60_000)
    chip.click()
    dialog = page.locator(".q-dialog")
    dialog.get_by_text("cited", exact=False).first.wait_for(timeout=30_000)
    return dialog


def _pdf_citation(page: Any, chat_server: ChatServer, base: str, shots: Path) -> None:
    dialog = _ask(
        page, chat_server, "What does drain do?", _search("drain event"), _cite(".pdf", "drain")
    )
    image = dialog.locator("img[src^='data:image/png']")
    image.wait_for(timeout=30_000)
    dialog.get_by_text("page ii (PDF page 2)", exact=True).wait_for(timeout=10_000)
    time.sleep(0.5)
    page.screenshot(path=str(shots / "pdf.png"))
    # The whole page: the image keeps the page's shape and fits inside its viewport.
    natural = image.evaluate("i => i.naturalHeight / i.naturalWidth")
    shown = image.evaluate("i => i.clientHeight / i.clientWidth")
    viewport = dialog.locator("div.overflow-auto").first
    assert abs(natural - shown) < 0.01
    assert image.evaluate("i => i.clientHeight") <= viewport.evaluate("v => v.clientHeight")
    fitted = image.evaluate("i => i.clientWidth")

    def width_becomes(check: Any) -> int:
        for _ in range(50):
            width: int = image.evaluate("i => i.clientWidth")
            if check(width):
                return width
            time.sleep(0.1)
        raise AssertionError(f"the page stayed {width} px wide")

    dialog.locator(".q-btn", has=page.locator("i", has_text="zoom_in")).click()
    zoomed = width_becomes(lambda w: w > fitted * 1.2)
    box = viewport.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.keyboard.down("Control")
    page.mouse.wheel(0, -300)
    page.keyboard.up("Control")
    width_becomes(lambda w: w > zoomed * 1.1)
    assert page.evaluate("() => window.visualViewport.scale") == 1  # not the browser's zoom
    dialog.locator(".q-btn", has=page.locator("i", has_text="fit_screen")).click()
    width_becomes(lambda w: abs(w - fitted) <= 1)

    href = dialog.get_by_text("Open the original PDF at this page").get_attribute("href")
    assert href.endswith("#page=2")
    original = page.request.get(base + href.split("#")[0])
    assert original.status == 200 and original.headers["content-type"] == "application/pdf"
    assert original.body().startswith(b"%PDF")
    assert httpx.get(base + href.split("#")[0]).status_code == 403  # no session cookie

    dialog.locator(".q-btn", has=page.locator("i", has_text="chevron_left")).click()
    dialog.get_by_text("page i (PDF page 1)", exact=True).wait_for(timeout=10_000)
    dialog.get_by_text("The cited block is not on this page", exact=False).wait_for()
    dialog.get_by_role("button", name="Close").click()


def _html_citation(page: Any, chat_server: ChatServer, shots: Path) -> None:
    dialog = _ask(
        page,
        chat_server,
        "Why is Python installed?",
        _search("Why is Python installed on my machine"),
        _cite(".html", "Python"),
    )
    cited = dialog.locator(".bg-yellow-100")
    cited.wait_for()
    assert dialog.locator(".opacity-70").count() >= 2  # its neighbours in the document
    assert dialog.locator("img").count() == 0
    time.sleep(0.5)
    assert cited.evaluate(
        "e => { const a = e.closest('.q-scrollarea').getBoundingClientRect(), "
        "r = e.getBoundingClientRect(); return r.top < a.bottom && r.bottom > a.top; }"
    )
    page.screenshot(path=str(shots / "html.png"))
