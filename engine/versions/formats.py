"""Every on-disk format of a data directory, with its version: the one registry the upgrade reads.

Each format's version constant lives in the module that reads and writes it; formats owned by
actors/ are declared here (engine cannot import actors) and those modules import them. The
registry is built on first use so that importing a constant stays cheap. Bumping a version
here, or in its module, without registering a migration makes `citewise upgrade` refuse.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

# Formats whose reader and writer live in actors/ (they import these constants).
POINTER_FORMAT = 1  # collections/<c>/ACTIVE (actors/catalog.py)
JOURNAL_FORMAT = 1  # collections/<c>/journal/ (actors/journal.py)
CONVERSATION_FORMAT = 1  # conversations/<c>/<id>.jsonl (actors/conversations.py)
APP_STATE_FORMAT = 1  # state.json: the current collection (actors/app.py)
UI_STATE_FORMAT = 1  # ui/state.json: first-run flag (actors/ui_service.py)
# evals/<id>/eval.json (engine/evaluation/result.py): declared here because that module loads
# the whole evaluator, and every command's start gate reads this registry.
EVAL_RESULT_FORMAT = 1
EVAL_RESULT_FILE = "eval.json"
# The record of which formats a data directory was written with (engine/versions/upgrade.py).
STAMP_FORMAT = 1
# Formats whose modules load numpy (and more) on import, which the start gate of every command
# (`status` included) must not pay for: their versions are repeated here, and
# tests/cli/test_startup.py fails when one differs from its module's constant.
SNAPSHOT_HEADER_FORMAT = 1  # index.snapshot.HEADER_FORMAT
SNAPSHOT_DOCUMENTS_FORMAT = 1  # index.blockstore.DOCUMENTS_FORMAT
SNAPSHOT_RECTS_FORMAT = 1  # index.blockstore.RECTS_FORMAT (rects.bin, optional)
EMBEDDING_CACHE_FORMAT = 1  # engine.embedding.cache.CACHE_FORMAT
SNAPSHOT_BM25_KEYS_FORMAT = 1  # index.bm25.KEYS_FORMAT (bm25.keys, optional)
# Mirrors of modules that load numpy: {format name: (module, constant)}; the test reads them.
MIRRORED = {
    "snapshot_header": ("index.snapshot", "HEADER_FORMAT"),
    "snapshot_documents": ("index.blockstore", "DOCUMENTS_FORMAT"),
    "snapshot_rects": ("index.blockstore", "RECTS_FORMAT"),
    "embedding_cache": ("engine.embedding.cache", "CACHE_FORMAT"),
    "snapshot_bm25_keys": ("index.bm25", "KEYS_FORMAT"),
}


@dataclass(frozen=True)
class Format:
    name: str
    version: int
    where: str  # path pattern relative to the data directory
    module: str  # the module that reads and writes it


@functools.cache
def registry() -> tuple[Format, ...]:
    """Every format this build reads and writes, in upgrade order."""
    # Imported here, not at module level: actor modules import this module for one constant.
    from engine import config
    from engine.prompts import bundle as prompt_bundle
    from engine.prompts import registry as prompt_history
    from engine.trace import bundle as trace_bundle
    from engine.trace import manifest as run_manifest
    from engine.trace import model as trace_model
    from engine.trace import store as trace_store
    from index import records

    snap = "collections/*/snapshots/*/"
    return (
        Format("stamp", STAMP_FORMAT, "formats.json", "engine.versions.upgrade"),
        Format("config", config.CONFIG_FORMAT, "config.toml", "engine.config"),
        Format("snapshot_manifest", records.SNAPSHOT_FORMAT, snap + "manifest.json", "index"),
        Format("snapshot_header", SNAPSHOT_HEADER_FORMAT, snap + "header.msgpack", "index"),
        Format(
            "snapshot_documents",
            SNAPSHOT_DOCUMENTS_FORMAT,
            snap + "documents.msgpack",
            "index.blockstore",
        ),
        Format("snapshot_rects", SNAPSHOT_RECTS_FORMAT, snap + "rects.bin", "index.blockstore"),
        Format("snapshot_bm25_keys", SNAPSHOT_BM25_KEYS_FORMAT, snap + "bm25.keys", "index.bm25"),
        Format("document_record", records.RECORD_FORMAT, "cache/documents/**", "index.records"),
        Format("active_pointer", POINTER_FORMAT, "collections/*/ACTIVE", "actors.catalog"),
        Format("journal", JOURNAL_FORMAT, "collections/*/journal/*", "actors.journal"),
        Format(
            "conversation",
            CONVERSATION_FORMAT,
            "conversations/*/*.jsonl",
            "actors.conversations",
        ),
        Format("app_state", APP_STATE_FORMAT, "state.json", "actors.app"),
        Format("ui_state", UI_STATE_FORMAT, "ui/state.json", "actors.ui_service"),
        Format(
            "trace_store",
            trace_store.SCHEMA_VERSION,
            f"traces/{trace_store.DB_NAME}",
            "engine.trace.store",
        ),
        Format("trace_records", trace_model.TRACE_FORMAT, "traces/**", "engine.trace.model"),
        Format("run_manifest", run_manifest.MANIFEST_FORMAT, "traces/**", "engine.trace.manifest"),
        Format("trace_bundle", trace_bundle.BUNDLE_FORMAT, "bundles/*.zip", "engine.trace.bundle"),
        Format(
            "prompt_bundle",
            prompt_bundle.BUNDLE_FORMAT,
            "prompts/*/manifest.json",
            "engine.prompts.bundle",
        ),
        Format(
            "prompt_history",
            prompt_history.HISTORY_FORMAT,
            f"prompts/{prompt_history.HISTORY_FILE}",
            "engine.prompts.registry",
        ),
        Format(
            "embedding_cache",
            EMBEDDING_CACHE_FORMAT,
            "cache/embeddings.sqlite",
            "engine.embedding.cache",
        ),
        Format(
            "eval_result",
            EVAL_RESULT_FORMAT,
            f"evals/*/{EVAL_RESULT_FILE}",
            "engine.evaluation.result",
        ),
    )


def current_versions() -> dict[str, int]:
    """{format name: version} for this build: what a data directory it writes records."""
    return {f.name: f.version for f in registry()}


# Before data directories recorded their formats (formats.json), every format was at 1.
LEGACY_VERSION = 1
