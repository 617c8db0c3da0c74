"""The running app's public surface: what web/ and cli/ may use, and nothing else of actors/.

`App` is the facade; the rest are the shapes its commands take and return (views, job and
question handles, request events, errors a person can act on) and the few maintenance
functions that run before an App can be opened (upgrade, backups, version checks).

Names load on first use (PEP 562): a parse worker process, which imports one module of this
package, and `citewise --version` do not pay for importing the whole app. The TYPE_CHECKING
block and `__all__` are the same list for type checkers; tests/test_exports.py keeps the three
equal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from index.lazy import lazy_attributes

if TYPE_CHECKING:  # the same names, for type checkers
    from actors.answer_export import ExportLabels, export_name, mark_unverified
    from actors.app import USER_ERRORS, App
    from actors.app_state import DEFAULT_COLLECTION
    from actors.asking import AskResult
    from actors.backup import backups, create_backup, restore_backup
    from actors.caches import CacheUsage
    from actors.catalog import GcReport
    from actors.conversations import ConversationSummary, ConversationTurn
    from actors.document_edit import EditResult
    from actors.errors import AppError, CatalogError, SpendingCapReached, UpgradeRequired
    from actors.evaluation import INFRASTRUCTURE_REASONS, run_eval
    from actors.import_progress import ImportProgress, ImportResult
    from actors.jobs import AskRun, ImportJob, JobState
    from actors.settings import settings_at
    from actors.source_view import SOURCE_RADIUS, PageImage, SourceBlock, SourceView
    from actors.spending import SpendingTotals
    from actors.trace_compare import (
        DiffPiece,
        RerunEstimate,
        TraceComparison,
        answer_diff,
        citation_change,
    )
    from actors.trace_story import (
        AdmissionStep,
        ConversationMessage,
        ModelStep,
        StoryBlock,
        ToolStep,
        TraceStory,
        conversation_of,
    )
    from actors.trace_timeline import (
        TraceTotals,
        WaterfallRow,
        trace_totals,
        waterfall,
    )
    from actors.trace_writer import WriterHealth
    from actors.tracing import trace_document
    from actors.upgrade import explain_upgrade, open_data, run_upgrade
    from actors.views import (
        ActiveSnapshotInfo,
        DamageView,
        DocumentView,
        FailedView,
        ImportReport,
        ImportWarning,
        KeyStored,
        OutlineEntry,
        SnapshotChanges,
        SnapshotView,
        StatusReport,
    )
    from engine.config import Config
    from engine.errors import (
        ConfigError,
        DataTooNew,
        InvalidCollectionName,
        PromptBundleError,
        SecretStoreUnavailable,
        UpgradeError,
        UserError,
        WriterBusy,
    )
    from engine.evaluation import AnswerCheck, EvalResult, GoldItem, RunRecord
    from engine.harness import (
        ANSWERED,
        AdmissionDecided,
        AnswerDelta,
        AnswerRetracted,
        Budgets,
        Citation,
        ConversationTrimmed,
        Event,
        Evidence,
        Finalizing,
        MarkerNumbers,
        ModelCallFinished,
        ProtocolErrorSeen,
        RequestFinished,
        ToolCallFinished,
        ToolCallStarted,
        TurnStarted,
    )
    from engine.keycheck import KeyCheck
    from engine.paths import data_home
    from engine.prompts.bundle import PromptBundle
    from engine.prompts.registry import BundleDiff, BundleInfo, BundleRegistry
    from engine.redaction import install as install_redaction
    from engine.redaction import redact
    from engine.secrets import ENV_NAMES, KeyName
    from engine.trace import (
        EvidenceReplay,
        RerunReport,
        RetrievalReplay,
        RunOutcome,
        TraceRecord,
        TraceSummary,
        render_evidence,
        render_list,
        render_rerun,
        render_retrieval,
        render_trace,
        trace_id_for,
    )
    from engine.versions import app_version
    from engine.versions.updates import VersionReport, check_for_updates, install_folder
    from engine.versions.upgrade import BackupInfo, Inspection

# public name -> (module, name there)
_EXPORTS: dict[str, tuple[str, str]] = {
    **{n: ("actors.app", n) for n in ("USER_ERRORS", "App")},
    "AppError": ("actors.errors", "AppError"),
    "DEFAULT_COLLECTION": ("actors.app_state", "DEFAULT_COLLECTION"),
    **{n: ("actors.answer_export", n) for n in ("ExportLabels", "export_name", "mark_unverified")},
    "AskResult": ("actors.asking", "AskResult"),
    "BackupInfo": ("engine.versions.upgrade", "BackupInfo"),
    "backups": ("actors.backup", "backups"),
    "create_backup": ("actors.backup", "create_backup"),
    "restore_backup": ("actors.backup", "restore_backup"),
    "CatalogError": ("actors.errors", "CatalogError"),
    "CacheUsage": ("actors.caches", "CacheUsage"),
    "GcReport": ("actors.catalog", "GcReport"),
    "ConversationSummary": ("actors.conversations", "ConversationSummary"),
    "ConversationTurn": ("actors.conversations", "ConversationTurn"),
    "EditResult": ("actors.document_edit", "EditResult"),
    "ImportProgress": ("actors.import_progress", "ImportProgress"),
    "ImportResult": ("actors.import_progress", "ImportResult"),
    **{n: ("actors.jobs", n) for n in ("AskRun", "ImportJob", "JobState")},
    **{
        n: ("actors.source_view", n)
        for n in ("SOURCE_RADIUS", "PageImage", "SourceBlock", "SourceView")
    },
    "SpendingCapReached": ("actors.errors", "SpendingCapReached"),
    "SpendingTotals": ("actors.spending", "SpendingTotals"),
    "WriterHealth": ("actors.trace_writer", "WriterHealth"),
    "UpgradeRequired": ("actors.errors", "UpgradeRequired"),
    "open_data": ("actors.upgrade", "open_data"),
    "run_upgrade": ("actors.upgrade", "run_upgrade"),
    "explain_upgrade": ("actors.upgrade", "explain_upgrade"),
    **{
        n: ("actors.views", n)
        for n in (
            "ActiveSnapshotInfo",
            "DamageView",
            "DocumentView",
            "FailedView",
            "ImportReport",
            "ImportWarning",
            "KeyStored",
            "OutlineEntry",
            "SnapshotChanges",
            "SnapshotView",
            "StatusReport",
        )
    },
    "Config": ("engine.config", "Config"),
    "ConfigError": ("engine.errors", "ConfigError"),
    **{
        n: ("engine.harness", n)
        for n in (
            "AdmissionDecided",
            "AnswerDelta",
            "AnswerRetracted",
            "Budgets",
            "Citation",
            "ConversationTrimmed",
            "Event",
            "Evidence",
            "Finalizing",
            "MarkerNumbers",
            "ModelCallFinished",
            "ProtocolErrorSeen",
            "RequestFinished",
            "ToolCallFinished",
            "ToolCallStarted",
            "TurnStarted",
        )
    },
    "app_version": ("engine.versions", "app_version"),
    "KeyCheck": ("engine.keycheck", "KeyCheck"),
    "InvalidCollectionName": ("engine.errors", "InvalidCollectionName"),
    "data_home": ("engine.paths", "data_home"),
    "BundleDiff": ("engine.prompts.registry", "BundleDiff"),
    "BundleInfo": ("engine.prompts.registry", "BundleInfo"),
    "redact": ("engine.redaction", "redact"),
    "install_redaction": ("engine.redaction", "install"),
    "ENV_NAMES": ("engine.secrets", "ENV_NAMES"),
    "KeyName": ("engine.secrets", "KeyName"),
    **{
        n: ("engine.trace", n)
        for n in (
            "EvidenceReplay",
            "RetrievalReplay",
            "TraceRecord",
            "TraceSummary",
            "trace_id_for",
        )
    },
    "VersionReport": ("engine.versions.updates", "VersionReport"),
    "install_folder": ("engine.versions.updates", "install_folder"),
    "check_for_updates": ("engine.versions.updates", "check_for_updates"),
    "DataTooNew": ("engine.errors", "DataTooNew"),
    "UpgradeError": ("engine.errors", "UpgradeError"),
    "WriterBusy": ("engine.errors", "WriterBusy"),
    "UserError": ("engine.errors", "UserError"),
    "SecretStoreUnavailable": ("engine.errors", "SecretStoreUnavailable"),
    "PromptBundleError": ("engine.errors", "PromptBundleError"),
    "Inspection": ("engine.versions.upgrade", "Inspection"),
    "settings_at": ("actors.settings", "settings_at"),
    "ANSWERED": ("engine.harness", "ANSWERED"),
    **{n: ("actors.evaluation", n) for n in ("INFRASTRUCTURE_REASONS", "run_eval")},
    **{n: ("engine.evaluation", n) for n in ("AnswerCheck", "EvalResult", "GoldItem", "RunRecord")},
    "BundleRegistry": ("engine.prompts.registry", "BundleRegistry"),
    "PromptBundle": ("engine.prompts.bundle", "PromptBundle"),
    **{
        n: ("actors.trace_story", n)
        for n in (
            "AdmissionStep",
            "ConversationMessage",
            "ModelStep",
            "StoryBlock",
            "ToolStep",
            "TraceStory",
            "conversation_of",
        )
    },
    **{
        n: ("actors.trace_timeline", n)
        for n in (
            "TraceTotals",
            "WaterfallRow",
            "trace_totals",
            "waterfall",
        )
    },
    **{
        n: ("actors.trace_compare", n)
        for n in (
            "DiffPiece",
            "RerunEstimate",
            "TraceComparison",
            "answer_diff",
            "citation_change",
        )
    },
    "RerunReport": ("engine.trace", "RerunReport"),
    "trace_document": ("actors.tracing", "trace_document"),
    **{
        n: ("engine.trace", n)
        for n in (
            "RunOutcome",
            "render_evidence",
            "render_list",
            "render_rerun",
            "render_retrieval",
            "render_trace",
        )
    },
}

__all__ = [  # the public surface; tests/test_exports.py keeps it equal to _EXPORTS
    "ANSWERED",
    "DEFAULT_COLLECTION",
    "ENV_NAMES",
    "INFRASTRUCTURE_REASONS",
    "SOURCE_RADIUS",
    "USER_ERRORS",
    "ActiveSnapshotInfo",
    "AdmissionDecided",
    "AdmissionStep",
    "AnswerCheck",
    "AnswerDelta",
    "AnswerRetracted",
    "App",
    "AppError",
    "AskResult",
    "AskRun",
    "BackupInfo",
    "Budgets",
    "BundleDiff",
    "BundleInfo",
    "BundleRegistry",
    "CacheUsage",
    "CatalogError",
    "Citation",
    "Config",
    "ConfigError",
    "ConversationMessage",
    "ConversationSummary",
    "ConversationTrimmed",
    "ConversationTurn",
    "DamageView",
    "DataTooNew",
    "DiffPiece",
    "DocumentView",
    "EditResult",
    "EvalResult",
    "Event",
    "Evidence",
    "EvidenceReplay",
    "ExportLabels",
    "FailedView",
    "Finalizing",
    "GcReport",
    "GoldItem",
    "ImportJob",
    "ImportProgress",
    "ImportReport",
    "ImportResult",
    "ImportWarning",
    "Inspection",
    "InvalidCollectionName",
    "JobState",
    "KeyCheck",
    "KeyName",
    "KeyStored",
    "MarkerNumbers",
    "ModelCallFinished",
    "ModelStep",
    "OutlineEntry",
    "PageImage",
    "PromptBundle",
    "PromptBundleError",
    "ProtocolErrorSeen",
    "RequestFinished",
    "RerunEstimate",
    "RerunReport",
    "RetrievalReplay",
    "RunOutcome",
    "RunRecord",
    "SecretStoreUnavailable",
    "SnapshotChanges",
    "SnapshotView",
    "SourceBlock",
    "SourceView",
    "SpendingCapReached",
    "SpendingTotals",
    "StatusReport",
    "StoryBlock",
    "ToolCallFinished",
    "ToolCallStarted",
    "ToolStep",
    "TraceComparison",
    "TraceRecord",
    "TraceStory",
    "TraceSummary",
    "TraceTotals",
    "TurnStarted",
    "UpgradeError",
    "UpgradeRequired",
    "UserError",
    "VersionReport",
    "WaterfallRow",
    "WriterBusy",
    "WriterHealth",
    "answer_diff",
    "app_version",
    "backups",
    "check_for_updates",
    "citation_change",
    "conversation_of",
    "create_backup",
    "data_home",
    "explain_upgrade",
    "export_name",
    "install_folder",
    "install_redaction",
    "mark_unverified",
    "open_data",
    "redact",
    "render_evidence",
    "render_list",
    "render_rerun",
    "render_retrieval",
    "render_trace",
    "restore_backup",
    "run_eval",
    "run_upgrade",
    "settings_at",
    "trace_document",
    "trace_id_for",
    "trace_totals",
    "waterfall",
]


__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS, __all__)
