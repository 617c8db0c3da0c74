"""The local trace store: a SQLite index (WAL) of traces and spans, artifact files beside it.

Artifacts are content-addressed (sha256); retention removes traces by age and total size, then
unlinked artifacts. A store left by a killed process opens as is; a damaged database is moved
aside and a new one started — traces are diagnostics and must never stop the app."""

from __future__ import annotations

import datetime as dt
import os
import secrets
import sqlite3
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import msgspec

from engine.crashpoints import crash_point

# Still imported from here by engine/trace/replay.py.
from engine.errors import ArtifactUnavailable as ArtifactUnavailable
from engine.errors import TraceNotFound, TraceStoreError
from engine.trace.model import (
    ArtifactPut,
    DropsAdd,
    ManifestPut,
    Span,
    SpanPut,
    TraceHead,
    TraceKind,
    TraceSummary,
    WriteOp,
    sha256_hex,
)
from index.fsutil import remove_file, replace_with_retry

if sys.platform != "win32":
    import fcntl

SCHEMA_VERSION = 1
DB_NAME = "traces.sqlite"
ARTIFACTS_DIR = "artifacts"
WRITERS_LOCK = "writers.lock"  # every live writer holds a shared flock on it
# A file younger than this is never swept as an orphan: its row may not be committed yet.
ORPHAN_GRACE_S = 3600.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS traces (
    trace_id TEXT PRIMARY KEY,
    kind TEXT NOT NULL DEFAULT 'request',
    created REAL NOT NULL,
    started REAL NOT NULL,  -- when the request started; until known, when the row was made
    ended REAL,
    question TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL DEFAULT 'running',
    termination_reason TEXT,
    tokens INTEGER NOT NULL DEFAULT 0,
    cost REAL NOT NULL DEFAULT 0,
    currency TEXT NOT NULL DEFAULT 'USD',
    mode TEXT NOT NULL DEFAULT 'metadata',
    manifest_hash TEXT NOT NULL DEFAULT '',
    snapshot_id TEXT,
    collection TEXT,
    conversation_id TEXT,
    dropped INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS traces_by_time ON traces (kind, started);
CREATE INDEX IF NOT EXISTS traces_by_status ON traces (status, started);
CREATE INDEX IF NOT EXISTS traces_by_termination ON traces (termination_reason, started);
CREATE INDEX IF NOT EXISTS traces_by_cost ON traces (cost);
CREATE INDEX IF NOT EXISTS traces_by_started ON traces (started);
CREATE TABLE IF NOT EXISTS manifests (sha256 TEXT PRIMARY KEY, body BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS spans (
    trace_id TEXT NOT NULL,
    span_id TEXT NOT NULL,
    parent_id TEXT,
    kind TEXT NOT NULL,
    start REAL NOT NULL,
    body BLOB NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS spans_by_trace ON spans (trace_id, span_id);
CREATE TABLE IF NOT EXISTS artifacts (
    sha256 TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS artifact_links (
    trace_id TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    PRIMARY KEY (trace_id, sha256)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS artifact_links_by_sha ON artifact_links (sha256);
"""

_HEAD_COLUMNS = (
    "kind",
    "started",
    "ended",
    "question",
    "status",
    "termination_reason",
    "tokens",
    "cost",
    "currency",
    "mode",
    "manifest_hash",
    "snapshot_id",
    "collection",
    "conversation_id",
)
_SUMMARY_SQL = (
    "SELECT trace_id, kind, created, started, ended, question, status, termination_reason, "
    "tokens, cost, currency, mode, manifest_hash, snapshot_id, collection, conversation_id, "
    "dropped, (SELECT count(*) FROM spans s WHERE s.trace_id = t.trace_id) FROM traces t"
)

TraceOrder = Literal["newest", "oldest", "cost", "tokens", "duration"]
_ORDERS: dict[str, str] = {
    "newest": "started DESC",
    "oldest": "started ASC",
    "cost": "cost DESC",
    "tokens": "tokens DESC",
    "duration": "coalesce(ended - started, -1) DESC",
}
_span_decoder = msgspec.json.Decoder(Span)
_encode = msgspec.json.Encoder().encode


class TraceRecord(msgspec.Struct, kw_only=True):
    summary: TraceSummary
    manifest: dict[str, Any] | None
    spans: list[Span]


class PruneReport(msgspec.Struct, kw_only=True):
    traces_deleted: int = 0
    artifacts_deleted: int = 0
    bytes_before: int = 0
    bytes_after: int = 0


def iso_utc(ts: float | None) -> str:
    if ts is None:
        return ""
    moment = dt.datetime.fromtimestamp(ts, dt.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class TraceStore:
    """One connection, serialised by a lock; each process (and the writer) opens its own."""

    def __init__(self, root: Path, *, busy_timeout_s: float = 5.0) -> None:
        self.root = root
        self.db_path = root / DB_NAME
        self.artifacts = root / ARTIFACTS_DIR
        self._lock = threading.Lock()
        self._writer_fd: int | None = None
        self.damaged_moved_to: Path | None = None
        try:
            self.artifacts.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise TraceStoreError(f"cannot create the trace folder {root}: {exc}") from None
        try:
            self._conn = self._open(busy_timeout_s)
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) and _locked(exc):
                raise TraceStoreError(f"the trace database {self.db_path} is busy") from None
            self.damaged_moved_to = self._move_damaged()
            try:
                self._conn = self._open(busy_timeout_s)
            except sqlite3.Error as again:
                raise TraceStoreError(f"cannot open {self.db_path}: {again}") from None

    def _open(self, busy_timeout_s: float) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.db_path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False
        )
        try:
            conn.execute("PRAGMA synchronous = NORMAL")
            version = _schema_version(conn)
            if version is None:  # a new store; an existing one is opened without a write lock
                # auto_vacuum only takes effect before the first table is made
                conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
                conn.execute("PRAGMA journal_mode = WAL")
                conn.executescript(
                    "BEGIN IMMEDIATE;"
                    + _SCHEMA
                    + "INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', "
                    + f"'{SCHEMA_VERSION}');COMMIT;"
                )
                version = _schema_version(conn)
        except BaseException:
            conn.close()
            raise
        if version is None or version > SCHEMA_VERSION:
            conn.close()
            raise TraceStoreError(
                f"the trace store {self.db_path} was written by a newer Citewise (schema "
                f"{version}, this version reads {SCHEMA_VERSION}); update Citewise or move the "
                "traces folder away"
            )
        return conn

    def _move_damaged(self) -> Path:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        target = self.db_path.with_name(f"{DB_NAME}.damaged-{stamp}-{secrets.token_hex(2)}")
        for suffix in ("", "-wal", "-shm"):
            src = Path(str(self.db_path) + suffix)
            if src.exists():
                replace_with_retry(src, Path(str(target) + suffix))
        return target

    def close(self) -> None:
        with self._lock:
            self._conn.close()
            if self._writer_fd is not None:
                os.close(self._writer_fd)  # releases the writers' lock
                self._writer_fd = None

    def claim_writer(self) -> int:
        """Register this store as a live writer (until close) and, when no other writer is
        alive, mark every trace still "running" as partial: the process writing it was killed
        before its final event. Returns how many traces were marked (0 on Windows)."""
        if sys.platform == "win32" or self._writer_fd is not None:
            return 0
        fd = os.open(self.root / WRITERS_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
        marked = 0
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                pass  # another writer is alive: its running traces may be real
            else:
                try:
                    with self._transaction() as conn:
                        marked = conn.execute(
                            "UPDATE traces SET status = 'error', dropped = dropped + 1 "
                            "WHERE status = 'running'"
                        ).rowcount
                except sqlite3.Error as exc:
                    raise TraceStoreError(f"could not mark interrupted traces: {exc}") from None
                crash_point("trace.orphans:after-mark")
            fcntl.flock(fd, fcntl.LOCK_SH)
        except BaseException:
            os.close(fd)
            raise
        self._writer_fd = fd
        return marked

    def __enter__(self) -> TraceStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            conn = self._conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    # -- writing -----------------------------------------------------------------------------

    def apply(self, ops: Sequence[WriteOp]) -> None:
        """Write a batch: artifact files first, then every row in one transaction.

        Raises TraceStoreError (busy, disk full, read-only…); nothing of the batch's rows is
        then committed, and artifact files already written are swept later as orphans.
        """
        try:
            for op in ops:
                if isinstance(op, ArtifactPut):
                    self._write_artifact(op.sha256, op.data)
            now = time.time()
            with self._transaction() as conn:
                for op in ops:
                    self._apply_one(conn, op, now)
                crash_point("trace.commit:before")
            crash_point("trace.commit:after")
        except (sqlite3.Error, OSError) as exc:
            raise TraceStoreError(f"could not write traces to {self.root}: {exc}") from None

    def _apply_one(self, conn: sqlite3.Connection, op: WriteOp, now: float) -> None:
        if isinstance(op, SpanPut):
            s = op.span
            self._ensure_trace(conn, s.trace_id, now)
            conn.execute(
                "INSERT OR REPLACE INTO spans (trace_id, span_id, parent_id, kind, start, body) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (s.trace_id, s.span_id, s.parent_id, s.kind, s.start, _encode(s)),
            )
        elif isinstance(op, TraceHead):
            self._ensure_trace(conn, op.trace_id, now)
            sets = [(c, getattr(op, c)) for c in _HEAD_COLUMNS if getattr(op, c) is not None]
            if sets:
                conn.execute(
                    f"UPDATE traces SET {', '.join(c + ' = ?' for c, _ in sets)} "
                    "WHERE trace_id = ?",
                    (*(v for _, v in sets), op.trace_id),
                )
        elif isinstance(op, ArtifactPut):
            self._ensure_trace(conn, op.trace_id, now)
            conn.execute(
                "INSERT OR IGNORE INTO artifacts (sha256, size, created) VALUES (?, ?, ?)",
                (op.sha256, len(op.data), now),
            )
            conn.execute(
                "INSERT OR IGNORE INTO artifact_links (trace_id, sha256) VALUES (?, ?)",
                (op.trace_id, op.sha256),
            )
        elif isinstance(op, ManifestPut):
            conn.execute(
                "INSERT OR IGNORE INTO manifests (sha256, body) VALUES (?, ?)",
                (op.sha256, op.body),
            )
        elif isinstance(op, DropsAdd):
            self._ensure_trace(conn, op.trace_id, now)
            conn.execute(
                "UPDATE traces SET dropped = dropped + ? WHERE trace_id = ?",
                (op.count, op.trace_id),
            )

    @staticmethod
    def _ensure_trace(conn: sqlite3.Connection, trace_id: str, now: float) -> None:
        conn.execute(
            "INSERT OR IGNORE INTO traces (trace_id, created, started) VALUES (?, ?, ?)",
            (trace_id, now, now),
        )

    def artifact_path(self, sha256: str) -> Path:
        if len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256):
            raise ArtifactUnavailable(f"{sha256!r} is not an artifact id")
        return self.artifacts / sha256[:2] / sha256

    def _write_artifact(self, sha256: str, data: bytes) -> None:
        path = self.artifact_path(sha256)
        try:
            if path.stat().st_size == len(data):
                return  # content-addressed: the same bytes are already there
        except FileNotFoundError:
            pass
        path.parent.mkdir(exist_ok=True)
        tmp = path.with_name(f".{sha256}.{secrets.token_hex(3)}.tmp")
        tmp.write_bytes(data)
        crash_point("trace.artifact:before-replace")
        replace_with_retry(tmp, path)
        crash_point("trace.artifact:after-replace")

    # -- reading -----------------------------------------------------------------------------

    def list_traces(
        self,
        *,
        limit: int = 50,
        offset: int = 0,
        kind: TraceKind | None = "request",
        status: str | None = None,
        termination_reason: str | None = None,
        since: float | None = None,
        until: float | None = None,
        min_cost: float | None = None,
        max_cost: float | None = None,
        text: str | None = None,
        order: TraceOrder = "newest",
    ) -> list[TraceSummary]:
        """Newest first (or by `order`); every filter is optional. `text`: words the question
        contains (case-insensitive for ASCII, each word anywhere)."""
        where: list[str] = []
        params: list[Any] = []
        for clause, value in (
            ("kind = ?", kind),
            ("status = ?", status),
            ("termination_reason = ?", termination_reason),
            ("started >= ?", since),
            ("started < ?", until),
            ("cost >= ?", min_cost),
            ("cost <= ?", max_cost),
        ):
            if value is not None:
                where.append(clause)
                params.append(value)
        for word in (text or "").split():
            escaped = word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            where.append("question LIKE ? ESCAPE '\\'")
            params.append(f"%{escaped}%")
        sql = _SUMMARY_SQL + (" WHERE " + " AND ".join(where) if where else "")
        sql += f" ORDER BY {_ORDERS[order]}, trace_id DESC LIMIT ? OFFSET ?"
        with self._lock:
            rows = self._conn.execute(sql, (*params, limit, offset)).fetchall()
        return [_summary(row) for row in rows]

    def resolve(self, prefix: str) -> str:
        """A full trace id from an id or an unambiguous prefix of one (at least 4 digits)."""
        prefix = prefix.strip().lower()
        if len(prefix) < 4 or any(c not in "0123456789abcdef" for c in prefix):
            raise TraceNotFound(f"{prefix!r} is not a trace id; see `citewise trace list`")
        with self._lock:
            rows = self._conn.execute(
                "SELECT trace_id FROM traces WHERE trace_id >= ? AND trace_id < ? LIMIT 2",
                (prefix, prefix + "g"),
            ).fetchall()
        if not rows:
            raise TraceNotFound(f"there is no trace {prefix}; see `citewise trace list`")
        if len(rows) > 1:
            raise TraceNotFound(f"{prefix} names more than one trace; give more digits")
        return str(rows[0][0])

    def get(self, trace_id: str) -> TraceRecord:
        with self._lock:
            row = self._conn.execute(_SUMMARY_SQL + " WHERE trace_id = ?", (trace_id,)).fetchone()
            if row is None:
                raise TraceNotFound(f"there is no trace {trace_id}; see `citewise trace list`")
            summary = _summary(row)
            body = None
            if summary.manifest_hash:
                found = self._conn.execute(
                    "SELECT body FROM manifests WHERE sha256 = ?", (summary.manifest_hash,)
                ).fetchone()
                body = found[0] if found else None
            span_rows = self._conn.execute(
                "SELECT body FROM spans WHERE trace_id = ? ORDER BY start, span_id", (trace_id,)
            ).fetchall()
        manifest = msgspec.json.decode(body) if body is not None else None
        return TraceRecord(
            summary=summary,
            manifest=manifest,
            spans=[_span_decoder.decode(r[0]) for r in span_rows],
        )

    def manifest_body(self, sha256: str) -> bytes | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT body FROM manifests WHERE sha256 = ?", (sha256,)
            ).fetchone()
        return bytes(row[0]) if row else None

    def read_artifact(self, sha256: str) -> bytes:
        """The artifact's bytes, checked against its hash."""
        path = self.artifact_path(sha256)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise ArtifactUnavailable(f"artifact {sha256[:12]} is not in the store") from None
        except OSError as exc:
            raise ArtifactUnavailable(f"artifact {sha256[:12]} cannot be read: {exc}") from None
        if sha256_hex(data) != sha256:
            raise ArtifactUnavailable(f"artifact {sha256[:12]} is damaged (hash mismatch)")
        return data

    def trace_artifacts(self, trace_id: str) -> list[str]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT sha256 FROM artifact_links WHERE trace_id = ? ORDER BY sha256",
                (trace_id,),
            ).fetchall()
        return [str(r[0]) for r in rows]

    # -- size and retention ------------------------------------------------------------------

    def size_bytes(self) -> int:
        """Live database pages plus every artifact the index knows."""
        with self._lock:
            return self._size_locked()

    def _size_locked(self) -> int:
        conn = self._conn
        (pages,) = conn.execute("PRAGMA page_count").fetchone()
        (free,) = conn.execute("PRAGMA freelist_count").fetchone()
        (page_size,) = conn.execute("PRAGMA page_size").fetchone()
        (artifacts,) = conn.execute("SELECT COALESCE(sum(size), 0) FROM artifacts").fetchone()
        return int((pages - free) * page_size + artifacts)

    def prune(
        self, *, retention_days: int, max_bytes: int, now: float | None = None
    ) -> PruneReport:
        """Delete traces older than `retention_days` (0 = no age limit), then the oldest until
        the store fits `max_bytes`, then artifacts and manifests nothing refers to."""
        now = time.time() if now is None else now
        report = PruneReport()
        try:
            with self._lock:
                report.bytes_before = self._size_locked()
            if retention_days > 0:
                cutoff = now - retention_days * 86400.0
                with self._transaction() as conn:
                    ids = [
                        r[0]
                        for r in conn.execute(
                            "SELECT trace_id FROM traces WHERE started < ?",
                            (cutoff,),
                        )
                    ]
                    report.traces_deleted += self._delete_traces(conn, ids)
            report.artifacts_deleted += self._drop_unlinked(now)
            while self.size_bytes() > max_bytes:
                with self._transaction() as conn:
                    (count,) = conn.execute("SELECT count(*) FROM traces").fetchone()
                    if count == 0:
                        break
                    ids = [
                        r[0]
                        for r in conn.execute(
                            "SELECT trace_id FROM traces ORDER BY started, trace_id LIMIT ?",
                            (max(1, count // 10),),
                        )
                    ]
                    report.traces_deleted += self._delete_traces(conn, ids)
                report.artifacts_deleted += self._drop_unlinked(now)
            report.artifacts_deleted += self._sweep_orphans(now)
            with self._lock:
                self._conn.execute("PRAGMA incremental_vacuum")
                report.bytes_after = self._size_locked()
        except (sqlite3.Error, OSError) as exc:
            raise TraceStoreError(f"could not prune the trace store {self.root}: {exc}") from None
        return report

    @staticmethod
    def _delete_traces(conn: sqlite3.Connection, ids: Sequence[str]) -> int:
        for chunk in _chunks(ids, 500):
            marks = ",".join("?" * len(chunk))
            for table in ("spans", "artifact_links", "traces"):
                conn.execute(f"DELETE FROM {table} WHERE trace_id IN ({marks})", chunk)
        conn.execute(
            "DELETE FROM manifests WHERE sha256 NOT IN "
            "(SELECT manifest_hash FROM traces WHERE manifest_hash != '')"
        )
        return len(ids)

    def _drop_unlinked(self, now: float) -> int:
        """Rows first (committed), then files: a kill in between leaves orphans, swept later."""
        with self._transaction() as conn:
            shas = [
                str(r[0])
                for r in conn.execute(
                    "SELECT sha256 FROM artifacts WHERE sha256 NOT IN "
                    "(SELECT sha256 FROM artifact_links)"
                )
            ]
            for chunk in _chunks(shas, 500):
                conn.execute(
                    f"DELETE FROM artifacts WHERE sha256 IN ({','.join('?' * len(chunk))})", chunk
                )
        crash_point("trace.prune:after-rows-commit")
        for sha in shas:
            # A file held open (a bundle being written, a scanner on Windows) stays behind as
            # an orphan, which _sweep_orphans removes at a later prune.
            remove_file(self.artifact_path(sha))
        return len(shas)

    def _sweep_orphans(self, now: float) -> int:
        """Files the index does not know (a batch that never committed), once old enough."""
        with self._lock:
            known = {str(r[0]) for r in self._conn.execute("SELECT sha256 FROM artifacts")}
        removed = 0
        for folder in self.artifacts.iterdir():
            if not folder.is_dir():
                continue
            for path in folder.iterdir():
                name = path.name
                if name in known:
                    continue
                try:
                    if now - path.stat().st_mtime < ORPHAN_GRACE_S:
                        continue
                except FileNotFoundError:
                    continue
                if not remove_file(path):
                    continue  # still held: the next prune tries again
                if not name.startswith("."):
                    removed += 1
        return removed


def _schema_version(conn: sqlite3.Connection) -> int | None:
    if conn.execute("SELECT name FROM sqlite_master WHERE name = 'meta'").fetchone() is None:
        return None
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return None if row is None else int(row[0])


def _locked(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def _chunks(items: Sequence[str], size: int) -> Iterable[Sequence[str]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _summary(row: Sequence[Any]) -> TraceSummary:
    (
        trace_id,
        kind,
        _created,
        started,
        ended,
        question,
        status,
        termination,
        tokens,
        cost,
        currency,
        mode,
        manifest_hash,
        snapshot_id,
        collection,
        conversation_id,
        dropped,
        spans,
    ) = row
    return TraceSummary(
        trace_id=trace_id,
        started_at=iso_utc(started),
        question=question,
        status=status,
        termination_reason=termination,
        tokens=tokens,
        cost=cost,
        currency=currency,
        kind=kind,
        partial=dropped > 0,
        dropped=dropped,
        mode=mode,
        manifest_hash=manifest_hash,
        snapshot_id=snapshot_id,
        collection=collection,
        conversation_id=conversation_id,
        duration_ms=None if ended is None else (ended - started) * 1000,
        spans=spans,
    )
