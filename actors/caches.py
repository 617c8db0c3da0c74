"""What Citewise keeps only to make the next import faster, how much room it takes, and
clearing it.

Three caches grow with every document ever imported and are never needed to read the library:
the embeddings of its blocks (HOME/cache/embeddings.sqlite), the pages text recognition read
(ocr.sqlite) and the documents as parsed and chunked (documents/). Snapshots hold their own
copies of everything a search or a citation reads, so clearing costs only time: a document
imported again is read, recognised and embedded afresh. The built-in model's weights and
tokenizer, kept beside them, are needed to run and are not touched.

Clearing waits for no one: it refuses while an import runs (the writer lock) and while an
interrupted import waits to be resumed, whose finished documents and embedded batches are found
again in these very caches (actors/journal.py).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import msgspec

from actors.collections import collection_names
from actors.errors import AppError
from actors.journal import Journal
from engine.embedding import EmbeddingCache
from engine.parsing.ocr_cache import OcrCache
from engine.paths import DataDir
from index.fsutil import sweep


class CacheUsage(msgspec.Struct, frozen=True, kw_only=True):
    """Bytes on disk of each cache."""

    embeddings: int
    recognised_pages: int
    documents: int

    @property
    def total(self) -> int:
        return self.embeddings + self.recognised_pages + self.documents


def _database_bytes(path: Path) -> int:
    """A SQLite file with its write-ahead log and shared-memory index."""
    total = 0
    for name in (path.name, f"{path.name}-wal", f"{path.name}-shm"):
        with contextlib.suppress(OSError):  # none yet
            total += (path.parent / name).stat().st_size
    return total


def _tree_bytes(directory: Path) -> int:
    total = 0
    for root, _, files in os.walk(directory):
        for name in files:
            with contextlib.suppress(OSError):  # removed meanwhile
                total += (Path(root) / name).stat().st_size
    return total


def cache_usage(data: DataDir) -> CacheUsage:
    return CacheUsage(
        embeddings=_database_bytes(data.embedding_cache),
        recognised_pages=_database_bytes(data.ocr_cache),
        documents=_tree_bytes(data.document_cache),
    )


def interrupted_imports(data: DataDir) -> list[str]:
    """Collections whose import journal names a job that did not finish (the caller holds the
    writer lock, so none of them is running)."""
    return [name for name in collection_names(data) if Journal(data.journal(name)).load()]


def clear_caches(data: DataDir, embeddings: EmbeddingCache) -> CacheUsage:
    """Empty the three caches (`embeddings`: the app's open connection to its file) and return
    the bytes they took before. Raises AppError (import_interrupted) while an interrupted
    import waits; the caller holds the writer lock. A cache file another program holds (on
    Windows, a scanner) is left for the next clearing."""
    waiting = interrupted_imports(data)
    if waiting:
        names = ", ".join(waiting)
        raise AppError(
            f"an interrupted import of {names} resumes from these caches; finish it first "
            "(`citewise import` resumes it), then clear them",
            code="import_interrupted",
            collections=names,
        )
    before = cache_usage(data)
    embeddings.clear()
    if data.ocr_cache.exists():
        with OcrCache(data.ocr_cache) as ocr:
            ocr.clear()
    sweep(data.document_cache)
    return before
