"""The diagnostic bundle: one zip holding a trace, its run manifest, its artifacts and the config.

Secrets are provably absent: members are redacted before writing and the written zip is read
back and scanned for every key; a bundle that still holds one is deleted, never handed out.
"""

from __future__ import annotations

import secrets as _random
import zipfile
from collections.abc import Iterable
from pathlib import Path

import msgspec

from engine.errors import ArtifactUnavailable, DiagnosticBundleError
from engine.trace.store import TraceStore
from index.fsutil import replace_with_retry

BUNDLE_FORMAT = 1
MIN_SECRET_CHARS = 8  # shorter strings are no API key, and scanning for them means nothing
REDACTED = b"[REDACTED]"


class BundleReport(msgspec.Struct, kw_only=True):
    path: str
    trace_id: str
    files: list[str]
    bytes: int
    artifacts: int
    artifacts_missing: int
    secrets_checked: int  # distinct keys looked for
    redactions: int  # members in which a key was found and replaced before writing
    verified_clean: bool  # the written zip was read back and holds none of the keys


def _readme(trace_id: str, mode: str, missing: int) -> bytes:
    lines = [
        "Citewise diagnostic bundle",
        "",
        f"trace: {trace_id} (recorded in {mode} mode)",
        "trace.json     the span tree, summary and manifest as `citewise trace show --json`",
        "manifest.json  the run manifest exactly as hashed (its sha256 is its identity)",
        "config.toml    the settings (keys are never settings; proxy passwords are removed)",
        "artifacts/     prompts, tool results and the answer, named by sha256 (full mode only)",
        "",
        "No API key is in this bundle: it was scanned for the keys after it was written.",
    ]
    if missing:
        lines.append(f"{missing} artifact(s) were no longer in the store (retention).")
    return ("\n".join(lines) + "\n").encode()


def _redact(data: bytes, keys: list[bytes]) -> tuple[bytes, bool]:
    found = False
    for key in keys:
        if key in data:
            data = data.replace(key, REDACTED)
            found = True
    return data, found


def write_bundle(
    store: TraceStore,
    trace_id: str,
    dest: Path,
    *,
    config_toml: str,
    secrets: Iterable[str | None],
    trace_json: bytes,
) -> BundleReport:
    """Write the bundle for `trace_id` to `dest` (a .zip path). `trace_json` is the trace as
    `citewise trace show --json` prints it; `secrets` are every key value to keep out."""
    keys = sorted({s.encode() for s in secrets if s and len(s) >= MIN_SECRET_CHARS})
    record = store.get(trace_id)
    members: list[tuple[str, bytes]] = [
        ("trace.json", trace_json),
        ("config.toml", config_toml.encode()),
    ]
    if record.summary.manifest_hash:
        body = store.manifest_body(record.summary.manifest_hash)
        if body is not None:
            members.append(("manifest.json", body))
    missing = 0
    shas = store.trace_artifacts(trace_id)
    for sha in shas:
        try:
            members.append((f"artifacts/{sha}", store.read_artifact(sha)))
        except ArtifactUnavailable:
            missing += 1
    members.append(("README.txt", _readme(trace_id, record.summary.mode, missing)))

    redactions = 0
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.{_random.token_hex(3)}.tmp")
    try:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for name, data in members:
                clean, found = _redact(data, keys)
                redactions += found
                zf.writestr(name, clean)
        if not _clean(tmp, keys):
            raise DiagnosticBundleError(
                "a key was still found in the bundle after redaction; it was deleted"
            )
        replace_with_retry(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return BundleReport(
        path=str(dest),
        trace_id=trace_id,
        files=[name for name, _ in members],
        bytes=dest.stat().st_size,
        artifacts=len(shas) - missing,
        artifacts_missing=missing,
        secrets_checked=len(keys),
        redactions=redactions,
        verified_clean=True,
    )


def zip_contains(path: Path, needle: bytes) -> bool:
    """Whether `needle` occurs in the zip's raw bytes, in any member's name or content."""
    if needle in path.read_bytes():
        return True
    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            if needle in info.filename.encode() or needle in zf.read(info):
                return True
    return False


def _clean(path: Path, keys: list[bytes]) -> bool:
    return not any(zip_contains(path, key) for key in keys)
