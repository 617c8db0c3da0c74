"""The on-disk snapshot: record types, builders and memory-mapped readers.

index/ imports nothing else of the project. Re-exports resolve lazily, so that
`import index.records` never pays for importing numpy and usearch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from index.lazy import lazy_attributes

if TYPE_CHECKING:
    from index.blockstore import DocumentInfo
    from index.errors import ManifestDamaged, SnapshotError
    from index.fsutil import atomic_write, fsync_dir
    from index.prepared import PreparedDocument, prepare_document
    from index.snapshot import (
        Block,
        Snapshot,
        VerifyResult,
        build_snapshot,
        read_manifest,
        verify_snapshot,
    )
    from index.textnorm import TOKENIZER_VERSION, fold, query_tokens, tokenize
    from index.vectors import vector_key

_EXPORTS = {
    "Block": "index.snapshot",
    "DocumentInfo": "index.blockstore",
    "ManifestDamaged": "index.errors",
    "PreparedDocument": "index.prepared",
    "Snapshot": "index.snapshot",
    "SnapshotError": "index.errors",
    "TOKENIZER_VERSION": "index.textnorm",
    "VerifyResult": "index.snapshot",
    "atomic_write": "index.fsutil",
    "build_snapshot": "index.snapshot",
    "fold": "index.textnorm",
    "fsync_dir": "index.fsutil",
    "prepare_document": "index.prepared",
    "query_tokens": "index.textnorm",
    "read_manifest": "index.snapshot",
    "tokenize": "index.textnorm",
    "vector_key": "index.vectors",
    "verify_snapshot": "index.snapshot",
}

__all__ = [
    "TOKENIZER_VERSION",
    "Block",
    "DocumentInfo",
    "ManifestDamaged",
    "PreparedDocument",
    "Snapshot",
    "SnapshotError",
    "VerifyResult",
    "atomic_write",
    "build_snapshot",
    "fold",
    "fsync_dir",
    "prepare_document",
    "query_tokens",
    "read_manifest",
    "tokenize",
    "vector_key",
    "verify_snapshot",
]


__getattr__, __dir__ = lazy_attributes(
    __name__, {name: (module, name) for name, module in _EXPORTS.items()}, __all__
)
