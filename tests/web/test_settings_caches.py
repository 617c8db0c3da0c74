"""Settings → "Saved to speed up imports": the room the import caches take, and clearing them
after asking; refused, in the page's words, while an interrupted import waits to resume from
them."""

from __future__ import annotations

from pathlib import Path

import pytest
from nicegui.testing import User

from actors.journal import Job, JobTarget, Journal
from tests.web.conftest import anyio_backend, home_copy, imported_home, service_for, ui_user  # noqa: F401
from tests.web.test_ask_page import eventually, found, texts_of
from web.pages import register

pytestmark = pytest.mark.anyio


def _documents_cached(home: Path) -> int:
    return sum(1 for p in (home / "cache" / "documents").rglob("*") if p.is_file())


async def test_the_caches_are_shown_and_cleared_after_asking(
    ui_user: User,  # noqa: F811
    home_copy: Path,  # noqa: F811
) -> None:
    service = service_for(home_copy, ui={"language": "en"})
    register(service)
    assert _documents_cached(home_copy) == 2
    await ui_user.open("/settings")
    (sizes,) = texts_of(ui_user, "cache-sizes")
    assert "block embeddings" in sizes and " KB" in sizes
    ui_user.find(marker="cache-clear").click()
    await ui_user.should_see(marker="cache-clear-confirm")
    assert _documents_cached(home_copy) == 2  # nothing is cleared before the person confirms
    ui_user.find(marker="cache-clear-confirm").click()
    await eventually(lambda: _documents_cached(home_copy) == 0)
    await ui_user.should_see("Cleared")
    # the library reads as before
    await ui_user.open("/library")
    await ui_user.should_see("events")


async def test_an_interrupted_import_keeps_its_caches_and_the_page_says_why(
    ui_user: User,  # noqa: F811
    home_copy: Path,  # noqa: F811
) -> None:
    service = service_for(home_copy, ui={"language": "zh"})
    register(service)
    job = Job(
        job_id="killed",
        collection="default",
        created_at="2026-12-08T00:00:00Z",
        targets=(JobTarget(str(home_copy / "docs")),),
    )
    Journal(service.data.journal("default")).start(job)
    await ui_user.open("/settings")
    ui_user.find(marker="cache-clear").click()
    await ui_user.should_see(marker="cache-clear-confirm")
    ui_user.find(marker="cache-clear-confirm").click()
    await eventually(lambda: bool(found(ui_user, "error-message")))
    (sentence,) = texts_of(ui_user, "error-message")
    assert "中断的导入" in sentence and "default" in sentence
    assert _documents_cached(home_copy) == 2
