"""What the front ends show of the library, in shapes a page or a table renders directly: the
status of a collection, its documents and outlines, its snapshot history, failed documents,
where a key was kept. Built from manifests and pinned snapshots; nothing here writes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import msgspec

from index.records import FailedDocument, SkippedFile, SnapshotManifest

# A document's import report, as the front ends read it (DocumentView.report).
from index.records import ImportReport as ImportReport
from index.records import ImportWarning as ImportWarning

if TYPE_CHECKING:  # only annotations here: `status` loads no snapshot code
    from index.snapshot import Snapshot


class ActiveSnapshotInfo(msgspec.Struct, kw_only=True):
    id: str
    status: str
    content_hash: str
    documents: int
    blocks: int
    failed_documents: list[dict[str, str]]
    skipped: list[dict[str, str]]
    created_at: str
    parent_id: str | None = None
    embedding: str = ""
    documents_with_warnings: int = 0  # imported, with something in their report to read


class StatusReport(msgspec.Struct, kw_only=True):
    collection: str
    active_snapshot: ActiveSnapshotInfo | None
    import_: dict[str, object] | None = msgspec.field(name="import", default=None)
    data_dir: str = ""


class DocumentView(msgspec.Struct, frozen=True, kw_only=True):
    doc_id: str
    title: str
    source: str
    format: str
    lang: str
    pages: int | None
    blocks: int
    sections: int
    source_label: str = ""
    aliases: tuple[str, ...] = ()
    report: ImportReport | None = None  # None: imported before import reports were kept


class OutlineEntry(msgspec.Struct, frozen=True, kw_only=True):
    path: str
    title: str
    depth: int
    blocks: int  # in the subtree
    page: int | None
    first_sentence: str


class SnapshotChanges(msgspec.Struct, frozen=True, kw_only=True):
    """How one snapshot's documents differ from an earlier one's, by source path.

    `edited`: the same source with other content (a re-imported, changed file); `failed`:
    failures the later snapshot lists that the earlier one did not. `known` is False when the
    earlier snapshot is gone (cleaned up), so nothing can be said."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    edited: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()
    # The same bytes read again with another result (its blocks or its warnings differ): every
    # scanned page recognised ("Recognise all pages"), or a newer parser.
    read_again: tuple[str, ...] = ()
    known: bool = True

    @property
    def empty(self) -> bool:
        return self.known and not (
            self.added or self.removed or self.edited or self.failed or self.read_again
        )


class SnapshotView(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    status: str
    created_at: str
    documents: int
    blocks: int
    failed: int
    active: bool
    parent_id: str | None = None
    content_hash: str = ""
    changes: SnapshotChanges = SnapshotChanges()  # what this snapshot changed (vs its parent)
    since: SnapshotChanges = SnapshotChanges()  # what the active one changed since this one


class DamageView(msgspec.Struct, frozen=True, kw_only=True):
    """The active snapshot cannot be opened: which one, what is wrong with it, and the newest
    usable snapshot before it (None when there is none: the documents must be imported again)."""

    snapshot_id: str
    problem: str
    fallback: SnapshotView | None


class FailedView(msgspec.Struct, frozen=True, kw_only=True):
    source: str
    stage: str
    reason: str
    message: str
    retryable: bool  # the original file is known, so it can be imported again


class KeyStored(msgspec.Struct, frozen=True):
    where: Literal["keyring", "session"]
    shown_as: str


def active_info(m: SnapshotManifest) -> ActiveSnapshotInfo:
    return ActiveSnapshotInfo(
        id=m.snapshot_id,
        status=m.status,
        content_hash=m.content_hash,
        documents=len(m.documents),
        blocks=sum(d.blocks for d in m.documents),
        failed_documents=[_failed(f) for f in m.failed_documents],
        skipped=[_skipped(s) for s in m.skipped],
        created_at=m.created_at,
        parent_id=m.parent_id,
        embedding=f"{m.embedding.provider}:{m.embedding.model}" if m.embedding else "",
        documents_with_warnings=sum(1 for d in m.documents if d.warnings),
    )


def documents_of(snap: Snapshot) -> list[DocumentView]:
    return [
        DocumentView(
            doc_id=d.doc_id,
            title=d.title,
            source=d.source,
            format=d.format,
            lang=d.lang,
            pages=d.pages,
            blocks=d.block_count,
            sections=len(d.sections),
            source_label=d.source_label,
            aliases=tuple(d.aliases),
            report=snap.import_report(i),
        )
        for i, d in sorted(enumerate(snap.documents), key=lambda e: (e[1].source, e[1].title))
    ]


def outline_of(snap: Snapshot, doc: int) -> list[OutlineEntry]:
    return [
        OutlineEntry(
            path=s.path,
            title=s.title,
            depth=s.depth,
            blocks=s.subtree_blocks,
            page=s.page,
            first_sentence=s.first_sentence,
        )
        for s in snap.documents[doc].sections
    ]


def snapshot_views(active: str | None, manifests: Sequence[SnapshotManifest]) -> list[SnapshotView]:
    """The history, oldest first, as the catalog lists it; each with what it changed and what
    has changed since (compared with the active snapshot, for a rollback's consequences)."""
    by_id = {m.snapshot_id: m for m in manifests}
    current = by_id.get(active) if active is not None else None
    return [
        SnapshotView(
            id=m.snapshot_id,
            status=m.status,
            created_at=m.created_at,
            documents=len(m.documents),
            blocks=sum(d.blocks for d in m.documents),
            failed=len(m.failed_documents),
            active=m.snapshot_id == active,
            parent_id=m.parent_id,
            content_hash=m.content_hash,
            changes=_changes_from_parent(m, by_id),
            since=(
                snapshot_changes(m, current)
                if current is not None
                else SnapshotChanges(known=False)
            ),
        )
        for m in manifests
    ]


def snapshot_changes(old: SnapshotManifest | None, new: SnapshotManifest) -> SnapshotChanges:
    """What `new` changed compared with `old` (None: nothing before it, every document new)."""
    was = {} if old is None else {d.source: d for d in old.documents}
    before = {s: d.content_hash for s, d in was.items()}
    after = {d.source: d.content_hash for d in new.documents}
    failed_before = set() if old is None else {f.source for f in old.failed_documents}
    return SnapshotChanges(
        added=tuple(sorted(s for s in after if s not in before)),
        removed=tuple(sorted(s for s in before if s not in after)),
        edited=tuple(sorted(s for s, h in after.items() if s in before and before[s] != h)),
        failed=tuple(
            sorted({f.source for f in new.failed_documents if f.source not in failed_before})
        ),
        read_again=tuple(
            sorted(
                d.source
                for d in new.documents
                if (prior := was.get(d.source)) is not None
                and prior.content_hash == d.content_hash
                and (prior.blocks, prior.warnings) != (d.blocks, d.warnings)
            )
        ),
    )


def _changes_from_parent(
    m: SnapshotManifest, by_id: Mapping[str, SnapshotManifest]
) -> SnapshotChanges:
    if m.parent_id is None:
        return snapshot_changes(None, m)
    parent = by_id.get(m.parent_id)
    if parent is None:  # cleaned up: what changed cannot be told any more
        return SnapshotChanges(known=False)
    return snapshot_changes(parent, m)


def failed_views(
    failures: Sequence[FailedDocument], origins: Mapping[str, str]
) -> list[FailedView]:
    return [
        FailedView(
            source=f.source,
            stage=f.stage,
            reason=f.reason,
            message=f.message,
            retryable=f.source in origins and Path(origins[f.source]).is_file(),
        )
        for f in failures
    ]


def _failed(f: FailedDocument) -> dict[str, str]:
    return {"source": f.source, "stage": f.stage, "reason": f.reason, "message": f.message}


def _skipped(s: SkippedFile) -> dict[str, str]:
    return {"source": s.source, "reason": s.reason}
