"""The ingest pipeline: parse → chunk → embed → build, over bounded channels.

Each document enters the next snapshot whole or is listed as failed with its stage and reason;
one bad file never stops the batch. Finished documents are journaled and content-addressed, so
an import killed at any moment resumes without re-parsing or re-embedding them. The new
snapshot becomes active only after it is completely written (the manifest is its commit).
What the snapshot holds is decided by actors/snapshot_plan.py; this module carries it out.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import anyio.to_thread
import msgspec
import numpy as np
from anyio.abc import ObjectReceiveStream, ObjectSendStream, TaskGroup

from actors.catalog import Catalog
from actors.discovery import Target, discover, format_of
from actors.import_progress import (
    PROGRESS_INTERVAL_S,
    ImportProgress,
    ImportResult,
    PauseGate,
    ProgressReporter,
    renewed,
)
from actors.journal import DoneEntry, Job, JobTarget, Journal
from actors.overrides import Overrides
from actors.parse_pool import Chunking, ParsePool
from actors.snapshot_plan import ParentDocuments, SnapshotPlan, parent_documents, plan_snapshot
from engine.chunker import ChunkError, chunker_version
from engine.clock import utc_timestamp
from engine.config import Config
from engine.document_cache import DocumentCache, document_key
from engine.embedding import (
    EmbeddingCache,
    EmbeddingError,
    EmbeddingProvider,
    EmbedProgress,
    embed_texts,
)
from engine.embedding.probes import PROBES_VERSION, probe_texts
from engine.embedding.windows import block_text as embedding_text
from engine.embedding.windows import layout_for, part_texts
from engine.file_access import read_failure
from engine.parsing import PARSER_VERSIONS, ParseError, ParseLimits, ocr_engine_version
from engine.paths import DataDir
from engine.tokens import TokenCounter
from engine.tools import retrieval_params
from index.fsutil import file_sha256
from index.prepared import PreparedDocument, prepare_document
from index.records import (
    BuildStats,
    DocumentRecord,
    FailedDocument,
    FailureStage,
    ImportReport,
    ManifestDocument,
    SkippedFile,
    SnapshotManifest,
)
from index.snapshot import Snapshot, build_snapshot
from index.textnorm import TOKENIZER_VERSION

# Other modules import these from here; discovery and progress live in their own modules.
__all__ = [
    "ImportProgress",
    "ImportResult",
    "Ingest",
    "PauseGate",
    "Target",
    "discover",
    "embedding_text",
    "format_of",
    "merged_job",
    "record_from_snapshot",
]

# Channel sizes: parsing runs ahead of embedding by at most a few documents, which bounds the
# memory held by parsed-but-not-embedded text; the build stage only collects.
PARSED_CHANNEL_SIZE = 4
EMBEDDED_CHANNEL_SIZE = 4
PARSE_TIMEOUT_S = 600.0


@dataclass
class _Parsed:
    target: Target
    record: DocumentRecord
    reused: bool = False
    prepared: PreparedDocument | None = None  # the build's work for it, done by its worker
    # its texts to embed and how many each block has, cut by its worker (see Chunking.layout)
    parts: tuple[list[str], np.ndarray] | None = None
    prepared_apart: bool = False  # its preparation comes to the batch apart (_prepare_apart)


@dataclass
class _Embedded:
    target: Target
    record: DocumentRecord
    vectors: np.ndarray
    reused: bool = False
    prepared: PreparedDocument | None = None
    part_counts: np.ndarray | None = None  # vectors per block, with several per block
    prepared_apart: bool = False


@dataclass
class _Batch:
    """Mutable state of one run, owned by the pipeline task group."""

    ok: dict[str, _Embedded] = field(default_factory=dict)
    failed: dict[str, FailedDocument] = field(default_factory=dict)
    # the build's per-document work, done as each new document arrives (by source)
    prepared: dict[str, PreparedDocument] = field(default_factory=dict)
    stats: BuildStats = field(default_factory=BuildStats)
    # source -> content hash of the documents an interrupted run of this job finished
    resumable: dict[str, str] = field(default_factory=dict)
    resumed: int = 0  # of them, finished again from the caches in this run


def record_from_snapshot(snap: Snapshot, doc: int) -> DocumentRecord:
    """Rebuild a carried-over document from its parent snapshot (no file is read)."""
    return snap.document_record(doc)


def _carried_documents(
    parent: Snapshot, docs: Sequence[tuple[str, int]]
) -> tuple[dict[str, tuple[DocumentRecord, np.ndarray]], dict[str, np.ndarray | None]]:
    """The record and vectors of each (source, document number) of `parent`, and its vectors
    per block (None: one each), in one pass (one thread hop for the whole collection rather
    than two per document)."""
    records = {
        source: (record_from_snapshot(parent, doc), parent.doc_vectors(doc)) for source, doc in docs
    }
    return records, {source: parent.doc_part_counts(doc) for source, doc in docs}


def _to_re_embed(
    parent_docs: ParentDocuments | None,
    targets: Sequence[Target],
    failed: Sequence[FailedDocument],
    removals: Sequence[str],
) -> list[Target]:
    """The parent's documents to embed again from their stored blocks: all those this run
    neither imports nor removes, when the parent's vectors are of another model or layout.
    Without this they would drop out of the next snapshot: changing the embedding model or
    upgrading to sentence vectors must never cost a person the documents they did not re-add.
    """
    if parent_docs is None or parent_docs.reusable:
        return []
    busy = {t.source for t in targets} | {f.source for f in failed} | set(removals)
    return [
        Target(path=Path(source), source=source, size=0)
        for source in parent_docs.by_source
        if source not in busy
    ]


def _counts_of(counts: np.ndarray | None, record: DocumentRecord) -> np.ndarray:
    """A document's vectors per block; a document without counts has one vector per block
    (it cannot happen for a sentence layout, whose documents all carry counts)."""
    return counts if counts is not None else np.ones(len(record.blocks), dtype=np.int64)


def merged_job(
    previous: Job | None, collection: str, paths: Sequence[Path], removals: Sequence[str] = ()
) -> Job:
    """The job a run carries out: an interrupted job of this collection, plus `paths` and
    `removals`. It keeps the interrupted job's id, so its finished documents stay finished."""
    targets: dict[str, JobTarget] = {}
    removed: dict[str, None] = {}
    if previous is not None and previous.collection == collection:
        targets.update({t.path: t for t in previous.targets})
        removed.update(dict.fromkeys(previous.removals))
    removed.update(dict.fromkeys(removals))
    for p in paths:
        absolute = str(Path(p).expanduser().absolute())
        targets[absolute] = JobTarget(path=absolute)
    return Job(
        job_id=previous.job_id if previous else secrets.token_hex(6),
        collection=collection,
        created_at=previous.created_at if previous else utc_timestamp(),
        targets=tuple(targets.values()),
        removals=tuple(removed),
    )


class Ingest:
    """One import run into one collection. Create, then `await run(...)`."""

    def __init__(
        self,
        data: DataDir,
        config: Config,
        collection: str,
        embedder: EmbeddingProvider,
        embedding_cache: EmbeddingCache,
        counter: TokenCounter,
        *,
        on_progress: Callable[[ImportProgress], None] | None = None,
        gate: PauseGate | None = None,
        parse_pool: ParsePool | None = None,
    ) -> None:
        self.data = data
        self.config = config
        self.collection = collection
        self.catalog = Catalog(data, collection)
        self.journal = Journal(data.journal(collection))
        self.documents = DocumentCache(data.document_cache)
        self.embedder = embedder
        self.embedding_cache = embedding_cache
        self.layout = layout_for(embedder.spec.provider, config.embedding.granularity)
        self.counter = counter
        self.gate = gate or PauseGate()
        self.report = ProgressReporter(
            collection, self.gate, on_progress, self.journal.write_progress
        )
        self.limits = ParseLimits(
            max_file_bytes=config.ingest.max_file_megabytes << 20,
            max_archive_bytes=config.ingest.max_archive_megabytes << 20,
            ocr=config.ingest.ocr,
            ocr_max_pages=config.ingest.ocr_max_pages,
            ocr_cache=str(data.ocr_cache),  # a page recognised once is never recognised again
        )
        self.parse_pool = parse_pool or ParsePool()  # the running App's, else this import's
        self._rank: dict[str, int] = {}  # parse order: the largest document first
        self._ocr_all: frozenset[str] | None = None  # sources to OCR whole, read on first use

    # -- entry points ------------------------------------------------------------------------
    def _parser_versions(self) -> dict[str, str]:
        """Each parser's version and, when OCR is on, the OCR engine and its models: a
        snapshot's scanned pages read as that engine recognised them."""
        engine = ocr_engine_version() if self.limits.ocr else ""
        return {**PARSER_VERSIONS, **({"ocr": engine} if engine else {})}

    def pending_job(self) -> Job | None:
        return self.journal.load()

    async def run(self, paths: Sequence[Path], *, removals: Sequence[str] = ()) -> ImportResult:
        """Import `paths` (plus any unfinished job of this collection) and activate the result."""
        job = self._merge_job(paths, removals)
        removals = job.removals  # with those of an interrupted job
        targets, skipped, failed_early = await anyio.to_thread.run_sync(
            discover, [Path(t.path) for t in job.targets]
        )
        self.catalog.ensure()
        batch = _Batch(
            resumable={e.source: e.content_hash for e in self.journal.done() if e.status == "ok"}
        )
        for f in failed_early:
            batch.failed[f.source] = f

        with self.catalog.pin_active() as parent:
            parent_docs = (
                None
                if parent is None
                else parent_documents(
                    parent.documents, parent.manifest, self.embedder.spec, self.layout
                )
            )
            again = _to_re_embed(parent_docs, targets, failed_early, removals)
            self.report.start([*targets, *again], failed_early)
            async with anyio.create_task_group() as ticking:
                ticking.start_soon(self._tick)
                await self._pipeline(targets, parent, parent_docs, batch, again)
                ticking.cancel_scope.cancel()
            self.report.state("building")
            plan = plan_snapshot(
                parent_docs,
                {source: e.record.content_hash for source, e in batch.ok.items()},
                batch.failed,
                removals,
                renewed=[source for source, e in batch.ok.items() if not e.reused],
            )
            result = await self._build(parent, plan, batch, skipped)
            # Same bytes as the parent's yet not carried over: re-embedded or read again.
            imported = {s: (e.record, e.reused) for s, e in batch.ok.items()}
            again_done = await anyio.to_thread.run_sync(renewed, parent, parent_docs, imported)
            result.re_embedded, result.read_again = again_done.re_embedded, again_done.read_again
            result.re_read = again_done.re_read
            result.blocks_changed = again_done.blocks_changed
        self.journal.finish()
        self.report.state("done")
        return result

    def _merge_job(self, paths: Sequence[Path], removals: Sequence[str] = ()) -> Job:
        previous = self.journal.load()
        job = merged_job(previous, self.collection, paths, removals)
        if previous != job:
            done = self.journal.done() if previous else []
            self.journal.start(job)
            for entry in done:  # keep what the interrupted run finished
                self.journal.record(entry)
        return job

    async def _tick(self) -> None:
        """The time left moves between events too (a long batch, a slow page range)."""
        while True:
            await anyio.sleep(PROGRESS_INTERVAL_S)
            self.report.emit()

    # -- the stages --------------------------------------------------------------------------
    async def _pipeline(
        self,
        targets: list[Target],
        parent: Snapshot | None,
        parent_docs: ParentDocuments | None,
        batch: _Batch,
        again: Sequence[Target] = (),
    ) -> None:
        parsed_send, parsed_recv = anyio.create_memory_object_stream[_Parsed](PARSED_CHANNEL_SIZE)
        embedded_send, embedded_recv = anyio.create_memory_object_stream[_Embedded](
            EMBEDDED_CHANNEL_SIZE
        )
        work_send, work_recv = anyio.create_memory_object_stream[Target](len(targets) or 1)
        largest_first = sorted(targets, key=lambda t: -t.size)
        self._rank = {t.source: rank for rank, t in enumerate(largest_first)}
        for t in largest_first:
            work_send.send_nowait(t)
        work_send.close()
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._embed_stage, parsed_recv, embedded_send, parent, batch)
            tg.start_soon(self._collect_stage, embedded_recv, batch)
            # Each parser holds a clone; the embed stage sees the end once the last one closes.
            async with parsed_send, work_recv:
                if again and parent is not None and parent_docs is not None:
                    tg.start_soon(
                        self._re_embed_stage, again, parsed_send.clone(), parent, parent_docs
                    )
                for _ in range(self.config.ingest.parse_workers):
                    tg.start_soon(
                        self._parse_stage,
                        work_recv.clone(),
                        parsed_send.clone(),
                        parent,
                        parent_docs,
                        batch,
                        tg,
                    )

    async def _re_embed_stage(
        self,
        again: Sequence[Target],
        out: ObjectSendStream[_Parsed],
        parent: Snapshot,
        parent_docs: ParentDocuments,
    ) -> None:
        """The parent's documents this run does not touch, when its vectors cannot be reused
        (another embedding model or vector layout): their blocks, as the parent stored them,
        go to the embed stage, so the next snapshot still holds them. No file is read."""
        async with out:
            for target in again:
                await self.gate.wait()
                doc = parent_docs.by_source[target.source][0]
                record = await anyio.to_thread.run_sync(record_from_snapshot, parent, doc)
                self.report.parsed(target.source, record)
                await out.send(_Parsed(target, record))

    async def _parse_stage(
        self,
        work: ObjectReceiveStream[Target],
        out: ObjectSendStream[_Parsed],
        parent: Snapshot | None,
        parent_docs: ParentDocuments | None,
        batch: _Batch,
        preparing: TaskGroup,
    ) -> None:
        async with work, out:
            async for target in work:
                await self.gate.wait()
                parsed = await self._parse_one(target, parent, parent_docs, batch, preparing)
                if parsed is not None:
                    await out.send(parsed)

    async def _parse_one(
        self,
        target: Target,
        parent: Snapshot | None,
        parent_docs: ParentDocuments | None,
        batch: _Batch,
        preparing: TaskGroup,
    ) -> _Parsed | None:
        """The document read, from the parent, the document cache or the file; a document
        read as page ranges is prepared for the build apart, in a task of `preparing`."""
        self.report.document(target.source, "parsing")
        limits = self._limits_for(target.source)
        every_page = limits is not self.limits  # a person asked for every scanned page
        fmt = format_of(target.path)
        parser_version = PARSER_VERSIONS.get(fmt, "")
        chunker = chunker_version(self.config.ingest.block_target_tokens)
        try:
            # one trip to a thread for the hash and what it finds: for a folder of small
            # files, each trip cost as much of this process's time as the file's parse
            content_hash, key, known = await anyio.to_thread.run_sync(
                self._known, target, parent, parent_docs, parser_version, chunker, every_page
            )
        except OSError as exc:
            self._fail(batch, target, "read", *read_failure(exc))
            return None
        if known is not None:
            carried, record = known
            self.report.parsed(target.source, record, reused=carried)
            return _Parsed(target, record, reused=carried)
        chunking = Chunking(
            content_hash=content_hash,
            source=target.source,
            parser_version=parser_version,
            target_tokens=self.config.ingest.block_target_tokens,
            layout=self.layout,
            prepare_apart=True,
            cache=str(self.documents.directory),
            cache_key=key,
        )
        try:
            with anyio.fail_after(PARSE_TIMEOUT_S):
                finished = await self.parse_pool.document(
                    target.path,
                    limits,
                    self._rank.get(target.source, 0),
                    chunking,
                    on_pages=lambda read, total: self.report.pages_read(target.source, read, total),
                    on_ocr=lambda done, total, cached: self.report.ocr_pages(
                        target.source, done, total, cached
                    ),
                    paused=lambda: self.gate.paused,
                    size=target.size,
                )
        except ParseError as exc:
            self._fail(batch, target, "parse", exc.reason, exc.message)
            return None
        except ChunkError as exc:
            self._fail(batch, target, "chunk", exc.reason, exc.message)
            return None
        except TimeoutError:
            self._fail(
                batch,
                target,
                "parse",
                "timeout",
                f"reading this file took longer than {PARSE_TIMEOUT_S:.0f} s; it may be damaged",
            )
            return None
        except anyio.BrokenWorkerProcess:
            if await self.parse_pool.reader_starts():
                self._fail(
                    batch,
                    target,
                    "parse",
                    "corrupt",
                    "the document reader crashed on this file; it is probably damaged",
                )
            else:  # not the file's fault: no reader process runs at all
                self._fail(
                    batch,
                    target,
                    "parse",
                    "reader_unavailable",
                    "Citewise could not start its document reader, so this file was not read; "
                    "restart Citewise and import it again",
                )
            return None
        record = finished.record
        self.report.parsed(target.source, record)
        parts = finished.parts if finished.layout == self.layout else None
        if finished.prepared is None:
            # asked of a worker first: while the document cache is written, the request goes
            # out, before the look-up's long synchronous stretches hold this event loop
            counts = None if parts is None else parts[1]
            preparing.start_soon(self._prepare_apart, target.source, record, counts, batch)
        if finished.prepared is None:
            return _Parsed(target, record, parts=parts, prepared_apart=True)
        return _Parsed(target, record, prepared=finished.prepared, parts=parts)

    def _known(
        self,
        target: Target,
        parent: Snapshot | None,
        parent_docs: ParentDocuments | None,
        parser_version: str,
        chunker: str,
        every_page: bool,
    ) -> tuple[str, str, tuple[bool, DocumentRecord] | None]:
        """(content hash, document-cache key, (carried over, record) of a document already
        read: the parent's copy, else the document cache's; None to parse it). Runs in a
        thread; raises OSError for a file that cannot be read."""
        content_hash = file_sha256(target.path)
        if parent is not None and parent_docs is not None:
            doc = parent_docs.carried(target.source, content_hash)
            # Carried over only as this build would read it: a newer parser for its format or
            # another block size reads the same bytes again (the documents are keyed so).
            if (
                doc is not None
                and (parent.documents[doc].parser_version, parent.documents[doc].chunker_version)
                == (parser_version, chunker)
                and not (every_page and _pages_left(parent.documents[doc].report))
            ):
                return content_hash, "", (True, record_from_snapshot(parent, doc))
        key = document_key(
            content_hash,
            parser_version,
            chunker,
            self.config.ingest.block_target_tokens,
            self.counter.version,
        )
        cached = self.documents.get(key, content_hash)
        if cached is None or (every_page and _pages_left(cached.report)):
            return content_hash, key, None
        if cached.source != target.source:  # the same bytes imported under another name
            cached = msgspec.structs.replace(
                cached, source=target.source, source_label=target.source
            )
        return content_hash, key, (False, cached)

    async def _prepare_apart(
        self, source: str, record: DocumentRecord, counts: np.ndarray | None, batch: _Batch
    ) -> None:
        """The build's preparation of a document its worker returned without it: in a worker
        while this process looks its vectors up (here, in a thread, if that worker breaks)."""
        try:
            prepared = await self.parse_pool.prepare(record, self._rank.get(source, 0), counts)
        except anyio.BrokenWorkerProcess:
            prepared = await anyio.to_thread.run_sync(prepare_document, record, counts)
        batch.prepared[source] = prepared

    async def _probe_vectors(self) -> np.ndarray | None:
        """The calibration probes (engine/embedding/probes.py) embedded like queries, from the
        cache after the first build; None when the provider fails on them (the snapshot then
        keeps retrieval.min_similarity as its only floor)."""
        try:
            outcome = await embed_texts(
                self.embedder,
                self.embedding_cache,
                probe_texts(),
                batch_size=self.config.embedding.batch_size,
                concurrency=self.config.embedding.concurrency,
            )
        except EmbeddingError:
            return None
        return outcome.vectors

    def _limits_for(self, source: str) -> ParseLimits:
        """This run's limits; for a document a person asked to have every scanned page
        recognised (actors/overrides.py), the OCR page limit lifted."""
        if self._ocr_all is None:
            self._ocr_all = Overrides(self.data, self.collection).ocr_all_sources()
        if source not in self._ocr_all:
            return self.limits
        return msgspec.structs.replace(self.limits, ocr_max_pages=self.limits.max_pages)

    async def _embed_stage(
        self,
        inbox: ObjectReceiveStream[_Parsed],
        out: ObjectSendStream[_Embedded],
        parent: Snapshot | None,
        batch: _Batch,
    ) -> None:
        async with inbox, out:
            async for item in inbox:
                await self.gate.wait()
                if item.reused and parent is not None:
                    doc = parent.doc_ordinal(item.record.doc_id)
                    assert doc is not None
                    vectors = await anyio.to_thread.run_sync(parent.doc_vectors, doc)
                    counts = parent.doc_part_counts(doc)
                    await out.send(
                        _Embedded(
                            item.target, item.record, vectors, reused=True, part_counts=counts
                        )
                    )
                    continue
                self.report.document(item.target.source, "embedding")
                counts = None
                if self.layout.granularity == "block":
                    n = len(item.record.blocks)
                    texts = [embedding_text(item.record, i) for i in range(n)]
                elif item.parts is not None:
                    texts, counts = item.parts
                else:
                    texts, counts = part_texts(item.record, self.layout)
                embedded = _EmbeddingProgress(
                    self.report, item.target.source, item.record, len(texts)
                )
                try:
                    outcome = await embed_texts(
                        self.embedder,
                        self.embedding_cache,
                        texts,
                        batch_size=self.config.embedding.batch_size,
                        concurrency=self.config.embedding.concurrency,
                        on_progress=embedded.batch_done,
                        before_batch=self.gate.wait,
                        granularity=self.layout.granularity,
                    )
                except EmbeddingError as exc:
                    self._fail(batch, item.target, "embed", exc.code, exc.message)
                    continue
                # Counted in blocks: with several vectors per block, a block is a cache hit when
                # every one of its parts was (a document read again with one block changed
                # embeds that block's parts, not the whole document's).
                n = len(item.record.blocks)
                hits = _blocks_from_cache(outcome.from_cache, counts)
                batch.stats = msgspec.structs.replace(
                    batch.stats,
                    blocks_embedded=batch.stats.blocks_embedded + n - hits,
                    embedding_tokens=batch.stats.embedding_tokens + outcome.tokens,
                    embedding_cache_hits=batch.stats.embedding_cache_hits + hits,
                )
                await out.send(
                    _Embedded(
                        item.target,
                        item.record,
                        outcome.vectors,
                        prepared=item.prepared,
                        part_counts=counts,
                        prepared_apart=item.prepared_apart,
                    )
                )

    async def _collect_stage(self, inbox: ObjectReceiveStream[_Embedded], batch: _Batch) -> None:
        async with inbox:
            async for item in inbox:
                batch.ok[item.target.source] = item
                if item.prepared is not None:
                    batch.prepared[item.target.source] = item.prepared
                elif not item.reused and not item.prepared_apart:
                    # from the document cache; reused ones are carried over
                    batch.prepared[item.target.source] = await anyio.to_thread.run_sync(
                        prepare_document, item.record, item.part_counts
                    )
                await anyio.to_thread.run_sync(
                    self.journal.record,
                    DoneEntry(
                        source=item.target.source,
                        content_hash=item.record.content_hash,
                        status="ok",
                        blocks=len(item.record.blocks),
                    ),
                )
                if not item.reused and (
                    batch.resumable.get(item.target.source) == item.record.content_hash
                ):
                    batch.resumed += 1
                    self.report.resumed(item.target.source)
                self.report.finished(item.target, item.record, reused=item.reused)

    # -- build and activate ------------------------------------------------------------------
    async def _build(
        self,
        parent: Snapshot | None,
        plan: SnapshotPlan,
        batch: _Batch,
        skipped: list[SkippedFile],
    ) -> ImportResult:
        if parent is not None and not plan.build:
            return ImportResult(
                collection=self.collection,
                snapshot_id=parent.manifest.snapshot_id,
                status=None,
                activated=False,
                library_documents=len(parent.manifest.documents),
                failed_documents=list(plan.failures),
                skipped=skipped,
                stats=self._stats(batch, skipped),
                message="nothing changed: every document is already in the active snapshot",
                documents_resumed=batch.resumed,
            )

        documents: dict[str, tuple[DocumentRecord, np.ndarray]] = {}
        part_counts: dict[str, np.ndarray | None] = {}  # by source
        if parent is not None and plan.parent_files_reusable:
            documents, part_counts = await anyio.to_thread.run_sync(
                _carried_documents, parent, plan.carried
            )
        carried = [r for r, _ in documents.values()]
        for source, item in batch.ok.items():
            documents[source] = (item.record, item.vectors)
            part_counts[source] = item.part_counts
        ordered = _unique_doc_ids([documents[s] for s in sorted(documents)])
        # A person's edits of titles and aliases outlive the records they were made on.
        edited = Overrides(self.data, self.collection).apply([r for r, _ in ordered])
        ordered = [(r, v) for r, (_, v) in zip(edited, ordered, strict=True)]
        status = plan.status
        assert status is not None  # a plan that builds names the status of what it builds
        snapshot_id, directory = self.catalog.new_build_dir()
        stats = msgspec.structs.replace(
            self._stats(batch, skipped),
            documents_carried=len(carried),
            blocks_carried=sum(len(r.blocks) for r in carried),
        )
        manifest = SnapshotManifest(
            snapshot_id=snapshot_id,
            parent_id=parent.manifest.snapshot_id if parent else None,
            collection=self.collection,
            status=status,
            created_at=utc_timestamp(),
            documents=tuple(
                ManifestDocument(
                    doc_id=r.doc_id,
                    source=r.source,
                    content_hash=r.content_hash,
                    blocks=len(r.blocks),
                )
                for r, _ in ordered
            ),
            failed_documents=tuple(sorted(plan.failures, key=lambda f: f.source)),
            skipped=tuple(skipped),
            embedding=self.embedder.spec,
            parser_versions=dict(sorted(self._parser_versions().items())),
            chunker_version=chunker_version(self.config.ingest.block_target_tokens),
            tokenizer_version=f"{TOKENIZER_VERSION}+{self.counter.version}",
            retrieval=retrieval_params(self.config.retrieval),
            stats=stats,
            vector_layout=self.layout,
        )
        if status == "failed":
            await anyio.to_thread.run_sync(self.catalog.record_failed, manifest)
            return ImportResult(
                collection=self.collection,
                snapshot_id=snapshot_id,
                status=status,
                activated=False,
                library_documents=0 if parent is None else len(parent.manifest.documents),
                failed_documents=list(manifest.failed_documents),
                skipped=skipped,
                stats=stats,
                message="no document could be imported; the active snapshot is unchanged",
                documents_resumed=batch.resumed,
            )
        counts = None
        if self.layout.granularity != "block":
            counts = [_counts_of(part_counts.get(r.source), r) for r, _ in ordered]
        probes = await self._probe_vectors()
        with self.catalog.building(directory):
            final = await anyio.to_thread.run_sync(
                lambda: build_snapshot(
                    directory,
                    manifest,
                    [r for r, _ in ordered],
                    [v for _, v in ordered],
                    prepared=[_prepared_for(r, batch.prepared) for r, _ in ordered],
                    parent=parent.path
                    if parent is not None and plan.parent_files_reusable
                    else None,
                    k1=self.config.retrieval.bm25_k1,
                    b=self.config.retrieval.bm25_b,
                    exact_search_max_blocks=self.config.retrieval.exact_search_max_blocks,
                    part_counts=counts,
                    probes=probes,
                    probes_version=PROBES_VERSION,
                )
            )
        await anyio.to_thread.run_sync(self.catalog.activate, final.snapshot_id)
        return ImportResult(
            collection=self.collection,
            snapshot_id=final.snapshot_id,
            status=final.status,
            activated=True,
            library_documents=len(ordered),
            failed_documents=list(final.failed_documents),
            skipped=skipped,
            stats=final.stats,
            documents_resumed=batch.resumed,
        )

    def _stats(self, batch: _Batch, skipped: list[SkippedFile]) -> BuildStats:
        ok = batch.ok.values()
        blocks = sum(len(e.record.blocks) for e in ok)
        return msgspec.structs.replace(
            batch.stats,
            documents_in=len(batch.ok) + len(batch.failed),
            documents_succeeded=len(batch.ok),
            documents_failed=len(batch.failed),
            documents_reused=sum(e.reused for e in ok),
            files_skipped=len(skipped),
            pages=sum(e.record.pages or 0 for e in ok),
            blocks_chunked=blocks,
            blocks_reused=sum(len(e.record.blocks) for e in ok if e.reused),
        )

    # -- bookkeeping -------------------------------------------------------------------------
    def _fail(
        self, batch: _Batch, target: Target, stage: FailureStage, reason: str, message: str
    ) -> None:
        failure = FailedDocument(source=target.source, stage=stage, reason=reason, message=message)
        batch.failed[target.source] = failure
        self.journal.record(
            DoneEntry(
                source=target.source, content_hash="", status="failed", stage=stage, reason=reason
            )
        )
        self.report.failed(target, failure)


class _EmbeddingProgress:
    """Tells the reporter how far one document's embedding is, batch by batch. Its tokens are
    the vendor's count, or where the vendor counts none (the built-in model) the
    DeepSeek-tokenizer count of the blocks embedded (per block on average: batches finish in
    any order)."""

    def __init__(
        self, report: ProgressReporter, source: str, record: DocumentRecord, texts: int
    ) -> None:
        self._report = report
        self._source = source
        blocks = record.blocks
        self._per_block = sum(b.tokens for b in blocks) / len(blocks) if blocks else 0.0
        # Windows are reported as the share of blocks they stand for.
        self._blocks_per_text = len(blocks) / texts if texts else 1.0

    def batch_done(self, progress: EmbedProgress) -> None:
        done = round(progress.texts_done * self._blocks_per_text)
        cached = round(progress.cache_hits * self._blocks_per_text)
        tokens = progress.tokens or round((done - cached) * self._per_block)
        self._report.embedding(self._source, done, tokens, cached=cached)


def _blocks_from_cache(from_cache: np.ndarray, counts: np.ndarray | None) -> int:
    """How many blocks had every vector from the embedding cache: `from_cache` marks the
    embedded texts (one per block, or `counts[i]` consecutive parts for block i)."""
    if counts is None:
        return int(from_cache.sum())
    misses = np.concatenate(([0], np.cumsum(~from_cache)))  # misses before each text
    ends = np.cumsum(counts)
    return int((misses[ends] == misses[ends - counts]).sum())


def _pages_left(report: ImportReport | None) -> bool:
    """The OCR page limit left scanned pages of this document unrecognised."""
    return report is not None and any(w.code == "ocr_page_limit" for w in report.warnings)


def _prepared_for(
    record: DocumentRecord, prepared: dict[str, PreparedDocument]
) -> PreparedDocument | None:
    """The preparation made from this record, unless the record was renamed since (a second
    copy of the same bytes gets its own doc_id); the build then prepares it itself."""
    found = prepared.get(record.source)
    return found if found is not None and found.doc_id == record.doc_id else None


def _unique_doc_ids(
    ordered: list[tuple[DocumentRecord, np.ndarray]],
) -> list[tuple[DocumentRecord, np.ndarray]]:
    """Two files with identical bytes share a content-derived doc_id; the later source (in
    source order, so deterministically) gets one derived from content and source instead."""
    seen: set[str] = set()
    out = []
    for record, vectors in ordered:
        if record.doc_id in seen:
            digest = hashlib.sha256(
                f"{record.content_hash}\x1f{record.source}".encode()
            ).hexdigest()
            record = msgspec.structs.replace(record, doc_id="d" + digest[:12])
        seen.add(record.doc_id)
        out.append((record, vectors))
    return out
