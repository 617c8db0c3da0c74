"""The running app: `App`, the one object both front ends (cli/, web/) call.

`async with App.open(home)` (or `async with app.running()` on an App made earlier) runs one task
group owning the long-lived actors: the trace writer (one per app, drop-not-block), the parse
worker pool, background imports (one at a time, each an `ImportJob` handle), and the harness
runner's questions (`App.ask`, each an `AskRun` handle with a bounded event stream). Everything
a page or a command does goes through a method here; a method that touches the disk for longer
than a small file read is async and runs off the event loop. Written against anyio only.
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

import anyio
import anyio.to_thread
import msgspec

from actors.app_state import AppState
from actors.app_traces import TraceMethods
from actors.catalog import Catalog, GcReport
from actors.collections import (
    collection_names,
    create_collection,
    delete_collection,
    rename_collection,
)
from actors.errors import AppError, CatalogError, DocumentEditError, OverrideError, SnapshotDamaged
from actors.journal import Journal
from actors.origins import Origins, origins_of
from actors.overrides import DocumentOverride, Overrides, clean_edit
from actors.settings import (
    effective_settings,
    env_overrides,
    file_settings,
    merged_settings,
    write_settings,
)
from actors.views import (
    DamageView,
    DocumentView,
    FailedView,
    KeyStored,
    OutlineEntry,
    SnapshotView,
    StatusReport,
    active_info,
    documents_of,
    failed_views,
    outline_of,
    snapshot_views,
)
from engine.config import Config, ConfigError, load_config
from engine.errors import UserError
from engine.paths import DataDir, check_collection_name, data_home
from engine.prompts.registry import BundleDiff, BundleInfo, BundleRegistry
from engine.secrets import (
    ENV_NAMES,
    KeyName,
    SecretStoreUnavailable,
    get_key,
    keyring_available,
    mask,
    set_key,
)
from engine.writer_lock import writer_active, writer_lock
from index.records import PageRect, SnapshotManifest

if TYPE_CHECKING:  # what only an import, a question or a key test loads, when it runs
    from actors.answer_export import ExportLabels, ExportOptions
    from actors.caches import CacheUsage
    from actors.conversations import ConversationSummary, ConversationTurn
    from actors.document_edit import EditResult
    from actors.ingest import ImportProgress, ImportResult, PauseGate
    from actors.jobs import AskRun, ImportJob
    from actors.parse_pool import ParsePool
    from actors.source_view import PageImage, SourceReader, SourceView
    from actors.spending import SpendingTotals
    from actors.trace_writer import TraceWriter, WriterHealth
    from engine.embedding import EmbeddingCache, EmbeddingProvider
    from engine.harness import Budgets, Citation
    from engine.keycheck import KeyCheck
    from engine.tokens import TokenCounter
    from engine.tools import ToolOutcome
    from index.snapshot import VerifyResult

# Parse workers start this long after the app does: late enough not to slow the first page
# down, early enough to be up before a person has picked files to import.
PARSE_WARM_DELAY_S = 3.0

_UPLOAD_NAME = re.compile(r"[^\w.\- ()\[\]]+")


# Errors a person can act on (each says what to do); anything else is a bug, shown as such.
USER_ERRORS: tuple[type[Exception], ...] = (UserError,)


class App(TraceMethods):
    """The facade. Methods that are plain functions read at most a few small files (the
    active pointer, a manifest, a state file) or an already open snapshot; anything longer is
    async and runs in a worker thread or process."""

    def __init__(self, data: DataDir, config: Config) -> None:
        self.data = data.ensure()
        self.config = config
        self._catalogs: dict[str, Catalog] = {}
        self._state = AppState(self.data.root)
        self.current_import: ImportJob | None = None
        self._embedder: EmbeddingProvider | None = None
        self._embedding_cache: EmbeddingCache | None = None
        self._counter: TokenCounter | None = None
        self._sources: SourceReader | None = None
        self._tasks: anyio.abc.TaskGroup | None = None
        self._trace_writer: TraceWriter | None = None
        self._parse_pool: ParsePool | None = None
        self._stop = anyio.Event()
        self.stopped = anyio.Event()  # set once `serve` has ended

    @classmethod
    def at(cls, home: Path | None = None) -> App:
        """The app of the data directory `home` (default: the per-user one, or CITEWISE_HOME)
        with its settings; its actors start with `running()`."""
        data = DataDir(home if home is not None else data_home())
        return cls(data, load_config(data.config_file))

    @classmethod
    def from_environment(cls) -> App:
        return cls.at(None)

    @classmethod
    @asynccontextmanager
    async def open(
        cls, home: Path | None = None, *, warm_parse_workers_after: float | None = None
    ) -> AsyncIterator[App]:
        """The app of `home` with its actors running for the duration of the block."""
        app = cls.at(home)
        async with app.running(warm_parse_workers_after=warm_parse_workers_after):
            yield app

    # -- the actors --------------------------------------------------------------------------
    @asynccontextmanager
    async def running(self, *, warm_parse_workers_after: float | None = None) -> AsyncIterator[App]:
        """Run the long-lived actors until the block ends: the trace writer, imports started
        with `start_import`, questions started with `ask`, and (when asked) the parse workers
        warmed after `warm_parse_workers_after` seconds. Leaving the block pauses a running
        import (its journal keeps it: the next start resumes it), then writes what the trace
        writer still holds, then closes the embedding provider."""
        from actors.trace_setup import open_app_trace_writer

        if self._tasks is not None:
            raise RuntimeError("the app is already running")
        try:
            async with open_app_trace_writer(self) as writer, anyio.create_task_group() as tg:
                self._trace_writer, self._tasks = writer, tg
                if warm_parse_workers_after is not None:
                    tg.start_soon(self._warm_parse_workers, warm_parse_workers_after)
                try:
                    yield self
                finally:
                    job = self.current_import
                    if job is not None and not job.finished.is_set():
                        job.pause()
                    tg.cancel_scope.cancel()
        finally:
            self._tasks = self._trace_writer = self._parse_pool = None
            with anyio.CancelScope(shield=True):
                await self.aclose()

    async def serve(
        self,
        *,
        started: Callable[[], object] | None = None,
        warm_parse_workers_after: float | None = PARSE_WARM_DELAY_S,
    ) -> None:
        """Run the actors until `stop()` is called: for a front end (NiceGUI) whose start
        and stop hooks run in different tasks."""
        from engine.tokens import preload

        preload()  # long-lived: count with the tokenizer itself, loaded in the background
        try:
            async with self.running(warm_parse_workers_after=warm_parse_workers_after):
                if started is not None:
                    started()
                await self._stop.wait()
        finally:
            self.stopped.set()

    def stop(self) -> None:
        self._stop.set()

    @property
    def is_running(self) -> bool:
        return self._tasks is not None

    @property
    def trace_writer(self) -> TraceWriter | None:
        """The app's one trace writer while the app runs."""
        return self._trace_writer

    def trace_health(self) -> WriterHealth | None:
        """How the trace writer is doing (records dropped, store errors), while running."""
        return None if self._trace_writer is None else self._trace_writer.health()

    def _pool(self) -> ParsePool | None:
        """The running app's parse pool, made on first use (its slots need the running event
        loop; a command that imports nothing never loads the parsers)."""
        if self._parse_pool is None and self._tasks is not None:
            from actors.parse_pool import ParsePool

            self._parse_pool = ParsePool()
        return self._parse_pool

    async def _warm_parse_workers(self, after_s: float) -> None:
        from actors.parse_pool import warm_parse_workers

        await anyio.sleep(after_s)
        await warm_parse_workers()

    async def warm(self) -> None:
        """Load what the first request would wait for: the tokenizer (~0.3 s), which a
        long-running app counts with (a one-off command counts with its merges alone)."""
        from engine.tokens import preload

        preload()
        await anyio.to_thread.run_sync(self.counter().count, "warm")

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
            from engine.embedding.providers import provider_for

            key = "" if self.config.embedding.provider == "local" else get_key("embedding") or ""
            self._embedder = provider_for(self.config.embedding, self.config.network, key)
        return self._embedder

    def embedding_cache(self) -> EmbeddingCache:
        if self._embedding_cache is None:
            from engine.embedding import EmbeddingCache

            self._embedding_cache = EmbeddingCache(self.data.embedding_cache)
        return self._embedding_cache

    def counter(self) -> TokenCounter:
        if self._counter is None:
            from engine.tokens import TokenCounter

            self._counter = TokenCounter()
        return self._counter

    def budgets(self) -> Budgets:
        from engine.harness import Budgets

        return Budgets.from_config(self.config)

    # -- first run ---------------------------------------------------------------------------
    def first_run_done(self) -> bool:
        return self._state.first_run_done()

    def mark_first_run_done(self) -> None:
        self._state.mark_first_run_done()

    # -- settings ----------------------------------------------------------------------------
    def file_settings(self) -> Config:
        """The settings as config.toml has them (environment overrides left out)."""
        return file_settings(self.data.config_file)

    def env_overrides(self) -> list[str]:
        """`section.key` of every setting an environment variable currently overrides."""
        return env_overrides()

    async def save_settings(self, changes: Mapping[str, Mapping[str, Any]]) -> Config:
        """Merge `changes` ({section: {key: value}}) into config.toml, validated first.

        Raises ConfigError (nothing written) with the key, the value and what is allowed.
        The app uses the new settings (plus environment overrides) from the next request on.
        """
        path = self.data.config_file
        validated = await anyio.to_thread.run_sync(merged_settings, path, changes)
        effective = effective_settings(validated)
        embedding_changed = effective.embedding != self.config.embedding
        if embedding_changed and self.importing():
            raise ConfigError(
                "the embedding settings cannot change while an import is running; wait for it "
                "to finish (or cancel it) and save again"
            )
        await anyio.to_thread.run_sync(write_settings, path, validated)
        self.config = effective
        if embedding_changed:
            await self.aclose()  # the next import or search opens the new provider
        return effective

    # -- keys --------------------------------------------------------------------------------
    def key_shown(self, name: KeyName) -> str:
        return mask(get_key(name))

    def key_is_set(self, name: KeyName) -> bool:
        return get_key(name) is not None

    def keyring_available(self) -> bool:
        return keyring_available()

    def store_key(self, name: KeyName, value: str, *, session_fallback: bool = True) -> KeyStored:
        """Keep a key: in the OS credential store, or where there is none, in this process's
        memory only (never on disk), so that this session works and the user is told so.
        Without `session_fallback` (a one-off command) a missing store raises
        SecretStoreUnavailable instead."""
        value = value.strip()
        if not value:
            raise AppError("the key is empty: paste it, then save", code="empty_key")
        try:
            set_key(name, value)
            return KeyStored("keyring", mask(value))
        except SecretStoreUnavailable:
            if not session_fallback:
                raise
            os.environ[ENV_NAMES[name]] = value
            return KeyStored("session", mask(value))

    async def test_key(
        self, name: KeyName, value: str | None = None, config: Config | None = None
    ) -> KeyCheck:
        """A connectivity test with `value` (or the stored key) and `config` (or the app's)."""
        from engine.keycheck import check_chat_key, check_embedding

        c = config or self.config
        key = value.strip() if value else await anyio.to_thread.run_sync(get_key, name)
        if name == "deepseek":
            return await check_chat_key(c.chat, c.network, key)
        return await check_embedding(c.embedding, c.network, key)

    # -- collections -------------------------------------------------------------------------
    def current_collection(self) -> str:
        return self._state.current_collection()

    def resolve_collection(self, name: str | None) -> str:
        return check_collection_name(name or self.current_collection())

    def catalog(self, collection: str | None = None) -> Catalog:
        """The snapshot catalog of a collection (active pointer, pins, GC), one per name."""
        name = self.resolve_collection(collection)
        catalog = self._catalogs.get(name)
        if catalog is None:
            catalog = self._catalogs[name] = Catalog(self.data, name)
        return catalog

    def collections(self) -> list[str]:
        return collection_names(self.data)

    def create_collection(self, name: str) -> None:
        create_collection(self.data, name)

    def use_collection(self, name: str) -> None:
        check_collection_name(name)
        if name not in self.collections():
            raise AppError(
                f"there is no collection {name!r}; create it first", code="no_collection", name=name
            )
        self._state.set_current_collection(name)

    def rename_collection(self, old: str, new: str) -> None:
        self._origins(old)  # folds an older UI's record into the collection, which moves
        rename_collection(self.data, old, new)
        self._catalogs.pop(old, None)
        if self.current_collection() == old:
            self._state.set_current_collection(new)

    def delete_collection(self, name: str) -> None:
        self._origins(name)  # an older UI's record goes with the collection
        delete_collection(self.data, name)
        self._catalogs.pop(name, None)
        if self.current_collection() == name:
            self._state.forget_current_collection()

    # -- import ------------------------------------------------------------------------------
    def pending_import(self, collection: str | None = None) -> bool:
        return Journal(self.data.journal(self.resolve_collection(collection))).load() is not None

    def importing(self) -> bool:
        job = self.current_import
        return job is not None and not job.finished.is_set()

    def new_import(
        self,
        paths: Sequence[Path],
        collection: str | None = None,
        *,
        removals: Sequence[str] = (),
        wait_for_writer_s: float = 0.0,
    ) -> ImportJob:
        """An import job, not started: `await job.run()` in a task of the caller's. One at a
        time per app. `start_import` runs it in the app's own task group instead."""
        from actors.jobs import ImportJob

        if self.importing():
            raise AppError(
                "an import is already running; wait for it, or pause or cancel it first",
                code="import_running",
            )
        job = ImportJob(
            self,
            self.resolve_collection(collection),
            paths,
            removals=removals,
            wait_for_writer_s=wait_for_writer_s,
        )
        self.current_import = job
        return job

    def start_import(
        self,
        paths: Sequence[Path],
        collection: str | None = None,
        *,
        removals: Sequence[str] = (),
        wait_for_writer_s: float = 0.0,
    ) -> ImportJob:
        """Start an import in the background; leaving a page or closing the window never
        stops it (closing the app pauses it). Watch it with `job.progress_events()`."""
        if self._tasks is None:
            raise RuntimeError("start_import needs a running app (App.open or app.running())")
        job = self.new_import(
            paths, collection, removals=removals, wait_for_writer_s=wait_for_writer_s
        )
        self._tasks.start_soon(job.run, name=f"citewise-import-{job.collection}")
        return job

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
        """Import in the calling task (the pipeline an ImportJob runs)."""
        from actors.ingest import Ingest  # parsers, chunker and embedding load for an import

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
                parse_pool=self._pool(),
            )
            result = await ingest.run(paths, removals=removals)
            s = self.config.snapshots
            await anyio.to_thread.run_sync(ingest.catalog.gc, s.keep_last, s.keep_days)
            return result

    def retry_paths(self, sources: Sequence[str], collection: str | None = None) -> list[Path]:
        origins = self._origins(self.resolve_collection(collection))
        missing = [s for s in sources if s not in origins or not Path(origins[s]).is_file()]
        if missing:
            raise AppError(
                f"the original file of {', '.join(missing)} is not known or has moved; "
                "import it again by choosing the file",
                code="original_missing",
                sources=", ".join(missing),
            )
        return [Path(origins[s]) for s in sources]

    def recognise_all_pages(
        self, sources: Sequence[str], collection: str | None = None
    ) -> list[Path]:
        """The files of the documents `sources`, to import again with every scanned page
        recognised (past ingest.ocr_max_pages); the choice is kept for their later imports."""
        name = self.resolve_collection(collection)
        paths = self.retry_paths(sources, name)
        Overrides(self.data, name).recognise_all_pages(sources)
        return paths

    def recognise_all_pages_of(self, paths: Sequence[Path], collection: str | None = None) -> None:
        """Every scanned page of the documents an import of `paths` names is to be recognised,
        past ingest.ocr_max_pages, from that import on."""
        found = origins_of(paths)
        Overrides(self.data, self.resolve_collection(collection)).recognise_all_pages(found)

    def upload_path(self, filename: str, collection: str | None = None) -> Path:
        """Where an uploaded file is kept (its name cleaned so it cannot leave the folder)."""
        name = _UPLOAD_NAME.sub("_", Path(filename.replace("\\", "/")).name).strip(" .")
        if not name:
            raise AppError(
                f"{filename!r} is not a usable file name; rename the file",
                code="bad_file_name",
                name=filename,
            )
        folder = self.data.root / "uploads" / self.resolve_collection(collection)
        folder.mkdir(parents=True, exist_ok=True)
        return folder / name

    def _origins(self, collection: str) -> dict[str, str]:
        return Origins(self.data, collection).load()

    async def remove(self, items: Sequence[str], *, collection: str | None = None) -> ImportResult:
        """Take documents (by source or doc_id) out: a new snapshot without them."""
        if self.importing():
            raise AppError(
                "an import is running; wait for it to finish, then remove", code="import_running"
            )
        catalog = self.catalog(collection)
        manifest = catalog.active_manifest()
        if manifest is None:
            raise AppError(
                f"collection {catalog.collection!r} has no documents yet", code="no_documents"
            )
        by_id = {d.doc_id: d.source for d in manifest.documents}
        sources = {d.source for d in manifest.documents}
        failed = {f.source for f in manifest.failed_documents}
        chosen: list[str] = []
        already: list[str] = []  # removed before: removing again is no error (idempotent)
        held = {k for m in catalog.list() for d in m.documents for k in (d.source, d.doc_id)}
        for item in items:
            if item in sources or item in failed:
                chosen.append(item)
            elif item in by_id:
                chosen.append(by_id[item])
            elif item in held:
                already.append(item)
            else:
                raise AppError(
                    f"{item!r} is neither a document source nor a doc_id in collection "
                    f"{catalog.collection!r}; see `citewise tool list_documents '{{}}'`"
                )
        if not chosen:
            from actors.import_progress import ImportResult
            from index.records import BuildStats

            return ImportResult(
                collection=catalog.collection,
                snapshot_id=manifest.snapshot_id,
                status=None,
                activated=False,
                failed_documents=[],
                skipped=[],
                stats=BuildStats(),
                library_documents=len(manifest.documents),
                message=f"already removed: {', '.join(already)}; nothing changed",
                already_removed=already,
            )
        result = await self.import_paths([], collection=catalog.collection, removals=chosen)
        result.already_removed = already
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
        from actors.document_edit import edit_document

        if self.importing():
            raise AppError("an import is running; wait for it to finish, then edit")
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
        args: str | bytes | Mapping[str, Any],
        *,
        collection: str | None = None,
        snapshot_id: str | None = None,
    ) -> ToolOutcome:
        """One tool call on the active (or the named) snapshot, exactly as the agent makes it.

        Raises AppError for a name that is not one of the five; every other problem is the
        tool's own error result (no snapshot at all, or one that cannot be opened →
        collection_unavailable, saying what is damaged and how to repair it).
        """
        from actors.tool_calls import call_tool

        # Every result carries its token estimate, counted without loading the tokenizer when
        # nothing else has (engine.tokens.counter): no load to overlap with the search.
        counter = await anyio.to_thread.run_sync(self.counter)
        limit = self.config.retrieval.max_query_chars
        catalog = self.catalog(collection)
        return await call_tool(catalog, self.embedder(), counter, name, args, snapshot_id, limit)

    # -- status, library and snapshots -------------------------------------------------------
    def status(self, collection: str | None = None) -> StatusReport:
        catalog = self.catalog(collection)
        manifest = catalog.active_manifest()
        active = None if manifest is None else active_info(manifest)
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

    def documents(self, collection: str | None = None) -> list[DocumentView]:
        with self.catalog(collection).pin_active() as snap:
            return [] if snap is None else documents_of(snap)

    def outline(self, doc_id: str, collection: str | None = None) -> list[OutlineEntry]:
        with self.catalog(collection).pin_active() as snap:
            doc = None if snap is None else snap.doc_ordinal(doc_id)
            if snap is None or doc is None:
                raise AppError(f"document {doc_id} is not in the active snapshot any more")
            return outline_of(snap, doc)

    def failed(self, collection: str | None = None) -> list[FailedView]:
        """Documents the active snapshot lists as failed, newest import's failures included."""
        name = self.resolve_collection(collection)
        manifest = self.catalog(name).active_manifest()
        failures = list(manifest.failed_documents) if manifest else []
        job = self.current_import
        result = job.result if job is not None and job.collection == name else None
        if result is not None and result.status == "failed":  # no snapshot lists them
            known = {f.source for f in failures}
            failures += [f for f in result.failed_documents if f.source not in known]
        return failed_views(failures, self._origins(name))

    def snapshots(self, collection: str | None = None) -> list[SnapshotView]:
        """The snapshot history, oldest first."""
        active, manifests = self.snapshot_manifests(collection)
        return snapshot_views(active, manifests)

    def damage(self, collection: str | None = None) -> DamageView | None:
        """None when the active snapshot opens (or there is none); else what is wrong with it
        and the snapshot to go back to. Opening maps the files; it reads none of them."""
        try:
            with self.catalog(collection).pin_active():
                return None
        except SnapshotDamaged as exc:
            usable = [
                v
                for v in self.snapshots(collection)
                if v.id != exc.snapshot_id and v.status in ("ready", "ready_partial")
            ]
            fallback = usable[-1] if usable else None
            return DamageView(snapshot_id=exc.snapshot_id, problem=exc.problem, fallback=fallback)

    def snapshot_manifests(
        self, collection: str | None = None
    ) -> tuple[str | None, list[SnapshotManifest]]:
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
        from index.snapshot import verify_snapshot

        return await anyio.to_thread.run_sync(verify_snapshot, path)

    async def gc(self, collection: str | None = None) -> GcReport:
        catalog = self.catalog(collection)
        s = self.config.snapshots
        with writer_lock(self.data):
            return await anyio.to_thread.run_sync(catalog.gc, s.keep_last, s.keep_days)

    # -- caches ------------------------------------------------------------------------------
    def cache_usage(self) -> CacheUsage:
        """The bytes each cache takes (actors/caches.py): what clearing would free."""
        from actors.caches import cache_usage

        return cache_usage(self.data)

    async def clear_caches(self) -> CacheUsage:
        """Empty the embedding, text-recognition and read-document caches; returns what they
        took. Raises AppError while an import runs or an interrupted one waits to be resumed
        (it resumes from these caches), WriterBusy while another Citewise process imports."""
        from actors.caches import clear_caches

        if self.importing():
            raise AppError(
                "an import is running; wait for it to finish, then clear the caches",
                code="import_running",
            )
        with writer_lock(self.data):
            return await anyio.to_thread.run_sync(clear_caches, self.data, self.embedding_cache())

    # -- the source viewer -------------------------------------------------------------------
    def _source_reader(self) -> SourceReader:
        if self._sources is None:
            from actors.source_view import SourceReader

            self._sources = SourceReader(self)
        return self._sources

    async def source_view(
        self,
        doc_id: str,
        block_id: str,
        *,
        snapshot_id: str | None = None,
        collection: str | None = None,
    ) -> SourceView:
        """The cited block among its section's neighbours, read from the snapshot the answer
        used (or the active one); says plainly when that snapshot is gone. For a PDF, the
        original file when it is where it was imported from and unchanged."""
        return await self._source_reader().view(
            doc_id, block_id, snapshot_id=snapshot_id, collection=collection
        )

    async def render_pdf_page(
        self, path: str, page: int, highlight: Sequence[str] = (), rects: Sequence[PageRect] = ()
    ) -> PageImage:
        """A 1-based page of the PDF with the block's `rects` (or else the text of
        `highlight`) marked."""
        return await self._source_reader().render_pdf_page(path, page, highlight, rects)

    # -- questions and conversations ---------------------------------------------------------
    def ask(
        self, question: str, conversation_id: str | None = None, collection: str | None = None
    ) -> AskRun:
        """Start a question on the harness runner (the app's task group); follow it with
        `async with run.events()` and `await run.wait()`, cancel it with `run.stop()`."""
        from actors.jobs import AskRun
        from engine.tokens import preload

        if self._tasks is None:
            raise RuntimeError("ask needs a running app (App.open or app.running())")
        # A question counts its prompt and every tool result, with the tokenizer itself,
        # loaded in the background meanwhile. An import counts in its parse workers only, so
        # a one-off `citewise import` never loads it in this process.
        preload()
        run = AskRun(self, question, conversation_id, self.resolve_collection(collection))
        self._tasks.start_soon(run.run, name="citewise-question")
        return run

    def conversations(self, collection: str | None = None) -> list[ConversationSummary]:
        from actors.conversations import ConversationStore

        return ConversationStore(self.data, self.resolve_collection(collection)).list()

    def conversation(
        self, conversation_id: str, collection: str | None = None
    ) -> list[ConversationTurn]:
        from actors.conversations import ConversationStore

        store = ConversationStore(self.data, self.resolve_collection(collection))
        return store.load(conversation_id)

    def history_citations(
        self, answer: str, snapshot_id: str | None, collection: str | None = None
    ) -> list[Citation]:
        """The citations of an earlier answer, looked up again in the snapshot it used."""
        from actors.history import history_citations

        return history_citations(self.catalog(collection), answer, snapshot_id)

    def numbered(self, answer: str) -> str:
        """An earlier answer with its citation markers shown as [n]."""
        from actors.history import numbered

        return numbered(answer)

    def export_markdown(
        self, conversation_id: str, labels: ExportLabels, **how: Unpack[ExportOptions]
    ) -> str:
        """A conversation of the current collection (or one answer: `request_id`) as
        Markdown, its citations resolved to title, section, page and quote."""
        from actors.answer_export import export_conversation

        turns = self.conversation(conversation_id)
        return export_conversation(self.catalog(), turns, labels, **how)

    def spending(self) -> SpendingTotals:
        """Today's and this month's chat cost with the caps of the current settings (one small
        ledger file is read)."""
        from actors.spending import spending_for

        return spending_for(self).totals()

    # -- prompt bundles ----------------------------------------------------------------------
    def prompt_registry(self) -> BundleRegistry:
        """The shipped and local prompt bundles, for `citewise prompts` (it reads small files)."""
        return BundleRegistry.of(self.data)

    def bundles(self) -> list[BundleInfo]:
        """Every prompt bundle (shipped first); `active` marks the one new questions use."""
        return BundleRegistry.of(self.data).list()

    def bundle_diff(self, a: str, b: str) -> BundleDiff:
        return BundleRegistry.of(self.data).diff(a, b)

    def promote_bundle(self, ref: str) -> str:
        """Make a frozen bundle the baseline (the page asked first); its id@version."""
        bundle = BundleRegistry.of(self.data).promote(ref, confirm=True)
        return f"{bundle.id}@{bundle.version}"

    def rollback_bundle(self) -> str:
        """Return to the baseline before the last promotion; its id@version."""
        bundle = BundleRegistry.of(self.data).rollback()
        return f"{bundle.id}@{bundle.version}"
