"""The running app: the one object front ends (CLI, web) call.

Commands (import, status, snapshots, remove, collections) and event streams (import progress)
live here; front ends never reach past it into engine/ or index/. Written against anyio only.
"""

from __future__ import annotations

import secrets
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

import anyio
import anyio.to_thread
import msgspec

from actors.catalog import Catalog, CatalogError, GcReport
from actors.document_edit import DocumentEditError, EditResult, edit_document
from actors.ingest import ImportProgress, ImportResult, Ingest, PauseGate
from actors.journal import Journal
from actors.origins import Origins, origins_of
from actors.overrides import DocumentOverride, OverrideError, Overrides, clean_edit
from engine.config import Config, load_config
from engine.embedding import (
    EmbeddingCache,
    EmbeddingProvider,
    LocalEmbedding,
    OpenAICompatibleEmbedding,
)
from engine.paths import DataDir, check_collection_name, data_home
from engine.secrets import get_key
from engine.tokens import TokenCounter
from engine.tools import ToolContext, ToolOutcome, run_tool
from engine.versions.formats import APP_STATE_FORMAT
from engine.writer_lock import writer_active, writer_lock
from index.fsutil import atomic_write
from index.records import FailedDocument, SkippedFile, SnapshotManifest
from index.snapshot import VerifyResult, verify_snapshot

DEFAULT_COLLECTION = "default"


class AppError(Exception):
    """A command that cannot be carried out; the message says what to do."""


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


class _State(msgspec.Struct):
    current_collection: str = DEFAULT_COLLECTION
    format_version: int = APP_STATE_FORMAT


class App:
    def __init__(self, data: DataDir, config: Config) -> None:
        self.data = data.ensure()
        self.config = config
        self._embedder: EmbeddingProvider | None = None
        self._embedding_cache: EmbeddingCache | None = None
        self._counter: TokenCounter | None = None

    @classmethod
    def from_environment(cls) -> App:
        data = DataDir(data_home())
        return cls(data, load_config(data.config_file))

    async def aclose(self) -> None:
        if self._embedder is not None:
            await self._embedder.aclose()
            self._embedder = None
        if self._embedding_cache is not None:
            self._embedding_cache.close()
            self._embedding_cache = None

    # -- shared components -------------------------------------------------------------------
    def embedder(self) -> EmbeddingProvider:
        if self._embedder is None:
            e = self.config.embedding
            if e.provider == "local":
                self._embedder = LocalEmbedding()
            else:
                self._embedder = OpenAICompatibleEmbedding(
                    base_url=e.base_url,
                    model=e.model,
                    dimensions=e.dimensions,
                    api_key=get_key("embedding") or "",
                    timeout_s=e.timeout_s,
                    proxy=self.config.network.proxy or None,
                    ca_bundle=self.config.network.ca_bundle or None,
                )
        return self._embedder

    def embedding_cache(self) -> EmbeddingCache:
        if self._embedding_cache is None:
            self._embedding_cache = EmbeddingCache(self.data.embedding_cache)
        return self._embedding_cache

    def counter(self) -> TokenCounter:
        if self._counter is None:
            self._counter = TokenCounter()
        return self._counter

    # -- collections -------------------------------------------------------------------------
    def _state_file(self) -> Path:
        return self.data.root / "state.json"

    def current_collection(self) -> str:
        try:
            return msgspec.json.decode(
                self._state_file().read_bytes(), type=_State
            ).current_collection
        except (FileNotFoundError, msgspec.DecodeError, msgspec.ValidationError):
            return DEFAULT_COLLECTION

    def resolve_collection(self, name: str | None) -> str:
        return check_collection_name(name or self.current_collection())

    def catalog(self, collection: str | None = None) -> Catalog:
        return Catalog(self.data, self.resolve_collection(collection))

    def collections(self) -> list[str]:
        names = {DEFAULT_COLLECTION}
        if self.data.collections.is_dir():
            names |= {p.name for p in self.data.collections.iterdir() if p.is_dir()}
        return sorted(names)

    def create_collection(self, name: str) -> None:
        catalog = Catalog(self.data, check_collection_name(name))
        if catalog.exists():
            raise AppError(f"collection {name!r} already exists")
        catalog.ensure()

    def use_collection(self, name: str) -> None:
        check_collection_name(name)
        if name not in self.collections():
            raise AppError(f"there is no collection {name!r}; create it first")
        atomic_write(self._state_file(), msgspec.json.encode(_State(name)))

    def rename_collection(self, old: str, new: str) -> None:
        src, dst = self.data.collection(old), self.data.collection(new)
        if not src.is_dir():
            raise AppError(f"there is no collection {old!r}")
        if dst.exists():
            raise AppError(f"a collection named {new!r} already exists")
        with writer_lock(self.data):
            src.rename(dst)
            if self.current_collection() == old:
                atomic_write(self._state_file(), msgspec.json.encode(_State(new)))

    def delete_collection(self, name: str) -> None:
        path = self.data.collection(name)
        if not path.is_dir():
            raise AppError(f"there is no collection {name!r}")
        with writer_lock(self.data):
            trash = self.data.root / "trash"
            trash.mkdir(exist_ok=True)
            target = trash / f"{name}.{secrets.token_hex(3)}"
            path.rename(target)  # gone from the app at once; removal below may be retried
            shutil.rmtree(target, ignore_errors=True)
            if self.current_collection() == name:
                self._state_file().unlink(missing_ok=True)

    # -- import ------------------------------------------------------------------------------
    def pending_import(self, collection: str | None = None) -> bool:
        return Journal(self.data.journal(self.resolve_collection(collection))).load() is not None

    async def import_paths(
        self,
        paths: Sequence[Path],
        *,
        collection: str | None = None,
        on_progress: Callable[[ImportProgress], None] | None = None,
        gate: PauseGate | None = None,
        removals: Sequence[str] = (),
        wait_for_writer_s: float = 0.0,
    ) -> ImportResult:
        name = self.resolve_collection(collection)
        with writer_lock(self.data, wait_for_writer_s):
            # Recorded first, so an import that is killed and resumed still knows them.
            found = await anyio.to_thread.run_sync(origins_of, paths)
            await anyio.to_thread.run_sync(Origins(self.data, name).remember, found)
            ingest = Ingest(
                self.data,
                self.config,
                name,
                self.embedder(),
                self.embedding_cache(),
                await anyio.to_thread.run_sync(self.counter),
                on_progress=on_progress,
                gate=gate,
            )
            result = await ingest.run(paths, removals=removals)
            s = self.config.snapshots
            await anyio.to_thread.run_sync(ingest.catalog.gc, s.keep_last, s.keep_days)
            return result

    async def remove(self, items: Sequence[str], *, collection: str | None = None) -> ImportResult:
        """Take documents (by source or doc_id) out: a new snapshot without them."""
        catalog = self.catalog(collection)
        manifest = catalog.active_manifest()
        if manifest is None:
            raise AppError(f"collection {catalog.collection!r} has no documents yet")
        by_id = {d.doc_id: d.source for d in manifest.documents}
        sources = {d.source for d in manifest.documents}
        failed = {f.source for f in manifest.failed_documents}
        chosen: list[str] = []
        for item in items:
            if item in sources or item in failed:
                chosen.append(item)
            elif item in by_id:
                chosen.append(by_id[item])
            else:
                raise AppError(
                    f"{item!r} is neither a document source nor a doc_id in collection "
                    f"{catalog.collection!r}; see `citewise tool list_documents '{{}}'`"
                )
        result = await self.import_paths([], collection=catalog.collection, removals=chosen)
        if result.activated:  # a file imported later under the same name starts afresh
            await anyio.to_thread.run_sync(Overrides(self.data, catalog.collection).forget, chosen)
        return result

    async def edit_document(
        self,
        item: str,
        *,
        title: str | None = None,
        source_label: str | None = None,
        aliases: Sequence[str] | None = None,
        collection: str | None = None,
    ) -> EditResult:
        """Change a document's title, source label or aliases (by doc_id or source): a new
        snapshot that carries everything else over, and an edit later imports keep."""
        catalog = self.catalog(collection)
        try:
            edit = clean_edit(title=title, source_label=source_label, aliases=aliases)
            if edit == DocumentOverride():
                raise AppError("nothing to change: give a new title, source label or aliases")
            with writer_lock(self.data):
                result = await anyio.to_thread.run_sync(edit_document, catalog, item, edit)
                if result.changed:
                    s = self.config.snapshots
                    await anyio.to_thread.run_sync(catalog.gc, s.keep_last, s.keep_days)
                return result
        except (DocumentEditError, OverrideError, CatalogError) as exc:
            raise AppError(str(exc)) from None

    # -- the five tools, by hand -------------------------------------------------------------
    async def run_tool(
        self,
        name: str,
        args: str | bytes,
        *,
        collection: str | None = None,
        snapshot_id: str | None = None,
    ) -> ToolOutcome:
        """One tool call on the active (or the named) snapshot, exactly as the agent makes it.

        Raises UnknownTool for a name that is not one of the five; every other problem is the
        tool's own error result (no snapshot at all → collection_unavailable).
        """
        catalog = self.catalog(collection)
        if snapshot_id is not None and catalog.manifest(snapshot_id) is None:
            raise AppError(
                f"snapshot {snapshot_id} does not exist in collection {catalog.collection!r}; "
                "see `citewise snapshots list`"
            )
        sid = snapshot_id or catalog.active_id()
        embedder = self.embedder()
        counter = await anyio.to_thread.run_sync(self.counter)
        if sid is None:
            return await run_tool(ToolContext(None, embedder, counter), name, args)
        with catalog.pinned(sid) as snapshot:
            return await run_tool(ToolContext(snapshot, embedder, counter), name, args)

    # -- status and snapshots ----------------------------------------------------------------
    def status(self, collection: str | None = None) -> StatusReport:
        catalog = self.catalog(collection)
        manifest = catalog.active_manifest()
        active = None if manifest is None else _active_info(manifest)
        journal = Journal(self.data.journal(catalog.collection))
        progress: dict[str, object] | None = None
        if journal.load() is not None:
            raw = journal.read_progress()
            progress = msgspec.json.decode(raw) if raw else {"collection": catalog.collection}
            assert progress is not None
            if not writer_active(self.data):
                progress["state"] = "interrupted"
                progress["hint"] = "run `citewise import` to resume"
        return StatusReport(
            collection=catalog.collection,
            active_snapshot=active,
            import_=progress,
            data_dir=str(self.data.root),
        )

    def snapshots(self, collection: str | None = None) -> tuple[str | None, list[SnapshotManifest]]:
        catalog = self.catalog(collection)
        return catalog.active_id(), catalog.list()

    def activate(self, snapshot_id: str, collection: str | None = None) -> SnapshotManifest:
        catalog = self.catalog(collection)
        with writer_lock(self.data):
            try:
                return catalog.activate(snapshot_id)
            except CatalogError as exc:
                raise AppError(str(exc)) from None

    async def verify(self, snapshot_id: str, collection: str | None = None) -> VerifyResult:
        catalog = self.catalog(collection)
        path = catalog.snapshot_path(snapshot_id)
        if catalog.manifest(snapshot_id) is None:
            raise AppError(f"snapshot {snapshot_id} does not exist in {catalog.collection!r}")
        return await anyio.to_thread.run_sync(verify_snapshot, path)

    async def gc(self, collection: str | None = None) -> GcReport:
        catalog = self.catalog(collection)
        s = self.config.snapshots
        with writer_lock(self.data):
            return await anyio.to_thread.run_sync(catalog.gc, s.keep_last, s.keep_days)


def _active_info(m: SnapshotManifest) -> ActiveSnapshotInfo:
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


def _failed(f: FailedDocument) -> dict[str, str]:
    return {"source": f.source, "stage": f.stage, "reason": f.reason, "message": f.message}


def _skipped(s: SkippedFile) -> dict[str, str]:
    return {"source": s.source, "reason": s.reason}
