"""Record types of the knowledge base: one chunked document and the snapshot manifest.

These are the on-disk contracts shared by the builder, the readers and the ingest pipeline.
They evolve only by appending fields with defaults (msgspec schema evolution); never rename.
"""

from __future__ import annotations

from typing import Literal

import msgspec

RECORD_FORMAT = 1
SNAPSHOT_FORMAT = 1

SnapshotStatus = Literal["building", "ready", "ready_partial", "failed"]
FailureStage = Literal["read", "parse", "outline", "chunk", "embed", "index"]


class SectionRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One heading of a document's outline, in document order."""

    path: str  # unique within the document; components joined by PATH_SEPARATOR
    title: str  # the heading as printed
    ordinal: int  # 0-based position in document order
    depth: int  # 1 = top level
    parent: int  # ordinal of the parent section, -1 for top level
    direct_blocks: int
    subtree_blocks: int
    direct_tokens: int
    subtree_tokens: int
    first_sentence: str
    page: int | None = None  # 1-based physical page where the section starts (PDF)


# Where a block is printed: (1-based page, x0, y0, x1, y1) in PDF points from the page's top
# left, to 0.1 pt; consecutive lines of the same width merged into one rectangle.
PageRect = tuple[int, float, float, float, float]


class BlockRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One chunk of a document: never crosses a section boundary."""

    block_index: int  # 0-based, document order
    block_id: str  # stable for the same document content and chunker version
    section: int  # ordinal of the section the block belongs to
    text: str
    tokens: int  # DeepSeek tokenizer count of `text`
    page_start: int | None = None  # 1-based physical pages (PDF only)
    page_end: int | None = None
    # PDF: where the block's lines are printed; () for other formats and before they were kept
    rects: tuple[PageRect, ...] = ()
    # Text recognised by OCR: the lowest confidence (0..1) of its scanned pages; None when
    # every character came from a text layer.
    ocr_confidence: float | None = None


class ImportWarning(msgspec.Struct, frozen=True, kw_only=True):
    """Something a person should know about a document that was imported anyway."""

    code: str  # machine reason, e.g. "replaced_bytes", "ocr_page_limit", "images_not_read"
    message: str  # a sentence a person understands (English; the UI words it by `code`)
    pages: tuple[int, ...] = ()  # 1-based pages concerned (PDF), () when not page-bound
    count: int = 0  # how many of what the code names (bytes, images, pages), 0 when unsaid


class ImportReport(msgspec.Struct, frozen=True, kw_only=True):
    """How the import of one document went, as parsing found it: what was read, how, and
    what a person should know. Kept in the snapshot beside the document."""

    pages: int | None = None  # PDF pages; None for formats without pages
    pages_with_text: int | None = None  # PDF pages whose text was imported (OCR'd ones too)
    pages_ocr: int = 0  # PDF pages whose text was recognised by OCR
    ocr_confidence: float | None = None  # over every recognised character, 0..1
    low_confidence_pages: tuple[int, ...] = ()  # 1-based pages recognised with low confidence
    # Every recognised page and its confidence (1-based page, 0..1), in page order: what marks
    # a block as read from a scan wherever the snapshot shows it.
    ocr_page_confidence: tuple[tuple[int, float], ...] = ()
    ocr_engine: str = ""  # OCR engine and model versions, for a document with OCR'd pages
    chars: int = 0  # characters of text imported
    cjk_share: float = 0.0  # share of those (spaces aside) that are Chinese/Japanese/Korean
    lang: str = ""  # "en" | "zh"
    warnings: tuple[ImportWarning, ...] = ()
    # Seconds spent reading the document (summed over the worker processes that read it). In
    # a snapshot it is kept in the manifest, outside the content hash: it names a build.
    parse_seconds: float | None = None

    def ocr_confidence_of(self, first: int | None, last: int | None) -> float | None:
        """The lowest confidence of the recognised pages among `first`..`last` (a block's
        pages); None when none of them was recognised by OCR."""
        if first is None:
            return None
        end = last if last is not None else first
        found = [c for page, c in self.ocr_page_confidence if first <= page <= end]
        return min(found) if found else None


class DocumentRecord(msgspec.Struct, frozen=True, kw_only=True):
    """A fully parsed and chunked document: the unit that enters a snapshot whole or not at all."""

    format_version: int = RECORD_FORMAT
    doc_id: str  # derived from the content hash: stable across snapshots and renames
    content_hash: str  # sha256 of the file's bytes
    source: str  # identity inside the collection: path relative to the import root
    source_label: str  # user-facing, editable; defaults to `source`
    title: str
    aliases: tuple[str, ...] = ()
    lang: str = "en"  # "en" | "zh"
    format: str = "text"  # pdf | epub | docx | html | markdown | text
    pages: int | None = None
    parser_version: str = ""
    chunker_version: str = ""
    sections: tuple[SectionRecord, ...] = ()
    blocks: tuple[BlockRecord, ...] = ()
    page_labels: tuple[str, ...] = ()  # PDF: printed label of each page ("iv", "40"), () if none
    report: ImportReport | None = None  # None: imported before import reports were kept


class FailedDocument(msgspec.Struct, frozen=True, kw_only=True):
    source: str
    stage: FailureStage
    reason: str  # machine code, e.g. "no_text_layer", "encrypted", "corrupt"
    message: str = ""  # what happened and what to do, for a person


class SkippedFile(msgspec.Struct, frozen=True, kw_only=True):
    source: str
    reason: str  # e.g. "unsupported_type"


class EmbeddingSpec(msgspec.Struct, frozen=True, kw_only=True):
    provider: str  # "local" | "openai_compatible"
    model: str
    dimensions: int


VectorGranularity = Literal["block", "sentence"]
PartScoring = Literal["max", "top2_mean"]


class VectorLayout(msgspec.Struct, frozen=True, kw_only=True):
    """How blocks became vectors: one per block, or several per block (windows of its
    sentences) with a block scored by its best-matching parts. The block stays the citation
    unit either way. A snapshot without one has one vector per block."""

    granularity: VectorGranularity = "block"
    window: int = 1  # sentences per window ("sentence" only)
    stride: int = 1  # sentences between window starts
    scoring: PartScoring = "max"  # a block's score from its parts' similarities
    windows_version: str = ""  # the splitter (engine/embedding/windows.py) that made them
    # The whole block is one more part ("sentence" only): a question that paraphrases the
    # block as a whole still finds it when no single window says enough.
    with_block: bool = False


class SimilarityFloor(msgspec.Struct, frozen=True, kw_only=True):
    """The vector similarity below which a block is no match, calibrated at build time from
    the model's own scores for fixed nonsense probes against this snapshot's vectors: each
    probe's best block score is a sample of what an unrelated query reaches here."""

    probes: int
    probes_version: str
    mean: float  # of the probes' best block scores
    std: float
    p95: float
    max: float
    threshold: float  # the floor search applies (never below retrieval.min_similarity)
    rule: str  # how threshold follows from the statistics


class RetrievalParams(msgspec.Struct, frozen=True, kw_only=True):
    bm25_k1: float
    bm25_b: float
    rrf_k: int
    top_k: int
    min_similarity: float
    exact_search_max_blocks: int


class BuildStats(msgspec.Struct, frozen=True, kw_only=True):
    """Figures that reconcile:

    documents_in == documents_succeeded + documents_failed;
    blocks_indexed == blocks_chunked + blocks_carried;
    blocks_chunked == blocks_reused + blocks_embedded + embedding_cache_hits.
    """

    documents_in: int = 0
    documents_succeeded: int = 0
    documents_failed: int = 0
    documents_reused: int = 0  # carried over unchanged from the parent snapshot
    files_skipped: int = 0
    pages: int = 0
    blocks_chunked: int = 0
    blocks_embedded: int = 0
    blocks_indexed: int = 0
    embedding_tokens: int = 0  # as counted by the embedding vendor; never mixed with chat tokens
    embedding_cache_hits: int = 0
    # Documents of the parent snapshot that this batch did not touch, carried over as they were.
    documents_carried: int = 0
    blocks_carried: int = 0
    blocks_reused: int = 0  # blocks of documents imported again unchanged (no work done)


class GraphBuild(msgspec.Struct, frozen=True, kw_only=True):
    """How a snapshot's HNSW graph was built. With threads > 1 the graph's bytes (and so the
    content hash) differ from build to build of the same vectors; the graph of one snapshot
    never changes, so its searches are deterministic."""

    library: str  # "usearch 2.26.6"
    threads: int  # insertion threads of this build (of the vectors it added)
    connectivity: int  # HNSW M
    expansion_add: int  # efConstruction
    expansion_search: int  # ef used by this app's searches
    from_parent: bool = False  # extended from the parent snapshot's graph
    vectors_added: int = 0  # vectors inserted by this build
    vectors_removed: int = 0  # parent keys removed by this build


class ManifestDocument(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    doc_id: str
    source: str
    content_hash: str
    blocks: int
    warnings: int = 0  # import warnings of the document (its report)
    parse_seconds: float | None = None  # its report's; not part of the content hash


class SnapshotManifest(msgspec.Struct, frozen=True, kw_only=True):
    format_version: int = SNAPSHOT_FORMAT
    snapshot_id: str
    parent_id: str | None
    collection: str
    status: SnapshotStatus
    created_at: str  # ISO-8601 UTC; not part of the content hash
    documents: tuple[ManifestDocument, ...] = ()
    failed_documents: tuple[FailedDocument, ...] = ()
    skipped: tuple[SkippedFile, ...] = ()
    embedding: EmbeddingSpec | None = None
    parser_versions: dict[str, str] = {}
    chunker_version: str = ""
    tokenizer_version: str = ""
    retrieval: RetrievalParams | None = None
    vector_index: Literal["exact", "hnsw", "none"] = "none"
    stats: BuildStats = BuildStats()
    files: dict[str, int] = {}  # file name -> size in bytes, checked on open
    content_hash: str = ""  # sha256 over every file and the deterministic manifest fields
    vector_graph: GraphBuild | None = None  # how the HNSW graph was built, when there is one
    vector_layout: VectorLayout | None = None  # None: one vector per block
    similarity_floor: SimilarityFloor | None = None  # None: built before floors were calibrated
