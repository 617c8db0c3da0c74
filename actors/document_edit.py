"""Editing a document's title, source label or aliases: a new snapshot, copy-on-write.

Every document is carried over from the active snapshot the way an import carries unchanged
documents (records and vectors read back, the parent's vector graph extended); nothing is parsed
or embedded again, and only the edited document's metadata differs. The edit is also kept in the
collection's overrides, so the next import of the same file keeps it. Runs under the writer lock.
"""

from __future__ import annotations

import msgspec

from actors.catalog import Catalog

# Still imported from here by actors/app.py.
from actors.errors import DocumentEditError as DocumentEditError
from actors.ingest import record_from_snapshot
from actors.overrides import DocumentOverride, Overrides
from engine.clock import utc_timestamp
from index.records import BuildStats, DocumentRecord
from index.snapshot import Snapshot, build_snapshot


class EditResult(msgspec.Struct, frozen=True, kw_only=True):
    collection: str
    doc_id: str
    source: str
    title: str
    source_label: str
    aliases: tuple[str, ...]
    changed: bool  # False: the document already read like this, no snapshot was made
    snapshot_id: str  # the active snapshot afterwards
    previous_snapshot_id: str


def find_document(snap: Snapshot, item: str) -> int:
    """The ordinal of the document `item` names: its doc_id or its source."""
    for i, d in enumerate(snap.documents):
        if item in (d.doc_id, d.source):
            return i
    raise DocumentEditError(
        f"{item!r} is neither a doc_id nor a document source in the active snapshot; see "
        "`citewise tool list_documents '{}'`"
    )


def edit_document(catalog: Catalog, item: str, edit: DocumentOverride) -> EditResult:
    """Apply `edit` to the document `item` names in the active snapshot of `catalog`, keep it
    for later imports, and activate the new snapshot. Blocking; call from a worker thread."""
    with catalog.pin_active() as parent:
        if parent is None:
            raise DocumentEditError(
                f"collection {catalog.collection!r} has no documents yet; import some first"
            )
        doc = find_document(parent, item)
        overrides = Overrides(catalog.data, catalog.collection)
        source = parent.documents[doc].source
        override = overrides.merged(source, edit)
        before = record_from_snapshot(parent, doc)
        after = override.apply(before)
        if overrides.load().get(source) != override:
            overrides.save(source, override)
        parent_id = parent.manifest.snapshot_id
        if after == before:
            return _result(catalog, after, changed=False, active=parent_id, previous=parent_id)
        final = _rebuild(catalog, parent, doc, after)
    catalog.activate(final)
    return _result(catalog, after, changed=True, active=final, previous=parent_id)


def _rebuild(catalog: Catalog, parent: Snapshot, edited: int, record: DocumentRecord) -> str:
    """A child of `parent` with the same documents, blocks and vectors; `record` replaces the
    document at ordinal `edited`. Returns the new snapshot's id (not yet active)."""
    m = parent.manifest
    if m.retrieval is None:
        raise DocumentEditError(
            f"snapshot {m.snapshot_id} records no retrieval settings (it predates them); "
            "import the documents again, then edit"
        )
    records = [
        record if i == edited else record_from_snapshot(parent, i)
        for i in range(len(parent.documents))
    ]
    vectors = [parent.doc_vectors(i) for i in range(len(parent.documents))]
    found = [parent.doc_part_counts(i) for i in range(len(parent.documents))]
    counts = [c for c in found if c is not None]
    snapshot_id, directory = catalog.new_build_dir()
    manifest = msgspec.structs.replace(
        m,
        snapshot_id=snapshot_id,
        parent_id=m.snapshot_id,
        created_at=utc_timestamp(),
        documents=(),
        files={},
        content_hash="",
        vector_index="none",
        stats=BuildStats(
            documents_carried=len(records),
            blocks_carried=sum(len(r.blocks) for r in records),
        ),
    )
    with catalog.building(directory):
        final = build_snapshot(
            directory,
            manifest,
            records,
            vectors,
            parent=parent.path,
            k1=m.retrieval.bm25_k1,
            b=m.retrieval.bm25_b,
            exact_search_max_blocks=m.retrieval.exact_search_max_blocks,
            part_counts=counts if len(counts) == len(found) and counts else None,
        )
    return final.snapshot_id


def _result(
    catalog: Catalog, record: DocumentRecord, *, changed: bool, active: str, previous: str
) -> EditResult:
    return EditResult(
        collection=catalog.collection,
        doc_id=record.doc_id,
        source=record.source,
        title=record.title,
        source_label=record.source_label,
        aliases=record.aliases,
        changed=changed,
        snapshot_id=active,
        previous_snapshot_id=previous,
    )
