"""What the front ends show of the library, in shapes a page or a table renders directly: the
status of a collection, its documents and outlines, its snapshot history, failed documents,
where a key was kept. Built from manifests and pinned snapshots; nothing here writes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

import msgspec

from index.records import FailedDocument, SkippedFile, SnapshotManifest
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


class OutlineEntry(msgspec.Struct, frozen=True, kw_only=True):
    path: str
    title: str
    depth: int
    blocks: int  # in the subtree
    page: int | None
    first_sentence: str


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
        )
        for d in sorted(snap.documents, key=lambda d: (d.source, d.title))
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
    """The history, oldest first, as the catalog lists it."""
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
        )
        for m in manifests
    ]


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
