"""The evaluation runner's core: gold sets, retrieval metrics without a model, answer checks over
N runs, bundle comparisons, regression bookkeeping and reports. Callers import from here.

Nothing here runs a long-lived task or calls a model itself: answers come from the `ask`
callable the caller passes (cli/evaluate.py wires the harness in).
"""

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
    load_gold,
    normalize,
    parse_gold,
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
    "write_report",
]
