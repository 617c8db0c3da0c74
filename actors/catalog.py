"""The snapshot catalog of one collection: active pointer, pins, retention and lazy GC.

The active pointer is the only file ever replaced (atomically). A pinned snapshot is never
deleted: pins are counted in-process and, on POSIX, held as shared flocks so that another
process's GC sees them too. GC renames a snapshot into trash/ first and retries what it could
not remove (on Windows: a file some process holds open or mapped) on the next run.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import secrets
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

# Still imported from here by actors/app.py and cli/evaluate.py.
from actors.errors import CatalogError as CatalogError
from actors.errors import SnapshotDamaged
from engine.clock import utc_timestamp
from engine.crashpoints import crash_point
from engine.document_cache import DocumentCache
from engine.paths import DataDir
from engine.versions.formats import POINTER_FORMAT
from index.errors import SnapshotError
from index.fsutil import (
    atomic_write,
    fsync_dir,
    killed_writes,
    remove_file,
    remove_tree,
    replace_with_retry,
    sweep,
)
from index.records import SnapshotManifest

if TYPE_CHECKING:  # opened on first pin: `status` reads manifests and never loads numpy
    from index.snapshot import Snapshot

if sys.platform != "win32":
    import fcntl


class ActivePointer(msgspec.Struct, frozen=True):
    snapshot_id: str
    format_version: int = POINTER_FORMAT
    activated_at: str = ""


@dataclass
class GcReport:
    deleted: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    pinned: list[str] = field(default_factory=list)
    retry_later: list[str] = field(default_factory=list)


def new_snapshot_id(now: dt.datetime | None = None) -> str:
    """Sortable by creation time (to the microsecond), unique without coordination."""
    now = now or dt.datetime.now(dt.UTC)
    return f"s{now:%Y%m%d-%H%M%S-%f}-{secrets.token_hex(2)}"


class _PinTable:
    """Process-wide pin counts, shared by every Catalog object of a data directory."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: dict[Path, int] = {}
        self.files: dict[Path, int] = {}  # fd holding a shared flock while pinned


_PINS = _PinTable()
_BUILDING: set[Path] = set()


class Catalog:
    """Snapshots of one collection. Thread-safe; all methods are quick filesystem operations."""

    def __init__(self, data: DataDir, collection: str) -> None:
        self.data = data
        self.collection = collection
        self.root = data.collection(collection)
        self.snapshots_dir = data.snapshots(collection)
        self.pointer = data.active_pointer(collection)
        self.trash = self.root / "trash"
        self.pins_dir = self.root / "pins"

    # -- layout ------------------------------------------------------------------------------
    def exists(self) -> bool:
        return self.root.is_dir()

    def ensure(self) -> Catalog:
        for d in (self.root, self.snapshots_dir, self.trash, self.pins_dir):
            d.mkdir(parents=True, exist_ok=True)
        return self

    def snapshot_path(self, snapshot_id: str) -> Path:
        if (
            not snapshot_id
            or "/" in snapshot_id
            or "\\" in snapshot_id
            or snapshot_id in {".", ".."}
        ):
            raise CatalogError(f"{snapshot_id!r} is not a snapshot id")
        return self.snapshots_dir / snapshot_id

    def new_build_dir(self) -> tuple[str, Path]:
        self.ensure()
        snapshot_id = new_snapshot_id()
        return snapshot_id, self.snapshot_path(snapshot_id)

    # -- manifests ---------------------------------------------------------------------------
    def manifest(self, snapshot_id: str) -> SnapshotManifest | None:
        """The snapshot's manifest; None when there is no such snapshot (or it is a build that
        never committed), SnapshotDamaged when its manifest is there but unreadable."""
        return self._manifest(snapshot_id, active=False)

    def _manifest(self, snapshot_id: str, *, active: bool) -> SnapshotManifest | None:
        directory = self.snapshot_path(snapshot_id)
        try:
            raw = (directory / "manifest.json").read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            problem = f"{directory}: cannot read manifest.json: {exc.strerror or exc}"
            raise SnapshotDamaged(self.collection, snapshot_id, problem, active) from None
        try:
            return msgspec.json.decode(raw, type=SnapshotManifest)
        except msgspec.DecodeError as exc:
            problem = f"{directory}: manifest.json is corrupt: {exc}"
            raise SnapshotDamaged(self.collection, snapshot_id, problem, active) from None

    def list(self) -> list[SnapshotManifest]:
        """Every snapshot with a readable committed manifest, oldest first. A damaged one is
        left out, so that the list still offers the snapshots a person can activate instead."""
        if not self.snapshots_dir.is_dir():
            return []
        out = []
        for entry in sorted(self.snapshots_dir.iterdir()):
            try:
                m = self.manifest(entry.name)
            except SnapshotDamaged:
                continue
            if m is not None:
                out.append(m)
        return out

    def record_failed(self, manifest: SnapshotManifest) -> None:
        """Keep the record of a batch that formed no usable snapshot, for the history."""
        directory = self.snapshot_path(manifest.snapshot_id)
        directory.mkdir(parents=True, exist_ok=True)
        atomic_write(
            directory / "manifest.json",
            msgspec.json.encode(manifest),
            point="catalog.failed-manifest",
        )

    # -- the active pointer ------------------------------------------------------------------
    def active_id(self) -> str | None:
        try:
            raw = self.pointer.read_bytes()
        except FileNotFoundError:
            return None
        try:
            return msgspec.json.decode(raw, type=ActivePointer).snapshot_id
        except msgspec.DecodeError as exc:
            raise CatalogError(
                f"the active-snapshot pointer {self.pointer} is damaged ({exc}); run "
                "`citewise snapshots list` and `citewise snapshots activate ID` to repair it"
            ) from None

    def active_manifest(self) -> SnapshotManifest | None:
        """The active snapshot's manifest, None when no snapshot is active; SnapshotDamaged
        when the pointer names a snapshot whose manifest cannot be read."""
        sid = self.active_id()
        return None if sid is None else self._manifest(sid, active=True)

    def activate(self, snapshot_id: str) -> SnapshotManifest:
        """Make a usable snapshot the active one (also how a rollback is done)."""
        m = self.manifest(snapshot_id)
        if m is None:
            raise CatalogError(
                f"snapshot {snapshot_id} does not exist in collection {self.collection!r}; "
                "see `citewise snapshots list`"
            )
        if m.status not in ("ready", "ready_partial"):
            raise CatalogError(
                f"snapshot {snapshot_id} is {m.status} and cannot be used for questions"
            )
        with self.pinned(snapshot_id):
            pass  # opening proves the files are there and sized as the manifest says
        self.ensure()
        pointer = ActivePointer(snapshot_id=snapshot_id, activated_at=utc_timestamp())
        atomic_write(self.pointer, msgspec.json.encode(pointer), point="catalog.pointer")
        return m

    def unavailable(self, snapshot_id: str, problem: CatalogError, *, active: bool = True) -> str:
        """What the tools' collection_unavailable (and a question's message) says when snapshot
        `snapshot_id` cannot be opened: what is damaged and how to repair it."""
        what = problem.problem if isinstance(problem, SnapshotDamaged) else str(problem)
        what = what.removeprefix(f"snapshot {snapshot_id} cannot be opened: ")
        earlier = [
            m.snapshot_id
            for m in self.list()
            if m.snapshot_id != snapshot_id and m.status in ("ready", "ready_partial")
        ]
        repair = (
            f"activate the previous snapshot (`citewise snapshots activate {earlier[-1]}`)"
            if earlier
            else "import the documents again (no earlier snapshot is usable)"
        )
        which = "the active snapshot" if active else "snapshot"
        return (
            f"{which} {snapshot_id} of collection {self.collection!r} cannot be opened "
            f"({what}); no document can be read until it is repaired. See what is damaged "
            f"with `citewise snapshots verify {snapshot_id}`, then {repair}."
        )

    # -- pins --------------------------------------------------------------------------------
    @contextlib.contextmanager
    def pinned(self, snapshot_id: str) -> Iterator[Snapshot]:
        """Open a snapshot and keep it from being deleted until the block exits."""
        with self._pinned(snapshot_id, active=False) as snap:
            yield snap

    @contextlib.contextmanager
    def _pinned(self, snapshot_id: str, *, active: bool) -> Iterator[Snapshot]:
        path = self.snapshot_path(snapshot_id)
        from index.snapshot import Snapshot

        self._pin(path)
        try:
            try:
                snap = Snapshot.open(path)
            except SnapshotError as exc:  # a damaged manifest, a file missing or cut short
                raise SnapshotDamaged(self.collection, snapshot_id, str(exc), active) from None
            try:
                yield snap
            finally:
                snap.close()
        finally:
            self._unpin(path)

    @contextlib.contextmanager
    def pin_active(self) -> Iterator[Snapshot | None]:
        sid = self.active_id()
        if sid is None:
            yield None
            return
        with self._pinned(sid, active=True) as snap:
            yield snap

    def _pin_file(self, path: Path) -> Path:
        return self.pins_dir / f"{path.name}.pin"

    def _pin(self, path: Path) -> None:
        with _PINS.lock:
            n = _PINS.counts.get(path, 0)
            if n == 0 and sys.platform != "win32":
                self.pins_dir.mkdir(parents=True, exist_ok=True)
                fd = os.open(self._pin_file(path), os.O_RDWR | os.O_CREAT, 0o600)
                fcntl.flock(fd, fcntl.LOCK_SH)
                _PINS.files[path] = fd
            _PINS.counts[path] = n + 1

    def _unpin(self, path: Path) -> None:
        with _PINS.lock:
            n = _PINS.counts.get(path, 0) - 1
            if n > 0:
                _PINS.counts[path] = n
                return
            _PINS.counts.pop(path, None)
            fd = _PINS.files.pop(path, None)
            if fd is not None:
                os.close(fd)  # closing releases the flock

    def is_pinned(self, snapshot_id: str) -> bool:
        path = self.snapshot_path(snapshot_id)
        with _PINS.lock:
            if _PINS.counts.get(path, 0) > 0:
                return True
        if sys.platform == "win32":
            return False  # deleting a mapped file fails there; GC retries later
        pin_file = self._pin_file(path)
        if not pin_file.exists():
            return False
        fd = os.open(pin_file, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)  # releases our probe lock too
        return False

    # -- retention and GC --------------------------------------------------------------------
    def gc(self, keep_last: int, keep_days: int, now: dt.datetime | None = None) -> GcReport:
        """Delete snapshots outside retention that are neither active nor pinned; retry trash."""
        report = GcReport()
        now = now or dt.datetime.now(dt.UTC)
        active = self.active_id()
        usable = [m for m in self.list() if m.status in ("ready", "ready_partial")]
        keep = {m.snapshot_id for m in usable[-keep_last:]} if keep_last > 0 else set()
        if active:
            keep.add(active)
        for m in self.list():
            sid = m.snapshot_id
            young = keep_days > 0 and _age_days(m.created_at, now) < keep_days
            if sid in keep or young:
                report.kept.append(sid)
                continue
            if self.is_pinned(sid):
                report.pinned.append(sid)
                continue
            self._discard(self.snapshot_path(sid), report)
        self._discard_unfinished_builds(report, keep | set(report.pinned))
        self._empty_trash(report)
        # Deleted collections wait in the data directory's trash until nothing holds them.
        report.retry_later.extend(sweep(self.data.root / "trash"))
        report.retry_later.extend(p.name for p in DocumentCache(self.data.document_cache).sweep())
        self._remove_killed_pointer_writes()
        return report

    def _remove_killed_pointer_writes(self) -> None:
        """A pointer write killed before its rename leaves its temporary file behind. Pointer
        writes, like GC, run only under the data directory's writer lock: any such file is
        stale. So are the collection's other files' temporary files (origins.json, written as
        an import starts) whose writing process is gone."""
        if self.root.is_dir():
            for tmp in self.root.glob(f".{self.pointer.name}.*.tmp"):
                tmp.unlink(missing_ok=True)
            for tmp in killed_writes(self.root):
                remove_file(tmp)

    def _discard_unfinished_builds(self, report: GcReport, keep: set[str]) -> None:
        """A directory without a manifest is a build that died; it was never visible."""
        if not self.snapshots_dir.is_dir():
            return
        for entry in self.snapshots_dir.iterdir():
            if entry.name in keep or (entry / "manifest.json").exists():
                continue
            if entry.name.startswith(".") or self._build_in_progress(entry):
                continue
            self._discard(entry, report)

    def _build_in_progress(self, entry: Path) -> bool:
        # Builds only run under the data directory's writer lock, which GC also holds, so a
        # build in progress can only be one of this process's.
        with _PINS.lock:
            return entry in _BUILDING

    @contextlib.contextmanager
    def building(self, path: Path) -> Iterator[None]:
        """Mark a build directory as in progress so GC leaves it alone."""
        with _PINS.lock:
            _BUILDING.add(path)
        try:
            yield
        finally:
            with _PINS.lock:
                _BUILDING.discard(path)

    def _discard(self, path: Path, report: GcReport) -> None:
        self.trash.mkdir(parents=True, exist_ok=True)
        target = self.trash / f"{path.name}.{secrets.token_hex(2)}"
        crash_point("gc.trash:before-replace")
        try:
            replace_with_retry(path, target)
        except OSError:
            report.retry_later.append(path.name)
            return
        crash_point("gc.trash:after-replace")
        fsync_dir(path.parent)
        crash_point("gc.trash:after-dir-fsync")
        report.deleted.append(path.name)

    def _empty_trash(self, report: GcReport) -> None:
        if not self.trash.is_dir():
            return
        for entry in self.trash.iterdir():
            crash_point("gc.rmtree:before")
            if not remove_tree(entry):  # held open or mapped (Windows): the next GC retries
                report.retry_later.append(entry.name)
                continue
            crash_point("gc.rmtree:after")


def _age_days(created_at: str, now: dt.datetime) -> float:
    try:
        created = dt.datetime.fromisoformat(created_at.replace("Z", "+00:00"))
    except ValueError:
        return float("inf")
    return (now - created).total_seconds() / 86400
