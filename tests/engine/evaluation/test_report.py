"""Report files: eval.json with the SPEC §15 field names, report.md with every run linked to its
trace, and a PNG that image readers accept."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import msgspec
import pytest
from PIL import Image

from engine.embedding import LocalEmbedding
from engine.evaluation import (
    RESULT_DECODER,
    AnswerSummary,
    CompareResult,
    EvalResult,
    GoldItem,
    GoldSet,
    RunRecord,
    compare_answers,
    evaluate_answers,
    evaluate_retrieval,
    write_report,
)
from index.snapshot import Snapshot
from tests.engine.evaluation.conftest import QUOTE, citation_of, item, run
from tests.engine.tools.snapshots import context


def answers(snapshot: Snapshot, g: GoldSet, bundle: str, wrong_run: int | None) -> AnswerSummary:
    cite = citation_of(snapshot, QUOTE)

    async def ask(question: GoldItem, number: int) -> RunRecord:
        fact = "" if number == wrong_run else ", a memory leak"
        record = run(
            snapshot,
            f"10 listeners{fact}.【来源:{cite}】",
            returned=[cite],
            question=question.id,
            number=number,
            cost=0.001,
            tokens=250,
        )
        return msgspec.structs.replace(record, trace_id=f"{bundle[-1]}{number}".ljust(32, "0"))

    async def go() -> AnswerSummary:
        summary, _ = await evaluate_answers(
            g, snapshot, ask, runs=2, bundle=bundle, bundle_hash="f" * 64
        )
        return summary

    return anyio.run(go)


@pytest.fixture
def result(searchable: Snapshot) -> EvalResult:
    g = GoldSet(path="g", sha256="0" * 64, items=(item(id="q-fact"),))
    retrieval = anyio.run(evaluate_retrieval, context(searchable, LocalEmbedding()), g)
    a = answers(searchable, g, "exp@1", wrong_run=None)
    b = answers(searchable, g, "exp@2", wrong_run=2)
    return EvalResult(
        retrieval=retrieval,
        answers=a,
        runs=2,
        eval_id="20261130T000000Z-abcd",
        compare=CompareResult(comparison=compare_answers(a, b), answers_b=b),
    )


def test_the_three_report_files_are_written_and_listed(result: EvalResult, tmp_path: Path) -> None:
    done = write_report(result, tmp_path / "out")
    names = [Path(f).name for f in done.report_files]
    assert names == ["eval.json", "report.md", "report.png"]
    assert all(Path(f).stat().st_size > 0 for f in done.report_files)
    with Image.open(done.report_files[2]) as image:
        assert image.format == "PNG" and image.size[0] > 600 and image.size[1] > 300
        image.verify()


def test_eval_json_has_the_fixed_field_names_and_reads_back(
    result: EvalResult, tmp_path: Path
) -> None:
    done = write_report(result, tmp_path)
    raw = json.loads(Path(done.report_files[0]).read_text(encoding="utf-8"))
    assert {"retrieval", "answers", "runs", "report_files"} <= raw.keys()
    assert {"recall@5", "recall@10", "mrr", "by_kind", "coverage_complete", "scan_ok"} <= raw[
        "retrieval"
    ].keys()
    assert raw["retrieval"]["by_kind"]["fact"]["recall@5"] == result.retrieval.recall_at_5
    assert raw["report_files"] == list(done.report_files)
    assert RESULT_DECODER.decode(Path(done.report_files[0]).read_bytes()) == done


def test_the_markdown_links_every_run_to_its_trace_and_lists_changed_questions(
    result: EvalResult, tmp_path: Path
) -> None:
    text = Path(write_report(result, tmp_path).report_files[1]).read_text(encoding="utf-8")
    for bundle in ("1", "2"):
        for number in (1, 2):
            trace = f"{bundle}{number}".ljust(32, "0")
            assert f"`citewise trace show {trace}`" in text
    assert "## Comparison: exp@1 vs exp@2" in text
    assert "| q-fact | fact | pass (2/2) | flaky (1/2) |" in text
    assert "missing fact 'memory leak / 内存泄漏'" in text


def test_a_retrieval_only_report_charts_recall(searchable: Snapshot, tmp_path: Path) -> None:
    g = GoldSet(path="g", sha256="0" * 64, items=(item(id="q-fact"),))
    retrieval = anyio.run(evaluate_retrieval, context(searchable, LocalEmbedding()), g)
    done = write_report(EvalResult(retrieval=retrieval, answers=None, runs=0), tmp_path)
    with Image.open(done.report_files[2]) as image:
        image.verify()
    assert "## Answers" not in Path(done.report_files[1]).read_text(encoding="utf-8")
