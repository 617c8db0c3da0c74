"""The prompt-bundle registry: shipped baselines (prompts/) and local experiments
(DATA/prompts/<id>@<version>/); new, freeze, promote, rollback, diff, and the bundle the
harness uses by default. It never writes into the shipped prompts/ folder, never lets a frozen
bundle change under its version, and never promotes without an explicit confirmation.
"""

from __future__ import annotations

import difflib
import os
import re
import shutil
import uuid
from pathlib import Path
from typing import Literal

import msgspec

from engine.clock import utc_timestamp
from engine.crashpoints import crash_point
from engine.errors import PromptBundleError
from engine.paths import DataDir
from engine.prompts.bundle import (
    BASELINE,
    MANIFEST,
    BundleManifest,
    BundleSource,
    PromptBundle,
    bundle_hash,
    load_bundle,
)
from index.fsutil import atomic_write, fsync_dir, killed_writes, process_alive

PROMPTS_DIR = "prompts"  # under the data directory
HISTORY_FILE = "baseline.json"  # the promotion history, beside the experiments
HISTORY_FORMAT = 1
RELEASE_DIR = BASELINE.parent  # the shipped bundles, one folder each
SHIPPED_BASELINE = BASELINE.name  # the folder of the bundle used when nothing is promoted

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$")

BundleStatus = Literal["frozen", "draft", "modified", "broken"]


class BundleInfo(msgspec.Struct, frozen=True, kw_only=True):
    """One bundle as `citewise prompts list` shows it."""

    ref: str  # "id@version"
    id: str
    version: str
    source: BundleSource
    path: str
    status: BundleStatus  # modified: frozen, but its files changed since; broken: unusable
    hash: str = ""  # what its files hash to now
    frozen_hash: str = ""  # what its manifest records ("" = not frozen)
    parent: str | None = None
    description: str = ""
    active: bool = False  # the bundle new questions use
    problem: str = ""


class BaselineEntry(msgspec.Struct, frozen=True, kw_only=True):
    ref: str
    hash: str
    source: BundleSource
    promoted_at: str


class HistoryEvent(msgspec.Struct, frozen=True, kw_only=True):
    action: Literal["promote", "rollback"]
    at: str
    ref: str  # the bundle active after the event
    hash: str
    previous: str  # the bundle active before it


class BaselineHistory(msgspec.Struct, kw_only=True):
    """DATA/prompts/baseline.json: the promoted baselines (the last one is active; an empty
    stack means the shipped baseline) and every promote and rollback, oldest first."""

    format_version: int = HISTORY_FORMAT
    stack: list[BaselineEntry] = []
    events: list[HistoryEvent] = []


class FieldChange(msgspec.Struct, frozen=True):
    field: str
    a: object
    b: object


class BundleDiff(msgspec.Struct, frozen=True, kw_only=True):
    a: str
    b: str
    fields: tuple[FieldChange, ...]  # manifest fields that differ
    templates: dict[str, str]  # template name -> unified diff (only templates that differ)

    @property
    def same(self) -> bool:
        return not self.fields and not self.templates

    def text(self) -> str:
        lines = [f"bundle {self.a} → {self.b}"]
        for change in self.fields:
            lines.append(f"  {change.field}: {change.a!r} → {change.b!r}")
        if self.same:
            lines.append("  (no differences)")
        for name in sorted(self.templates):
            lines.append(self.templates[name])
        return "\n".join(lines)


def split_ref(ref: str) -> tuple[str, str | None]:
    """("id", "version") of "id@version"; ("id", None) of a bare id."""
    ident, sep, version = ref.strip().partition("@")
    if not _ID.match(ident) or (sep and not _VERSION.match(version)):
        raise PromptBundleError(
            f"{ref!r} is not a bundle reference: use ID or ID@VERSION (letters, digits, '.', "
            "'-', '_'), as `citewise prompts list` shows them"
        )
    return ident, version if sep else None


def version_key(version: str) -> tuple[tuple[int, int | str], ...]:
    """Orders versions numerically part by part: 1.2 < 1.10 < 2."""
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"[.\-_]", version))


def next_version(version: str) -> str:
    """The version after `version`: its last number plus one ("1" → "2", "1.0.0" → "1.0.1")."""
    head, sep, last = version.rpartition(".")
    if last.isdigit():
        return f"{head}{sep}{int(last) + 1}"
    return f"{version}.1"


_history_decoder = msgspec.json.Decoder(BaselineHistory)
_manifest_decoder = msgspec.json.Decoder(BundleManifest)


class BundleRegistry:
    """The bundles one data directory can use. `root` is DATA/prompts; `release_dir` holds the
    shipped bundles (read-only; a parameter so tests can point at a copy)."""

    def __init__(self, root: Path, release_dir: Path = RELEASE_DIR) -> None:
        self.root = root
        self.release_dir = release_dir

    @classmethod
    def of(cls, data: DataDir) -> BundleRegistry:
        return cls(data.root / PROMPTS_DIR)

    @property
    def history_file(self) -> Path:
        return self.root / HISTORY_FILE

    # -- finding bundles -------------------------------------------------------------------

    def _folders(self) -> list[tuple[Path, BundleSource]]:
        found: list[tuple[Path, BundleSource]] = []
        places: tuple[tuple[Path, BundleSource], ...] = (
            (self.release_dir, "release"),
            (self.root, "local"),
        )
        for base, source in places:
            if not base.is_dir():
                continue
            for entry in sorted(base.iterdir()):
                # Dot-folders are experiments still being written (see `new`).
                if not entry.name.startswith(".") and (entry / MANIFEST).is_file():
                    found.append((entry, source))
        return found

    def list(self) -> list[BundleInfo]:
        """Every bundle, shipped ones first, each id's versions in order."""
        active = self._active_entry()
        active_ref = active.ref if active else self._shipped_ref()
        infos = [self._inspect(path, source, active_ref) for path, source in self._folders()]
        return sorted(infos, key=lambda i: (i.source != "release", i.id, version_key(i.version)))

    def _shipped_ref(self) -> str:
        manifest = _read_manifest(self.release_dir / SHIPPED_BASELINE)
        return f"{manifest.id}@{manifest.version}"

    def _inspect(self, path: Path, source: BundleSource, active_ref: str) -> BundleInfo:
        try:
            manifest = _read_manifest(path)
        except PromptBundleError as exc:
            return BundleInfo(
                ref=path.name,
                id=path.name.partition("@")[0],
                version=path.name.partition("@")[2],
                source=source,
                path=str(path),
                status="broken",
                problem=str(exc),
            )
        ref = f"{manifest.id}@{manifest.version}"
        base = BundleInfo(
            ref=ref,
            id=manifest.id,
            version=manifest.version,
            source=source,
            path=str(path),
            status="draft",
            frozen_hash=manifest.hash,
            parent=manifest.parent,
            description=manifest.description,
            active=ref == active_ref,
        )
        if source == "local" and path.name != ref:
            return msgspec.structs.replace(
                base,
                status="broken",
                problem=f"the folder is named {path.name!r} but its manifest says {ref!r}",
            )
        try:
            digest = _content_hash(path, manifest)
        except PromptBundleError as exc:
            return msgspec.structs.replace(base, status="broken", problem=str(exc))
        if manifest.hash and manifest.hash != digest:
            return msgspec.structs.replace(
                base,
                status="modified",
                hash=digest,
                problem=f"its files changed after it was frozen; `citewise prompts new --from "
                f"{ref}` makes the next version from them",
            )
        try:
            load_bundle(path, source)
        except PromptBundleError as exc:
            return msgspec.structs.replace(base, status="broken", hash=digest, problem=str(exc))
        return msgspec.structs.replace(
            base, status="frozen" if manifest.hash else "draft", hash=digest
        )

    def _locate(self, ref: str) -> tuple[Path, BundleSource]:
        ident, version = split_ref(ref)
        candidates: list[tuple[str, Path, BundleSource]] = []
        for path, source in self._folders():
            try:
                manifest = _read_manifest(path)
            except PromptBundleError:
                if source == "local" and path.name.partition("@")[0] == ident:
                    candidates.append((path.name.partition("@")[2], path, source))
                continue
            if manifest.id == ident:
                candidates.append((manifest.version, path, source))
        if version is not None:
            candidates = [c for c in candidates if c[0] == version]
        if not candidates:
            known = sorted({i.ref for i in self.list()})
            raise PromptBundleError(
                f"there is no prompt bundle {ref!r}; known bundles: {', '.join(known) or 'none'}"
            )
        _, path, source = max(candidates, key=lambda c: version_key(c[0]))
        return path, source

    def get(self, ref: str) -> PromptBundle:
        """The bundle `ref` names (a bare id means its highest version), checked: a frozen
        bundle whose files changed since is refused."""
        path, source = self._locate(ref)
        try:
            return load_bundle(path, source)
        except PromptBundleError as exc:
            info = self._inspect(path, source, "")
            if info.status == "modified":
                raise PromptBundleError(
                    f"{exc} (`citewise prompts new --from {info.ref}` makes the next version "
                    "from the edited files)"
                ) from None
            raise

    def info(self, ref: str) -> BundleInfo:
        path, source = self._locate(ref)
        active = self._active_entry()
        return self._inspect(path, source, active.ref if active else self._shipped_ref())

    # -- experiments -----------------------------------------------------------------------

    def new(
        self, source_ref: str, *, ident: str | None = None, description: str = ""
    ) -> PromptBundle:
        """A new, unfrozen experiment with the templates of `source_ref` (as its files are now)
        and parent = source id@version. Without `ident` a local source keeps its id (this is
        its next version) and a shipped one gets "<id>-exp"."""
        path, source = self._locate(source_ref)
        manifest = _read_manifest(path)
        new_id = ident or (manifest.id if source == "local" else f"{manifest.id}-exp")
        split_ref(new_id)
        if "@" in new_id:
            raise PromptBundleError(f"{new_id!r}: a new bundle's id has no version part")
        known = self.list()
        if any(i.id == new_id and i.source == "release" for i in known):
            raise PromptBundleError(
                f"{new_id!r} is the id of a shipped bundle; choose another id with --id"
            )
        versions = [i.version for i in known if i.id == new_id and i.source == "local"]
        version = next_version(max(versions, key=version_key)) if versions else "1"
        self.root.mkdir(parents=True, exist_ok=True)
        self._sweep_killed_writes()
        staging = self.root / f".new-{os.getpid()}-{uuid.uuid4().hex}"
        staging.mkdir()
        try:
            for file in manifest.templates.values():
                src = _inside(path, file)
                dst = staging / file
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dst)  # contents only: never the shipped files' modes
            fresh = BundleManifest(
                id=new_id,
                version=version,
                parent=f"{manifest.id}@{manifest.version}",
                description=description
                or f"experiment derived from {manifest.id}@{manifest.version}",
                templates=dict(manifest.templates),
            )
            _write_manifest(staging, fresh)
            bundle_dir = self.root / f"{new_id}@{version}"
            load_bundle(staging, "local")  # the copy must be usable before it gets its name
            crash_point("bundles.new:before-rename")
            os.rename(staging, bundle_dir)
            fsync_dir(self.root)
            crash_point("bundles.new:after-rename")
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)
        return load_bundle(bundle_dir, "local")

    def write_template(self, ref: str, name: str, text: str) -> PromptBundle:
        """Replace one template of an unfrozen experiment (the settings page's editor)."""
        path, source = self._locate(ref)
        manifest = _read_manifest(path)
        label = f"{manifest.id}@{manifest.version}"
        if source == "release":
            raise PromptBundleError(
                f"{label} is a shipped bundle and read-only; make an experiment "
                f"with `citewise prompts new --from {label}`"
            )
        if manifest.hash:
            raise PromptBundleError(
                f"{label} is frozen (its hash is recorded in traces and evaluations) and cannot "
                f"be edited; `citewise prompts new --from {label}` makes the next version"
            )
        if name not in manifest.templates:
            raise PromptBundleError(
                f"{label} has no template {name!r}; it has {', '.join(sorted(manifest.templates))}"
            )
        target = _inside(path, manifest.templates[name])
        atomic_write(target, text.encode("utf-8"))
        return load_bundle(path, "local")

    def freeze(self, ref: str) -> PromptBundle:
        """Record the bundle's hash in its manifest: from now on it must hash to exactly that.
        Freezing a frozen bundle is a no-op; a modified one is refused."""
        path, source = self._locate(ref)
        bundle = self.get(ref)  # refuses a frozen bundle whose files changed
        if bundle.manifest.hash:
            return bundle
        if source == "release":
            raise PromptBundleError(
                f"{bundle.id}@{bundle.version} is a shipped bundle and read-only"
            )
        self._sweep_killed_writes()
        _write_manifest(path, msgspec.structs.replace(bundle.manifest, hash=bundle.hash))
        frozen = load_bundle(path, "local")
        if frozen.hash != bundle.hash:
            raise PromptBundleError(f"{path}: files changed while freezing; freeze again")
        return frozen

    # -- the baseline ----------------------------------------------------------------------

    def history(self) -> BaselineHistory:
        try:
            raw = self.history_file.read_bytes()
        except FileNotFoundError:
            return BaselineHistory()
        except OSError as exc:
            raise PromptBundleError(
                f"{self.history_file}: cannot read ({exc.strerror or exc})"
            ) from None
        try:
            history = _history_decoder.decode(raw)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise PromptBundleError(f"{self.history_file}: {exc}") from None
        if history.format_version > HISTORY_FORMAT:
            raise PromptBundleError(f"{self.history_file} is from a newer Citewise; upgrade first")
        return history

    def _active_entry(self) -> BaselineEntry | None:
        stack = self.history().stack
        return stack[-1] if stack else None

    def _save(self, history: BaselineHistory) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self._sweep_killed_writes()
        atomic_write(
            self.history_file,
            msgspec.json.format(msgspec.json.encode(history)),
            point="bundles.baseline",
        )

    def _sweep_killed_writes(self) -> None:
        """Remove what a process killed mid-write left here: its staging folder (see `new`)
        or its temporary files. Both carry its process id; a live process's are kept."""
        for entry in self.root.glob(".new-*"):
            pid = entry.name.split("-")[1]
            if pid.isdigit() and not process_alive(int(pid)):
                shutil.rmtree(entry, ignore_errors=True)
        folders = [self.root, *(p for p in self.root.iterdir() if p.is_dir())]
        for folder in folders:
            if not folder.name.startswith(".new-"):
                for tmp in killed_writes(folder):
                    tmp.unlink(missing_ok=True)

    def shipped(self) -> PromptBundle:
        return load_bundle(self.release_dir / SHIPPED_BASELINE, "release")

    def active(self) -> PromptBundle:
        """The baseline new questions use: the last promoted bundle, else the shipped one.
        A promoted bundle that no longer hashes to what was promoted is refused, never
        silently replaced."""
        entry = self._active_entry()
        if entry is None:
            return self.shipped()
        try:
            bundle = self.get(entry.ref)
        except PromptBundleError as exc:
            raise PromptBundleError(
                f"the promoted baseline {entry.ref} cannot be used: {exc}; restore it, or "
                "`citewise prompts rollback` to the previous baseline"
            ) from None
        if bundle.hash != entry.hash:
            raise PromptBundleError(
                f"the promoted baseline {entry.ref} now hashes to {bundle.hash}, not "
                f"{entry.hash} as promoted; `citewise prompts rollback` to the previous baseline"
            )
        return bundle

    def promote(self, ref: str, *, confirm: bool) -> PromptBundle:
        """Make a frozen bundle the baseline for every new question (needs `confirm`)."""
        bundle = self.get(ref)
        label = f"{bundle.id}@{bundle.version}"
        if not bundle.manifest.hash:
            raise PromptBundleError(
                f"{label} is not frozen: freeze it first (`citewise prompts freeze {label}`, or "
                "evaluate it, which freezes it) so the baseline has a fixed identity"
            )
        entry = self._active_entry()
        current = entry.ref if entry else self._shipped_ref()
        if current == label and (entry.hash if entry else self.shipped().hash) == bundle.hash:
            return bundle  # already the baseline
        if not confirm:
            raise PromptBundleError(
                f"promoting {label} replaces the baseline {current} for every new question; "
                f"review `citewise prompts diff {current} {label}` and add --yes to confirm"
            )
        history = self.history()
        now = utc_timestamp()
        history.stack.append(
            BaselineEntry(ref=label, hash=bundle.hash, source=bundle.source, promoted_at=now)
        )
        history.events.append(
            HistoryEvent(
                action="promote",
                at=now,
                ref=label,
                hash=bundle.hash,
                previous=current,
            )
        )
        self._save(history)
        return bundle

    def rollback(self) -> PromptBundle:
        """Return to the baseline that was active before the last promotion."""
        history = self.history()
        if not history.stack:
            shipped = self.shipped()
            raise PromptBundleError(
                f"nothing to roll back: the shipped baseline {shipped.id}@{shipped.version} "
                "is active"
            )
        left = history.stack[-1]
        previous = history.stack[-2] if len(history.stack) > 1 else None
        if previous is None:
            restored = self.shipped()
        else:
            restored = self.get(previous.ref)
            if restored.hash != previous.hash:
                raise PromptBundleError(
                    f"cannot roll back to {previous.ref}: its files changed since it was "
                    "promoted; promote another frozen bundle instead"
                )
        history.stack.pop()
        history.events.append(
            HistoryEvent(
                action="rollback",
                at=utc_timestamp(),
                ref=f"{restored.id}@{restored.version}",
                hash=restored.hash,
                previous=left.ref,
            )
        )
        self._save(history)
        return restored

    # -- comparing -------------------------------------------------------------------------

    def diff(self, a: str, b: str) -> BundleDiff:
        """Manifest fields and a unified diff of every template that differs."""
        first, second = self.get(a), self.get(b)
        return diff_bundles(first, second)


def diff_bundles(first: PromptBundle, second: PromptBundle) -> BundleDiff:
    left = f"{first.id}@{first.version}"
    right = f"{second.id}@{second.version}"
    fields: list[FieldChange] = []
    for name in ("id", "version", "parent", "description", "templates", "format_version"):
        x, y = getattr(first.manifest, name), getattr(second.manifest, name)
        if x != y:
            fields.append(FieldChange(name, x, y))
    for name, x, y in (
        ("source", first.source, second.source),
        ("hash", first.hash, second.hash),
        ("frozen", bool(first.manifest.hash), bool(second.manifest.hash)),
    ):
        if x != y:
            fields.append(FieldChange(name, x, y))
    templates: dict[str, str] = {}
    for name in sorted(set(first.templates) | set(second.templates)):
        x, y = first.templates.get(name, ""), second.templates.get(name, "")
        if x == y:
            continue
        lines = difflib.unified_diff(
            x.splitlines(),
            y.splitlines(),
            fromfile=f"{left}/{first.manifest.templates.get(name, name)}",
            tofile=f"{right}/{second.manifest.templates.get(name, name)}",
            lineterm="",
        )
        templates[name] = "\n".join(lines)
    return BundleDiff(a=left, b=right, fields=tuple(fields), templates=templates)


def active_bundle(data: DataDir) -> PromptBundle:
    """The bundle the harness uses when none is named: the promoted baseline, else the
    shipped one. Raises PromptBundleError when the promoted one was changed or removed."""
    return BundleRegistry.of(data).active()


# -- files -----------------------------------------------------------------------------------


def _read_manifest(path: Path) -> BundleManifest:
    file = path / MANIFEST
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise PromptBundleError(f"{file}: cannot read ({exc.strerror or exc})") from None
    try:
        return _manifest_decoder.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise PromptBundleError(f"{file}: {exc}") from None


def _write_manifest(path: Path, manifest: BundleManifest) -> None:
    atomic_write(
        path / MANIFEST,
        msgspec.json.format(msgspec.json.encode(manifest)) + b"\n",
        point="bundles.manifest",
    )


def _inside(path: Path, file: str) -> Path:
    target = (path / file).resolve()
    if path.resolve() not in target.parents:
        raise PromptBundleError(f"{path / MANIFEST}: template {file!r} lies outside the bundle")
    return target


def _content_hash(path: Path, manifest: BundleManifest) -> str:
    blobs: dict[str, bytes] = {}
    for name, file in manifest.templates.items():
        target = _inside(path, file)
        try:
            blobs[name] = target.read_bytes()
        except OSError as exc:
            raise PromptBundleError(f"{target}: cannot read ({exc.strerror or exc})") from None
    return bundle_hash(manifest, blobs)
