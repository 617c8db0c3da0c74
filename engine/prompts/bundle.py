"""Prompt bundles: a manifest (id, version, parent) and its templates, identified by a hash.

Shipped baselines live in prompts/ and are read-only; a bundle whose manifest records a hash
must still match it (a frozen bundle never changes silently). Rendering substitutes only the
named placeholders, in one pass, so text put into a template is never re-interpreted.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

import msgspec

from engine.errors import PromptBundleError
from index.records import SnapshotManifest

BUNDLE_FORMAT = 1
MANIFEST = "manifest.json"
BASELINE = Path(__file__).resolve().parents[2] / "prompts" / "baseline"

# template name -> placeholders it must contain (each exactly once)
REQUIRED: dict[str, tuple[str, ...]] = {
    "system": ("tools", "collection_status"),
    "question": ("question",),
    "finalization": ("reason", "max_tokens"),
}
_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")
_HASH = re.compile(r"^[0-9a-f]{64}$")

BundleSource = Literal["release", "local"]

# The old name, still imported from here by actors/app.py and cli/evaluate.py.
BundleError = PromptBundleError


class BundleManifest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    format_version: int = BUNDLE_FORMAT
    id: str
    version: str
    parent: str | None = None  # "id@version" of the bundle this one was derived from
    description: str = ""
    templates: dict[str, str]  # template name -> file name inside the bundle
    hash: str = ""  # when set, the bundle is frozen and must hash to exactly this


class PromptBundle(msgspec.Struct, frozen=True, kw_only=True):
    manifest: BundleManifest
    hash: str  # sha256 over the identifying manifest fields and every template's bytes
    source: BundleSource
    path: str
    templates: dict[str, str]

    @property
    def id(self) -> str:
        return self.manifest.id

    @property
    def version(self) -> str:
        return self.manifest.version

    @property
    def parent(self) -> str | None:
        return self.manifest.parent

    def render(self, name: str, **values: str) -> str:
        """Template `name` with its placeholders replaced (all of them must be given)."""
        template = self.templates[name]
        missing = set(REQUIRED.get(name, ())) - values.keys()
        if missing:
            raise PromptBundleError(f"template {name!r} needs {', '.join(sorted(missing))}")

        def sub(m: re.Match[str]) -> str:
            key = m.group(1)
            return values[key] if key in values else m.group(0)

        return _PLACEHOLDER.sub(sub, template)

    def render_system(
        self, *, tools: str, collection_status: str, document_languages: str = ""
    ) -> str:
        """The system prompt; {document_languages} is optional (bundles from baseline 1.1.0
        on name it), so an older bundle renders exactly as it was frozen."""
        return self.render(
            "system",
            tools=tools,
            collection_status=collection_status,
            document_languages=document_languages,
        )

    def render_question(self, question: str) -> str:
        return self.render("question", question=question)

    def render_finalization(self, *, reason: str, max_tokens: int) -> str:
        return self.render("finalization", reason=reason, max_tokens=str(max_tokens))


def bundle_hash(manifest: BundleManifest, templates: dict[str, bytes]) -> str:
    digest = hashlib.sha256()
    ident = msgspec.json.encode(
        {
            "format_version": manifest.format_version,
            "id": manifest.id,
            "version": manifest.version,
            "parent": manifest.parent,
            "templates": manifest.templates,
        },
        order="deterministic",
    )
    digest.update(b"manifest\x00" + ident + b"\n")
    for name in sorted(templates):
        digest.update(f"{name}\x00".encode() + hashlib.sha256(templates[name]).digest())
    return digest.hexdigest()


def load_bundle(path: Path, source: BundleSource = "local") -> PromptBundle:
    """Read and check a bundle directory."""
    try:
        raw = (path / MANIFEST).read_bytes()
    except OSError as exc:
        raise PromptBundleError(f"{path / MANIFEST}: cannot read ({exc.strerror or exc})") from None
    try:
        manifest = msgspec.json.decode(raw, type=BundleManifest)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise PromptBundleError(f"{path / MANIFEST}: {exc}") from None
    if manifest.format_version > BUNDLE_FORMAT:
        raise PromptBundleError(
            f"{path}: bundle format {manifest.format_version} is newer than this app reads"
        )
    if manifest.hash and not _HASH.match(manifest.hash):
        raise PromptBundleError(f"{path / MANIFEST}: hash must be 64 lower-case hex digits")
    missing = sorted(set(REQUIRED) - manifest.templates.keys())
    if missing:
        raise PromptBundleError(f"{path / MANIFEST}: templates lack {', '.join(missing)}")
    blobs: dict[str, bytes] = {}
    texts: dict[str, str] = {}
    for name, file in manifest.templates.items():
        target = (path / file).resolve()
        if path.resolve() not in target.parents:
            raise PromptBundleError(f"{path / MANIFEST}: template {file!r} lies outside the bundle")
        try:
            blobs[name] = target.read_bytes()
            texts[name] = blobs[name].decode("utf-8")
        except OSError as exc:
            raise PromptBundleError(f"{target}: cannot read ({exc.strerror or exc})") from None
        except UnicodeDecodeError:
            raise PromptBundleError(f"{target}: not UTF-8 text") from None
        for key in REQUIRED.get(name, ()):
            n = texts[name].count("{" + key + "}")
            if n != 1:
                raise PromptBundleError(
                    f"{target}: placeholder {{{key}}} appears {n} times, not once"
                )
    digest = bundle_hash(manifest, blobs)
    if manifest.hash and manifest.hash != digest:
        raise PromptBundleError(
            f"{path}: bundle {manifest.id}@{manifest.version} is frozen with hash "
            f"{manifest.hash} but its files hash to {digest}: it was modified after freezing; "
            "make a new version instead"
        )
    return PromptBundle(
        manifest=manifest, hash=digest, source=source, path=str(path), templates=texts
    )


def load_baseline() -> PromptBundle:
    return load_bundle(BASELINE, "release")


class _Failed(msgspec.Struct, frozen=True):
    source: str
    stage: str
    reason: str


class CollectionStatus(msgspec.Struct, frozen=True, kw_only=True):
    snapshot_id: str
    completeness: Literal["complete", "partial"]
    documents: int
    failed_documents: list[_Failed]


def collection_status(manifest: SnapshotManifest) -> CollectionStatus:
    return CollectionStatus(
        snapshot_id=manifest.snapshot_id,
        completeness="partial"
        if manifest.status == "ready_partial" or manifest.failed_documents
        else "complete",
        documents=len(manifest.documents),
        failed_documents=[_Failed(f.source, f.stage, f.reason) for f in manifest.failed_documents],
    )


LANGUAGE_NAMES = {"en": "English", "zh": "Chinese"}


def render_document_languages(langs: Iterable[str]) -> str:
    """The {document_languages} text: how many documents of the snapshot are in each
    language, most first (ties by code), e.g. "English (en): 14 documents; Chinese (zh): 5"."""
    counts = Counter(lang or "unknown" for lang in langs)
    if not counts:
        return "no documents"
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    parts = []
    for lang, n in ordered:
        name = LANGUAGE_NAMES.get(lang)
        label = f"{name} ({lang})" if name else lang
        parts.append(f"{label}: {n} document{'s' if n != 1 else ''}")
    return "; ".join(parts)


def render_collection_status(status: CollectionStatus) -> str:
    """The {collection_status} text: JSON, plus a sentence when something is missing."""
    text = msgspec.json.encode(status).decode()
    if status.completeness == "partial":
        text += (
            f"\n{len(status.failed_documents)} document(s) failed to import and are NOT "
            "searchable; every answer must say which sources are missing."
        )
    return text
