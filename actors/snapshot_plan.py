"""What the next snapshot of a collection holds, decided without touching the disk.

Given the active snapshot's documents (by source and content hash), this run's outcomes, its
removals and whether the embedding model is unchanged, the plan says which documents are carried
over, which are new work, which drop out, which failures stay disclosed, and whether a snapshot
is built at all. It reads and writes nothing; the ingest pipeline carries it out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import msgspec

from index.blockstore import DocumentInfo
from index.records import (
    EmbeddingSpec,
    FailedDocument,
    SnapshotManifest,
    SnapshotStatus,
    VectorLayout,
)


class ParentDocuments(msgspec.Struct, frozen=True, kw_only=True):
    """What a plan needs to know of the active snapshot a run builds on."""

    by_source: dict[str, tuple[int, str]]  # source -> (document number, content hash)
    failed: tuple[FailedDocument, ...] = ()  # its failed_documents, in manifest order
    # Built with the embedding model in use now: only then are its records and vectors valid
    # for the next snapshot, and only then may the build copy its files.
    reusable: bool = True

    def carried(self, source: str, content_hash: str) -> int | None:
        """The parent's document number when `source` has the same bytes there and the
        embedding model is unchanged (it is carried over: neither parsed nor embedded)."""
        if not self.reusable:
            return None
        found = self.by_source.get(source)
        return found[0] if found is not None and found[1] == content_hash else None


def parent_documents(
    documents: Sequence[DocumentInfo],
    manifest: SnapshotManifest,
    embedding: EmbeddingSpec,
    layout: VectorLayout | None = None,
) -> ParentDocuments:
    """The plan's view of a snapshot (its documents and manifest) for a run embedding with
    `embedding` into `layout` (None: one vector per block); vectors of another layout (one per
    block against sentence windows) are as worthless to the next snapshot as another model's."""
    same_layout = (manifest.vector_layout or VectorLayout()) == (layout or VectorLayout())
    return ParentDocuments(
        by_source={d.source: (i, d.content_hash) for i, d in enumerate(documents)},
        failed=manifest.failed_documents,
        reusable=manifest.embedding == embedding and same_layout,
    )


class SnapshotPlan(msgspec.Struct, frozen=True, kw_only=True):
    """The next snapshot, by source. When `build` is False nothing changed: the active snapshot
    stays, and only `reused` and `failures` are filled in."""

    build: bool
    # Parent documents copied over unchanged: (source, document number in the parent).
    carried: tuple[tuple[str, int], ...] = ()
    reused: tuple[str, ...] = ()  # this run's documents identical to the parent's
    embedded: tuple[str, ...] = ()  # this run's documents that were parsed or (re-)embedded
    dropped: tuple[str, ...] = ()  # parent documents the next snapshot does not hold
    # Disclosed failures: the parent's still unresolved, then this run's (a source failing
    # again keeps its place and takes the new reason).
    failures: tuple[FailedDocument, ...] = ()
    parent_files_reusable: bool = False  # the build may copy the parent's per-document files
    status: SnapshotStatus | None = None  # of the snapshot to build; None when nothing is built


def plan_snapshot(
    parent: ParentDocuments | None,
    imported: Mapping[str, str],
    failed: Mapping[str, FailedDocument],
    removals: Iterable[str],
    renewed: Iterable[str] = (),
) -> SnapshotPlan:
    """Decide the next snapshot.

    `imported` maps each document of this run that succeeded to its content hash; `failed`
    holds this run's failures by source, in the order they happened; `removals` are sources
    taken out. A document imported in this run stays even when the run also removes it.
    `renewed` are documents of this run read again although their bytes did not change (every
    scanned page recognised this time): they replace the parent's.
    """
    removed = set(removals)
    again = set(renewed)
    by_source = parent.by_source if parent is not None else {}
    reused = tuple(
        s
        for s, h in imported.items()
        if s not in again and parent is not None and parent.carried(s, h) is not None
    )
    failed_before = {f.source for f in parent.failed} if parent is not None else set()
    # A removal changes the snapshot when it takes out a document or a disclosed failure.
    changed = len(reused) < len(imported) or bool(removed & (by_source.keys() | failed_before))
    # Earlier failures stay disclosed until their source is imported again or removed.
    carried_failures = {
        f.source: f
        for f in (parent.failed if parent is not None else ())
        if f.source not in imported and f.source not in removed
    }
    failures = {**carried_failures, **failed}
    new_failures = bool(failed) and (
        parent is None or set(failed.items()) != set(carried_failures.items())
    )
    if parent is not None and not changed and not new_failures:
        return SnapshotPlan(build=False, reused=reused, failures=tuple(failures.values()))

    # Vectors of another embedding model are worthless to the next snapshot: only this run's
    # documents enter it then.
    reusable = parent is not None and parent.reusable
    carried = tuple(
        (source, doc)
        for source, (doc, _) in by_source.items()
        if reusable and source not in removed and source not in failed and source not in imported
    )
    kept = {source for source, _ in carried}
    held = len(carried) + len(imported)
    if held:
        status: SnapshotStatus = "ready_partial" if failures else "ready"
    else:
        status = "failed" if failures else "ready"
    reused_set = set(reused)
    return SnapshotPlan(
        build=True,
        carried=carried,
        reused=reused,
        embedded=tuple(s for s in imported if s not in reused_set),
        dropped=tuple(s for s in by_source if s not in kept and s not in imported),
        failures=tuple(failures.values()),
        parent_files_reusable=reusable,
        status=status,
    )
