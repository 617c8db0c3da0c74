"""What the App offers about traces: the store in the data directory, the trace writer, tracing
of requests and imports, and the commands behind `citewise trace` and the traces page.

Functions take the App. Tracing never changes an answer: a broken store shows up as a warning
and partial traces, never as an exception in a request. No key is ever written."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit
from uuid import uuid4

import anyio.to_thread
import msgspec

from actors.app import App
from actors.asking import OnEvent, chat_client, deps_for
from actors.conversations import ConversationStore
from actors.errors import AppError, CatalogError
from actors.harness import open_request
from actors.history import cited_evidence
from actors.spending import spending_for
from actors.trace_compare import RerunEstimate, TraceComparison, compare_traces, rerun_estimate
from actors.trace_setup import (
    key_values,
    open_app_trace_writer,
    open_store,
)
from actors.trace_story import StoryBlock, StoryInputs, TraceStory, build_story, observation_of
from actors.trace_writer import TraceWriter
from engine.chat import ChatClient
from engine.config import Config, dump_config
from engine.errors import (
    DiagnosticBundleError,
    InvalidCollectionName,
    PromptBundleError,
    TraceStoreError,
)
from engine.harness import Budgets, EarlierTurn, Event, Limits, Request, run_manifest
from engine.harness.citations import resolve
from engine.prompts.bundle import PromptBundle
from engine.prompts.registry import BundleRegistry, active_bundle
from engine.tools import ToolContext, ToolOutcome, run_tool
from engine.trace import (
    BundleReport,
    EvidenceReplay,
    IngestEnded,
    IngestFailure,
    IngestSample,
    RerunReport,
    RetrievalReplay,
    RunOutcome,
    Span,
    TraceKind,
    TraceMode,
    TraceRecord,
    TraceStore,
    TraceSummary,
    evidence_replay,
    from_harness,
    manifest_hash,
    normalized,
    outcome_of_finished,
    outcome_of_trace,
    replay_retrieval,
    snapshot_gone,
    snapshot_of,
    summarize_reruns,
    trace_id_for,
    write_bundle,
)
from engine.trace import model as m
from engine.trace.model import REQUEST_ID
from engine.trace.store import TraceOrder

if TYPE_CHECKING:  # an import's types only: the app opens its trace writer without the pipeline
    from actors.ingest import ImportProgress, ImportResult

BUNDLES_DIR = "bundles"
MAX_RERUNS = 50


def _store(app: App) -> TraceStore:
    try:
        return open_store(app)
    except TraceStoreError as exc:
        raise AppError(str(exc)) from None


# -- recording ---------------------------------------------------------------------------------


@asynccontextmanager
async def trace_writer(app: App, **overrides: Any) -> AsyncIterator[TraceWriter]:
    """The app's one trace writer while the app runs; otherwise (an App used without
    `running()`, or with `overrides`) a writer for the duration of the block."""
    if app.trace_writer is not None and not overrides:
        yield app.trace_writer
        return
    async with open_app_trace_writer(app, **overrides) as writer:
        yield writer


def traced(writer: TraceWriter | None, on_event: OnEvent | None = None) -> OnEvent:
    """An `on_event` for actors.asking.ask that hands every event to the trace writer first
    (never waiting) and then to `on_event`."""

    async def handle(event: Event) -> None:
        if writer is not None:
            writer.submit(event)
        if on_event is not None:
            await on_event(event)

    return handle


class IngestTracer:
    """Traces one import: pass `progress` as Ingest's on_progress (or wrap yours with
    `wrap`) and call `finished` with the ImportResult."""

    def __init__(self, writer: TraceWriter, collection: str) -> None:
        self.writer = writer
        self.collection = collection
        self.job_id = uuid4().hex

    def progress(self, p: ImportProgress) -> None:
        # Ingest mutates its progress object afterwards: copy what the trace keeps.
        self.writer.submit_ingest(
            IngestSample(
                job_id=self.job_id,
                collection=self.collection,
                state=p.state,
                documents=dict(p.documents),
                documents_total=p.documents_total,
                documents_done=p.documents_done,
                documents_failed=p.documents_failed,
                documents_reused=p.documents_reused,
                pages=p.pages,
                blocks=p.blocks,
                blocks_embedded=p.blocks_embedded,
                embedding_tokens=p.embedding_tokens,
                elapsed_s=p.elapsed_s,
            )
        )

    def wrap(
        self, on_progress: Callable[[ImportProgress], None] | None
    ) -> Callable[[ImportProgress], None]:
        def both(p: ImportProgress) -> None:
            self.progress(p)
            if on_progress is not None:
                on_progress(p)

        return both

    def finished(self, result: ImportResult) -> None:
        stats = msgspec.to_builtins(result.stats)
        self.writer.submit_ingest(
            IngestEnded(
                job_id=self.job_id,
                collection=result.collection,
                snapshot_id=result.snapshot_id,
                status=result.status,
                activated=result.activated,
                failed=tuple(
                    IngestFailure(source=f.source, stage=f.stage, reason=f.reason)
                    for f in result.failed_documents
                ),
                skipped=len(result.skipped),
                stats={k: v for k, v in stats.items() if isinstance(v, int)},
                message=result.message,
            )
        )


# -- reading -----------------------------------------------------------------------------------


def list_traces(
    app: App,
    *,
    limit: int = 50,
    kind: TraceKind | None = "request",
    status: str | None = None,
    termination_reason: str | None = None,
    since_days: float | None = None,
    min_cost: float | None = None,
    max_cost: float | None = None,
    text: str | None = None,
    since: float | None = None,
    until: float | None = None,
    order: TraceOrder = "newest",
) -> list[TraceSummary]:
    """`since_days`: the last so many days; `since`/`until`: unix seconds; `text`: words the
    question contains; `order`: newest, oldest, cost, tokens or duration first."""
    if since_days is not None:
        since = dt.datetime.now(dt.UTC).timestamp() - since_days * 86400
    with _store(app) as store:
        return store.list_traces(
            limit=limit,
            kind=kind,
            status=status,
            termination_reason=termination_reason,
            since=since,
            until=until,
            min_cost=min_cost,
            max_cost=max_cost,
            text=text,
            order=order,
        )


def get_trace(app: App, trace_id: str) -> TraceRecord:
    """A trace by id or unambiguous prefix."""
    with _store(app) as store:
        try:
            return store.get(store.resolve(trace_id))
        except TraceStoreError as exc:
            raise AppError(str(exc)) from None


def trace_document(record: TraceRecord) -> dict[str, Any]:
    """`citewise trace show --json` (SPEC §15 names first; more fields may follow)."""
    s = record.summary
    return {
        "trace_id": s.trace_id,
        "manifest": record.manifest,
        "partial": s.partial,
        "spans": [
            {
                "span_id": span.span_id,
                "parent_id": span.parent_id,
                "kind": span.kind,
                "name": span.name,
                "start": span.start,
                "end": span.end,
                "status": span.status,
                "attributes": span.attributes,
                "status_message": span.status_message,
                "duration_ms": span.duration_ms,
                "events": msgspec.to_builtins(span.events),
                "artifacts": msgspec.to_builtins(span.artifacts),
            }
            for span in record.spans
        ],
        "dropped": s.dropped,
        "manifest_hash": s.manifest_hash,
        "summary": msgspec.to_builtins(s),
    }


def evidence(app: App, trace_id: str) -> EvidenceReplay:
    with _store(app) as store:
        try:
            record = store.get(store.resolve(trace_id))
        except TraceStoreError as exc:
            raise AppError(str(exc)) from None
        return evidence_replay(store, record)


async def retrieval(app: App, trace_id: str) -> RetrievalReplay:
    """Re-run the request's tool calls on the snapshot it was pinned to and diff the blocks."""
    record = await anyio.to_thread.run_sync(get_trace, app, trace_id)
    collection, snapshot_id = snapshot_of(record)
    if not collection or not snapshot_id:
        return snapshot_gone(record, "is not recorded in this trace")
    try:
        catalog = app.catalog(collection)
    except InvalidCollectionName:
        return snapshot_gone(record, f"belonged to collection {collection!r}, which is gone")
    if catalog.manifest(snapshot_id) is None:
        return snapshot_gone(record, "has been collected")
    try:
        with catalog.pinned(snapshot_id) as snapshot:
            ctx = ToolContext(snapshot=snapshot, embedder=app.embedder(), counter=app.counter())

            async def tool(name: str, args: dict[str, Any]) -> ToolOutcome:
                return await run_tool(ctx, name, args)

            return await replay_retrieval(record, tool)
    except CatalogError as exc:
        return snapshot_gone(record, f"cannot be opened ({exc})")


def _limits(manifest: dict[str, Any], config: Config) -> Limits:
    budgets = manifest.get("budgets")
    if not isinstance(budgets, dict):
        return Limits(budgets=Budgets.from_config(config))
    limits = dict(manifest.get("limits") or {})
    return msgspec.convert({**limits, "budgets": budgets}, Limits)


def _earlier(app: App, collection: str, record: TraceRecord) -> list[EarlierTurn]:
    """The conversation as it was when the original request ran (the turns before it)."""
    cid = record.summary.conversation_id
    if not cid:
        return []
    store = ConversationStore(app.data, collection)
    if not store.exists(cid):
        return []
    turns = store.load(cid)
    ids = [t.request_id for t in turns]
    root = next((s for s in record.spans if s.kind == "request"), None)
    request_id = str((root.attributes.get(REQUEST_ID) if root else None) or record.summary.trace_id)
    before = turns[: ids.index(request_id)] if request_id in ids else turns
    return [EarlierTurn(t.question, t.answer) for t in before if t.answer is not None]


async def rerun(
    app: App,
    trace_id: str,
    runs: int,
    *,
    chat: ChatClient | None = None,
    writer: TraceWriter | None = None,
    on_run: Callable[[int, RunOutcome], Awaitable[None]] | None = None,
) -> RerunReport:
    """Run the traced request `runs` times on its pinned snapshot with its recorded budgets,
    and compare: pass rate, failure types, answers that flipped. Each run is traced too."""
    if not 1 <= runs <= MAX_RERUNS:
        raise AppError(f"the number of runs must be between 1 and {MAX_RERUNS}")
    record = await anyio.to_thread.run_sync(get_trace, app, trace_id)
    question = record.summary.question
    if record.summary.kind != "request" or not question:
        raise AppError(f"trace {record.summary.trace_id} is not a question that can be re-run")
    manifest = record.manifest or {}
    collection, snapshot_id = snapshot_of(record)
    if not collection or not snapshot_id:
        raise AppError("this trace does not record the snapshot it ran on; it cannot be re-run")
    catalog = app.catalog(collection)
    if catalog.manifest(snapshot_id) is None:
        raise AppError(
            f"the snapshot {snapshot_id} this request ran on has been collected, so the same "
            "request cannot run again on the same knowledge base"
        )
    notes: list[str] = []
    recorded_bundle = manifest.get("prompt_bundle") or {}
    bundle = _bundle_for_rerun(app, recorded_bundle)
    if recorded_bundle.get("hash") and recorded_bundle.get("hash") != bundle.hash:
        notes.append(
            f"prompt bundle: recorded {recorded_bundle.get('id')}@"
            f"{recorded_bundle.get('version')} ({str(recorded_bundle.get('hash'))[:12]}), "
            f"running {bundle.id}@{bundle.version} ({bundle.hash[:12]})"
        )
    limits = _limits(manifest, app.config)
    earlier = await anyio.to_thread.run_sync(_earlier, app, collection, record)
    client = chat or chat_client(app)
    outcomes: list[RunOutcome] = []
    same = True
    try:
        with catalog.pinned(snapshot_id) as snapshot:
            deps = deps_for(app, snapshot, client, bundle=bundle, limits=limits)
            probe = run_manifest(deps, Request(question=question))
            # What is kept afterwards (the trace mode) does not change what the request does.
            recorded_mode = str(manifest.get("trace_mode") or record.summary.mode)
            now = normalized(from_harness(probe), recorded_mode)
            if record.summary.manifest_hash and manifest_hash(now) != record.summary.manifest_hash:
                same = False
                notes.extend(_differences(manifest, msgspec.to_builtins(now)))
            for i in range(1, runs + 1):
                request = Request(question=question, earlier=tuple(earlier))
                async with open_request(deps, request, spending=spending_for(app)) as running:
                    async for event in running.events:
                        if writer is not None:
                            writer.submit(event)
                    finished = await running.wait()
                outcome = outcome_of_finished(finished)
                outcomes.append(outcome)
                if on_run is not None:
                    await on_run(i, outcome)
    except CatalogError as exc:
        raise AppError(str(exc)) from None
    finally:
        if chat is None:
            await client.aclose()
    return summarize_reruns(
        record.summary.trace_id,
        outcome_of_trace(record),
        outcomes,
        same_configuration=same,
        notes=notes,
    )


def _differences(before: dict[str, Any], after: dict[str, Any], prefix: str = "") -> list[str]:
    out: list[str] = []
    for key in sorted(set(before) | set(after)):
        a, b = before.get(key), after.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out.extend(_differences(a, b, f"{prefix}{key}."))
        elif a != b and key != "request_id":
            out.append(f"{prefix}{key}: recorded {a!r}, now {b!r}")
    return out


# -- diagnostic bundle ---------------------------------------------------------------------------


def safe_config_text(config: Config) -> str:
    """config.toml for a bundle: a proxy URL's user name and password are removed."""
    proxy = config.network.proxy
    if proxy:
        parts = urlsplit(proxy)
        if parts.username or parts.password:
            host = parts.hostname or ""
            netloc = host + (f":{parts.port}" if parts.port else "")
            proxy = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
            network = msgspec.structs.replace(config.network, proxy=proxy)
            config = msgspec.structs.replace(config, network=network)
    return dump_config(config)


async def bundle(app: App, trace_id: str, dest: Path | None = None) -> BundleReport:
    """Write the diagnostic bundle of a trace (default: DATA/bundles/citewise-trace-ID.zip)."""

    def make() -> BundleReport:
        with _store(app) as store:
            try:
                full_id = store.resolve(trace_id)
                record = store.get(full_id)
            except TraceStoreError as exc:
                raise AppError(str(exc)) from None
            target = dest or app.data.root / BUNDLES_DIR / f"citewise-trace-{full_id[:12]}.zip"
            try:
                return write_bundle(
                    store,
                    full_id,
                    target,
                    config_toml=safe_config_text(app.config),
                    secrets=key_values(),
                    trace_json=msgspec.json.encode(trace_document(record)),
                )
            except (DiagnosticBundleError, OSError) as exc:
                raise AppError(f"the diagnostic bundle could not be written: {exc}") from None

    return await anyio.to_thread.run_sync(make)


def _bundle_for_rerun(app: App, recorded: dict[str, Any]) -> PromptBundle:
    """The bundle the request recorded, when it still exists unchanged; else the active one
    (the re-run report then says which bundle ran instead)."""
    ident, version = recorded.get("id"), recorded.get("version")
    if ident and version:
        try:
            bundle = BundleRegistry.of(app.data).get(f"{ident}@{version}")
        except PromptBundleError:
            pass
        else:
            if bundle.hash == recorded.get("hash"):
                return bundle
    try:
        return active_bundle(app.data)
    except PromptBundleError as exc:
        raise AppError(str(exc)) from None


# -- the traces page -------------------------------------------------------------------------


async def set_trace_mode(app: App, mode: TraceMode) -> TraceMode:
    """Record the next questions with `mode` (saved in config.toml like any setting); the
    running writer uses it from the next trace on. Returns the mode now in effect (an
    environment variable may still override the file)."""
    await app.save_settings({"trace": {"mode": mode}})
    if app.trace_writer is not None:
        app.trace_writer.mode = app.config.trace.mode
    return app.config.trace.mode


def _read(store: TraceStore, span: Span, kind: str) -> bytes | None:
    ref = next((a for a in span.artifacts if a.kind == kind and a.stored), None)
    if ref is None:
        return None
    try:
        return store.read_artifact(ref.sha256)
    except TraceStoreError:  # removed by retention or damaged: the story says less
        return None


def _conversation_answer(app: App, record: TraceRecord) -> str | None:
    """The answer as the conversation kept it (metadata traces keep only its hash)."""
    cid, collection = record.summary.conversation_id, record.summary.collection
    if not cid or not collection:
        return None
    try:
        store = ConversationStore(app.data, collection)
        if not store.exists(cid):
            return None
        turns = store.load(cid)
    except (OSError, ValueError, InvalidCollectionName):
        return None
    root = next((s for s in record.spans if s.kind == "request"), None)
    request_id = str(root.attributes.get(REQUEST_ID, "")) if root else ""
    trace_id = record.summary.trace_id
    for turn in turns:
        if turn.request_id == request_id or (turn.trace_id or trace_id_for(turn.request_id)) == (
            trace_id
        ):
            return turn.answer
    return None


def _answer_of(app: App, store: TraceStore, record: TraceRecord) -> str | None:
    final = next((s for s in record.spans if s.kind == "final"), None)
    raw = None if final is None else _read(store, final, "answer")
    if raw is not None:
        return raw.decode("utf-8", "replace")
    return _conversation_answer(app, record)


def _blocks(app: App, store: TraceStore, record: TraceRecord) -> dict[str, StoryBlock]:
    """Title, section and pages of every block the request saw: from the tool results kept
    in full mode, else looked up in the snapshot the request used (while it exists)."""
    out: dict[str, StoryBlock] = {}
    wanted: list[str] = []
    for span in record.spans:
        if span.kind != "tool_call":
            continue
        wanted += [str(c) for c in span.attributes.get(m.TOOL_BLOCKS, [])]
        raw = _read(store, span, "tool_payload")
        if raw is None:
            continue
        view = observation_of(
            "<<<DATA 0>>>\n"
            + json.dumps({"harness_status": "ok", "payload": json.loads(raw)})
            + "\n<<<END DATA 0>>>"
        )
        for block in view.blocks if view else []:
            block.text = ""
            out[block.citation] = block
    missing = [c for c in dict.fromkeys(wanted) if c not in out and "#" in c]
    collection, snapshot_id = snapshot_of(record)
    if not missing or not collection or not snapshot_id:
        return out
    try:
        catalog = app.catalog(collection)
        if catalog.manifest(snapshot_id) is None:
            return out
        markers = "".join(f"【来源:{c}】" for c in missing)
        with catalog.pinned(snapshot_id) as snapshot:
            found = resolve(markers, cited_evidence(markers), snapshot)
    except (CatalogError, InvalidCollectionName, OSError):
        return out
    for c in found:
        if c.valid:
            out[c.citation] = StoryBlock(
                citation=c.citation,
                title=c.title,
                source_label=c.source_label,
                section=c.section_path or c.section_title,
                page_start=c.page_start,
                page_end=c.page_end,
            )
    return out


async def story(app: App, trace_id: str) -> TraceStory:
    """The answer's story: the record, plus what full mode kept and the snapshot still says."""

    def make() -> TraceStory:
        with _store(app) as store:
            try:
                record = store.get(store.resolve(trace_id))
            except TraceStoreError as exc:
                raise AppError(str(exc)) from None
            replies: dict[str, str] = {}
            for span in record.spans:
                if span.kind == "llm_call":
                    raw = _read(store, span, "reply")
                    if raw is not None:
                        replies[span.span_id] = raw.decode("utf-8", "replace")
            inputs = StoryInputs(
                replies=replies,
                answer=_answer_of(app, store, record),
                blocks=_blocks(app, store, record),
            )
        return build_story(record, inputs)

    return await anyio.to_thread.run_sync(make)


async def trace_answer(app: App, trace_id: str) -> str | None:
    """A trace's answer text, when full mode or its conversation kept it."""

    def read() -> str | None:
        with _store(app) as store:
            try:
                record = store.get(store.resolve(trace_id))
            except TraceStoreError as exc:
                raise AppError(str(exc)) from None
            return _answer_of(app, store, record)

    return await anyio.to_thread.run_sync(read)


async def compare(app: App, first: str, second: str) -> TraceComparison:
    a = await anyio.to_thread.run_sync(get_trace, app, first)
    b = await anyio.to_thread.run_sync(get_trace, app, second)
    return compare_traces(
        a,
        b,
        await trace_answer(app, a.summary.trace_id),
        await trace_answer(app, b.summary.trace_id),
    )


def estimate(app: App, trace_id: str, runs: int) -> RerunEstimate:
    if not 1 <= runs <= MAX_RERUNS:
        raise AppError(f"the number of runs must be between 1 and {MAX_RERUNS}")
    return rerun_estimate(get_trace(app, trace_id), runs)
