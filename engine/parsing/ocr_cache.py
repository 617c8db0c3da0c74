"""The OCR cache: what was recognised on a scanned page, keyed by a hash of what its rendered
image is made from (the page's objects, content streams, images, fonts and annotations, its
boxes and rotation) and of what recognises it (both resolutions, the engine and its models,
the renderer's and the PDF parser's versions), in SQLite beside the embedding cache; a resumed
or repeated import never renders or recognises a finished page again.

Each page is its own transaction (WAL), so a killed worker loses at most the page it was on.
It is opened in parse worker processes; several may write at once. It stores no image.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from engine.parsing.model import LineBox

# 2: keyed on the page's objects (page_source_key) instead of its rendered image.
CACHE_FORMAT = 2
# A page whose drawing reaches more objects or stream bytes than this (a form field list
# spanning a huge document, say) is keyed on its rendered image instead.
MAX_SOURCE_OBJECTS = 5000
MAX_SOURCE_BYTES = 256 * 1024 * 1024

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
    points, recognised under `settings` (resolutions, engine, models, parser version): for a
    page page_source_key cannot key."""
    digest = hashlib.sha256()
    digest.update(f"{CACHE_FORMAT}\x1frender\x1f{settings}\x1f".encode())
    digest.update(f"{size[0]:.2f}x{size[1]:.2f}\x1f".encode())
    digest.update(f"{gray.shape}\x1f{gray.dtype}\x1f".encode())
    digest.update(np.ascontiguousarray(gray).data)
    return digest.hexdigest()


_REF = re.compile(rb"(\d+) (\d+) R\b")
# Objects a page's drawing never depends on: the page tree above it, and other pages (which
# annotations and links point to).
_NOT_DRAWN = frozenset({"/Page", "/Pages"})
_INHERITED = ("Resources", "MediaBox", "CropBox", "Rotate")


# xref -> (whether it is a page or a node of the page tree, the stream's length, a digest of
# the object and its stream, the objects it refers to); valid while the document is open and
# unchanged.
SourceMemo = dict[int, tuple[bool, int, bytes, tuple[int, ...]]]


def page_source_key(
    doc: Any, page: Any, settings: str, memo: SourceMemo | None = None
) -> str | None:
    """The key of a pymupdf page from what its rendering is made of, without rendering it: the
    page's object, and every object it reaches (content streams, resources with their fonts,
    images and forms, annotations and their appearance streams; the page tree and other pages
    left out), each object's dictionary and its stream as stored; the attributes it inherits
    from the page tree, its boxes, rotation and the document's optional-content and form
    settings. Two pages with the same key render to the same image; a page changed in any of
    these gets a new key. None when the page is not in a PDF, or reaches too much (key it by
    its image). `memo`, shared by calls on the same open document, digests a font or image
    its pages share once."""
    if not getattr(doc, "is_pdf", False) or not page.xref:
        return None
    digest = hashlib.sha256()
    digest.update(f"{CACHE_FORMAT}\x1fsource\x1f{settings}\x1f".encode())
    digest.update(
        f"{tuple(page.mediabox)}\x1f{tuple(page.cropbox)}\x1f{page.rotation}\x1f".encode()
    )
    roots = [page.xref]
    # What the page inherits from the page tree, as written on the nearest ancestor.
    missing = [k for k in _INHERITED if doc.xref_get_key(page.xref, k)[0] == "null"]
    parent = _ref(doc.xref_get_key(page.xref, "Parent"))
    ancestors: set[int] = set()
    while parent and missing and parent not in ancestors:
        ancestors.add(parent)
        for name in list(missing):
            kind, value = doc.xref_get_key(parent, name)
            if kind != "null":
                digest.update(f"{name}\x1f{value}\x1f".encode())
                roots.extend(int(m[1]) for m in _REF.finditer(value.encode()))
                missing.remove(name)
        parent = _ref(doc.xref_get_key(parent, "Parent"))
    catalog = doc.pdf_catalog()
    for name in ("OCProperties", "AcroForm"):  # layers shown; form fields' default look
        kind, value = doc.xref_get_key(catalog, name)
        if kind != "null":
            digest.update(f"{name}\x1f{value}\x1f".encode())
            roots.extend(int(m[1]) for m in _REF.finditer(value.encode()))
    if not _digest_objects(doc, roots, digest, {} if memo is None else memo):
        return None
    return digest.hexdigest()


def _ref(found: tuple[str, str]) -> int:
    kind, value = found
    return int(value.split()[0]) if kind == "xref" else 0


def _digest_objects(doc: Any, roots: list[int], digest: Any, memo: SourceMemo) -> bool:
    """Every object reachable from `roots` (other pages and the page tree not followed) into
    `digest`, in the order reached; False when there are too many."""
    count = doc.xref_length()
    seen: set[int] = set()
    todo = list(reversed(roots))
    first = roots[0]
    size = 0
    while todo:
        xref = todo.pop()
        if xref in seen or not 0 < xref < count:
            continue
        seen.add(xref)
        if xref not in memo:
            memo[xref] = _object_digest(doc, xref)
        in_page_tree, length, object_digest, refs = memo[xref]
        if in_page_tree and xref != first:
            continue
        size += length
        if len(seen) > MAX_SOURCE_OBJECTS or size > MAX_SOURCE_BYTES:
            return False
        digest.update(b"%d\x1e" % xref)
        digest.update(object_digest)
        todo.extend(reversed(refs))
    return True


def _object_digest(doc: Any, xref: int) -> tuple[bool, int, bytes, tuple[int, ...]]:
    in_page_tree = doc.xref_get_key(xref, "Type")[1] in _NOT_DRAWN
    source = doc.xref_object(xref, compressed=True).encode()
    one = hashlib.sha256(b"%d\x1e" % len(source))
    one.update(source)
    length = 0
    if doc.xref_is_stream(xref):
        stream = doc.xref_stream_raw(xref) or b""
        length = len(stream)
        one.update(b"\x1e%d\x1e" % length)
        one.update(stream)
    refs = tuple(int(m[1]) for m in _REF.finditer(source))
    return in_page_tree, length, one.digest(), refs


class OcrCache:
    """Thread-safe (one connection under a lock); a context manager that closes it. A file
    that is not a database is moved aside (it only holds derived data) and a new one started;
    a cache that cannot be opened or written is no reason to fail an import, so `open_cache`
    then gives None."""

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
            conn.executescript(_SCHEMA)
            row = conn.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
            if row is None or row[0] != str(CACHE_FORMAT):  # older keys simply miss
                with conn:
                    conn.execute(
                        "INSERT OR REPLACE INTO meta (key, value) VALUES ('format', ?)",
                        (str(CACHE_FORMAT),),
                    )
        except Exception:
            conn.close()
            raise
        return conn

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def clear(self) -> None:
        """Every recognised page deleted and the file shrunk to its schema."""
        with self._lock:
            with self._conn:
                self._conn.execute("DELETE FROM pages")
            self._conn.execute("VACUUM")
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def __enter__(self) -> OcrCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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


def open_cache(path: str) -> OcrCache | None:
    """A connection to the cache at `path`, for one job's pages (close it when the job ends:
    a worker process that kept it open would stop Windows deleting the file), or None for ""
    and for a cache that cannot be opened (every page is then recognised afresh)."""
    if not path:
        return None
    try:
        return OcrCache(Path(path))
    except (OSError, sqlite3.Error):
        return None
