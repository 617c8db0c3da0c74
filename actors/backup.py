"""Backups of a data directory: list them, and restore one copy-on-write.

A restore first backs up the data as it is now, builds the restored files beside it, commits
with one atomic write (HOME/restore.json) and then moves them in; a start that finds the mark
finishes the move. Until the commit the current data stays active and untouched. Restoring is
how the previous build gets its data back after an upgrade (application rollback) and how data
goes back to before a migration (data rollback). It never copies keys (they are not files here).
"""

from __future__ import annotations

import datetime as dt
import secrets
from collections.abc import Mapping
from pathlib import Path

import msgspec

from engine.errors import UpgradeError, UpgradeUnfinished
from engine.paths import DataDir
from engine.versions import app_version
from engine.versions.formats import current_versions
from engine.versions.upgrade import (
    BACKUP_INFO,
    BackupInfo,
    backups_dir,
    copy_data,
    inspect,
    list_backups,
    make_backup,
    recover,
    remove_tree,
)
from engine.writer_lock import writer_lock
from index.fsutil import atomic_write, fsync_dir, remove_file, replace_with_retry

RESTORE_MARK = "restore.json"
RESTORE_DIR = ".restore"
# Top-level entries a restore leaves alone: the backups themselves, work areas and the lock.
_KEEP = frozenset({"backups", ".upgrade", RESTORE_DIR, "writer.lock", RESTORE_MARK})


class RestorePlan(msgspec.Struct, frozen=True, kw_only=True):
    restore_id: str
    backup_id: str
    safety_backup_id: str  # the data as it was before the restore
    old_entries: list[str]  # top-level entries moved out
    new_entries: list[str]  # top-level entries moved in


class RestoreReport(msgspec.Struct, frozen=True, kw_only=True):
    backup_id: str
    safety_backup_id: str
    files: int
    state: str  # the restored data: "current", "older" (needs `citewise upgrade`), "new"


def backups(root: Path) -> list[BackupInfo]:
    return list_backups(root)


def create_backup(root: Path, reason: str = "made by hand") -> BackupInfo:
    """Back up the data as it is now (config and data, never keys), e.g. before an experiment;
    snapshot files are hard-linked, everything else copied."""
    with writer_lock(DataDir(root)):
        recover(root)
        finish_restore(root)
        stamp = f"{dt.datetime.now(dt.UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"
        return make_backup(
            root,
            backup_id=f"{stamp}-v{app_version()}",
            reason=reason,
            formats=inspect(root, current_versions()).recorded,
            app_version=app_version(),
        )


def restore_backup(
    root: Path, backup_id: str, *, current: Mapping[str, int] | None = None
) -> RestoreReport:
    """Make backup `backup_id` the live data; the data it replaces is backed up first."""
    folder = backups_dir(root) / backup_id
    if backup_id.startswith(".") or "/" in backup_id or "\\" in backup_id:
        raise UpgradeError(f"{backup_id!r} is not a backup id; see `citewise backup list`")
    if not (folder / BACKUP_INFO).is_file():
        raise UpgradeError(
            f"there is no complete backup {backup_id!r} in {backups_dir(root)}; see "
            "`citewise backup list`"
        )
    reads = dict(current or current_versions())
    if inspect(folder, reads).state == "newer":
        raise UpgradeError(
            f"backup {backup_id} holds data written by a newer Citewise; this version cannot "
            "use it and nothing was changed. Restore it with that version instead"
        )
    with writer_lock(DataDir(root)):
        recover(root)
        finish_restore(root)
        stamp = f"{dt.datetime.now(dt.UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"
        safety_id = f"{stamp}-before-restore"
        make_backup(
            root,
            backup_id=safety_id,
            reason=f"before restoring backup {backup_id}",
            formats=inspect(root, reads).recorded,
            app_version=app_version(),
        )
        work = root / RESTORE_DIR / stamp
        files, _, _ = copy_data(folder, work / "files", skip=frozenset({BACKUP_INFO}))
        (work / "files").mkdir(parents=True, exist_ok=True)
        plan = RestorePlan(
            restore_id=stamp,
            backup_id=backup_id,
            safety_backup_id=safety_id,
            old_entries=sorted(p.name for p in root.iterdir() if p.name not in _KEEP),
            new_entries=sorted(p.name for p in (work / "files").iterdir()),
        )
        atomic_write(root / RESTORE_MARK, msgspec.json.encode(plan))  # the commit
        finish_restore(root)
    return RestoreReport(
        backup_id=backup_id,
        safety_backup_id=safety_id,
        files=files,
        state=inspect(root, reads).state,
    )


def finish_restore(root: Path) -> None:
    """Move a committed restore's files in (idempotent); discard an uncommitted one."""
    mark = root / RESTORE_MARK
    try:
        plan = msgspec.json.decode(mark.read_bytes(), type=RestorePlan)
    except FileNotFoundError:
        plan = None
    if plan is not None:
        try:
            _move_in(root, plan)
        except OSError as exc:  # on Windows: a file some program holds open
            raise UpgradeUnfinished(
                f"restoring backup {plan.backup_id} was committed but moving its files in "
                f"stopped ({type(exc).__name__}: {exc}); close other programs that may hold "
                "files in the data folder and start Citewise again to finish it"
            ) from exc
    # Whatever is left (the replaced data is in the safety backup; an uncommitted restore never
    # became visible) goes; a file still held open stays until the next start.
    if (root / RESTORE_DIR).is_dir():
        for entry in (root / RESTORE_DIR).iterdir():
            remove_tree(entry)


def _move_in(root: Path, plan: RestorePlan) -> None:
    """The committed part of a restore; each step is skipped once done, so a second run after
    an interruption picks up where the first stopped."""
    work = root / RESTORE_DIR / plan.restore_id
    replaced = work / "replaced"
    replaced.mkdir(parents=True, exist_ok=True)
    for name in plan.old_entries:
        if (root / name).exists() and not (replaced / name).exists():
            replace_with_retry(root / name, replaced / name)
    for name in plan.new_entries:
        source = work / "files" / name
        if source.exists():
            replace_with_retry(source, root / name)
    fsync_dir(root)
    # The mark must go before the work area does: a mark without its work area would move the
    # restored files out at the next start.
    if not remove_file(root / RESTORE_MARK):
        raise PermissionError(13, "the restore mark is held", str(root / RESTORE_MARK))
    fsync_dir(root)
