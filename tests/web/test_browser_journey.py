"""A new user's journey in a real headless Chromium against a real `serve --browser` process:
wizard (scripted chat server, built-in embedding model) → import two corpus documents with
visible progress → pause and resume → ask → streamed answer with citation chips → click a
chip → the source viewer shows the highlighted block and the PDF page → the answer's trace
with its span tree and evidence replay.

Screenshots of each step go to the test's tmp dir and to test-artifacts/browser-journey/.
Needs Debian's `chromium` and the `playwright` package (never `playwright install`).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import sync_playwright

from tests.corpus import DOCS
from tests.servers.chat_server import ChatServer, Text
from tests.web.test_security import serve_env, start_server, stop_server

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
JOURNEY_DOCS = ("debian-reference.en.pdf", "python-faq/installed.html")
# Screenshots stay in the test's tmp dir; CITEWISE_TEST_ARTIFACTS names a folder to copy them to.
ARTIFACTS = (
    Path(os.environ["CITEWISE_TEST_ARTIFACTS"]) / "browser-journey"
    if os.environ.get("CITEWISE_TEST_ARTIFACTS")
    else None
)

pytestmark = pytest.mark.slow  # `./test` installs chromium and playwright; a missing one fails


def _search(_: dict[str, Any]) -> Text:
    return Text('Thought: look it up.\nAction: search_blocks[{"query": "apt-get install package"}]')


def _cite_pdf(body: dict[str, Any]) -> Text:
    """Finish citing the best block that came from the PDF (so the page can be drawn)."""
    observation = json.loads(body["messages"][-1]["content"].splitlines()[-2])
    blocks = observation["payload"]["blocks"]
    block = next(b for b in blocks if b["source_label"].endswith(".pdf"))
    answer = f"Use **apt-get install** to add a package.【来源:{block['citation']}】"
    return Text(f"Thought: found it.\nAction: Finish[{answer}]", chunk_chars=4, chunk_delay_s=0.02)


def test_new_user_journey_in_a_real_browser(
    warm_home: Path, chat_server: ChatServer, tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in JOURNEY_DOCS:
        shutil.copy2(DOCS / name, docs / Path(name).name)
    shots = tmp_path / "screenshots"
    shots.mkdir()
    timings: dict[str, float] = {}
    started = time.monotonic()
    env = serve_env(warm_home, CITEWISE_CHAT_BASE_URL=chat_server.url, CITEWISE_TRACE_MODE="full")
    served = start_server(warm_home, env)
    timings["server_answers_s"] = served.started_s
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            _journey(page, served.url, docs, shots, chat_server, timings, started)
            browser.close()
    finally:
        stop_server(served)
        (shots / "timings.json").write_text(json.dumps(timings, indent=2))
        if ARTIFACTS is not None:
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            for shot in shots.iterdir():
                shutil.copy2(shot, ARTIFACTS / shot.name)


def _journey(
    page: Any,
    url: str,
    docs: Path,
    shots: Path,
    chat_server: ChatServer,
    timings: dict[str, float],
    started: float,
) -> None:
    def shot(name: str) -> None:
        page.screenshot(path=str(shots / f"{name}.png"), full_page=True)

    def button(name: str) -> Any:
        return page.get_by_role("main").get_by_role("button", name=name, exact=True)

    # The token URL sets the cookie and lands on the wizard (first run).
    page.goto(url)
    page.get_by_text("Welcome to Citewise").wait_for(timeout=20_000)
    button("Next").click()  # English
    key = page.get_by_placeholder("Paste the key here")
    key.wait_for()
    timings["cold_start_to_interactive_s"] = round(time.monotonic() - started, 2)
    assert "token=" not in page.url
    shot("01-wizard")

    # DeepSeek key, tested against the scripted server (1-token completion).
    chat_server.script(Text("p"))
    key.fill("sk-journey-0123456789")
    button("Test and continue").click()
    page.get_by_text("Built-in model (offline, no key)").wait_for(timeout=20_000)
    shot("02-key-tested")
    button("Test and continue").click()  # the built-in embedding model
    path = page.get_by_label("…or a file or folder on this computer")
    path.wait_for(timeout=30_000)
    shot("03-embedding-tested")

    # Import the two corpus documents; pause while it runs, then resume.
    path.fill(str(docs))
    button("Import").click()
    button("Pause").click()
    page.get_by_text("Paused", exact=True).wait_for(timeout=10_000)
    page.get_by_text("Documents", exact=False).first.wait_for()
    shot("04-import-paused")
    button("Resume").click()
    page.get_by_text("Importing…").or_(page.get_by_text("Import finished")).first.wait_for()
    shot("05-import-resumed")
    page.get_by_text("Import finished").wait_for(timeout=120_000)
    page.get_by_text("Documents 2 / 2 (0 failed)").wait_for()
    shot("06-import-finished")
    button("Next").click()

    # The first question (asked from the wizard) is answered on the ask page.
    chat_server.script(_search, _cite_pdf)
    question = page.get_by_placeholder("Ask a question about your documents…")
    question.fill("How do I install a package on Debian?")
    button("Ask").click()
    page.wait_for_url("**/?q=*")
    chip = page.locator(".q-chip", has_text="[1]")
    chip.wait_for(timeout=60_000)
    answer = page.locator(".nicegui-markdown", has_text="apt-get install")
    assert "[1]" in answer.inner_text() and "来源" not in answer.inner_text()
    assert "Debian Reference" in chip.inner_text() and "p." in chip.inner_text()
    shot("07-answer-with-chips")

    # The chip opens the source viewer: the cited block highlighted, the PDF page drawn.
    chip.click()
    dialog = page.locator(".q-dialog")
    dialog.get_by_text("cited", exact=False).first.wait_for(timeout=30_000)
    image = dialog.locator("img[src^='data:image/png']")
    image.wait_for(timeout=30_000)
    assert image.evaluate("img => img.naturalWidth") > 500
    shot("08-source-viewer")
    dialog.get_by_role("button", name="Close").click()

    # The answer's trace: the span tree, and evidence replay shows what the model saw.
    page.get_by_role("link", name="Trace of this answer").click()
    page.get_by_text("Span tree").wait_for(timeout=20_000)
    assert page.get_by_text("llm_call", exact=False).count() >= 2
    button("Evidence replay").click()
    page.get_by_text("What the model saw: turn 1", exact=False).wait_for(timeout=20_000)
    shot("09-trace-evidence")
