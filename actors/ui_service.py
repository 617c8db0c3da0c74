"""What the web UI needs from the running app, in shapes a page can show directly.

Wraps one App: settings and keys, collections, the library (documents, outlines, snapshots,
failed documents), background imports with pause/resume/cancel, direct tool use, the source
viewer's context and PDF page images, conversations and cancellable questions. Written against
anyio only; it never imports the UI toolkit and never returns an API key in full.
"""

from __future__ import annotations

import contextlib
import os
import re
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.to_thread
import msgspec

from actors.app import App, AppError, StatusReport
from actors.asking import AskResult, OnEvent, ask
from actors.catalog import CatalogError, GcReport
from actors.conversations import ConversationStore, ConversationSummary, ConversationTurn
from actors.document_edit import EditResult
from actors.ingest import ImportProgress, ImportResult, PauseGate
from actors.journal import Journal
from actors.origins import Origins
from actors.parse_pool import warm_parse_workers
from actors.source_view import SOURCE_RADIUS, SourceBlock, SourceReader, SourceView
from actors.spending import SpendingCapReached, SpendingTotals, spending_for
from actors.tracing import (
    IngestTracer,
    evidence,
    get_trace,
    list_traces,
    retrieval,
    trace_writer,
    traced,
)
from engine.config import Config, ConfigError, dump_config, load_config, parse_config
from engine.harness import (
    AdmissionDecided,
    AnswerDelta,
    AnswerRetracted,
    Budgets,
    Citation,
    ConversationTrimmed,
    Event,
    Evidence,
    Finalizing,
    MarkerNumbers,
    ModelCallFinished,
    ProtocolError,
    RequestFinished,
    ToolCallFinished,
    ToolCallStarted,
    TurnStarted,
)
from engine.harness.citations import cited, resolve
from engine.keycheck import KeyCheck, check_chat_key, check_embedding
from engine.paths import DataDir, InvalidCollectionName, data_home
from engine.prompts.bundle import BundleError
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
from engine.tools import ToolContext, UnknownTool, run_tool
from engine.trace import EvidenceReplay, RetrievalReplay, TraceRecord, TraceSummary, trace_id_for
from engine.writer_lock import WriterBusy
from index.fsutil import atomic_write

__all__ = [  # what web/ may use: the service, its views and the request events it shows
    "ENV_NAMES",
    "SOURCE_RADIUS",
    "USER_ERRORS",
    "AdmissionDecided",
    "AnswerDelta",
    "AnswerRetracted",
    "AskResult",
    "AskRun",
    "Budgets",
    "BundleDiff",
    "BundleInfo",
    "Citation",
    "Config",
    "ConfigError",
    "ConversationTrimmed",
    "DocumentView",
    "EditResult",
    "Event",
    "Evidence",
    "EvidenceReplay",
    "FailedView",
    "Finalizing",
    "ImportJob",
    "ImportProgress",
    "KeyCheck",
    "KeyName",
    "KeyStored",
    "MarkerNumbers",
    "ModelCallFinished",
    "OutlineEntry",
    "ProtocolError",
    "RequestFinished",
    "RetrievalReplay",
    "SnapshotView",
    "SourceBlock",
    "SourceView",
    "SpendingCapReached",
    "SpendingTotals",
    "ToolCallFinished",
    "ToolCallStarted",
    "TraceRecord",
    "TraceSummary",
    "TurnStarted",
    "UiService",
    "trace_id_for",
]

_UPLOAD_NAME = re.compile(r"[^\w.\- ()\[\]]+")

# Parse workers start this long after launch: late enough not to slow the first page down,
# early enough to be up before a person has picked files to import.
PARSE_WARM_DELAY_S = 3.0

# Errors a person can act on; anything else is a bug and is shown as such.
USER_ERRORS = (AppError, CatalogError, ConfigError, InvalidCollectionName, WriterBusy)


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


class FailedView(msgspec.Struct, frozen=True, kw_only=True):
    source: str
    stage: str
    reason: str
    message: str
    retryable: bool  # the original file is known, so it can be imported again


class KeyStored(msgspec.Struct, frozen=True):
    where: Literal["keyring", "session"]
    shown_as: str


class _UiState(msgspec.Struct):
    first_run_done: bool = False


# -- imports ----------------------------------------------------------------------------------
JobState = Literal["running", "paused", "building", "done", "cancelled", "failed"]


class ImportJob:
    """One background import started from the UI. The page polls `progress` and `state`."""

    def __init__(self, service: UiService, collection: str, paths: Sequence[Path]) -> None:
        self.service = service
        self.collection = collection
        self.paths = [Path(p) for p in paths]
        self.gate = PauseGate()
        self.progress: ImportProgress | None = None
        self.result: ImportResult | None = None
        self.error: str | None = None
        self.finished = anyio.Event()
        self._scope = anyio.CancelScope()
        self._cancelled = False

    @property
    def state(self) -> JobState:
        if self.error is not None:
            return "failed"
        if self._cancelled and self.finished.is_set():
            return "cancelled"
        if self.finished.is_set():
            return "done"
        if self.progress is not None and self.progress.state == "building":
            return "building"
        return "paused" if self.gate.paused else "running"

    def pause(self) -> None:
        self.gate.pause()

    def resume(self) -> None:
        self.gate.resume()

    def cancel(self) -> None:
        """Stop now and forget the unfinished job (finished documents stay cached)."""
        self._cancelled = True
        self.gate.resume()
        self._scope.cancel()

    def _on_progress(self, p: ImportProgress) -> None:
        self.progress = p

    async def run(self) -> None:
        app = self.service.app
        try:
            with self._scope:
                async with trace_writer(app) as writer:  # traced like a CLI import
                    tracer = IngestTracer(writer, app.resolve_collection(self.collection))
                    self.result = await app.import_paths(
                        self.paths,
                        collection=self.collection,
                        on_progress=tracer.wrap(self._on_progress),
                        gate=self.gate,
                    )
                    tracer.finished(self.result)
            if self._scope.cancelled_caught:
                Journal(app.data.journal(self.collection)).finish()
        except USER_ERRORS as exc:
            self.error = str(exc)
        except Exception as exc:  # a bug: the page says so instead of hanging
            self.error = f"unexpected error: {type(exc).__name__}: {exc}"
        finally:
            self.finished.set()


def _single(group: ExceptionGroup[Exception]) -> Exception:
    """The one error inside nested groups (e.g. AppError: no key), else the group itself."""
    leaves = list(_leaves(group))
    return leaves[0] if len(leaves) == 1 else group


def _leaves(error: Exception) -> Iterator[Exception]:
    if isinstance(error, ExceptionGroup):
        for inner in error.exceptions:
            yield from _leaves(inner)
    else:
        yield error


# -- asking -----------------------------------------------------------------------------------
class AskRun:
    """One question; `stop()` cancels it (no answer is recorded then)."""

    def __init__(
        self, service: UiService, question: str, conversation_id: str | None, collection: str
    ) -> None:
        self.service = service
        self.question = question
        self.conversation_id = conversation_id
        self.collection = collection
        self.trace_dropped = 0
        self._scope = anyio.CancelScope()

    @property
    def stopped(self) -> bool:
        return self._scope.cancel_called

    def stop(self) -> None:
        self._scope.cancel()

    async def run(self, on_event: OnEvent | None) -> AskResult | None:
        """The result, or None when stopped. Raises AppError when asking cannot start.

        Every event goes to the trace writer first (never waiting); `trace_dropped` says how
        many trace records were lost, so the page can warn that the trace is partial."""
        app = self.service.app
        with self._scope:
            try:
                async with trace_writer(app) as writer:
                    try:
                        return await ask(
                            app,
                            self.question,
                            conversation_id=self.conversation_id,
                            collection=self.collection,
                            on_event=traced(writer, on_event),
                        )
                    finally:
                        self.trace_dropped = writer.health().dropped
            except ExceptionGroup as group:  # the writer's task group wraps what ask raised
                raise _single(group) from None
        return None


# -- the service ------------------------------------------------------------------------------
class UiService:
    def __init__(self, app: App) -> None:
        self.app = app
        self.current_import: ImportJob | None = None
        self._ui_dir = app.data.root / "ui"
        self._sources = SourceReader(app)

    @classmethod
    def from_environment(cls) -> UiService:
        data = DataDir(data_home())
        return cls(App(data, load_config(data.config_file)))

    async def start(self) -> None:
        """Warm what the first request would wait for (the tokenizer loads in ~0.3 s)."""
        await anyio.to_thread.run_sync(self.app.counter)

    async def warm_parse_workers(self, after_s: float = PARSE_WARM_DELAY_S) -> None:
        """Start the parse worker processes once the first page is up, so that the first
        import does not wait for them (run it in the background after `start`)."""
        await anyio.sleep(after_s)
        await warm_parse_workers()

    async def aclose(self) -> None:
        job = self.current_import
        if job is not None and not job.finished.is_set():
            job.pause()  # the journal keeps it: the next start resumes where it stopped
        await self.app.aclose()

    @property
    def config(self) -> Config:
        return self.app.config

    def budgets(self) -> Budgets:
        return Budgets.from_config(self.app.config)

    # -- first run -----------------------------------------------------------------------------
    def _state_file(self) -> Path:
        return self._ui_dir / "state.json"

    def first_run_done(self) -> bool:
        try:
            raw = self._state_file().read_bytes()
            return msgspec.json.decode(raw, type=_UiState).first_run_done
        except (FileNotFoundError, msgspec.DecodeError, msgspec.ValidationError):
            return False

    def mark_first_run_done(self) -> None:
        self._ui_dir.mkdir(parents=True, exist_ok=True)
        atomic_write(self._state_file(), msgspec.json.encode(_UiState(first_run_done=True)))

    # -- settings ------------------------------------------------------------------------------
    def file_settings(self) -> Config:
        """The settings as config.toml has them (environment overrides left out)."""
        return load_config(self.app.data.config_file, environ={})

    def env_overrides(self) -> list[str]:
        """`section.key` of every setting an environment variable currently overrides."""
        sections = {f.name for f in msgspec.structs.fields(Config)} - {"format_version"}
        out = []
        for name in os.environ:
            rest = name[len("CITEWISE_") :].lower() if name.startswith("CITEWISE_") else ""
            section = next((s for s in sections if rest.startswith(s + "_")), None)
            if section is not None:
                out.append(f"{section}.{rest[len(section) + 1 :]}")
        return sorted(out)

    async def save_settings(self, changes: Mapping[str, Mapping[str, Any]]) -> Config:
        """Merge `changes` ({section: {key: value}}) into config.toml, validated first.

        Raises ConfigError (nothing written) with the key, the value and what is allowed.
        The app uses the new settings (plus environment overrides) from the next request on.
        """
        path = self.app.data.config_file
        try:
            current: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            current = {}
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path} is damaged ({exc}); fix or delete it") from None
        merged = msgspec.to_builtins(parse_config(current, {}))
        for section, values in changes.items():
            if not isinstance(merged.get(section), dict):
                raise ConfigError(f"config has no section {section!r}")
            for key, value in values.items():
                if isinstance(value, Mapping):
                    merged[section].setdefault(key, {}).update(value)
                else:
                    merged[section][key] = value
        validated = parse_config(merged, {})  # the file's own values must be valid alone
        effective = parse_config(msgspec.to_builtins(validated))  # plus the environment
        embedding_changed = effective.embedding != self.app.config.embedding
        if embedding_changed and self._importing():
            raise ConfigError(
                "the embedding settings cannot change while an import is running; wait for it "
                "to finish (or cancel it) and save again"
            )
        atomic_write(path, dump_config(validated).encode("utf-8"))
        self.app.config = effective
        if embedding_changed:
            await self.app.aclose()  # the next import or search opens the new provider
        return effective

    def _importing(self) -> bool:
        job = self.current_import
        return job is not None and not job.finished.is_set()

    # -- keys ----------------------------------------------------------------------------------
    def key_shown(self, name: KeyName) -> str:
        return mask(get_key(name))

    def key_is_set(self, name: KeyName) -> bool:
        return get_key(name) is not None

    def keyring_available(self) -> bool:
        return keyring_available()

    def store_key(self, name: KeyName, value: str) -> KeyStored:
        """Keep a key: in the OS credential store, or where there is none, in this process's
        memory only (never on disk), so that this session works and the user is told so."""
        value = value.strip()
        if not value:
            raise AppError("the key is empty: paste it, then save")
        try:
            set_key(name, value)
            return KeyStored("keyring", mask(value))
        except SecretStoreUnavailable:
            os.environ[ENV_NAMES[name]] = value
            return KeyStored("session", mask(value))

    async def test_key(
        self, name: KeyName, value: str | None = None, config: Config | None = None
    ) -> KeyCheck:
        """A connectivity test with `value` (or the stored key) and `config` (or the app's)."""
        c = config or self.app.config
        key = value.strip() if value else await anyio.to_thread.run_sync(get_key, name)
        if name == "deepseek":
            return await check_chat_key(c.chat, c.network, key)
        return await check_embedding(c.embedding, c.network, key)

    # -- collections ---------------------------------------------------------------------------
    def collections(self) -> list[str]:
        return self.app.collections()

    def current_collection(self) -> str:
        return self.app.current_collection()

    def use_collection(self, name: str) -> None:
        self.app.use_collection(name)

    def create_collection(self, name: str) -> None:
        self.app.create_collection(name)

    def rename_collection(self, old: str, new: str) -> None:
        self._origins(old)  # folds an older UI's record into the collection, which moves
        self.app.rename_collection(old, new)

    def delete_collection(self, name: str) -> None:
        self._origins(name)  # an older UI's record goes with the collection
        self.app.delete_collection(name)

    # -- library -------------------------------------------------------------------------------
    def status(self, collection: str | None = None) -> StatusReport:
        return self.app.status(collection)

    def documents(self, collection: str | None = None) -> list[DocumentView]:
        with self.app.catalog(collection).pin_active() as snap:
            if snap is None:
                return []
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

    def outline(self, doc_id: str, collection: str | None = None) -> list[OutlineEntry]:
        with self.app.catalog(collection).pin_active() as snap:
            doc = None if snap is None else snap.doc_ordinal(doc_id)
            if snap is None or doc is None:
                raise AppError(f"document {doc_id} is not in the active snapshot any more")
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

    def snapshots(self, collection: str | None = None) -> list[SnapshotView]:
        active, manifests = self.app.snapshots(collection)
        return [
            SnapshotView(
                id=m.snapshot_id,
                status=m.status,
                created_at=m.created_at,
                documents=len(m.documents),
                blocks=sum(d.blocks for d in m.documents),
                failed=len(m.failed_documents),
                active=m.snapshot_id == active,
            )
            for m in reversed(manifests)
        ]

    def activate(self, snapshot_id: str, collection: str | None = None) -> None:
        self.app.activate(snapshot_id, collection)

    async def gc(self, collection: str | None = None) -> GcReport:
        return await self.app.gc(collection)

    async def remove(self, source: str, collection: str | None = None) -> ImportResult:
        if self._importing():
            raise AppError("an import is running; wait for it to finish, then remove")
        return await self.app.remove([source], collection=collection)

    async def edit_document(
        self,
        doc_id: str,
        *,
        title: str | None = None,
        source_label: str | None = None,
        aliases: Sequence[str] | None = None,
        collection: str | None = None,
    ) -> EditResult:
        """New title, source label or aliases: a new snapshot; later imports keep the edit."""
        if self._importing():
            raise AppError("an import is running; wait for it to finish, then edit")
        return await self.app.edit_document(
            doc_id, title=title, source_label=source_label, aliases=aliases, collection=collection
        )

    def failed(self, collection: str | None = None) -> list[FailedView]:
        """Documents the active snapshot lists as failed, newest import's failures included."""
        name = self.app.resolve_collection(collection)
        manifest = self.app.catalog(name).active_manifest()
        failures = list(manifest.failed_documents) if manifest else []
        job = self.current_import
        result = job.result if job is not None and job.collection == name else None
        if result is not None and result.status == "failed":  # no snapshot lists them
            known = {f.source for f in failures}
            failures += [f for f in result.failed_documents if f.source not in known]
        origins = self._origins(name)
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

    # -- imports -------------------------------------------------------------------------------
    def pending_import(self, collection: str | None = None) -> bool:
        return self.app.pending_import(collection)

    def new_import(self, paths: Sequence[Path], collection: str | None = None) -> ImportJob:
        """A job to run with `await job.run()` (the caller owns the task). One at a time."""
        if self._importing():
            raise AppError("an import is already running; wait for it, or pause or cancel it first")
        job = ImportJob(self, self.app.resolve_collection(collection), paths)
        self.current_import = job
        return job

    def retry_paths(self, sources: Sequence[str], collection: str | None = None) -> list[Path]:
        origins = self._origins(self.app.resolve_collection(collection))
        missing = [s for s in sources if s not in origins or not Path(origins[s]).is_file()]
        if missing:
            raise AppError(
                f"the original file of {', '.join(missing)} is not known or has moved; "
                "import it again by choosing the file"
            )
        return [Path(origins[s]) for s in sources]

    def upload_dir(self, collection: str | None = None) -> Path:
        return self.app.data.root / "uploads" / self.app.resolve_collection(collection)

    def upload_path(self, filename: str, collection: str | None = None) -> Path:
        """Where an uploaded file is kept (its name cleaned so it cannot leave the folder)."""
        name = _UPLOAD_NAME.sub("_", Path(filename.replace("\\", "/")).name).strip(" .")
        if not name:
            raise AppError(f"{filename!r} is not a usable file name; rename the file")
        folder = self.upload_dir(collection)
        folder.mkdir(parents=True, exist_ok=True)
        return folder / name

    def _origins(self, collection: str) -> dict[str, str]:
        return Origins(self.app.data, collection).load()

    # -- tools ---------------------------------------------------------------------------------
    async def run_tool(
        self, name: str, args: Mapping[str, Any], collection: str | None = None
    ) -> dict[str, Any]:
        """One of the five tools on the active snapshot: its exact result, as JSON data."""
        with self.app.catalog(collection).pin_active() as snap:
            ctx = ToolContext(
                snapshot=snap,
                embedder=self.app.embedder(),
                counter=await anyio.to_thread.run_sync(self.app.counter),
            )
            try:
                outcome = await run_tool(ctx, name, dict(args))
            except UnknownTool:
                raise AppError(f"there is no tool named {name!r}") from None
            result: dict[str, Any] = msgspec.json.decode(outcome.json)
            return result

    # -- the source viewer ---------------------------------------------------------------------
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
        return await self._sources.view(
            doc_id, block_id, snapshot_id=snapshot_id, collection=collection
        )

    async def render_pdf_page(self, path: str, page: int, highlight: Sequence[str] = ()) -> bytes:
        """PNG of a 1-based page of the PDF, with the text of `highlight` marked."""
        return await self._sources.render_pdf_page(path, page, highlight)

    # -- conversations -------------------------------------------------------------------------
    def conversations(self, collection: str | None = None) -> list[ConversationSummary]:
        return ConversationStore(self.app.data, self.app.resolve_collection(collection)).list()

    def conversation(
        self, conversation_id: str, collection: str | None = None
    ) -> list[ConversationTurn]:
        store = ConversationStore(self.app.data, self.app.resolve_collection(collection))
        return store.load(conversation_id)

    def history_citations(
        self, answer: str, snapshot_id: str | None, collection: str | None = None
    ) -> list[Citation]:
        """The citations of an earlier answer, looked up again in the snapshot it used.

        Which blocks that request had retrieved is not kept with the conversation, so a
        citation counts as valid here when its block exists in that snapshot."""
        catalog = self.app.catalog(collection)
        if snapshot_id is None or catalog.manifest(snapshot_id) is None:
            return []
        evidence = Evidence()
        for item, _ in cited(answer):
            doc_id, _, block_id = item.partition("#")
            evidence.add(doc_id, block_id, "history")
        with catalog.pinned(snapshot_id) as snap:
            return resolve(answer, evidence, snap)

    def numbered(self, answer: str) -> str:
        """An earlier answer with its citation markers shown as [n]."""
        evidence = Evidence()
        for item, _ in cited(answer):
            doc_id, _, block_id = item.partition("#")
            evidence.add(doc_id, block_id, "history")
        numbers = MarkerNumbers(evidence)
        return numbers.feed(answer) + numbers.flush()

    # -- traces --------------------------------------------------------------------------------
    def traces(self, limit: int = 100) -> list[TraceSummary]:
        """The latest request traces, newest first (none yet is an empty list)."""
        return list_traces(self.app, limit=limit)

    def trace(self, trace_id: str) -> TraceRecord:
        return get_trace(self.app, trace_id)

    def evidence_replay(self, trace_id: str) -> EvidenceReplay:
        """Exactly what the model saw, from the trace's artifacts (full mode only)."""
        return evidence(self.app, trace_id)

    async def retrieval_replay(self, trace_id: str) -> RetrievalReplay:
        """The request's tool calls run again on its pinned snapshot, diffed."""
        return await retrieval(self.app, trace_id)

    def new_question(
        self, question: str, conversation_id: str | None = None, collection: str | None = None
    ) -> AskRun:
        return AskRun(self, question, conversation_id, self.app.resolve_collection(collection))

    # -- spending ------------------------------------------------------------------------------
    def spending(self) -> SpendingTotals:
        """Today's and this month's chat cost with the caps of the current settings (one small
        ledger file is read)."""
        return spending_for(self.app).totals()

    # -- prompt bundles ------------------------------------------------------------------------
    def bundles(self) -> list[BundleInfo]:
        """Every prompt bundle (shipped first); `active` marks the one new questions use."""
        with _bundle_errors():
            return BundleRegistry.of(self.app.data).list()

    def bundle_diff(self, a: str, b: str) -> BundleDiff:
        with _bundle_errors():
            return BundleRegistry.of(self.app.data).diff(a, b)

    def promote_bundle(self, ref: str) -> str:
        """Make a frozen bundle the baseline (the page asked first); its id@version."""
        with _bundle_errors():
            bundle = BundleRegistry.of(self.app.data).promote(ref, confirm=True)
        return f"{bundle.id}@{bundle.version}"

    def rollback_bundle(self) -> str:
        """Return to the baseline before the last promotion; its id@version."""
        with _bundle_errors():
            bundle = BundleRegistry.of(self.app.data).rollback()
        return f"{bundle.id}@{bundle.version}"


@contextlib.contextmanager
def _bundle_errors() -> Iterator[None]:
    try:
        yield
    except BundleError as exc:
        raise AppError(str(exc)) from None
