"""The OCR cache: what was recognised on a scanned page, keyed by a hash of exactly what the
engine is given (the page rendered for the detector, both resolutions, the engine and its
models, the PDF parser's version), in SQLite beside the embedding cache; a resumed or repeated
import never recognises a finished page again.

Each page is its own transaction (WAL), so a killed worker loses at most the page it was on.
It is opened in parse worker processes; several may write at once. It stores no image.
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
import threading
import time
from pathlib import Path

import msgspec
import numpy as np

from engine.parsing.model import LineBox

CACHE_FORMAT = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS pages (key TEXT PRIMARY KEY, page BLOB NOT NULL) WITHOUT ROWID;
"""


class CachedParagraph(msgspec.Struct, frozen=True, array_like=True):
    text: str
    lines: tuple[LineBox, ...]
    confidence: float


class CachedPage(msgspec.Struct, frozen=True, array_like=True):
    """An OcrPage as stored (engine/parsing/ocr.py builds one back from it)."""

    paragraphs: tuple[CachedParagraph, ...]
    confidence: float
    chars: int


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(CachedPage)


def page_key(gray: np.ndarray, size: tuple[float, float], settings: str) -> str:
    """The key of a page rendered to `gray` (the detector's input) from a page of `size`
    points, recognised under `settings` (resolutions, engine, models, parser version)."""
    digest = hashlib.sha256()
    digest.update(f"{CACHE_FORMAT}\x1f{settings}\x1f{size[0]:.2f}x{size[1]:.2f}\x1f".encode())
    digest.update(f"{gray.shape}\x1f{gray.dtype}\x1f".encode())
    digest.update(np.ascontiguousarray(gray).data)
    return digest.hexdigest()


class OcrCache:
    """Thread-safe (one connection under a lock). A file that is not a database is moved
    aside (it only holds derived data) and a new one started; a cache that cannot be opened
    or written is no reason to fail an import, so `open_cache` then gives None."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._conn = self._open()
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError):
                raise
            stamp = time.strftime("%Y%m%dT%H%M%S")
            path.replace(path.with_name(f"{path.name}.corrupt-{stamp}"))
            for suffix in ("-wal", "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    path.with_name(path.name + suffix).unlink()
            self._conn = self._open()

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            with conn:
                conn.executescript(_SCHEMA)
                conn.execute(
                    "INSERT OR IGNORE INTO meta (key, value) VALUES ('format', ?)",
                    (str(CACHE_FORMAT),),
                )
        except Exception:
            conn.close()
            raise
        return conn

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def get(self, key: str) -> CachedPage | None:
        with self._lock:
            row = self._conn.execute("SELECT page FROM pages WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            return _decoder.decode(row[0])
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None  # written by another layout of the record: recognised again

    def put(self, key: str, page: CachedPage) -> None:
        with self._lock, self._conn:
            self._conn.execute(
                "INSERT OR REPLACE INTO pages (key, page) VALUES (?, ?)",
                (key, _encoder.encode(page)),
            )

    def count(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT count(*) FROM pages").fetchone()[0])


_open_caches: dict[str, OcrCache | None] = {}
_open_lock = threading.Lock()


def open_cache(path: str) -> OcrCache | None:
    """This process's connection to the cache at `path` (opened once), or None for "" and for
    a cache that cannot be opened (every page is then recognised afresh)."""
    if not path:
        return None
    with _open_lock:
        if path not in _open_caches:
            try:
                _open_caches[path] = OcrCache(Path(path))
            except (OSError, sqlite3.Error):
                _open_caches[path] = None
        return _open_caches[path]
