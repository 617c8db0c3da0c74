"""A scanned Chinese chapter walked in a real headless Chromium, in Chinese: it is imported with
OCR (progress shown), found by scan_term and search_blocks, cited, and the citation opens the
page image with the recognised block highlighted and marked as read from a scan.

Every page is visited after the import; the walk fails on any HTTP 5xx, page error, console
error, error notification or error text (tests/web/test_browser_journey.py's Walk). Screenshots
go to $CITEWISE_TEST_ARTIFACTS/browser-scanned/ when that is set."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pymupdf
import pytest
from playwright.sync_api import sync_playwright

from tests.scans import ZH_PDF, add_scan
from tests.servers.chat_server import ChatServer, Text
from tests.web.test_browser_journey import CHROMIUM, CHROMIUM_ARGS, Walk
from tests.web.test_security import serve_env, start_server, stop_server

ARTIFACTS = os.environ.get("CITEWISE_TEST_ARTIFACTS")
pytestmark = pytest.mark.slow


def _scan(_: dict[str, Any]) -> Text:
    return Text('Thought: scan.\nAction: scan_term[{"term": "跨平台"}]')


def _search(_: dict[str, Any]) -> Text:
    return Text('Thought: look.\nAction: search_blocks[{"query": "LaTeX 跨平台 免费 开源"}]')


def _cite(body: dict[str, Any]) -> Text:
    observation = json.loads(body["messages"][-1]["content"].splitlines()[-2])
    blocks = observation["payload"]["blocks"]
    block = blocks[0]
    answer = f"LaTeX 跨平台、免费、开源。【来源:{block['citation']}】"
    return Text(f"Thought: found it.\nAction: Finish[{answer}]", chunk_chars=4)


def test_a_scanned_chapter_is_recognised_found_cited_and_shown_highlighted(
    home: Path, chat_server: ChatServer, tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    out = pymupdf.open()
    for spec in ((13, 70, 70, 190), (14, 70, 70, 300), (15, 70, 70, 300)):
        add_scan(out, ZH_PDF, spec, dpi=150)
    out.save(str(docs / "扫描章节.pdf"))
    shots = tmp_path / "screenshots"
    shots.mkdir()
    env = serve_env(home, CITEWISE_CHAT_BASE_URL=chat_server.url, CITEWISE_TRACE_MODE="full")
    served = start_server(home, env)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(30_000)
            walk = Walk(page, f"http://127.0.0.1:{served.port}", shots)
            page.goto(served.url)
            walk.text("wiz.title").wait_for(timeout=20_000)
            walk.switch_language("zh")
            walk.wizard_to_documents(chat_server).fill(str(docs))
            walk.button("lib.start").click()
            walk.text("lib.state.done").wait_for(timeout=300_000)
            walk.check("import")
            walk.shot("imported")
            walk.visit_every_page("import")
            walk.open("/library")
            walk.shot("library")
            walk.open("/")
            chat_server.script(_scan, _search, _cite)
            box = page.get_by_placeholder(walk.t("ask.placeholder"))
            box.fill("LaTeX 能在哪些系统上使用?")
            box.press("Enter")
            chip = page.locator(".q-chip", has_text="[1]")
            chip.wait_for(timeout=90_000)
            assert "扫描章节" in chip.inner_text()
            walk.check("answer")
            walk.shot("answer")
            chip.click()
            image = page.locator(".q-dialog img[src^='data:image/png']")
            image.wait_for(timeout=30_000)
            assert image.evaluate("img => img.naturalWidth") > 500
            marker = walk.t("source.ocr", confidence=0).split("0")[0]
            page.locator(".q-dialog").get_by_text(marker).first.wait_for()
            time.sleep(1)  # the highlighted page image is drawn
            walk.check("viewer")
            walk.shot("viewer")
            page.keyboard.press("Escape")
            walk.visit_every_page("viewer")
            browser.close()
            assert not walk.problems, walk.problems
    finally:
        stop_server(served)
        if ARTIFACTS:
            target = Path(ARTIFACTS) / "browser-scanned"
            target.mkdir(parents=True, exist_ok=True)
            for shot in shots.iterdir():
                shutil.copy2(shot, target / shot.name)
