"""The run manifest: everything one request's behaviour depends on, identified by a content hash.

Versions are for people; the sha256 of the manifest's canonical msgspec JSON is its identity.
It holds versions, models, the pinned snapshot, budgets and behaviour-changing settings — never
an API key, a proxy address or anything else that does not change what the request does.
"""

from __future__ import annotations

import functools
import hashlib
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from engine.config import Config

MANIFEST_FORMAT = 1
_SOURCE_ROOT = Path(__file__).resolve().parents[2]
_SOURCE_PACKAGES = ("engine", "actors", "index", "web", "cli")

# Settings that change what a request does, per config section. Left out on purpose: network
# (how bytes travel, not what they say), trace and snapshots (what is kept afterwards),
# embedding batch size and concurrency (same vectors), ingest (recorded by the snapshot hash),
# ui (not read by the harness).
BEHAVIOUR_SETTINGS: dict[str, tuple[str, ...]] = {
    "chat": (
        "base_url",
        "model",
        "timeout_s",
        "max_output_tokens",
        "temperature",
        "price",
        "daily_cap",
        "monthly_cap",
    ),
    "embedding": ("provider", "base_url", "model", "dimensions", "timeout_s"),
    "budget": (
        "max_context_tokens",
        "max_request_tokens",
        "finalization_reserve_tokens",
        "max_tool_calls",
    ),
    "retrieval": (
        "bm25_k1",
        "bm25_b",
        "rrf_k",
        "top_k",
        "min_similarity",
        "exact_search_max_blocks",
        "max_query_chars",
    ),
}


class BundleRef(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    version: str
    hash: str
    parent: str | None = None
    source: str = ""  # "release" | "local"


class ModelRef(msgspec.Struct, frozen=True, kw_only=True):
    provider: str
    model: str
    dimensions: int | None = None  # embedding models only


class SnapshotRef(msgspec.Struct, frozen=True, kw_only=True):
    collection: str
    id: str
    content_hash: str
    status: str = ""


class RunManifest(msgspec.Struct, frozen=True, kw_only=True):
    format_version: int = MANIFEST_FORMAT
    app_version: str = ""
    app_build: str = ""  # sha256 of the application's source files (see `app_build`)
    prompt_bundle: BundleRef | None = None
    protocol_version: str = ""
    tool_contract_version: int | None = None
    tool_whitelist: tuple[str, ...] = ()
    chat: ModelRef | None = None
    embedding: ModelRef | None = None
    tokenizer: str = ""
    snapshot: SnapshotRef | None = None
    budgets: dict[str, int] = {}
    limits: dict[str, Any] = {}
    retrieval: dict[str, Any] | None = None
    price: dict[str, Any] | None = None
    settings: dict[str, dict[str, Any]] = {}  # BEHAVIOUR_SETTINGS, as configured
    trace_mode: str = "metadata"
    extra: dict[str, Any] = {}  # what the harness added that this version does not name


_FIELDS = frozenset(f.name for f in msgspec.structs.fields(RunManifest)) - {"extra"}
# Per-request values: recorded on the trace, never part of the configuration's identity.
_PER_REQUEST = frozenset({"request_id"})


def canonical_json(manifest: RunManifest) -> bytes:
    """Sorted keys and fields at every level: equal manifests give equal bytes."""
    return msgspec.json.encode(manifest, order="sorted")


def manifest_hash(manifest: RunManifest) -> str:
    return hashlib.sha256(canonical_json(manifest)).hexdigest()


def from_harness(data: Mapping[str, Any]) -> RunManifest:
    """The harness's manifest dict (RequestStarted.manifest) as a RunManifest; keys this
    version does not know are kept under `extra`, per-request values are dropped."""
    known = {k: v for k, v in data.items() if k in _FIELDS}
    extra = {k: v for k, v in data.items() if k not in _FIELDS and k not in _PER_REQUEST}
    manifest = msgspec.convert(known, RunManifest, strict=False)
    if extra:
        manifest = msgspec.structs.replace(manifest, extra={**manifest.extra, **extra})
    return manifest


def normalized(manifest: RunManifest, trace_mode: str) -> RunManifest:
    """The manifest as the trace records it: the trace mode actually used, and this process's
    build when the harness did not name one (the recorder runs in the same process)."""
    return msgspec.structs.replace(
        manifest, trace_mode=trace_mode, app_build=manifest.app_build or app_build()
    )


def behaviour_settings(config: Config) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for section, keys in BEHAVIOUR_SETTINGS.items():
        values = getattr(config, section)
        out[section] = {k: msgspec.to_builtins(getattr(values, k)) for k in keys}
    return out


def manifest_extra(config: Config, *, tool_contract_version: int) -> dict[str, Any]:
    """What the harness does not know by itself; pass it as `Deps.manifest_extra`."""
    return {
        "app_build": app_build(),
        "tool_contract_version": tool_contract_version,
        "settings": behaviour_settings(config),
        "trace_mode": config.trace.mode,
    }


@functools.cache
def app_build() -> str:
    """sha256 over the application's Python sources (path and bytes, sorted): two installs
    with the same build id run the same code. A frozen build has no sources: it reads the id
    its packager wrote into a BUILD_ID file beside the executable."""
    if getattr(sys, "frozen", False):
        marker = Path(sys.executable).with_name("BUILD_ID")
        try:
            return "frozen:" + marker.read_text(encoding="utf-8").strip()
        except OSError:
            return "frozen:unknown"
    digest = hashlib.sha256()
    for package in _SOURCE_PACKAGES:
        root = _SOURCE_ROOT / package
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*.py")):
            digest.update(path.relative_to(_SOURCE_ROOT).as_posix().encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()
