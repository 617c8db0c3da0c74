"""Traces: the span model, the run manifest, the recorder, the local store, OTLP export,
replays, diagnostic bundles and terminal rendering. Callers import from here.

Nothing in this package runs a long-lived task (actors/trace_writer.py does) and nothing in it
ever stores an API key or, in metadata mode, a document's text, a prompt or an answer.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the same names, for type checkers; at run time each loads on first use
    from engine.errors import (
        ArtifactUnavailable,
        DiagnosticBundleError,
        OtlpExportError,
        TraceNotFound,
        TraceStoreError,
    )
    from engine.trace.bundle import BundleReport, write_bundle, zip_contains
    from engine.trace.manifest import (
        BEHAVIOUR_SETTINGS,
        RunManifest,
        app_build,
        behaviour_settings,
        canonical_json,
        from_harness,
        manifest_extra,
        manifest_hash,
        normalized,
    )
    from engine.trace.model import (
        SPAN_KINDS,
        TRACE_FORMAT,
        ArtifactRef,
        Span,
        SpanEvent,
        SpanKind,
        SpanStatus,
        TraceKind,
        TraceMode,
        TraceSummary,
        WriteOp,
        trace_id_for,
    )
    from engine.trace.otlp import OtlpExporter, exporter_from_environment
    from engine.trace.recorder import (
        IngestEnded,
        IngestFailure,
        IngestRecorder,
        IngestSample,
        RequestRecorder,
        messages_json,
    )
    from engine.trace.render import (
        render_evidence,
        render_list,
        render_rerun,
        render_retrieval,
        render_trace,
    )
    from engine.trace.replay import (
        FULL_MODE_HINT,
        EvidenceReplay,
        RerunReport,
        RetrievalReplay,
        RunOutcome,
        evidence_replay,
        outcome_of_finished,
        outcome_of_trace,
        replay_retrieval,
        snapshot_gone,
        snapshot_of,
        summarize_reruns,
    )
    from engine.trace.store import PruneReport, TraceRecord, TraceStore

# public name -> (module, name there): importing the package loads none of them (PEP 562)
_EXPORTS: dict[str, tuple[str, str]] = {
    "ArtifactUnavailable": ("engine.errors", "ArtifactUnavailable"),
    "DiagnosticBundleError": ("engine.errors", "DiagnosticBundleError"),
    "OtlpExportError": ("engine.errors", "OtlpExportError"),
    "TraceNotFound": ("engine.errors", "TraceNotFound"),
    "TraceStoreError": ("engine.errors", "TraceStoreError"),
    "BundleReport": ("engine.trace.bundle", "BundleReport"),
    "write_bundle": ("engine.trace.bundle", "write_bundle"),
    "zip_contains": ("engine.trace.bundle", "zip_contains"),
    "BEHAVIOUR_SETTINGS": ("engine.trace.manifest", "BEHAVIOUR_SETTINGS"),
    "RunManifest": ("engine.trace.manifest", "RunManifest"),
    "app_build": ("engine.trace.manifest", "app_build"),
    "behaviour_settings": ("engine.trace.manifest", "behaviour_settings"),
    "canonical_json": ("engine.trace.manifest", "canonical_json"),
    "from_harness": ("engine.trace.manifest", "from_harness"),
    "manifest_extra": ("engine.trace.manifest", "manifest_extra"),
    "manifest_hash": ("engine.trace.manifest", "manifest_hash"),
    "normalized": ("engine.trace.manifest", "normalized"),
    "SPAN_KINDS": ("engine.trace.model", "SPAN_KINDS"),
    "TRACE_FORMAT": ("engine.trace.model", "TRACE_FORMAT"),
    "ArtifactRef": ("engine.trace.model", "ArtifactRef"),
    "Span": ("engine.trace.model", "Span"),
    "SpanEvent": ("engine.trace.model", "SpanEvent"),
    "SpanKind": ("engine.trace.model", "SpanKind"),
    "SpanStatus": ("engine.trace.model", "SpanStatus"),
    "TraceKind": ("engine.trace.model", "TraceKind"),
    "TraceMode": ("engine.trace.model", "TraceMode"),
    "TraceSummary": ("engine.trace.model", "TraceSummary"),
    "WriteOp": ("engine.trace.model", "WriteOp"),
    "trace_id_for": ("engine.trace.model", "trace_id_for"),
    "OtlpExporter": ("engine.trace.otlp", "OtlpExporter"),
    "exporter_from_environment": ("engine.trace.otlp", "exporter_from_environment"),
    "IngestEnded": ("engine.trace.recorder", "IngestEnded"),
    "IngestFailure": ("engine.trace.recorder", "IngestFailure"),
    "IngestRecorder": ("engine.trace.recorder", "IngestRecorder"),
    "IngestSample": ("engine.trace.recorder", "IngestSample"),
    "RequestRecorder": ("engine.trace.recorder", "RequestRecorder"),
    "messages_json": ("engine.trace.recorder", "messages_json"),
    "render_evidence": ("engine.trace.render", "render_evidence"),
    "render_list": ("engine.trace.render", "render_list"),
    "render_rerun": ("engine.trace.render", "render_rerun"),
    "render_retrieval": ("engine.trace.render", "render_retrieval"),
    "render_trace": ("engine.trace.render", "render_trace"),
    "FULL_MODE_HINT": ("engine.trace.replay", "FULL_MODE_HINT"),
    "EvidenceReplay": ("engine.trace.replay", "EvidenceReplay"),
    "RerunReport": ("engine.trace.replay", "RerunReport"),
    "RetrievalReplay": ("engine.trace.replay", "RetrievalReplay"),
    "RunOutcome": ("engine.trace.replay", "RunOutcome"),
    "evidence_replay": ("engine.trace.replay", "evidence_replay"),
    "outcome_of_finished": ("engine.trace.replay", "outcome_of_finished"),
    "outcome_of_trace": ("engine.trace.replay", "outcome_of_trace"),
    "replay_retrieval": ("engine.trace.replay", "replay_retrieval"),
    "snapshot_gone": ("engine.trace.replay", "snapshot_gone"),
    "snapshot_of": ("engine.trace.replay", "snapshot_of"),
    "summarize_reruns": ("engine.trace.replay", "summarize_reruns"),
    "PruneReport": ("engine.trace.store", "PruneReport"),
    "TraceRecord": ("engine.trace.store", "TraceRecord"),
    "TraceStore": ("engine.trace.store", "TraceStore"),
}

__all__ = [
    "BEHAVIOUR_SETTINGS",
    "FULL_MODE_HINT",
    "SPAN_KINDS",
    "TRACE_FORMAT",
    "ArtifactRef",
    "ArtifactUnavailable",
    "BundleReport",
    "DiagnosticBundleError",
    "EvidenceReplay",
    "IngestEnded",
    "IngestFailure",
    "IngestRecorder",
    "IngestSample",
    "OtlpExportError",
    "OtlpExporter",
    "PruneReport",
    "RequestRecorder",
    "RerunReport",
    "RetrievalReplay",
    "RunManifest",
    "RunOutcome",
    "Span",
    "SpanEvent",
    "SpanKind",
    "SpanStatus",
    "TraceKind",
    "TraceMode",
    "TraceNotFound",
    "TraceRecord",
    "TraceStore",
    "TraceStoreError",
    "TraceSummary",
    "WriteOp",
    "app_build",
    "behaviour_settings",
    "canonical_json",
    "evidence_replay",
    "exporter_from_environment",
    "from_harness",
    "manifest_extra",
    "manifest_hash",
    "messages_json",
    "normalized",
    "outcome_of_finished",
    "outcome_of_trace",
    "render_evidence",
    "render_list",
    "render_rerun",
    "render_retrieval",
    "render_trace",
    "replay_retrieval",
    "snapshot_gone",
    "snapshot_of",
    "summarize_reruns",
    "trace_id_for",
    "write_bundle",
    "zip_contains",
]


def __getattr__(name: str) -> Any:
    try:
        module, attribute = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
