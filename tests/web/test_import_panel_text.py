"""What the import panel says about a big document's pace, scanned pages and a resumed import,
in English and Chinese (the texts alone; tests/web/test_import_panel.py drives the panel)."""

from __future__ import annotations

from actors import ImportProgress, ImportResult
from index.records import BuildStats
from web.i18n import Texts
from web.import_panel import closing_message, eta_line, work_line


def test_a_document_embedding_shows_its_blocks_a_second_and_time_left_in_both_languages() -> None:
    p = ImportProgress(collection="default", state="running", eta_s=95.0, blocks_per_s=41.6)
    assert eta_line(Texts("en"), p) == "About 1 min 35 s left · 42 blocks a second"
    assert eta_line(Texts("zh"), p) == "预计还需 1 分 35 秒 · 每秒 42 个块"


def test_a_slow_pace_is_shown_with_a_decimal_never_as_zero() -> None:
    p = ImportProgress(collection="default", state="running", eta_s=30.0, blocks_per_s=0.4)
    assert eta_line(Texts("en"), p) == "About 30 s left · 0.4 blocks a second"


def test_scanned_pages_being_recognised_show_their_own_pace_and_count() -> None:
    p = ImportProgress(
        collection="default",
        state="running",
        eta_s=28.0,
        ocr_pages=3,
        ocr_pages_total=10,
        ocr_pages_per_s=0.25,
        blocks_per_s=None,
    )
    assert eta_line(Texts("en"), p) == "About 28 s left · 0.2 scanned pages a second"
    assert eta_line(Texts("zh"), p) == "预计还需 28 秒 · 每秒识别 0.2 页"
    assert work_line(Texts("en"), p).endswith("3 / 10 scanned pages recognised")


def test_a_resumed_import_says_what_it_kept_in_both_languages() -> None:
    result = ImportResult(
        collection="default",
        snapshot_id="s1",
        status="ready",
        activated=True,
        failed_documents=[],
        skipped=[],
        stats=BuildStats(documents_succeeded=2, embedding_cache_hits=23),
        library_documents=2,
        documents_resumed=1,
    )
    assert closing_message(Texts("en"), result) == (
        "2 documents in the library; 2 added; 1 document finished before the interruption kept; "
        "23 blocks not embedded again."
    )
    assert closing_message(Texts("zh"), result) == (
        "资料库中共有 2 篇文档;新增 2 篇;沿用中断前已完成的 1 篇;23 个块无需重新向量化。"
    )


def test_a_pace_slower_than_one_in_ten_seconds_says_one_every_so_long_never_zero() -> None:
    """Walked: a scanned page recognised every 80 s on a loaded machine was shown as
    "每秒识别 0.0 页" beside a bar that stood still, which reads as stuck."""
    p = ImportProgress(
        collection="default",
        state="running",
        eta_s=795.0,
        ocr_pages=2,
        ocr_pages_total=4,
        ocr_pages_per_s=0.0125,
    )
    assert eta_line(Texts("en"), p) == "About 13 min 15 s left · a scanned page every 1 min 20 s"
    assert eta_line(Texts("zh"), p) == "预计还需 13 分 15 秒 · 每 1 分 20 秒识别 1 页"
    slow = ImportProgress(collection="default", state="running", eta_s=60.0, blocks_per_s=0.05)
    assert eta_line(Texts("en"), slow) == "About 1 min 00 s left · a block every 20 s"
