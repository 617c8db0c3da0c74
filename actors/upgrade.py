"""Starting on a data directory (CLI and UI): finish or discard an interrupted upgrade, refuse
data a newer Citewise wrote, and explain an upgrade, then run it once the person confirms.

It never upgrades without that confirmation and never writes to a directory a newer build
wrote. The sequence itself is engine/versions/upgrade.py; this module supplies this build's
migrations and the self-checks that open everything with this build's code.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import msgspec

from actors.backup import finish_restore
from actors.catalog import ActivePointer
from actors.errors import UpgradeRequired
from actors.journal import Job
from engine.config import load_config
from engine.errors import DataTooNew, WriterBusy
from engine.paths import DataDir, check_path_length
from engine.trace.store import DB_NAME, SCHEMA_VERSION, TraceStore
from engine.versions import app_version
from engine.versions.formats import current_versions
from engine.versions.upgrade import (
    BackupEstimate,
    Change,
    Check,
    DataView,
    Inspection,
    Migration,
    StepHook,
    Upgrade,
    UpgradeReport,
    describe_newer,
    estimate_backup,
    inspect,
    plan_migrations,
    recover,
    write_stamp,
)
from engine.writer_lock import writer_lock

# This build's migrations. None yet: every format is still at its first version. A format
# whose version goes up gets its migration here, or `citewise upgrade` refuses (NoUpgradePath).
MIGRATIONS: tuple[Migration, ...] = ()

# Commands that run whatever the data's format: they read nothing of it, or are the way back.
ANY_FORMAT = frozenset({"version", "upgrade", "backup"})
# Commands that only read and may run, with a notice, on data that needs an upgrade.
READ_ONLY = frozenset({"status"})


@dataclass(frozen=True)
class Explanation:
    """What an upgrade will do, for the person to read before they confirm."""

    root: Path
    from_app: str  # "" when the old build did not record itself
    to_app: str
    changes: tuple[Change, ...]
    steps: tuple[str, ...]  # each migration's summary, in order
    backup: BackupEstimate

    def text(self) -> str:
        made_by = f"Citewise {self.from_app}" if self.from_app else "an earlier Citewise"
        lines = [
            f"The data in {self.root} was written by {made_by}; Citewise {self.to_app} uses "
            "newer formats for:",
            *(f"  - {c.format}: format {c.have} → {c.reads}" for c in self.changes),
            "What changes:",
            *(f"  - {s}" for s in self.steps),
            f"Before anything changes, your data is copied to {self.root / 'backups'} "
            f"({_mb(self.backup.bytes_copied)} of new disk space; "
            f"{_mb(self.backup.bytes_shared)} of snapshot files are shared, not copied). "
            "API keys are not part of it: they stay in the system credential store.",
            "The upgrade writes new files and switches to them only when all of them check out; "
            "if anything fails, your current data stays as it is. The previous Citewise can "
            "still open the copy (`citewise backup restore ID`).",
        ]
        return "\n".join(lines)


def _mb(n: int) -> str:
    return f"{n / (1 << 20):.1f} MB"


def explain_upgrade(
    root: Path,
    *,
    migrations: Sequence[Migration] = MIGRATIONS,
    current: Mapping[str, int] | None = None,
) -> Explanation | None:
    """None when the data needs no upgrade; raises DataTooNew or NoUpgradePath."""
    found = inspect(root, current)
    if found.state == "newer":
        raise DataTooNew(describe_newer(found, root))
    if found.state != "older":
        return None
    plan = plan_migrations(found, migrations)
    return Explanation(
        root=root,
        from_app=found.app_version,
        to_app=app_version(),
        changes=found.older,
        steps=tuple(m.summary for m in plan),
        backup=estimate_backup(root),
    )


def run_upgrade(
    root: Path,
    *,
    migrations: Sequence[Migration] = MIGRATIONS,
    checks: Sequence[Check] | None = None,
    current: Mapping[str, int] | None = None,
    on_step: StepHook | None = None,
) -> UpgradeReport | None:
    """Run the confirmed upgrade; None when there was nothing to do."""
    return Upgrade(
        root,
        migrations=migrations,
        checks=production_checks() if checks is None else checks,
        app_version=app_version(),
        current=current,
        on_step=on_step,
    ).run()


def open_data(
    root: Path, command: str, *, current: Mapping[str, int] | None = None, writes: bool = True
) -> Inspection:
    """The start gate: run before anything opens the data directory.

    Finishes a committed upgrade or discards an interrupted one, records this build's formats
    in a new or unrecorded directory, and refuses data that is newer (DataTooNew) or older
    (UpgradeRequired) unless `command` may run on it.
    """
    if command != "version":
        check_path_length(root)  # Windows: refuse a folder too deep before anything is written
    reads = dict(current or current_versions())
    if command not in ANY_FORMAT and inspect(root, reads).state == "newer":
        raise DataTooNew(describe_newer(inspect(root, reads), root))  # never touched, not even
    if root.is_dir() and writes:
        try:
            with writer_lock(DataDir(root)):
                recover(root)
                finish_restore(root)
        except WriterBusy:
            pass  # another process is working here; it recovered when it started
    found = inspect(root, reads)
    if command in ANY_FORMAT:
        return found
    if found.state == "newer":
        raise DataTooNew(describe_newer(found, root))
    if found.state == "older" and command not in READ_ONLY:
        made_by = f" ({found.app_version})" if found.app_version else ""
        raise UpgradeRequired(
            f"the data in {root} was written by an older Citewise{made_by} and must be upgraded "
            "before this version can use it: run `citewise upgrade`, which explains what "
            "changes and asks before doing anything (or open the app and confirm there)"
        )
    if found.state in ("new", "current") and writes and _needs_stamp(root, found):
        root.mkdir(parents=True, exist_ok=True)
        write_stamp(root, reads, app_version())
    return found


def _needs_stamp(root: Path, found: Inspection) -> bool:
    return not found.stamped or found.app_version != app_version() or found.switching is not None


# -- self-checks: open everything with this build's code ---------------------------------------
def production_checks() -> list[Check]:
    return [
        Check("config decodes", _check_config),
        Check("active snapshots open and verify", _check_snapshots),
        Check("trace store opens", _check_traces),
        Check("embedding cache opens", _check_embedding_cache),
        Check("import journals decode", _check_journals),
        Check("conversations decode", _check_conversations),
    ]


def _check_config(view: DataView) -> None:
    load_config(view.resolve("config.toml"), environ={})


def _collections(view: DataView) -> list[str]:
    folder = view.root / "collections"
    return sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []


def _check_snapshots(view: DataView) -> None:
    from index.snapshot import Snapshot, verify_snapshot  # the start gate never loads them

    for name in _collections(view):
        pointer = view.resolve(f"collections/{name}/ACTIVE")
        if not pointer.exists():
            continue
        sid = msgspec.json.decode(pointer.read_bytes(), type=ActivePointer).snapshot_id
        directory = view.resolve(f"collections/{name}/snapshots/{sid}/manifest.json").parent
        Snapshot.open(directory).close()
        result = verify_snapshot(directory)
        if not result.ok:
            raise ValueError(f"snapshot {sid} of {name!r}: {'; '.join(result.problems)}")


def _check_traces(view: DataView) -> None:
    path = view.resolve(f"traces/{DB_NAME}")
    if not path.exists():
        return
    if view.staged(f"traces/{DB_NAME}"):
        store = TraceStore(path.parent)  # a new file: opening it may write beside it
        store.close()
        if store.damaged_moved_to is not None:
            raise ValueError("the new trace database is damaged")
        return
    version = _sqlite_meta(path, "SELECT value FROM meta WHERE key = 'schema_version'")
    if version != str(SCHEMA_VERSION):
        raise ValueError(f"trace store schema {version}, this build reads {SCHEMA_VERSION}")


def _check_embedding_cache(view: DataView) -> None:
    from engine.embedding.cache import CACHE_FORMAT  # here: the start gate loads no numpy

    path = view.resolve("cache/embeddings.sqlite")
    if path.exists():
        version = _sqlite_meta(path, "SELECT value FROM meta WHERE key = 'format'")
        if version != str(CACHE_FORMAT):
            raise ValueError(f"embedding cache format {version}, this build reads {CACHE_FORMAT}")


def _sqlite_meta(path: Path, query: str) -> str | None:
    """Read one value without writing beside a live database (no -wal: open it immutable)."""
    wal = Path(f"{path}-wal")
    mode = "ro" if wal.exists() else "ro&immutable=1"
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode={mode}", uri=True)
    try:
        row = conn.execute(query).fetchone()
    finally:
        conn.close()
    return None if row is None else str(row[0])


def _check_journals(view: DataView) -> None:
    for name in _collections(view):
        job = view.resolve(f"collections/{name}/journal/job.json")
        if job.exists():
            msgspec.json.decode(job.read_bytes(), type=Job)


def _check_conversations(view: DataView) -> None:
    folder = view.root / "conversations"
    if not folder.is_dir():
        return
    from actors.conversations import ConversationTurn  # the start gate never loads it

    decoder = msgspec.json.Decoder(ConversationTurn)
    for path in sorted(folder.glob("*/*.jsonl")):
        rel = path.relative_to(view.root).as_posix()
        raw = view.resolve(rel).read_bytes()
        lines = raw.splitlines()
        if not raw.endswith(b"\n"):
            lines = lines[:-1]  # a last line torn by a crash; reading skips it too
        for line in lines:
            if line.strip():
                decoder.decode(line)
