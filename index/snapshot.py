"""A snapshot on disk: build it once (manifest last), open it memory-mapped, verify its hash.

A snapshot directory is complete exactly when manifest.json exists: every other file is written
and fsynced first, the manifest last. Files are never modified after the build. Opening checks
sizes, never re-hashes; `verify_snapshot` re-hashes. Nothing here imports outside index/.
"""

from __future__ import annotations

import contextvars
import hashlib
import shutil
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import NamedTuple, Self

import msgspec
import numpy as np
import numpy.typing as npt

from index import blockstore, bm25
from index.blockstore import BlockStore, DocumentInfo
from index.bm25 import Bm25Index, Bm25Stats, TermCounts
from index.crashpoints import crash_point
from index.errors import ManifestDamaged, SnapshotError
from index.fsutil import (
    Mapped,
    atomic_write,
    close_map,
    file_sha256,
    files_sha256,
    fsync_dir,
    map_file,
    synced_together,
    write_new_file,
)
from index.prepared import PreparedDocument, part_keys, prepare_laid_out, vector_keys
from index.records import (
    SNAPSHOT_FORMAT,
    DocumentRecord,
    GraphBuild,
    ImportReport,
    ManifestDocument,
    PageRect,
    PartScoring,
    SimilarityFloor,
    SnapshotManifest,
    VectorLayout,
)
from index.scan import scan as scan_folded
from index.scan import snippet as snippet_of
from index.sections import SECTION_PATHS, SectionCounts, SectionPaths, section_paths_file
from index.textnorm import TOKENIZER_VERSION, fold, query_tokens
from index.vectors import (
    GRAPH,
    KEYS,
    MATRIX,
    ORDINALS,
    PART_BLOCKS,
    VectorIndex,
    VectorKind,
    best_block_scores,
    calibrate_floor,
    write_vectors,
)

MANIFEST = "manifest.json"
HEADER = "header.msgpack"
HEADER_FORMAT = 1


class SnapshotHeader(msgspec.Struct, frozen=True, kw_only=True):
    """Index-internal facts a reader needs; the manifest stays the caller's record."""

    format_version: int = HEADER_FORMAT
    tokenizer_version: str
    n_documents: int
    n_blocks: int
    dim: int  # 0 when the snapshot has no vectors
    vector_index: VectorKind
    exact_search_max_blocks: int
    bm25: Bm25Stats
    graph_from_parent: bool = False  # the HNSW graph was extended from the parent's
    n_vectors: int = 0  # rows of the vector matrix when several per block; 0: one per block
    part_scoring: PartScoring = "max"  # how a block scores from its parts (n_vectors > 0)


class VerifyResult(msgspec.Struct, frozen=True, kw_only=True):
    ok: bool
    expected: str  # content hash recorded in the manifest
    actual: str  # content hash of the files as they are now ("" if it could not be computed)
    problems: list[str] = []


class Block:
    """One block of an open snapshot; `text` is read from the map on first access."""

    __slots__ = (
        "_snapshot",
        "_text",
        "block_id",
        "block_index",
        "doc",
        "doc_id",
        "ordinal",
        "page_end",
        "page_start",
        "section",
        "tokens",
    )

    def __init__(
        self,
        snapshot: Snapshot,
        ordinal: int,
        doc: int,
        doc_id: str,
        block_index: int,
        block_id: str,
        section: int,
        page_start: int | None,
        page_end: int | None,
        tokens: int,
    ) -> None:
        self._snapshot = snapshot
        self._text: str | None = None
        self.ordinal = ordinal
        self.doc = doc
        self.doc_id = doc_id
        self.block_index = block_index
        self.block_id = block_id
        self.section = section  # ordinal of the section within its document
        self.page_start = page_start
        self.page_end = page_end
        self.tokens = tokens

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = self._snapshot._store().block_text(self.ordinal)
        return self._text

    @property
    def citation(self) -> str:
        return f"{self.doc_id}#{self.block_id}"

    def __repr__(self) -> str:
        return f"Block({self.citation!r}, ordinal={self.ordinal})"


def content_hash(manifest: SnapshotManifest, file_hashes: dict[str, str]) -> str:
    """sha256 over the sorted (file name, file sha256) pairs and the manifest with the fields
    that name a build rather than its content blanked: snapshot_id, parent_id, created_at,
    each document's parse time, files (covered by the file hashes) and content_hash itself."""
    digest = hashlib.sha256()
    for name in sorted(file_hashes):
        digest.update(f"{name}\x00{file_hashes[name]}\n".encode())
    blank = msgspec.structs.replace(
        manifest,
        snapshot_id="",
        parent_id=None,
        created_at="",
        documents=tuple(msgspec.structs.replace(d, parse_seconds=None) for d in manifest.documents),
        files={},
        content_hash="",
    )
    digest.update(b"manifest\x00" + _hashed_manifest(blank))
    return digest.hexdigest()


# Manifest fields added after snapshots were first written: left out of the hash while unset,
# so a snapshot built before them still verifies (its manifest has no such key).
_LATER_FIELDS = ("vector_graph", "vector_layout", "similarity_floor")


def _hashed_manifest(blank: SnapshotManifest) -> bytes:
    encoded = msgspec.json.encode(blank, order="deterministic")
    fields: dict[str, object] = msgspec.json.decode(encoded)  # keeps the encoded key order
    if not any(fields.get(name, 0) is None for name in _LATER_FIELDS):
        return encoded
    for name in _LATER_FIELDS:
        if fields.get(name, 0) is None:
            del fields[name]
    return msgspec.json.encode(fields)


def build_snapshot(
    directory: Path,
    manifest: SnapshotManifest,
    documents: Sequence[DocumentRecord],
    vectors: Sequence[npt.NDArray[np.floating]],
    *,
    parent: Path | None = None,
    k1: float,
    b: float,
    exact_search_max_blocks: int,
    prepared: Sequence[PreparedDocument | None] | None = None,
    part_counts: Sequence[npt.NDArray[np.integer]] | None = None,
    probes: npt.NDArray[np.floating] | None = None,
    probes_version: str = "",
) -> SnapshotManifest:
    """Write a complete snapshot of `documents` into the new `directory`; return its manifest.

    `vectors[i]` is [len(documents[i].blocks), dim] L2-normalised float32 rows in the order of
    documents[i].blocks; dim is manifest.embedding.dimensions (no embedding: no vector files).
    With several vectors per block (manifest.vector_layout.granularity "sentence"),
    `part_counts[i][j]` (>= 1) is how many rows of `vectors[i]` belong to block j, rows of a
    block adjacent and blocks in record order. `probes` are vectors of fixed nonsense texts
    by the same model: the similarity floor is calibrated from them (manifest.similarity_floor).
    `parent` is the parent snapshot directory; its HNSW graph is extended when the embedding is
    the same. Fills documents, vector_index, stats.blocks_indexed, files, content_hash (and
    tokenizer_version when empty); the rest is the caller's. On failure the directory is removed.
    `prepared[i]`, when given, is `prepare_document(documents[i])` done ahead (ValueError if it
    was prepared from another record); the files are byte for byte the same without it.
    """
    _check_arguments(manifest, documents, vectors, k1, b, exact_search_max_blocks)
    counts = _part_counts(manifest, documents, vectors, part_counts)
    if prepared is None:
        prepared = [None] * len(documents)
    elif len(prepared) != len(documents):
        raise ValueError(f"{len(prepared)} prepared documents for {len(documents)} documents")
    for doc, ready in zip(documents, prepared, strict=True):
        if ready is not None:
            ready.check(doc)
    directory.mkdir(parents=True, exist_ok=False)
    fsync_dir(directory.parent)
    crash_point("snapshot.dir:after-fsync")
    built = False
    try:
        given = _BuildInput(
            documents,
            vectors,
            prepared,
            parent,
            k1,
            b,
            exact_search_max_blocks,
            counts,
            probes,
            probes_version,
        )
        final = _build(directory, manifest, given)
        built = True
    finally:
        if not built:
            shutil.rmtree(directory, ignore_errors=True)
    return final


def _check_arguments(
    manifest: SnapshotManifest,
    documents: Sequence[DocumentRecord],
    vectors: Sequence[npt.NDArray[np.floating]],
    k1: float,
    b: float,
    exact_search_max_blocks: int,
) -> None:
    if len(vectors) != len(documents):
        raise ValueError(f"{len(vectors)} vector arrays for {len(documents)} documents")
    dim = manifest.embedding.dimensions if manifest.embedding else None
    for doc, rows in zip(documents, vectors, strict=True):
        if dim is not None and rows.shape != (len(rows), dim):
            raise ValueError(
                f"vectors of {doc.doc_id!r} have shape {rows.shape}, expected (n, {dim})"
            )
    ids = [d.doc_id for d in documents]
    if len(set(ids)) != len(ids):
        raise ValueError("duplicate doc_id in documents")
    retrieval = manifest.retrieval
    if retrieval is not None and (
        retrieval.bm25_k1 != k1
        or retrieval.bm25_b != b
        or retrieval.exact_search_max_blocks != exact_search_max_blocks
    ):
        raise ValueError("k1, b or exact_search_max_blocks differ from manifest.retrieval")
    if k1 < 0 or not 0 <= b <= 1 or exact_search_max_blocks < 0:
        raise ValueError("k1 must be >= 0, b in [0, 1], exact_search_max_blocks >= 0")


def multi_vector(manifest: SnapshotManifest) -> bool:
    """Whether the snapshot keeps several vectors per block."""
    return manifest.vector_layout is not None and manifest.vector_layout.granularity != "block"


def _part_counts(
    manifest: SnapshotManifest,
    documents: Sequence[DocumentRecord],
    vectors: Sequence[npt.NDArray[np.floating]],
    part_counts: Sequence[npt.NDArray[np.integer]] | None,
) -> list[npt.NDArray[np.int64]] | None:
    """The checked per-block vector counts (None: one vector per block)."""
    if not multi_vector(manifest) or manifest.embedding is None:
        if part_counts is not None:
            raise ValueError("part_counts given, but the layout has one vector per block")
        for doc, rows in zip(documents, vectors, strict=True):
            if len(rows) != len(doc.blocks):
                raise ValueError(
                    f"vectors of {doc.doc_id!r} have shape {rows.shape}, "
                    f"expected ({len(doc.blocks)}, n): one vector per block"
                )
        return None
    if part_counts is None or len(part_counts) != len(documents):
        raise ValueError("several vectors per block need part_counts for every document")
    out: list[npt.NDArray[np.int64]] = []
    for doc, rows, given in zip(documents, vectors, part_counts, strict=True):
        counts = np.asarray(given, dtype=np.int64)
        if counts.shape != (len(doc.blocks),) or bool(np.any(counts < 1)):
            raise ValueError(f"part_counts of {doc.doc_id!r}: one count >= 1 per block")
        if int(counts.sum()) != len(rows):
            raise ValueError(
                f"{len(rows)} vectors for the {int(counts.sum())} parts of {doc.doc_id!r}"
            )
        out.append(counts)
    return out


def _vector_rows(
    doc: DocumentRecord,
    blocks: blockstore.BlockLayout,
    rows: npt.NDArray[np.floating],
    counts: npt.NDArray[np.int64] | None,
    keys: npt.NDArray[np.uint64] | None = None,
) -> tuple[npt.NDArray[np.float16], npt.NDArray[np.uint64], npt.NDArray[np.int64]]:
    """(rows in block-ordinal order, as the float16 the snapshot stores, their keys, parts per
    block in ordinal order); `keys`, when given, are those keys as the document's preparation
    made them."""
    order = np.asarray(blocks.order, dtype=np.int64)
    if counts is None:
        if keys is None:
            keys = vector_keys(doc.doc_id, blocks)
        return _halves(np.asarray(rows)[order]), keys, np.ones(len(order), np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    ordered = counts[order]
    total = int(ordered.sum())
    base = np.repeat(starts[order] - (np.cumsum(ordered) - ordered), ordered)
    index = base + np.arange(total)
    if keys is None:
        keys = part_keys(doc.doc_id, blocks, counts)
    return _halves(np.asarray(rows)[index]), keys, ordered


def _halves(rows: npt.NDArray[np.floating]) -> npt.NDArray[np.float16]:
    """Rows as the snapshot stores them (float16: each value rounds alike, whenever it is)."""
    return np.asarray(np.asarray(rows, dtype=np.float32), dtype="<f2")


class _BuildInput(NamedTuple):
    """What build_snapshot was given, checked (part_counts: one array per document, or None
    for one vector per block)."""

    documents: Sequence[DocumentRecord]
    vectors: Sequence[npt.NDArray[np.floating]]
    prepared: Sequence[PreparedDocument | None]
    parent: Path | None
    k1: float
    b: float
    exact_search_max_blocks: int
    part_counts: list[npt.NDArray[np.int64]] | None
    probes: npt.NDArray[np.floating] | None
    probes_version: str


class _Written(NamedTuple):
    """What writing a snapshot's files found, for its manifest."""

    sizes: dict[str, int]
    kind: VectorKind
    graph_build: GraphBuild | None
    floor: SimilarityFloor | None
    n_blocks: int


def _build(directory: Path, manifest: SnapshotManifest, given: _BuildInput) -> SnapshotManifest:
    with synced_together():  # every file fsynced, together, before the directory
        sizes, kind, graph_build, floor, n_blocks = _write_files(directory, manifest, given)
    fsync_dir(directory)
    crash_point("snapshot.files:after-dir-fsync")

    final = msgspec.structs.replace(
        manifest,
        format_version=SNAPSHOT_FORMAT,
        documents=tuple(
            ManifestDocument(
                doc_id=d.doc_id,
                source=d.source,
                content_hash=d.content_hash,
                blocks=len(d.blocks),
                warnings=0 if d.report is None else len(d.report.warnings),
                parse_seconds=None if d.report is None else d.report.parse_seconds,
            )
            for d in given.documents
        ),
        tokenizer_version=manifest.tokenizer_version or TOKENIZER_VERSION,
        vector_index=kind,
        stats=msgspec.structs.replace(manifest.stats, blocks_indexed=n_blocks),
        vector_graph=graph_build,
        similarity_floor=floor if floor is not None else manifest.similarity_floor,
        files=dict(sorted(sizes.items())),
        content_hash="",
    )
    hashes = dict(zip(sizes, files_sha256([directory / name for name in sizes]), strict=True))
    final = msgspec.structs.replace(final, content_hash=content_hash(final, hashes))
    atomic_write(
        directory / MANIFEST,
        msgspec.json.encode(final, order="deterministic"),
        point="snapshot.manifest",
    )
    fsync_dir(directory.parent)
    crash_point("snapshot.committed")
    return final


def _write_files(directory: Path, manifest: SnapshotManifest, given: _BuildInput) -> _Written:
    """Every file of the snapshot but its manifest. The vector files (numpy, which releases
    the GIL) are written in a thread beside the block store, BM25 and heading-path files."""
    documents, prepared, parent = given.documents, given.prepared, given.parent
    layouts = [
        blockstore.layout(doc) if ready is None else ready.blocks
        for doc, ready in zip(documents, prepared, strict=True)
    ]
    n_blocks = sum(len(blocks.blocks) for blocks in layouts)
    # Documents the parent holds byte for byte keep its folded text and BM25 postings, unless
    # they come prepared; the others are prepared here.
    source = _carry_source(parent)
    with ThreadPoolExecutor(1, thread_name_prefix="citewise-vectors") as beside:
        try:
            store = None if source is None else source._store()
            work: list[PreparedDocument | int] = []
            for doc, blocks, ready in zip(documents, layouts, prepared, strict=True):
                if ready is None:
                    same = blockstore.same_in_parent(store, doc, blocks)
                    work.append(prepare_laid_out(doc, blocks) if same is None else same)
                else:
                    work.append(ready)
            # in this context: its files are fsynced with the others (synced_together)
            vector_files = beside.submit(
                contextvars.copy_context().run,
                _write_vector_files,
                directory,
                manifest,
                given,
                layouts,
                work,
            )
            sizes = blockstore.write_block_store(
                directory,
                documents,
                layouts,
                [w if isinstance(w, int) else w.folded for w in work],
                store,
            )
            bm25_sizes, bm25_stats = bm25.write_bm25(
                directory,
                _bm25_items(work, store),
                k1=given.k1,
                b=given.b,
                parent=None if source is None else source._bm25,
            )
            sections = section_paths_file(
                documents,
                [blocks.blocks for blocks in layouts],
                _known_section_counts(work, source),
            )
        finally:
            if source is not None:
                source.close()
        sizes.update(bm25_sizes)
        sizes[SECTION_PATHS] = write_new_file(directory / SECTION_PATHS, sections)
        vector_sizes, kind, graph_build, floor, n_vectors = vector_files.result()
    sizes.update(vector_sizes)
    layout = manifest.vector_layout or VectorLayout()
    header = SnapshotHeader(
        tokenizer_version=TOKENIZER_VERSION,
        n_documents=len(documents),
        n_blocks=n_blocks,
        dim=manifest.embedding.dimensions if manifest.embedding else 0,
        vector_index=kind,
        exact_search_max_blocks=given.exact_search_max_blocks,
        bm25=bm25_stats,
        graph_from_parent=graph_build is not None and graph_build.from_parent,
        n_vectors=n_vectors,
        part_scoring=layout.scoring,
    )
    sizes[HEADER] = write_new_file(directory / HEADER, msgspec.msgpack.encode(header))
    return _Written(sizes, kind, graph_build, floor, n_blocks)


def _write_vector_files(
    directory: Path,
    manifest: SnapshotManifest,
    given: _BuildInput,
    layouts: Sequence[blockstore.BlockLayout],
    work: Sequence[PreparedDocument | int],
) -> tuple[dict[str, int], VectorKind, GraphBuild | None, SimilarityFloor | None, int]:
    """The vector files (none without an embedding) and the similarity floor: (their sizes,
    the vector index kind, how its graph was built, the floor, rows when several per block)."""
    if manifest.embedding is None:
        return {}, "none", None, None, 0
    dim = manifest.embedding.dimensions
    layout = manifest.vector_layout or VectorLayout()
    pieces: list[npt.NDArray[np.float16]] = []
    key_pieces: list[npt.NDArray[np.uint64]] = []
    per_block: list[npt.NDArray[np.int64]] = []
    for i, (doc, blocks, item, rows) in enumerate(
        zip(given.documents, layouts, work, given.vectors, strict=True)
    ):
        counts = None if given.part_counts is None else given.part_counts[i]
        known = None
        if isinstance(item, PreparedDocument):
            known = item.keys if counts is None else item.part_keys_for(counts)
        ordered, keys, parts = _vector_rows(doc, blocks, rows, counts, known)
        pieces.append(ordered)
        key_pieces.append(keys)
        per_block.append(parts)
    matrix = np.concatenate(pieces) if pieces else np.zeros((0, dim), "<f2")
    all_keys = np.concatenate(key_pieces) if key_pieces else np.zeros(0, np.uint64)
    parts_per_block = np.concatenate(per_block) if per_block else np.zeros(0, np.int64)
    n_vectors = 0
    part_blocks = None
    if given.part_counts is not None:
        n_vectors = len(matrix)
        n_blocks = sum(len(blocks.blocks) for blocks in layouts)
        part_blocks = np.repeat(np.arange(n_blocks, dtype=np.uint32), parts_per_block)
    sizes, kind, graph_build = write_vectors(
        directory,
        matrix,
        all_keys,
        exact_search_max_blocks=given.exact_search_max_blocks,
        parent=_graph_parent(given.parent, manifest),
        part_blocks=part_blocks,
    )
    floor = None
    if given.probes is not None:
        row_start = np.concatenate([[0], np.cumsum(parts_per_block)]).astype(np.int64)
        floor = calibrate_floor(
            best_block_scores(matrix, row_start, np.asarray(given.probes), layout.scoring),
            manifest.retrieval.min_similarity if manifest.retrieval else 0.0,
            given.probes_version,
        )
    return sizes, kind, graph_build, floor, n_vectors


def _carry_source(parent: Path | None) -> Snapshot | None:
    """The parent snapshot, opened, when its folded text and BM25 postings are what this
    build would compute (same tokenizer); None otherwise (everything is computed afresh)."""
    if parent is None:
        return None
    try:
        source = Snapshot.open(parent)
    except SnapshotError:
        return None
    if source.header.tokenizer_version != TOKENIZER_VERSION:
        source.close()
        return None
    return source


def _known_section_counts(
    work: Sequence[PreparedDocument | int], parent: Snapshot | None
) -> list[list[SectionCounts] | None]:
    """Per document, its heading-path counts as prepared, or from the parent when carried
    over unchanged (None: not known, the build counts them)."""
    paths = None if parent is None else parent.section_paths()
    return [
        item.sections
        if isinstance(item, PreparedDocument)
        else (None if paths is None else paths.document_counts(item))
        for item in work
    ]


def _bm25_items(
    work: Sequence[PreparedDocument | int], parent: BlockStore | None
) -> Iterator[TermCounts | int]:
    """Per document in ordinal order: its term counts, or the ordinals of its blocks in
    `parent` when it is carried over unchanged."""
    for item in work:
        if isinstance(item, PreparedDocument):
            yield item.counts
        elif parent is not None:
            yield from parent.documents[item].block_range
        else:
            raise ValueError("a document carried over from a parent, but no parent given")


def _graph_parent(parent: Path | None, manifest: SnapshotManifest) -> Path | None:
    """The parent directory when its HNSW graph can be extended: same embedding, a graph."""
    if parent is None:
        return None
    try:
        parent_manifest = read_manifest(parent)
    except SnapshotError:
        return None
    if parent_manifest.vector_index != "hnsw" or parent_manifest.embedding != manifest.embedding:
        return None
    if (parent_manifest.vector_layout or VectorLayout()) != (
        manifest.vector_layout or VectorLayout()
    ):
        return None
    return parent


def read_manifest(directory: Path) -> SnapshotManifest:
    """The manifest of a complete snapshot; SnapshotError when missing or of a newer format,
    ManifestDamaged when it is there but unreadable or corrupt."""
    try:
        raw = (directory / MANIFEST).read_bytes()
    except FileNotFoundError:
        raise SnapshotError(f"{directory}: no {MANIFEST}; the snapshot is incomplete") from None
    except OSError as e:
        raise ManifestDamaged(f"{directory}: cannot read {MANIFEST}: {e}") from e
    try:
        manifest = msgspec.json.decode(raw, type=SnapshotManifest)
    except msgspec.DecodeError as e:
        raise ManifestDamaged(f"{directory}: {MANIFEST} is corrupt: {e}") from e
    if manifest.format_version > SNAPSHOT_FORMAT:
        raise SnapshotError(
            f"{directory}: snapshot format {manifest.format_version} is newer than this app"
        )
    return manifest


class Snapshot:
    """A read-only, memory-mapped view of one snapshot; safe for concurrent readers.

    Close it (or use `with`) only after every reader is done: closing unmaps the files.
    """

    def __init__(self, path: Path, manifest: SnapshotManifest, header: SnapshotHeader) -> None:
        self.path = path
        self.manifest = manifest
        self.header = header
        self._maps: dict[str, Mapped] = {}
        self._blocks: BlockStore | None = None
        self._bm25: Bm25Index | None = None
        self._vectors: VectorIndex | None = None
        self._section_paths: SectionPaths | None = None

    @classmethod
    def open(cls, directory: Path) -> Snapshot:
        """Map a complete snapshot; SnapshotError when a file is missing, resized or corrupt."""
        manifest = read_manifest(directory)
        if manifest.status == "failed":
            raise SnapshotError(f"{directory}: the build failed; there is nothing to open")
        for name, size in manifest.files.items():
            try:
                actual = (directory / name).stat().st_size
            except OSError:
                raise SnapshotError(f"{directory}: {name} is missing") from None
            if actual != size:
                raise SnapshotError(f"{directory}: {name} has {actual} bytes, manifest {size}")
        missing = {HEADER, *blockstore.FILES, *bm25.FILES} - manifest.files.keys()
        if missing:
            raise SnapshotError(f"{directory}: manifest lists no {', '.join(sorted(missing))}")
        try:
            header = msgspec.msgpack.decode((directory / HEADER).read_bytes(), type=SnapshotHeader)
        except msgspec.DecodeError as e:
            raise SnapshotError(f"{directory}: {HEADER} is corrupt: {e}") from e
        if header.format_version > HEADER_FORMAT:
            raise SnapshotError(f"{directory}: header format {header.format_version} is too new")
        snapshot = cls(directory, manifest, header)
        try:
            snapshot._map_all()
        except (OSError, ValueError, RuntimeError, msgspec.DecodeError) as e:
            snapshot.close()
            raise SnapshotError(f"{directory}: {e}") from e
        return snapshot

    def _map_all(self) -> None:
        d, h = self.path, self.header
        for name in sorted(set(self.manifest.files) - {HEADER, blockstore.DOCUMENTS, GRAPH}):
            self._maps[name] = map_file(d / name)
        m = self._maps
        self._blocks = BlockStore(
            m[blockstore.BLOCKS_META],
            m[blockstore.TEXT_BIN],
            m[blockstore.FOLDED_BIN],
            (d / blockstore.DOCUMENTS).read_bytes(),
            m.get(blockstore.RECTS),
        )
        if self._blocks.n_blocks != h.n_blocks or len(self._blocks.documents) != h.n_documents:
            raise ValueError("block store does not match the header")
        self._bm25 = Bm25Index(
            h.bm25,
            m[bm25.TERMS],
            m[bm25.DICT],
            m[bm25.POSTINGS],
            m[bm25.TF],
            m[bm25.LENGTHS],
            m.get(bm25.KEYS),  # absent from snapshots written before it: derived on first use
        )
        if h.vector_index != "none":
            self._vectors = VectorIndex(
                m[MATRIX],
                m[KEYS],
                m[ORDINALS],
                d / GRAPH if h.vector_index == "hnsw" else None,
                n_blocks=h.n_blocks,
                dim=h.dim,
                exact_search_max_blocks=h.exact_search_max_blocks,
                part_blocks=m.get(PART_BLOCKS) if h.n_vectors else None,
                scoring=h.part_scoring,
            )

    def close(self) -> None:
        """Unmap every file. Idempotent; the snapshot is unusable afterwards."""
        for part in (self._vectors, self._bm25, self._blocks):
            if part is not None:
                part.release()
        self._vectors = self._bm25 = self._blocks = None
        self._section_paths = None
        maps, self._maps = self._maps, {}
        for mapped in maps.values():
            close_map(mapped)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _store(self) -> BlockStore:
        if self._blocks is None:
            raise SnapshotError(f"{self.path}: snapshot is closed")
        return self._blocks

    @property
    def documents(self) -> tuple[DocumentInfo, ...]:
        return self._store().documents

    @property
    def n_blocks(self) -> int:
        return self.header.n_blocks

    def doc_ordinal(self, doc_id: str) -> int | None:
        return self._store().doc_ordinal(doc_id)

    def block_ordinal(self, doc_id: str, block_id: str) -> int | None:
        """The ordinal of the block cited as `doc_id#block_id`, or None."""
        store = self._store()
        doc = store.doc_ordinal(doc_id)
        return None if doc is None else store.block_ordinal(doc, block_id)

    def block(self, ordinal: int) -> Block:
        store = self._store()
        doc, block_index, section, page_start, page_end, tokens, *_ = store.row(ordinal)
        return Block(
            self,
            ordinal,
            doc,
            store.documents[doc].doc_id,
            block_index,
            store.block_ids(doc)[block_index],
            section,
            page_start or None,
            page_end or None,
            tokens,
        )

    def document_record(self, doc: int) -> DocumentRecord:
        """Document `doc` with all its blocks, as it was given to the build."""
        store = self._store()
        info = store.documents[doc]
        return DocumentRecord(
            doc_id=info.doc_id,
            content_hash=info.content_hash,
            source=info.source,
            source_label=info.source_label,
            title=info.title,
            aliases=tuple(info.aliases),
            lang=info.lang,
            format=info.format,
            pages=info.pages,
            parser_version=info.parser_version,
            chunker_version=info.chunker_version,
            sections=tuple(info.sections),
            blocks=store.block_records(doc),
            page_labels=store.page_labels(doc),
            report=self.import_report(doc),
        )

    def import_report(self, doc: int) -> ImportReport | None:
        """Document `doc`'s import report with its parse time; None when it was imported
        before reports were kept."""
        info = self._store().documents[doc]
        if info.report is None:
            return None
        listed = self.manifest.documents  # in the block store's order
        same = doc < len(listed) and listed[doc].doc_id == info.doc_id
        seconds = listed[doc].parse_seconds if same else None
        return msgspec.structs.replace(info.report, parse_seconds=seconds)

    def block_rects(self, ordinal: int) -> tuple[PageRect, ...]:
        """Where the block is printed in its PDF: (page, x0, y0, x1, y1) in points; () when
        it is not from a PDF or the snapshot was built before rects were kept."""
        return self._store().block_rects(ordinal)

    def page_labels(self, doc: int) -> tuple[str, ...]:
        """Document `doc`'s printed page labels by page index; () when it has none."""
        return self._store().page_labels(doc)

    def section_paths(self) -> SectionPaths | None:
        """The heading-path field written at build time (decoded on first call, then kept);
        None for a snapshot built before it was written or with another tokenizer."""
        self._store()
        if self._section_paths is None and SECTION_PATHS in self.manifest.files:
            paths = SectionPaths(self._maps[SECTION_PATHS])
            if paths.tokenizer_version != TOKENIZER_VERSION:
                return None
            self._section_paths = paths
        return self._section_paths

    def block_sections(self, start: int = 0, end: int | None = None) -> npt.NDArray[np.int64]:
        """Section ordinal (within its document) of each block in ordinals [start, end), copied."""
        meta = self._store().meta
        return np.asarray(meta["section"][start:end], dtype=np.int64)

    def bm25_search(
        self, query: str, k: int, docs: Sequence[int] | None = None
    ) -> list[tuple[int, float]]:
        """(ordinal, score), score desc then ordinal asc; only blocks holding a query term."""
        store = self._store()
        assert self._bm25 is not None
        if self.header.tokenizer_version != TOKENIZER_VERSION:
            raise SnapshotError(
                f"{self.path}: indexed with tokenizer {self.header.tokenizer_version}, this app "
                f"tokenizes queries with {TOKENIZER_VERSION}; the snapshot must be rebuilt"
            )
        ranges = None if docs is None else store.ranges(docs)
        return self._bm25.search(query_tokens(query), k, ranges)

    def bm25_scores(
        self, tokens: Sequence[str], docs: Sequence[int] | None = None
    ) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.float64]]:
        """(ascending ordinals, BM25 scores) of every block in scope holding one of `tokens`.

        `tokens` are index tokens used as given (not re-tokenised); unranked, for callers that
        combine BM25 with other evidence. Scores equal those of `bm25_search` for the same tokens.
        """
        store = self._store()
        assert self._bm25 is not None
        ranges = None if docs is None else store.ranges(docs)
        return self._bm25.scores(tokens, ranges)

    def vector_search(
        self, query: npt.NDArray[np.floating], k: int, docs: Sequence[int] | None = None
    ) -> list[tuple[int, float]]:
        """(ordinal, cosine similarity), similarity desc then ordinal asc."""
        store = self._store()
        if self._vectors is None:
            if store.n_blocks == 0:
                return []
            raise SnapshotError(f"{self.path}: snapshot has no vectors")
        return self._vectors.search(query, k, store.ranges(docs))

    def lead_vectors(self, ordinals: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
        """[len(ordinals), dim] float32: the first stored vector of each block (with sentence
        windows and `with_block`, the vector of the whole block)."""
        store = self._store()
        if self._vectors is None:
            raise SnapshotError(f"{self.path}: snapshot has no vectors")
        if len(ordinals) and (int(ordinals.min()) < 0 or int(ordinals.max()) >= store.n_blocks):
            raise IndexError("block ordinal out of range")
        return self._vectors.lead_rows(ordinals)

    def doc_part_counts(self, doc: int) -> npt.NDArray[np.int64] | None:
        """How many vectors each block of document `doc` has, in block order; None when the
        snapshot keeps one vector per block."""
        store = self._store()
        if self._vectors is None or not self.header.n_vectors:
            return None
        info = store.documents[doc]
        return self._vectors.part_counts(info.block_start, info.block_start + info.block_count)

    def doc_vectors(self, doc: int) -> npt.NDArray[np.float32]:
        """[block_count, dim] float32 copy of a document's stored (float16) vectors (with
        several per block: [parts, dim], see `doc_part_counts`).

        Feeding them back into build_snapshot reproduces the stored rows bit for bit.
        """
        store = self._store()
        if self._vectors is None:
            raise SnapshotError(f"{self.path}: snapshot has no vectors")
        info = store.documents[doc]
        return self._vectors.rows(info.block_start, info.block_start + info.block_count)

    def scan(self, term: str, docs: Sequence[int] | None = None) -> list[tuple[int, int]]:
        """(ordinal, count) of every block in scope holding fold(term), in ordinal order."""
        store = self._store()
        return scan_folded(store.folded, store.folded_starts(), fold(term), store.ranges(docs))

    def snippet(self, ordinal: int, term: str, width: int = 60) -> str:
        """Original text around the first occurrence of fold(term) in the block."""
        store = self._store()
        store.row(ordinal)  # range check
        return snippet_of(store.block_text(ordinal), store.folded_text(ordinal), fold(term), width)


def verify_snapshot(directory: Path) -> VerifyResult:
    """Re-hash every file and compare sizes and the content hash with the manifest."""
    try:
        manifest = read_manifest(directory)
    except SnapshotError as e:
        return VerifyResult(ok=False, expected="", actual="", problems=[str(e)])
    problems: list[str] = []
    hashes: dict[str, str] = {}
    for name, size in sorted(manifest.files.items()):
        path = directory / name
        try:
            actual_size = path.stat().st_size
            hashes[name] = file_sha256(path)
        except OSError as e:
            problems.append(f"{name}: cannot read ({e.strerror or e})")
            continue
        if actual_size != size:
            problems.append(f"{name}: {actual_size} bytes, manifest says {size}")
    present = {p.name for p in directory.iterdir()} - {MANIFEST}
    for extra in sorted(present - manifest.files.keys()):
        problems.append(f"{extra}: not part of the snapshot")
    actual = content_hash(manifest, hashes) if len(hashes) == len(manifest.files) else ""
    if actual != manifest.content_hash:
        problems.append(f"content hash {actual or '(incomplete)'} != {manifest.content_hash}")
    return VerifyResult(
        ok=not problems, expected=manifest.content_hash, actual=actual, problems=problems
    )
