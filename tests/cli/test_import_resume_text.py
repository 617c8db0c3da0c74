"""`citewise import`: the bar's pace for a big document and a scan, and the closing line of a
resumed import (what it kept)."""

from __future__ import annotations

from actors import ImportProgress, ImportResult
from cli.commands import _eta_detail, _progress_detail, closing_line
from index.records import BuildStats


def test_the_bar_shows_blocks_a_second_and_the_time_left_of_a_document_embedding() -> None:
    p = ImportProgress(
        collection="default",
        state="running",
        eta_s=95.0,
        blocks_per_s=41.6,
        blocks_embedded=600,
        blocks_to_embed=1000,
        blocks_cached=200,
    )
    assert _eta_detail(p) == "ETA 1m35s at 42 blocks/s"
    assert "600/1,000 blocks embedded" in _progress_detail(p)
    assert _progress_detail(p).endswith("200 already embedded")


def test_the_bar_shows_scanned_pages_at_a_pace_below_one_a_second() -> None:
    p = ImportProgress(
        collection="default",
        state="running",
        eta_s=28.0,
        ocr_pages=3,
        ocr_pages_total=10,
        ocr_pages_per_s=0.25,
    )
    assert _eta_detail(p) == "ETA 28s at 0.2 scanned pages/s"
    assert "3/10 scanned pages recognised" in _progress_detail(p)


def test_a_resumed_import_says_what_it_kept() -> None:
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
    assert closing_line(result) == (
        "2 documents in the library; 2 added; 1 document finished before the interruption kept; "
        "23 blocks not embedded again."
    )


def test_the_closing_line_counts_documents_read_again_or_embedded_again_not_as_added() -> None:
    def result(**renewed: object) -> ImportResult:
        return ImportResult(
            collection="default",
            snapshot_id="s2",
            status="ready",
            activated=True,
            failed_documents=[],
            skipped=[],
            stats=BuildStats(documents_succeeded=2),
            library_documents=3,
            **renewed,  # type: ignore[arg-type]
        )

    assert closing_line(result(read_again=["scan.pdf"], blocks_changed=4)) == (
        "3 documents in the library; pages recognised again in 1 document, 4 blocks changed; "
        "1 added."
    )
    assert closing_line(result(re_read=["a.md", "b.md"], blocks_changed=3)) == (
        "3 documents in the library; 2 documents read again as this version of Citewise reads "
        "them, 3 blocks changed."
    )
    assert closing_line(result(re_embedded=["a.md", "b.md"])) == (
        "3 documents in the library; 2 documents embedded again for the new embedding model "
        "or vector layout."
    )
