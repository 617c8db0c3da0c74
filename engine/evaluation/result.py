"""An evaluation's result document: what it ran on (its manifest, content hashes as identity),
the retrieval figures (SPEC §15 field names, fixed), the answer figures and the report files.

`evaluate_retrieval` assembles the model-free part. The document is a msgspec Struct written
once as eval.json; fields are only ever appended (with defaults), never renamed.
"""

from __future__ import annotations

import datetime as dt
import secrets
from typing import Any, Literal

import msgspec

from engine.evaluation.answers import AnswerCheck
from engine.evaluation.coverage import CoverageRow, ScanRow, coverage_rows, scan_rows
from engine.evaluation.gold import GoldSet
from engine.evaluation.outcomes import AnswerSummary, Comparison
from engine.evaluation.retrieval import KindRecall, RetrievalRow, evaluate_recall
from engine.tools import ToolContext
from engine.versions.formats import EVAL_RESULT_FILE, EVAL_RESULT_FORMAT

RESULT_FORMAT = EVAL_RESULT_FORMAT
RESULT_FILE = EVAL_RESULT_FILE


class GoldRef(msgspec.Struct, frozen=True, kw_only=True):
    path: str
    sha256: str
    questions: int


class SnapshotRef(msgspec.Struct, frozen=True, kw_only=True):
    collection: str
    id: str
    content_hash: str
    status: str


class BundleRef(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    version: str
    hash: str
    source: str
    parent: str | None = None

    @property
    def ref(self) -> str:
        return f"{self.id}@{self.version}"


class EvalManifest(msgspec.Struct, frozen=True, kw_only=True):
    """Everything the figures depend on; `regression.invalidations` compares these."""

    format_version: int = RESULT_FORMAT
    eval_id: str
    created_at: str
    app_version: str = ""
    app_build: str = ""  # hash of the application's sources
    gold: GoldRef
    snapshot: SnapshotRef
    embedding: dict[str, Any] | None = None  # the snapshot's embedding model
    retrieval_params: dict[str, Any] | None = None  # the snapshot's retrieval parameters
    retrieval_version: str = ""
    tool_contract_version: int = 0
    protocol_version: str = ""
    bundles: tuple[BundleRef, ...] = ()  # the bundle(s) answers ran with (or would run with)
    chat: dict[str, Any] | None = None  # provider and model, when answers ran
    settings: dict[str, dict[str, Any]] = {}  # behaviour-changing settings, per section
    runs: int = 0  # per question; 0 = retrieval only
    retrieval_only: bool = True


class RetrievalResult(msgspec.Struct, frozen=True, kw_only=True):
    recall_at_5: float = msgspec.field(name="recall@5")
    recall_at_10: float = msgspec.field(name="recall@10")
    mrr: float
    by_kind: dict[str, KindRecall]
    coverage_complete: float | None  # share of coverage rows enumerated completely
    scan_ok: float | None  # share of scan questions passing (exact and SCAN_MIN_RATIO)
    questions: int
    rows: tuple[RetrievalRow, ...] = ()
    coverage: tuple[CoverageRow, ...] = ()
    scan: tuple[ScanRow, ...] = ()

    @property
    def missed(self) -> list[str]:
        return [r.id for r in self.rows if r.rank is None]


class Invalidation(msgspec.Struct, frozen=True, kw_only=True):
    """An earlier result whose figures no longer describe the current configuration."""

    eval_id: str
    path: str
    created_at: str
    retrieval: tuple[str, ...] = ()  # why its retrieval figures no longer hold
    answers: tuple[str, ...] = ()  # why its answer figures no longer hold
    notes: tuple[str, ...] = ()  # differences that may matter (e.g. the code build)


class CompareResult(msgspec.Struct, frozen=True, kw_only=True):
    comparison: Comparison
    answers_b: AnswerSummary


class EvalResult(msgspec.Struct, frozen=True, kw_only=True):
    """The `citewise eval --json` document (SPEC §15: retrieval, answers, runs, report_files)."""

    retrieval: RetrievalResult
    answers: AnswerSummary | None
    runs: int
    report_files: tuple[str, ...] = ()
    eval_id: str = ""
    status: Literal["complete", "partial"] = "complete"
    manifest: EvalManifest | None = None
    compare: CompareResult | None = None
    invalidates: tuple[Invalidation, ...] = ()
    still_valid: tuple[str, ...] = ()  # earlier eval ids whose figures still hold
    warnings: tuple[str, ...] = ()

    def checks(self) -> list[AnswerCheck]:
        if self.answers is None:
            return []
        return [c for row in self.answers.rows for c in row.checks]


def new_eval_id(now: dt.datetime | None = None) -> str:
    """Sortable and unique: UTC time, then 4 random hex digits."""
    moment = now or dt.datetime.now(dt.UTC)
    return moment.strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(2)


def _share(flags: list[bool]) -> float | None:
    return sum(flags) / len(flags) if flags else None


async def evaluate_retrieval(ctx: ToolContext, gold: GoldSet) -> RetrievalResult:
    """Recall, MRR, coverage completeness and scan counts of `gold` on `ctx.snapshot`."""
    recall = await evaluate_recall(ctx, gold)
    coverage = await coverage_rows(ctx, gold)
    scans = await scan_rows(ctx, gold)
    return RetrievalResult(
        recall_at_5=recall.recall_at_5,
        recall_at_10=recall.recall_at_10,
        mrr=recall.mrr,
        by_kind=recall.by_kind,
        coverage_complete=_share([r.complete for r in coverage]),
        scan_ok=_share([r.passed for r in scans]),
        questions=recall.questions,
        rows=recall.rows,
        coverage=tuple(coverage),
        scan=tuple(scans),
    )


RESULT_DECODER = msgspec.json.Decoder(EvalResult)
