"""A content-addressed embedding cache on SQLite: (provider, model, dimensions, sha256 of the
exact text) → vector, so no text is ever embedded twice with the same model. For a service
the provider column also names its endpoint (`cache_scope`): two OpenAI-compatible servers
serving a model of the same name never share vectors.

Every write is one SQLite transaction (WAL, synchronous=NORMAL): a killed process loses at most
the batch it was writing, never the file. Its methods block; async code calls them through
anyio.to_thread. It never stores the text itself.
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from engine.embedding.base import Vectors, normalise
from index.fsutil import replace_with_retry
from index.records import EmbeddingSpec

CACHE_FORMAT = 1
StoredType = Literal["float16", "float32"]
# Part of every service's scope: entries written before the endpoint was in the key carry the
# bare provider name and are never read as any endpoint's (they are simply embedded again).
KEY_VERSION = 2
_MMAP_BYTES = 1 << 30  # at most this much of the file is read through a memory map
_QUERY_CHUNK = 500  # hashes per SELECT … IN (…), well below SQLite's variable limit

# Pages of a new file: a 512-d float16 row (1.1 KB) stays on its table page, where 4 KB pages
# spilled every row of the first files to an overflow page of its own (4.7 KB a vector on
# disk, and two page reads a look-up). Only a new file takes it; SQLite keeps a file's size.
_PAGE_BYTES = 8192
# A rowid table, as SQLite advises for rows this large (WITHOUT ROWID only for rows under a
# twentieth of a page): the key is found in the primary-key index, the row on its table page.
# Files written before keep their WITHOUT ROWID table; both answer the same statements.
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS vectors (
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    dimensions INTEGER NOT NULL,
    text_hash TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (provider, model, dimensions, text_hash)
);
"""


def text_hash(text: str, granularity: str = "block") -> str:
    """The cache key of a text: sha256 of its exact UTF-8 bytes, hex. Texts embedded as parts
    of blocks (granularity "sentence": windows, probes) hash with their granularity first, so
    a window never shares a key with a block of the same text."""
    if granularity != "block":
        text = f"{granularity}\x00{text}"
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def cache_scope(provider: str, endpoint: str | None = None) -> str:
    """What the cache's provider column holds: the provider's name alone for the built-in
    model (one per installed version, named by the model id), else the name, KEY_VERSION and
    the endpoint URL with its scheme and host lower-cased and trailing slashes dropped."""
    if endpoint is None:
        return provider
    scheme, sep, rest = endpoint.strip().partition("://")
    host, slash, path = rest.partition("/")
    url = f"{scheme.lower()}{sep}{host.lower()}{slash}{path}".rstrip("/")
    return f"{provider}\x1fk{KEY_VERSION}\x1f{url}"


class EmbeddingCache:
    """Thread-safe: one connection shared under a lock (check_same_thread=False).

    Vectors are stored as little-endian float16 by default (half the disk, cosine error
    ~1e-3) and always come back as unit-length float32. `stored_form` gives a fresh vector
    the exact values a later cache hit returns, so results never depend on hit or miss. An
    existing file keeps the type it was created with. A file that is not a database is moved
    aside to `<name>.corrupt-<time>` and a new one is started (it only holds derived data).
    """

    def __init__(self, path: Path, *, dtype: StoredType = "float16") -> None:
        self.path = path
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._conn, self.dtype = self._open(dtype)
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError):
                raise  # locked, read-only, disk full: not a damaged file
            self._move_aside()
            self._conn, self.dtype = self._open(dtype)
        self._numpy_type = np.dtype("<f2" if self.dtype == "float16" else "<f4")

    def _open(self, dtype: StoredType) -> tuple[sqlite3.Connection, StoredType]:
        conn = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False)
        try:
            conn.execute(f"PRAGMA page_size={_PAGE_BYTES}")  # no effect once the file has pages
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            # Reads through a memory map: an import looks up every block's vector; measured
            # 1.5-2x faster look-ups in files whose rows spill to overflow pages.
            conn.execute(f"PRAGMA mmap_size={_MMAP_BYTES}")
            with conn:
                conn.executescript(_SCHEMA)
                conn.execute(
                    "INSERT OR IGNORE INTO meta (key, value) VALUES ('format', ?), ('dtype', ?)",
                    (str(CACHE_FORMAT), dtype),
                )
            row = conn.execute("SELECT value FROM meta WHERE key = 'dtype'").fetchone()
        except Exception:
            conn.close()
            raise
        stored: StoredType = "float32" if row[0] == "float32" else "float16"
        return conn, stored

    def _move_aside(self) -> None:
        stamp = time.strftime("%Y%m%dT%H%M%S")
        replace_with_retry(self.path, self.path.with_name(f"{self.path.name}.corrupt-{stamp}"))
        for suffix in ("-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                self.path.with_name(self.path.name + suffix).unlink()

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def clear(self) -> None:
        """Every vector deleted and the file shrunk to its schema (Settings, `citewise cache
        --clear`): the vectors are found again by embedding their texts afresh."""
        with self._lock:
            with self._conn:
                self._conn.execute("DELETE FROM vectors")
            self._conn.execute("VACUUM")
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def __enter__(self) -> EmbeddingCache:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def stored_form(self, vectors: npt.ArrayLike) -> Vectors:
        """`vectors` [n, dim] as a cache hit would return them (rounded to the stored type)."""
        rounded = np.asarray(vectors, dtype=np.float32).astype(self._numpy_type)
        return normalise(rounded.astype(np.float32))

    def find(
        self, spec: EmbeddingSpec, hashes: Sequence[str], *, scope: str | None = None
    ) -> tuple[list[str], Vectors]:
        """Those of `hashes` that are cached (in no particular order), and their vectors as
        the rows of one float32 matrix (unit length) in that order: an import looks up
        thousands at once, and one matrix spares it a vector object per hit. `scope` (see
        `cache_scope`) stands for spec.provider in the key when given."""
        key = (scope or spec.provider, spec.model, spec.dimensions)
        wanted = list(dict.fromkeys(hashes))
        rows: list[tuple[str, bytes]] = []
        with self._lock:
            for i in range(0, len(wanted), _QUERY_CHUNK):
                chunk = wanted[i : i + _QUERY_CHUNK]
                marks = ",".join("?" * len(chunk))
                rows += self._conn.execute(
                    "SELECT text_hash, vector FROM vectors WHERE provider = ? AND model = ? "
                    f"AND dimensions = ? AND text_hash IN ({marks})",
                    (*key, *chunk),
                ).fetchall()
        size = spec.dimensions * self._numpy_type.itemsize
        good = [(h, blob) for h, blob in rows if len(blob) == size]
        if not good:
            return [], np.zeros((0, spec.dimensions), dtype=np.float32)
        matrix = np.frombuffer(b"".join(blob for _, blob in good), dtype=self._numpy_type)
        vectors = normalise(matrix.reshape(len(good), spec.dimensions).astype(np.float32))
        return [h for h, _ in good], vectors

    def put_many(
        self,
        spec: EmbeddingSpec,
        items: Iterable[tuple[str, npt.NDArray[Any]]],
        *,
        scope: str | None = None,
    ) -> int:
        """Store (hash, vector) pairs in one transaction; returns how many were new."""
        key = (scope or spec.provider, spec.model, spec.dimensions)
        rows = []
        for h, vector in items:
            flat = np.asarray(vector, dtype=np.float32).reshape(-1)
            if flat.shape[0] != spec.dimensions:
                raise ValueError(
                    f"vector of {flat.shape[0]} values for a {spec.dimensions}-d model"
                )
            rows.append((*key, h, flat.astype(self._numpy_type).tobytes()))
        with self._lock, self._conn:
            before = self._conn.total_changes
            self._conn.executemany(
                "INSERT OR IGNORE INTO vectors (provider, model, dimensions, text_hash, vector) "
                "VALUES (?, ?, ?, ?, ?)",
                rows,
            )
            return self._conn.total_changes - before

    def count(self, spec: EmbeddingSpec | None = None, *, scope: str | None = None) -> int:
        """How many vectors are cached (for one model, or in all)."""
        with self._lock:
            if spec is None:
                row = self._conn.execute("SELECT count(*) FROM vectors").fetchone()
            else:
                row = self._conn.execute(
                    "SELECT count(*) FROM vectors "
                    "WHERE provider = ? AND model = ? AND dimensions = ?",
                    (scope or spec.provider, spec.model, spec.dimensions),
                ).fetchone()
        return int(row[0])
