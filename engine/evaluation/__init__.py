"""The evaluation runner's core: gold sets, retrieval metrics without a model, answer checks over
N runs, bundle comparisons, regression bookkeeping and reports. Callers import from here.

Nothing here runs a long-lived task or calls a model itself: answers come from the `ask`
callable the caller passes (cli/evaluate.py wires the harness in).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from index.lazy import lazy_attributes

if TYPE_CHECKING:  # the same names, for type checkers; at run time each loads on first use
    from engine.errors import GoldError
    from engine.evaluation.answers import (
        DECLINE_PATTERNS,
        GAP_PATTERNS,
        AnswerCheck,
        EvidenceLayer,
        FailureType,
        RunRecord,
        RunRecorder,
        ToolUse,
        check_run,
        declines,
        discloses_gap,
    )
    from engine.evaluation.coverage import SCAN_MIN_RATIO, CoverageRow, ScanRow, section_key
    from engine.evaluation.gold import (
        KINDS,
        GoldEvidence,
        GoldItem,
        GoldSet,
        Kind,
        SkippedItem,
        load_gold,
        normalize,
        parse_gold,
        skipped_note,
    )
    from engine.evaluation.outcomes import (
        MAX_RUNS,
        AnswerSummary,
        Ask,
        ChangedQuestion,
        Comparison,
        KindPass,
        QuestionOutcome,
        compare_answers,
        evaluate_answers,
    )
    from engine.evaluation.regression import earlier_manifests, invalidations
    from engine.evaluation.report import CHART_FILE, MARKDOWN_FILE, markdown, write_report
    from engine.evaluation.result import (
        RESULT_DECODER,
        RESULT_FILE,
        BundleRef,
        CompareResult,
        EvalManifest,
        EvalResult,
        GoldRef,
        Invalidation,
        RetrievalResult,
        SnapshotRef,
        evaluate_retrieval,
        new_eval_id,
    )
    from engine.evaluation.retrieval import KindRecall, RetrievalRow

# public name -> (module, name there): importing the package loads none of them (PEP 562)
_EXPORTS: dict[str, tuple[str, str]] = {
    "GoldError": ("engine.errors", "GoldError"),
    "DECLINE_PATTERNS": ("engine.evaluation.answers", "DECLINE_PATTERNS"),
    "GAP_PATTERNS": ("engine.evaluation.answers", "GAP_PATTERNS"),
    "AnswerCheck": ("engine.evaluation.answers", "AnswerCheck"),
    "EvidenceLayer": ("engine.evaluation.answers", "EvidenceLayer"),
    "FailureType": ("engine.evaluation.answers", "FailureType"),
    "RunRecord": ("engine.evaluation.answers", "RunRecord"),
    "RunRecorder": ("engine.evaluation.answers", "RunRecorder"),
    "ToolUse": ("engine.evaluation.answers", "ToolUse"),
    "check_run": ("engine.evaluation.answers", "check_run"),
    "declines": ("engine.evaluation.answers", "declines"),
    "discloses_gap": ("engine.evaluation.answers", "discloses_gap"),
    "SCAN_MIN_RATIO": ("engine.evaluation.coverage", "SCAN_MIN_RATIO"),
    "CoverageRow": ("engine.evaluation.coverage", "CoverageRow"),
    "ScanRow": ("engine.evaluation.coverage", "ScanRow"),
    "section_key": ("engine.evaluation.coverage", "section_key"),
    "KINDS": ("engine.evaluation.gold", "KINDS"),
    "GoldEvidence": ("engine.evaluation.gold", "GoldEvidence"),
    "GoldItem": ("engine.evaluation.gold", "GoldItem"),
    "GoldSet": ("engine.evaluation.gold", "GoldSet"),
    "Kind": ("engine.evaluation.gold", "Kind"),
    "SkippedItem": ("engine.evaluation.gold", "SkippedItem"),
    "load_gold": ("engine.evaluation.gold", "load_gold"),
    "normalize": ("engine.evaluation.gold", "normalize"),
    "parse_gold": ("engine.evaluation.gold", "parse_gold"),
    "skipped_note": ("engine.evaluation.gold", "skipped_note"),
    "MAX_RUNS": ("engine.evaluation.outcomes", "MAX_RUNS"),
    "AnswerSummary": ("engine.evaluation.outcomes", "AnswerSummary"),
    "Ask": ("engine.evaluation.outcomes", "Ask"),
    "ChangedQuestion": ("engine.evaluation.outcomes", "ChangedQuestion"),
    "Comparison": ("engine.evaluation.outcomes", "Comparison"),
    "KindPass": ("engine.evaluation.outcomes", "KindPass"),
    "QuestionOutcome": ("engine.evaluation.outcomes", "QuestionOutcome"),
    "compare_answers": ("engine.evaluation.outcomes", "compare_answers"),
    "evaluate_answers": ("engine.evaluation.outcomes", "evaluate_answers"),
    "earlier_manifests": ("engine.evaluation.regression", "earlier_manifests"),
    "invalidations": ("engine.evaluation.regression", "invalidations"),
    "CHART_FILE": ("engine.evaluation.report", "CHART_FILE"),
    "MARKDOWN_FILE": ("engine.evaluation.report", "MARKDOWN_FILE"),
    "markdown": ("engine.evaluation.report", "markdown"),
    "write_report": ("engine.evaluation.report", "write_report"),
    "RESULT_DECODER": ("engine.evaluation.result", "RESULT_DECODER"),
    "RESULT_FILE": ("engine.evaluation.result", "RESULT_FILE"),
    "BundleRef": ("engine.evaluation.result", "BundleRef"),
    "CompareResult": ("engine.evaluation.result", "CompareResult"),
    "EvalManifest": ("engine.evaluation.result", "EvalManifest"),
    "EvalResult": ("engine.evaluation.result", "EvalResult"),
    "GoldRef": ("engine.evaluation.result", "GoldRef"),
    "Invalidation": ("engine.evaluation.result", "Invalidation"),
    "RetrievalResult": ("engine.evaluation.result", "RetrievalResult"),
    "SnapshotRef": ("engine.evaluation.result", "SnapshotRef"),
    "evaluate_retrieval": ("engine.evaluation.result", "evaluate_retrieval"),
    "new_eval_id": ("engine.evaluation.result", "new_eval_id"),
    "KindRecall": ("engine.evaluation.retrieval", "KindRecall"),
    "RetrievalRow": ("engine.evaluation.retrieval", "RetrievalRow"),
}

__all__ = [
    "CHART_FILE",
    "DECLINE_PATTERNS",
    "GAP_PATTERNS",
    "KINDS",
    "MARKDOWN_FILE",
    "MAX_RUNS",
    "RESULT_DECODER",
    "RESULT_FILE",
    "SCAN_MIN_RATIO",
    "AnswerCheck",
    "AnswerSummary",
    "Ask",
    "BundleRef",
    "ChangedQuestion",
    "CompareResult",
    "Comparison",
    "CoverageRow",
    "EvalManifest",
    "EvalResult",
    "EvidenceLayer",
    "FailureType",
    "GoldError",
    "GoldEvidence",
    "GoldItem",
    "GoldRef",
    "GoldSet",
    "Invalidation",
    "Kind",
    "KindPass",
    "KindRecall",
    "QuestionOutcome",
    "RetrievalResult",
    "RetrievalRow",
    "RunRecord",
    "RunRecorder",
    "ScanRow",
    "SkippedItem",
    "SnapshotRef",
    "ToolUse",
    "check_run",
    "compare_answers",
    "declines",
    "discloses_gap",
    "earlier_manifests",
    "evaluate_answers",
    "evaluate_retrieval",
    "invalidations",
    "load_gold",
    "markdown",
    "new_eval_id",
    "normalize",
    "parse_gold",
    "section_key",
    "skipped_note",
    "write_report",
]


__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS, __all__)
