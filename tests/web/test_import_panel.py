"""The import panel with NiceGUI's simulated user, against a real loopback embedding server
slowed down per batch: pages, blocks and the time left move while the import runs, the bar
ends at exactly 100 %, each failure's reason shows as it happens in the UI language, and the
closing message counts the whole library."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pymupdf
import pytest
from nicegui import ui
from nicegui.testing import User

from engine.config import parse_config
from engine.embedding import EmbeddingCache
from engine.embedding.batching import embed_texts
from engine.embedding.probes import probe_texts
from engine.embedding.providers import provider_for
from engine.paths import DataDir
from tests.corpus import DOCS
from tests.servers.embedding_server import Delay, EmbeddingServer
from tests.web.conftest import service_for
from tests.web.test_ask_page import eventually, found, texts_of
from tests.web.test_library_page import import_path, import_state
from web.i18n import TEXTS
from web.pages import register

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # slow: started first (tests/conftest.py)


async def slow_embedding(
    server: EmbeddingServer,
    monkeypatch: pytest.MonkeyPatch,
    *,
    batch_size: int,
    delay_s: float,
    probes_in: Path | None = None,
) -> dict[str, Any]:
    """Settings that embed on the loopback server, one batch at a time, each taking delay_s;
    with `probes_in`, that data directory has the calibration probes cached first."""
    monkeypatch.setenv("CITEWISE_EMBEDDING_API_KEY", "sk-test-embedding")
    settings: dict[str, Any] = {
        "provider": "openai_compatible",
        "base_url": server.url,
        "model": "test-embedding",
        "dimensions": server.dimensions,
        "batch_size": batch_size,
        "concurrency": 1,
    }
    if probes_in is not None:
        await probes_cached(probes_in, settings)
    server.script(*[Delay(delay_s)] * 10_000)
    return settings


async def probes_cached(home: Path, settings: dict[str, Any]) -> None:
    """The calibration probes (64 texts, embedded after a build's blocks) in `home`'s
    embedding cache, as after a first import with `settings`, embedded before the server is
    slowed: the pace is then the documents' alone (64 one-text batches would add 26 s)."""
    data = DataDir(home).ensure()
    config = parse_config({"embedding": settings}, {})
    provider = provider_for(config.embedding, config.network, "sk-test-embedding")
    try:
        with EmbeddingCache(data.embedding_cache) as cache:
            await embed_texts(provider, cache, probe_texts(), batch_size=64, concurrency=1)
    finally:
        await provider.aclose()


def broken_pdfs(folder: Path) -> None:
    """A PDF cut off half-way (as by a failed download) and one locked with a password."""
    data = (DOCS / "lshort-zh-cn.pdf").read_bytes()
    (folder / "truncated.pdf").write_bytes(data[: len(data) // 2])
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "Quarterly figures.")
    doc.save(
        folder / "locked.pdf",
        encryption=pymupdf.PDF_ENCRYPT_AES_256,
        user_pw="secret",
        owner_pw="owner",
    )


def bar_value(user: User) -> float:
    bars = found(user, "import-bar")
    return float(bars[0].value) if bars else 0.0


async def test_pages_blocks_and_the_time_left_move_and_the_bar_ends_at_exactly_full(
    ui_user: User,
    tmp_path: Path,
    no_keys: None,
    embedding_server: EmbeddingServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    shutil.copy2(DOCS / "debian-reference.en.pdf", folder)  # 261 pages, ~900 blocks
    embedding = await slow_embedding(embedding_server, monkeypatch, batch_size=32, delay_s=0.3)
    register(service_for(tmp_path / "home", embedding=embedding))
    await ui_user.open("/library")
    await import_path(ui_user, folder)
    stats: list[str] = []
    etas: list[str] = []
    bars: list[float] = []

    def watch() -> bool:
        state = import_state(ui_user)
        if state == "Importing…":
            stats.append(texts_of(ui_user, "import-stats")[0])
            etas.append(texts_of(ui_user, "import-eta")[0])
            bars.append(bar_value(ui_user))
        return state == "Import finished"

    await eventually(watch, timeout_s=120)
    # every page is read long before the blocks are embedded, which are counted as they go
    embedded = [s.split(" · ")[1] for s in stats if "261 / 261" in s and "embedded" in s]
    counts = [
        tuple(int(n.replace(",", "")) for n in e.split(" blocks")[0].split(" / ")) for e in embedded
    ]
    assert counts and counts[0][0] < counts[0][1] // 4  # all pages, few blocks yet
    assert len(set(counts)) >= 4
    assert any("embedding tokens" in s and not s.endswith(" 0 embedding tokens") for s in stats)
    # the time left is recomputed from the pace, and says the pace
    measured = [e for e in etas if e.startswith("About ")]
    assert len(set(measured)) >= 3 and any("blocks a second" in e for e in measured)
    assert any(0 < b < 1 for b in bars) and bars == sorted(bars)
    assert bar_value(ui_user) == 1.0
    assert texts_of(ui_user, "import-percent") == ["100 %"]
    final = texts_of(ui_user, "import-stats")[0]
    assert final.startswith("261 / 261 pages read")
    done, total = final.split(" · ")[1].split(" blocks")[0].split(" / ")
    assert done == total and int(total.replace(",", "")) > 500
    assert texts_of(ui_user, "import-result") == ["1 document in the library; 1 added."]


@pytest.mark.parametrize(
    ("language", "reasons", "closing"),
    [
        (
            "en",
            ("The file is protected by a password.", "The file is damaged or incomplete"),
            "3 documents in the library; 3 added; 2 could not be imported — see why below.",
        ),
        (
            "zh",
            ("文件有密码保护。", "文件已损坏或不完整"),
            "资料库中共有 3 篇文档;新增 3 篇;2 篇无法导入——原因见下方。",
        ),
    ],
)
async def test_each_failure_shows_its_reason_while_the_import_runs_then_the_library_is_counted(
    ui_user: User,
    tmp_path: Path,
    docs: Path,
    no_keys: None,
    embedding_server: EmbeddingServer,
    monkeypatch: pytest.MonkeyPatch,
    language: str,
    reasons: tuple[str, str],
    closing: str,
) -> None:
    broken_pdfs(docs)
    # 12 sections, 12 blocks, 4.8 s of embedding: the failures (at parsing) come while it runs
    (docs / "guide.md").write_text(
        "# Guide\n\n" + "".join(f"## Step {i}\n\nDo thing number {i} now.\n\n" for i in range(12))
    )
    embedding = await slow_embedding(
        embedding_server, monkeypatch, batch_size=1, delay_s=0.4, probes_in=tmp_path / "home"
    )
    service = service_for(tmp_path / "home", embedding=embedding, ui={"language": language})
    register(service)
    await ui_user.open("/library")
    await import_path(ui_user, docs)
    running_when_shown: list[bool] = []

    def both_failures_shown() -> bool:
        if len(found(ui_user, "import-failure")) < 2:
            return False
        job = service.current_import
        running_when_shown.append(job is not None and not job.finished.is_set())
        return True

    await eventually(both_failures_shown, timeout_s=60)
    assert running_when_shown == [True]  # shown as they happened, not at the end
    shown = texts_of(ui_user, "import-failure-reason")
    assert any(s.startswith(reasons[0]) for s in shown)
    assert any(s.startswith(reasons[1]) for s in shown)
    await ui_user.should_see("locked.pdf", marker="import-failure")
    # on screen: sentences only; the codes and the engine's own words sit under "details"
    for text in shown:
        assert "encrypted" not in text and "corrupt" not in text and "Error" not in text
    details = found(ui_user, "import-failure-details")
    assert len(details) == 2 and all(isinstance(d, ui.expansion) and not d.value for d in details)
    finished = "Import finished" if language == "en" else "导入完成"
    await eventually(lambda: import_state(ui_user) == finished, timeout_s=60)
    assert texts_of(ui_user, "import-result") == [closing]
    assert bar_value(ui_user) == 1.0
    assert len(found(ui_user, "import-failure")) == 2  # each shown once


def test_every_failure_reason_the_pipeline_can_give_has_a_sentence_in_both_languages() -> None:
    reasons = {
        # engine/parsing (ParseError), actors/discovery.py and actors/ingest.py
        "corrupt",
        "encrypted",
        "no_text_layer",
        "unreadable_text",
        "no_text",
        "empty_file",
        "too_large",
        "archive_too_large",
        "unsafe_archive",
        "unsupported_type",
        "invalid_encoding",
        "changed",
        "timeout",
        "unreadable",
        "in_use",
        "path_too_long",
        "not_found",
        "bad_name",
        "chunk_error",
        "reader_unavailable",
        # engine/errors.py EmbeddingErrorCode
        "unauthorized",
        "no_balance",
        "quota",
        "rate_limited",
        "server_error",
        "connection",
        "bad_request",
        "bad_response",
        "wrong_dimension",
    }
    assert sorted(r for r in reasons if f"fail.{r}" not in TEXTS) == []
    assert "fail.embed.timeout" in TEXTS  # the vendor's timeout is not a damaged file
    for key in [k for k in TEXTS if k.startswith("fail.")]:
        for text in TEXTS[key]:
            # no code, setting name or command (`citewise import …`) on screen
            assert "_" not in text and "`" not in text and "citewise " not in text


@pytest.mark.parametrize("lang", ["en", "zh"])
async def test_an_import_that_cannot_start_says_why_in_the_ui_language(
    ui_user: User, tmp_path: Path, docs: Path, no_keys: None, lang: str
) -> None:
    """Another process holds the library: the panel gives the sentence, not the exception."""
    from engine.writer_lock import writer_lock

    service = service_for(tmp_path / "home", ui={"language": lang})
    register(service)
    await ui_user.open("/library")
    busy = TEXTS["error.writer_busy"][0 if lang == "en" else 1]
    with writer_lock(service.data):
        await import_path(ui_user, docs)
        await eventually(lambda: busy in import_state(ui_user))
    state = import_state(ui_user)
    assert busy in state and "WriterBusy" not in state
