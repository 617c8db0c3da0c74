"""Regression bookkeeping: which earlier evaluation results (their eval.json manifests) a change
of gold set, snapshot, bundle or behaviour-changing setting invalidates, and why; retrieval and
answer figures are judged separately. It only reads earlier results, never rewrites one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from engine.evaluation.result import RESULT_FILE, EvalManifest, Invalidation

_ANSWER_SETTINGS = ("chat", "budget")  # settings sections that change answers only
_RETRIEVAL_SETTINGS = ("embedding",)  # the query embedding model


class _Earlier(msgspec.Struct):
    manifest: EvalManifest | None = None


_earlier = msgspec.json.Decoder(_Earlier)


def earlier_manifests(root: Path, exclude: str = "") -> list[tuple[str, EvalManifest]]:
    """(path, manifest) of every readable result under `root` (one folder per evaluation),
    oldest first; unreadable or foreign files are skipped, not fatal."""
    found: list[tuple[str, EvalManifest]] = []
    if not root.is_dir():
        return found
    for entry in sorted(root.iterdir()):
        file = entry / RESULT_FILE
        if entry.name == exclude or not file.is_file():
            continue
        try:
            manifest = _earlier.decode(file.read_bytes()).manifest
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            continue
        if manifest is not None and manifest.eval_id != exclude:
            found.append((str(file), manifest))
    return sorted(found, key=lambda pair: pair[1].created_at)


def _differences(before: Any, after: Any, prefix: str) -> list[str]:
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        out: list[str] = []
        for key in sorted(set(before) | set(after)):
            out.extend(_differences(before.get(key), after.get(key), f"{prefix}.{key}"))
        return out
    return [] if before == after else [f"{prefix}: {before!r} → {after!r}"]


def _bundles(manifest: EvalManifest) -> list[str]:
    return [f"{b.id}@{b.version} ({b.hash[:12]})" for b in manifest.bundles]


def retrieval_changes(old: EvalManifest, new: EvalManifest) -> list[str]:
    reasons: list[str] = []
    if old.gold.sha256 != new.gold.sha256:
        reasons.append(f"gold set changed ({old.gold.sha256[:12]} → {new.gold.sha256[:12]})")
    if old.snapshot.content_hash != new.snapshot.content_hash:
        reasons.append(
            f"snapshot changed: {old.snapshot.collection}/{old.snapshot.id} "
            f"({old.snapshot.content_hash[:12]}) → {new.snapshot.collection}/{new.snapshot.id} "
            f"({new.snapshot.content_hash[:12]})"
        )
    reasons += _differences(old.embedding, new.embedding, "snapshot embedding")
    reasons += _differences(old.retrieval_params, new.retrieval_params, "retrieval parameters")
    if old.retrieval_version != new.retrieval_version:
        reasons.append(f"ranking version {old.retrieval_version} → {new.retrieval_version}")
    if old.tool_contract_version != new.tool_contract_version:
        reasons.append(f"tool contract {old.tool_contract_version} → {new.tool_contract_version}")
    for section in _RETRIEVAL_SETTINGS:
        reasons += _differences(
            old.settings.get(section), new.settings.get(section), f"settings.{section}"
        )
    return reasons


def answer_changes(old: EvalManifest, new: EvalManifest) -> list[str]:
    """What changes the answers besides retrieval: bundle, chat, budgets, protocol."""
    reasons: list[str] = []
    before, after = [b.hash for b in old.bundles], [b.hash for b in new.bundles]
    if before != after:
        reasons.append(
            f"prompt bundle {', '.join(_bundles(old)) or 'none'} → "
            f"{', '.join(_bundles(new)) or 'none'}"
        )
    if old.protocol_version != new.protocol_version:
        reasons.append(f"protocol {old.protocol_version} → {new.protocol_version}")
    reasons += _differences(old.chat, new.chat, "chat")
    for section in _ANSWER_SETTINGS:
        reasons += _differences(
            old.settings.get(section), new.settings.get(section), f"settings.{section}"
        )
    return reasons


def invalidations(
    current: EvalManifest, earlier: Sequence[tuple[str, EvalManifest]]
) -> tuple[list[Invalidation], list[str]]:
    """(the earlier results `current` invalidates with the reasons, the ids still valid)."""
    invalid: list[Invalidation] = []
    valid: list[str] = []
    for path, old in earlier:
        retrieval = retrieval_changes(old, current)
        # A change that moves retrieval moves the answers built on it too.
        answers = [] if old.retrieval_only else [*retrieval, *answer_changes(old, current)]
        notes = []
        if old.app_build and current.app_build and old.app_build != current.app_build:
            notes.append(f"code build {old.app_build[:12]} → {current.app_build[:12]}")
        if retrieval or answers:
            invalid.append(
                Invalidation(
                    eval_id=old.eval_id,
                    path=path,
                    created_at=old.created_at,
                    retrieval=tuple(retrieval),
                    answers=tuple(answers),
                    notes=tuple(notes),
                )
            )
        else:
            valid.append(old.eval_id)
    return invalid, valid
