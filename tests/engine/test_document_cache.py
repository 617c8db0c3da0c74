"""The document cache: entries are written without fsync, so what a power cut can leave of one
(nothing, a cut-short file, zeros) must read as a miss and be written again, never as a
document."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from engine.document_cache import DocumentCache, document_key
from tests.engine.tools.snapshots import plain

KEY = document_key("a" * 64, "parser-1", "chunker-1", 256, "tok-1")


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: b"",
        lambda data: data[: len(data) // 2],
        lambda data: data[:-1],
        lambda data: bytes(len(data)),
    ],
    ids=["empty", "half", "one-byte-short", "zeros"],
)
def test_an_entry_a_power_cut_damaged_reads_as_a_miss_and_is_written_again(
    tmp_path: Path, damage: Callable[[bytes], bytes]
) -> None:
    record = plain("notes", ["First note, long enough to be a block.", "Second note."])
    cache = DocumentCache(tmp_path / "documents")
    cache.put(KEY, record)
    assert cache.get(KEY) == record
    [entry] = (tmp_path / "documents").rglob("*.msgpack")
    entry.write_bytes(damage(entry.read_bytes()))
    assert cache.get(KEY) is None
    cache.put(KEY, record)  # the next import parses the document again and stores it
    assert cache.get(KEY, record.content_hash) == record


def test_an_entry_holding_another_documents_record_is_a_miss_and_is_replaced(
    tmp_path: Path,
) -> None:
    record = plain("notes", ["First note, long enough to be a block."])
    other = plain("other", ["Another file's blocks, as a power cut may leave them."])
    assert other.content_hash != record.content_hash
    cache = DocumentCache(tmp_path / "documents")
    cache.put(KEY, other)  # what the entry's disk blocks held before
    assert cache.get(KEY, record.content_hash) is None
    assert cache.get(KEY) == other  # without a hash to check, a readable entry is returned
    cache.put(KEY, record)
    assert cache.get(KEY, record.content_hash) == record
