"""Copy-on-write upgrade of a data directory: check → back up → migrate → self-check → switch →
clean up, each step a crash point (`upgrade.<step>.before/after`).

It never edits a live file in place. Migrations read the backup and write new files into
HOME/.upgrade/<id>/; until the switch commits (one atomic write of formats.json) the old data
stays active and untouched, and an interrupted attempt is discarded on the next start. After the
commit the next start finishes moving the new files in (roll forward). Keys are never copied:
they live in the credential store, and nothing here reads the environment.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import secrets
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import msgspec

from engine.clock import utc_timestamp
from engine.crashpoints import crash_point
from engine.errors import (
    DataTooNew,
    NoUpgradePath,
    StampDamaged,
    UpgradeFailed,
    UpgradeUnfinished,
)

# Still imported from here by cli/upgrade.py.
from engine.errors import UpgradeError as UpgradeError
from engine.paths import DataDir, long_path
from engine.versions.formats import LEGACY_VERSION, STAMP_FORMAT, current_versions
from engine.writer_lock import writer_lock
from index.fsutil import atomic_write, fsync_dir, replace_with_retry
from index.fsutil import remove_tree as fsutil_remove_tree

STAMP_FILE = "formats.json"
WORK_DIR = ".upgrade"
BACKUPS_DIR = "backups"
BACKUP_INFO = "backup.json"
PARTIAL = ".partial-"
STEPS = ("check", "backup", "migrate", "selfcheck", "switch", "cleanup")
# Never part of a backup: other backups, work in progress, locks, pins and trash.
_SKIP_TOP = frozenset({BACKUPS_DIR, WORK_DIR, ".restore", "writer.lock", "trash"})
_SKIP_IN_COLLECTION = frozenset({"trash", "pins"})
# Written once and never changed after: a backup may share them (hard link) instead of copying.
_IMMUTABLE = ("cache/documents/", "traces/artifacts/")

State = Literal["new", "current", "older", "newer"]
StepHook = Callable[[str, str], None]  # (step, "before" | "after"); may raise to stop


class SwitchPlan(msgspec.Struct, frozen=True, kw_only=True):
    upgrade_id: str
    moves: list[tuple[str, str]]  # (staged path, live path), both relative to the data dir


class FormatStamp(msgspec.Struct, frozen=True, kw_only=True):
    """HOME/formats.json: the format of every file kind this data directory was written with."""

    format_version: int = STAMP_FORMAT
    formats: dict[str, int]
    app_version: str = ""
    written_at: str = ""
    switching: SwitchPlan | None = None  # set from the commit until the new files are in


class Attempt(msgspec.Struct, frozen=True, kw_only=True):
    """HOME/.upgrade/<id>/attempt.json: what an unfinished attempt made, to discard it."""

    upgrade_id: str
    backup_id: str


class BackupInfo(msgspec.Struct, frozen=True, kw_only=True):
    format_version: int = 1
    backup_id: str
    created_at: str
    reason: str
    app_version: str  # the build that wrote the data ("" = not recorded)
    formats: dict[str, int]
    files: int = 0
    bytes_copied: int = 0
    bytes_shared: int = 0  # hard-linked immutable files: no new disk space


@dataclass(frozen=True)
class Change:
    format: str
    have: int
    reads: int


@dataclass(frozen=True)
class Inspection:
    state: State
    recorded: dict[str, int]
    current: dict[str, int]
    stamped: bool  # formats.json exists (an older build may not have written one)
    app_version: str = ""  # the build that last stamped the directory
    older: tuple[Change, ...] = ()
    newer: tuple[Change, ...] = ()
    switching: SwitchPlan | None = None


@dataclass(frozen=True)
class BackupEstimate:
    files: int
    bytes_copied: int
    bytes_shared: int


@dataclass(frozen=True)
class Migration:
    """Turn format `format` from `from_version` into `from_version + 1`, writing new files only."""

    format: str
    from_version: int
    summary: str  # what changes, shown to the person before they confirm
    run: Callable[[MigrationContext], None]

    @property
    def to_version(self) -> int:
        return self.from_version + 1


@dataclass(frozen=True)
class Check:
    """A self-check: open something with this build's code; raise to fail the upgrade."""

    name: str
    run: Callable[[DataView], None]


@dataclass
class UpgradeReport:
    upgrade_id: str
    backup_id: str
    before: dict[str, int]
    after: dict[str, int]
    migrations: list[str] = field(default_factory=list)
    files: int = 0


def _stamp_id(now: dt.datetime | None = None) -> str:
    now = now or dt.datetime.now(dt.UTC)
    return f"{now:%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"


# -- the stamp ---------------------------------------------------------------------------------
def read_stamp(root: Path) -> FormatStamp | None:
    try:
        raw = (root / STAMP_FILE).read_bytes()
    except FileNotFoundError:
        return None
    try:
        return msgspec.json.decode(raw, type=FormatStamp)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise StampDamaged(
            f"{root / STAMP_FILE} is damaged ({exc}), so Citewise cannot tell which version "
            "wrote this data; restore a backup (`citewise backup list`) or ask for help"
        ) from None


def write_stamp(
    root: Path, formats: Mapping[str, int], app_version: str, switching: SwitchPlan | None = None
) -> None:
    stamp = FormatStamp(
        formats=dict(formats),
        app_version=app_version,
        written_at=utc_timestamp(),
        switching=switching,
    )
    atomic_write(root / STAMP_FILE, msgspec.json.encode(stamp))


def has_data(root: Path) -> bool:
    """Anything worth keeping: a file other than the lock (empty folders do not count)."""
    if not root.is_dir():
        return False
    for _dirpath, _dirs, files in os.walk(root):
        if any(name != "writer.lock" for name in files):
            return True
    return False


def inspect(root: Path, current: Mapping[str, int] | None = None) -> Inspection:
    """Compare what the data directory was written with against what this build reads."""
    reads = dict(current or current_versions())
    stamp = read_stamp(root)
    if stamp is None:
        if not has_data(root):
            return Inspection("new", dict(reads), reads, stamped=False)
        # Written before directories recorded their formats: every format was at 1.
        recorded = {name: LEGACY_VERSION for name in reads}
        app_version = ""
    else:
        recorded, app_version = dict(stamp.formats), stamp.app_version
    newer = tuple(
        Change(name, have, reads.get(name, 0))
        for name, have in recorded.items()
        if name not in reads or have > reads[name]
    )
    # A format the directory never recorded did not exist yet: nothing to migrate.
    older = tuple(
        Change(name, recorded[name], version)
        for name, version in reads.items()
        if name in recorded and recorded[name] < version
    )
    state: State = "newer" if newer else "older" if older else "current"
    switching = stamp.switching if stamp is not None else None
    return Inspection(
        state, recorded, reads, stamp is not None, app_version, older, newer, switching
    )


def describe_newer(inspection: Inspection, root: Path) -> str:
    names = ", ".join(
        f"{c.format} {c.have} (this build reads {c.reads or 'none'})" for c in inspection.newer
    )
    made_by = f" {inspection.app_version}" if inspection.app_version else ""
    return (
        f"the data in {root} was written by a newer Citewise{made_by} ({names}); this version "
        "cannot read it and has not changed it. Install the newer version again, or go back to "
        "the copy made before that upgrade: `citewise backup list`, then `citewise backup "
        "restore ID`"
    )


# -- the compatibility check -------------------------------------------------------------------
def plan_migrations(inspection: Inspection, migrations: Sequence[Migration]) -> list[Migration]:
    """The migrations that take every older format to this build's version, in order."""
    by_step = {(m.format, m.from_version): m for m in migrations}
    order = list(inspection.current)
    chosen: list[Migration] = []
    for change in sorted(inspection.older, key=lambda c: order.index(c.format)):
        for version in range(change.have, change.reads):
            m = by_step.get((change.format, version))
            if m is None:
                raise NoUpgradePath(
                    f"this version cannot upgrade {change.format} from format {version} to "
                    f"{version + 1}; nothing was changed. Install the Citewise release that came "
                    "between the two versions first, start it once, then this one"
                )
            chosen.append(m)
    return chosen


# -- backups -----------------------------------------------------------------------------------
def backups_dir(root: Path) -> Path:
    return root / BACKUPS_DIR


def _backup_entries(root: Path) -> Iterator[tuple[str, Path]]:
    """(relative path, path) of every file a backup holds."""
    for dirpath, dirs, files in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root)
        parts = rel_dir.parts
        if not parts:
            dirs[:] = [d for d in dirs if d not in _SKIP_TOP]
        elif len(parts) == 2 and parts[0] == "collections":
            dirs[:] = [d for d in dirs if d not in _SKIP_IN_COLLECTION]
        dirs.sort()
        for name in sorted(files):
            if not parts and name in _SKIP_TOP:
                continue
            if name.endswith("-shm") or (name.startswith(".") and name.endswith(".tmp")):
                continue  # SQLite's shared-memory index and half-written temporaries
            yield (rel_dir / name).as_posix(), Path(dirpath) / name


def _immutable(rel: str) -> bool:
    return rel.startswith(_IMMUTABLE) or (rel.startswith("collections/") and "/snapshots/" in rel)


def estimate_backup(root: Path) -> BackupEstimate:
    files = copied = shared = 0
    for rel, path in _backup_entries(root):
        size = path.stat().st_size
        files += 1
        if _immutable(rel):
            shared += size
        else:
            copied += size
    return BackupEstimate(files, copied, shared)


def make_backup(
    root: Path, *, backup_id: str, reason: str, formats: Mapping[str, int], app_version: str
) -> BackupInfo:
    """Copy the data directory into backups/<id>/: a complete data directory of its own.

    Built under a `.partial-` name and renamed when complete, so a listed backup is whole.
    """
    folder = backups_dir(root)
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / f"{PARTIAL}{backup_id}"
    files, copied, shared = copy_data(root, partial)
    info = BackupInfo(
        backup_id=backup_id,
        created_at=utc_timestamp(),
        reason=reason,
        app_version=app_version,
        formats=dict(formats),
        files=files,
        bytes_copied=copied,
        bytes_shared=shared,
    )
    partial.mkdir(parents=True, exist_ok=True)
    atomic_write(partial / BACKUP_INFO, msgspec.json.encode(info))
    replace_with_retry(partial, folder / backup_id)
    fsync_dir(folder)
    return info


def copy_data(
    source: Path, target: Path, skip: frozenset[str] = frozenset()
) -> tuple[int, int, int]:
    """Copy a data directory's files (not its backups, locks or trash) into `target`.

    Immutable files are hard-linked where the volume allows. Returns (files, bytes copied,
    bytes shared). `skip` names top-level files to leave out.
    """
    files = copied = shared = 0
    for rel, path in _backup_entries(source):
        if rel in skip:
            continue
        destination = target / rel
        destination.parent.mkdir(parents=True, exist_ok=True)
        size = path.stat().st_size
        if _immutable(rel) and _try_link(path, destination):
            shared += size
        else:
            shutil.copy2(long_path(path), long_path(destination))
            copied += size
        files += 1
    return files, copied, shared


def _try_link(source: Path, target: Path) -> bool:
    try:
        os.link(long_path(source), long_path(target))
    except OSError:  # FAT, network shares, other volumes: copy instead
        return False
    return True


def list_backups(root: Path) -> list[BackupInfo]:
    """Complete backups, oldest first."""
    folder = backups_dir(root)
    if not folder.is_dir():
        return []
    out = []
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith("."):
            continue
        try:
            out.append(msgspec.json.decode((entry / BACKUP_INFO).read_bytes(), type=BackupInfo))
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            continue
    return out


def remove_tree(path: Path) -> bool:
    """Delete a folder, retrying what is held; False when something (a mapped or open file)
    kept part of it, which the next start removes (recover and finish_restore sweep)."""
    return fsutil_remove_tree(long_path(path))


# -- migration and self-check ------------------------------------------------------------------
class MigrationContext:
    """What a migration sees: the old data (the backup, read-only) and where to write."""

    def __init__(self, old: Path, layers: Sequence[Path], out: Path) -> None:
        self.old = old
        self._layers = layers  # earlier migrations' output, newest first
        self.out = out

    def source(self, rel: str) -> Path:
        """The file as the previous step left it: an earlier migration's output, or the old."""
        for layer in self._layers:
            if (layer / rel).exists():
                return layer / rel
        return self.old / rel

    def target(self, rel: str) -> Path:
        """A new file replacing `rel` after the switch (the folder is made)."""
        path = self.out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def glob(self, pattern: str) -> list[str]:
        return sorted(p.relative_to(self.old).as_posix() for p in self.old.glob(pattern))


class DataView:
    """The data directory as it will be after the switch: new files over the live ones."""

    def __init__(self, root: Path, layers: Sequence[Path] = ()) -> None:
        self.root = root
        self._layers = layers

    def resolve(self, rel: str) -> Path:
        for layer in self._layers:
            if (layer / rel).exists():
                return layer / rel
        return self.root / rel

    def staged(self, rel: str) -> bool:
        return self.resolve(rel) != self.root / rel


# -- the sequence ------------------------------------------------------------------------------
class Upgrade:
    """One upgrade of one data directory, run by `run()` after the person confirmed."""

    def __init__(
        self,
        root: Path,
        *,
        migrations: Sequence[Migration],
        checks: Sequence[Check],
        app_version: str,
        current: Mapping[str, int] | None = None,
        on_step: StepHook | None = None,
    ) -> None:
        self.root = root
        self.migrations = migrations
        self.checks = checks
        self.app_version = app_version
        self.current = dict(current or current_versions())
        self.on_step = on_step or (lambda step, when: None)

    @contextlib.contextmanager
    def _step(self, name: str) -> Iterator[None]:
        crash_point(f"upgrade.{name}.before")
        self.on_step(name, "before")
        yield
        crash_point(f"upgrade.{name}.after")
        self.on_step(name, "after")

    def run(self) -> UpgradeReport | None:
        """Upgrade, or None when nothing needed it. Raises an UpgradeError saying what to do."""
        with writer_lock(DataDir(self.root)):
            recover(self.root)
            try:
                with self._step("check"):
                    found = inspect(self.root, self.current)
                    if found.state == "newer":
                        raise DataTooNew(describe_newer(found, self.root))
                    if found.state != "older":
                        return None
                    plan = plan_migrations(found, self.migrations)
                    _check_space(self.root)
            except UpgradeError:
                raise
            except Exception as exc:
                raise _failed("check", exc) from exc
            upgrade_id = _stamp_id()
            backup_id = f"{upgrade_id}-v{found.app_version or 'legacy'}"
            work = self.root / WORK_DIR / upgrade_id
            work.mkdir(parents=True)
            atomic_write(
                work / "attempt.json",
                msgspec.json.encode(Attempt(upgrade_id=upgrade_id, backup_id=backup_id)),
            )
            report = UpgradeReport(upgrade_id, backup_id, found.recorded, self.current)
            step = "backup"
            try:
                with self._step("backup"):
                    make_backup(
                        self.root,
                        backup_id=backup_id,
                        reason=f"before the upgrade to Citewise {self.app_version}",
                        formats=found.recorded,
                        app_version=found.app_version,
                    )
                step = "migrate"
                with self._step("migrate"):
                    layers = self._migrate(plan, work, backups_dir(self.root) / backup_id)
                    report.migrations = [m.summary for m in plan]
                step = "selfcheck"
                with self._step("selfcheck"):
                    self._self_check(layers)
                step = "switch"
                with self._step("switch"):
                    moves = _moves(self.root, layers)
                    report.files = len(moves)
                    write_stamp(
                        self.root,
                        self.current,
                        self.app_version,
                        SwitchPlan(upgrade_id=upgrade_id, moves=moves),
                    )
                    step = "committed"
                    finish_switch(self.root)
            except Exception as exc:
                if step == "committed":
                    raise UpgradeUnfinished(
                        f"the upgrade was committed but moving its new files in stopped "
                        f"({type(exc).__name__}: {exc}); close other programs that may hold "
                        "files in the data folder and start Citewise again to finish it"
                    ) from exc
                _discard_attempt(self.root, work)
                raise _failed(step, exc) from exc
            except BaseException:
                if step != "committed":
                    _discard_attempt(self.root, work)
                raise
            try:
                with self._step("cleanup"):
                    remove_tree(work)  # what stays (a mapped file) goes at the next start
            except Exception:  # the upgrade is complete; the next start clears what is left
                pass
            return report

    def _migrate(self, plan: Sequence[Migration], work: Path, old: Path) -> list[Path]:
        layers: list[Path] = []  # newest first
        for index, m in enumerate(plan):
            out = work / f"{index:02d}-{m.format}-v{m.to_version}"
            out.mkdir()
            m.run(MigrationContext(old, list(layers), out))
            layers.insert(0, out)
        return layers

    def _self_check(self, layers: Sequence[Path]) -> None:
        view = DataView(self.root, layers)
        for check in self.checks:
            try:
                check.run(view)
            except Exception as exc:
                raise UpgradeError(f"self-check {check.name!r} failed: {exc}") from exc


def _failed(step: str, exc: Exception) -> UpgradeFailed:
    return UpgradeFailed(
        step,
        f"the upgrade stopped at its {step} step ({type(exc).__name__}: {exc}); your data was "
        "not changed, and this version cannot use it until the upgrade succeeds. Free disk space "
        "or close programs using the data folder, then run `citewise upgrade` again",
    )


def _check_space(root: Path) -> None:
    need = estimate_backup(root).bytes_copied
    free = shutil.disk_usage(root).free
    if need * 2 + (64 << 20) > free:  # the backup, the migrated copies, and room to work
        raise UpgradeError(
            f"the upgrade needs about {_mb(need * 2)} of free disk space beside {root}, and only "
            f"{_mb(free)} is free; nothing was changed. Free some space and try again"
        )


def _mb(n: int) -> str:
    return f"{n / (1 << 20):.1f} MB"


def _moves(root: Path, layers: Sequence[Path]) -> list[tuple[str, str]]:
    """Every new file (the newest layer wins) and where it goes."""
    chosen: dict[str, str] = {}
    for layer in reversed(layers):  # oldest first, so newer layers overwrite
        for path in sorted(p for p in layer.rglob("*") if p.is_file()):
            rel = path.relative_to(layer).as_posix()
            chosen[rel] = path.relative_to(root).as_posix()
    return [(staged, rel) for rel, staged in sorted(chosen.items())]


def finish_switch(root: Path) -> None:
    """Move a committed upgrade's new files in (idempotent), then drop the switching mark."""
    stamp = read_stamp(root)
    if stamp is None or stamp.switching is None:
        return
    for index, (staged, rel) in enumerate(stamp.switching.moves):
        source = root / staged
        if not source.exists():
            continue  # moved before an interruption
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        replace_with_retry(source, target)
        fsync_dir(target.parent)
        if index == 0:
            crash_point("upgrade.switch.moved-first")
    # The attempt is finished: from here on its backup is the pre-upgrade copy, never discarded.
    (root / WORK_DIR / stamp.switching.upgrade_id / "attempt.json").unlink(missing_ok=True)
    write_stamp(root, stamp.formats, stamp.app_version)


def _discard_attempt(root: Path, work: Path) -> None:
    """Remove what an unfinished attempt made: its backup copy and its new files."""
    try:
        attempt = msgspec.json.decode((work / "attempt.json").read_bytes(), type=Attempt)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        attempt = None
    if attempt is not None:
        remove_tree(backups_dir(root) / attempt.backup_id)
        remove_tree(backups_dir(root) / f"{PARTIAL}{attempt.backup_id}")
    remove_tree(work)


def recover(root: Path) -> None:
    """On start, under the writer lock: finish a committed switch, discard unfinished attempts."""
    stamp = read_stamp(root)
    committed = stamp.switching.upgrade_id if stamp and stamp.switching else None
    if committed is not None:
        finish_switch(root)
        remove_tree(root / WORK_DIR / committed)
    work_root = root / WORK_DIR
    if work_root.is_dir():
        for entry in sorted(work_root.iterdir()):
            if (entry / "attempt.json").exists():
                _discard_attempt(root, entry)
            else:
                remove_tree(entry)  # a finished upgrade whose clean-up was interrupted
    folder = backups_dir(root)
    if folder.is_dir():
        for entry in folder.iterdir():
            if entry.name.startswith(PARTIAL):
                remove_tree(entry)
