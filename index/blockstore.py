"""The block store of a snapshot: document metadata, block metadata, block text and folded text,
and where each PDF block is printed (rects.bin).

Blocks are stored in document order, then block_index; a block's ordinal is its row. Files are
written once by `write_block_store` and read through memory maps by `BlockStore`, which never
reads a whole text file and never hands out arrays that view the maps. rects.bin is optional:
snapshots written before it existed open without it (their blocks have no rects), and an
older build maps it without reading it.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path
from typing import NamedTuple

import msgspec
import numpy as np
import numpy.typing as npt

from index.fsutil import Mapped, write_new_file
from index.records import BlockRecord, DocumentRecord, ImportReport, PageRect, SectionRecord
from index.scan import block_starts, scan_form

BLOCKS_META = "blocks.meta"
TEXT_BIN = "text.bin"
FOLDED_BIN = "folded.bin"
DOCUMENTS = "documents.msgpack"
RECTS = "rects.bin"
FILES = (BLOCKS_META, TEXT_BIN, FOLDED_BIN, DOCUMENTS)  # every snapshot has these; RECTS optional

DOCUMENTS_FORMAT = 1
# rects.bin's own version, in its first field: a reader that does not know it ignores the rects
# (the viewer then finds the block by its text) rather than refusing the snapshot. It appeared
# after DOCUMENTS_FORMAT 1 without a bump: an added optional file, as an appended field is.
RECTS_FORMAT = 1

# Little-endian and packed, so the file reads the same on every platform.
BLOCK_DTYPE = np.dtype(
    [
        ("doc", "<u4"),
        ("block_index", "<u4"),
        ("section", "<u4"),
        ("page_start", "<u4"),  # 0 = no page
        ("page_end", "<u4"),
        ("tokens", "<u4"),
        ("text_offset", "<u8"),
        ("text_length", "<u4"),
        ("folded_offset", "<u8"),
        ("folded_length", "<u4"),
    ]
)

# rects.bin: RECTS_HEADER, then n_blocks + 1 cumulative rect counts ("<u4"), then every block's
# rects in ordinal order. Coordinates in tenths of a point (pages up to 6553.5 pt, 2.3 m).
RECTS_HEADER = np.dtype([("format", "<u4"), ("blocks", "<u4")])
RECT_DTYPE = np.dtype([("page", "<u4"), ("x0", "<u2"), ("y0", "<u2"), ("x1", "<u2"), ("y1", "<u2")])
_TENTHS_MAX = 65535

# Folded block texts are joined with NUL so a scan never matches across two blocks.
FOLDED_SEPARATOR = b"\x00"


class DocumentInfo(msgspec.Struct, frozen=True, kw_only=True):
    """A document of a snapshot; its blocks are the ordinals in `block_range`."""

    doc_id: str
    content_hash: str
    source: str
    source_label: str
    title: str
    aliases: tuple[str, ...] = ()
    lang: str = "en"
    format: str = "text"
    pages: int | None = None
    parser_version: str = ""
    chunker_version: str = ""
    sections: tuple[SectionRecord, ...] = ()
    block_start: int = 0
    block_count: int = 0
    # Its import report, parse time left out (the manifest keeps that, outside the content
    # hash); None in files written before reports were kept.
    report: ImportReport | None = None

    @property
    def block_range(self) -> range:
        return range(self.block_start, self.block_start + self.block_count)


class _DocumentsFile(msgspec.Struct, kw_only=True):
    format_version: int = DOCUMENTS_FORMAT
    documents: tuple[DocumentInfo, ...] = ()
    block_ids: tuple[tuple[str, ...], ...] = ()  # parallel to documents, block_index order
    # parallel to documents: printed page labels (PDF); () in files written before labels
    page_labels: tuple[tuple[str, ...], ...] = ()


class _LazyDocumentsFile(msgspec.Struct, kw_only=True):
    """The same file with block ids and page labels left undecoded until they are read."""

    format_version: int = DOCUMENTS_FORMAT
    documents: tuple[DocumentInfo, ...] = ()
    block_ids: tuple[msgspec.Raw, ...] = ()
    page_labels: tuple[msgspec.Raw, ...] = ()


def ordered_blocks(doc: DocumentRecord) -> tuple[list[BlockRecord], list[int]]:
    """The blocks of `doc` in block_index order and the permutation that sorted them.

    Raises ValueError for what would make a snapshot lie: block indexes that are not exactly
    0..n-1, duplicate block ids, a section ordinal outside the outline.
    """
    order = sorted(range(len(doc.blocks)), key=lambda i: doc.blocks[i].block_index)
    blocks = [doc.blocks[i] for i in order]
    ids: set[str] = set()
    for position, block in enumerate(blocks):
        where = f"document {doc.doc_id!r} ({doc.source}) block {block.block_index}"
        if block.block_index != position:
            raise ValueError(f"{where}: block indexes must be 0..{len(blocks) - 1}")
        if block.block_id in ids:
            raise ValueError(f"{where}: duplicate block id {block.block_id!r}")
        ids.add(block.block_id)
        if not 0 <= block.section < len(doc.sections):
            raise ValueError(f"{where}: section {block.section} not in the outline")
        if block.tokens < 0:
            raise ValueError(f"{where}: negative token count")
    return blocks, order


class BlockLayout(NamedTuple):
    """A document's blocks as the store keeps them: in block_index order (`order` is the
    permutation of doc.blocks that sorts them), their UTF-8 texts joined, each one's length."""

    blocks: list[BlockRecord]
    order: list[int]
    text: bytes
    text_lengths: npt.NDArray[np.uint32]


class FoldedBlocks(NamedTuple):
    """The scan forms of a document's ordered blocks, UTF-8, joined by FOLDED_SEPARATOR."""

    data: bytes
    lengths: npt.NDArray[np.uint32]


def layout(doc: DocumentRecord) -> BlockLayout:
    """The ordered blocks and encoded texts of `doc`; ValueError as `ordered_blocks`."""
    blocks, order = ordered_blocks(doc)
    encoded = [b.text.encode("utf-8") for b in blocks]
    lengths = np.fromiter(map(len, encoded), np.uint32, len(encoded))
    return BlockLayout(blocks, order, b"".join(encoded), lengths)


def fold_blocks(blocks: Sequence[BlockRecord]) -> tuple[list[str], FoldedBlocks]:
    """The scan form of each block, and all of them as folded.bin stores them."""
    folds = [scan_form(b.text) for b in blocks]
    encoded = [f.encode("utf-8") for f in folds]
    lengths = np.fromiter(map(len, encoded), np.uint32, len(encoded))
    return folds, FoldedBlocks(FOLDED_SEPARATOR.join(encoded), lengths)


def same_in_parent(
    parent: BlockStore | None, doc: DocumentRecord, blocks: BlockLayout
) -> int | None:
    """The ordinal of `doc` in `parent` when the parent holds exactly this document (same
    metadata, outline, block ids, fields and text bytes), else None."""
    if parent is None:
        return None
    ordinal = parent.doc_ordinal(doc.doc_id)
    if ordinal is None:
        return None
    theirs = parent.documents[ordinal]
    info = _info(doc, theirs.block_start, len(blocks.blocks))
    if info != theirs:
        return None
    if parent.block_ids(ordinal) != tuple(b.block_id for b in blocks.blocks):
        return None
    source = parent.meta[theirs.block_range]
    rows = _rows(0, blocks)
    for field in _COMPARED:
        if not np.array_equal(source[field], rows[field]):
            return None
    if not blocks.blocks:
        return ordinal
    start = int(source["text_offset"][0])
    end = int(source["text_offset"][-1]) + int(source["text_length"][-1])
    if parent.text[start:end] != blocks.text:
        return None
    return ordinal


def _rows(doc_ordinal: int, blocks: BlockLayout) -> npt.NDArray[np.void]:
    """The block rows of one document, offsets and folded lengths left 0."""
    rows = np.zeros(len(blocks.blocks), dtype=BLOCK_DTYPE)
    ordered = blocks.blocks
    rows["doc"] = doc_ordinal
    rows["block_index"] = [b.block_index for b in ordered]
    rows["section"] = [b.section for b in ordered]
    rows["page_start"] = [b.page_start or 0 for b in ordered]
    rows["page_end"] = [b.page_end or 0 for b in ordered]
    rows["tokens"] = [b.tokens for b in ordered]
    rows["text_length"] = blocks.text_lengths
    return rows


def write_block_store(
    directory: Path,
    documents: Sequence[DocumentRecord],
    blocks: Sequence[BlockLayout],
    folded: Sequence[FoldedBlocks | int],
    parent: BlockStore | None = None,
) -> dict[str, int]:
    """Write the block store files for `documents` laid out as `blocks`; return the sizes.

    `folded[i]` is document i's folded blocks, or its ordinal in `parent` when the parent
    holds exactly this document (`same_in_parent`) and folds like this build (same
    TOKENIZER_VERSION): its folded text is then copied. The files are the same, byte for
    byte, either way.
    """
    meta = np.concatenate(
        [_rows(i, b) for i, b in enumerate(blocks)] or [np.zeros(0, dtype=BLOCK_DTYPE)]
    )
    folded_parts: list[bytes] = []  # per document with blocks: its folded blocks joined by NUL
    infos: list[DocumentInfo] = []
    all_ids: list[tuple[str, ...]] = []
    row = 0
    for doc, doc_blocks, doc_folded in zip(documents, blocks, folded, strict=True):
        count = len(doc_blocks.blocks)
        infos.append(_info(doc, row, count))
        all_ids.append(tuple(b.block_id for b in doc_blocks.blocks))
        if count:
            rows = meta[row : row + count]
            if isinstance(doc_folded, FoldedBlocks):
                rows["folded_length"] = doc_folded.lengths
                folded_parts.append(doc_folded.data)
            elif parent is None:
                raise ValueError("folded text to be copied from a parent, but no parent given")
            else:
                source = parent.meta[parent.documents[doc_folded].block_range]
                rows["folded_length"] = source["folded_length"]
                start = int(source["folded_offset"][0])
                end = int(source["folded_offset"][-1]) + int(source["folded_length"][-1])
                folded_parts.append(parent.folded[start:end])
        row += count
    text_lengths = meta["text_length"].astype(np.uint64)
    folded_lengths = meta["folded_length"].astype(np.uint64)
    meta["text_offset"] = np.cumsum(text_lengths) - text_lengths
    separators = np.arange(row, dtype=np.uint64) * len(FOLDED_SEPARATOR)
    meta["folded_offset"] = np.cumsum(folded_lengths) - folded_lengths + separators
    documents_file = _DocumentsFile(
        documents=tuple(infos),
        block_ids=tuple(all_ids),
        page_labels=tuple(doc.page_labels for doc in documents),
    )
    return {
        RECTS: write_new_file(directory / RECTS, _rects_file(blocks)),
        BLOCKS_META: write_new_file(directory / BLOCKS_META, meta.tobytes()),
        TEXT_BIN: write_new_file(directory / TEXT_BIN, [b.text for b in blocks]),
        FOLDED_BIN: write_new_file(directory / FOLDED_BIN, FOLDED_SEPARATOR.join(folded_parts)),
        DOCUMENTS: write_new_file(
            directory / DOCUMENTS, msgspec.msgpack.encode(documents_file, order="deterministic")
        ),
    }


def _rects_file(blocks: Sequence[BlockLayout]) -> bytes:
    """rects.bin for the blocks of every document, in ordinal order."""
    ordered = [b for layout_ in blocks for b in layout_.blocks]
    counts = np.fromiter((len(b.rects) for b in ordered), np.uint64, len(ordered))
    offsets = np.zeros(len(ordered) + 1, dtype="<u4")
    offsets[1:] = np.cumsum(counts)
    rows = np.zeros(int(offsets[-1]), dtype=RECT_DTYPE)
    flat = [r for b in ordered for r in b.rects]
    if flat:
        table = np.asarray(flat, dtype=np.float64)
        rows["page"] = table[:, 0]
        tenths = np.clip(np.rint(table[:, 1:] * 10), 0, _TENTHS_MAX)
        for k, name in enumerate(("x0", "y0", "x1", "y1")):
            rows[name] = tenths[:, k]
    header = np.array([(RECTS_FORMAT, len(ordered))], dtype=RECTS_HEADER)
    return header.tobytes() + offsets.tobytes() + rows.tobytes()


class _Rects:
    """The rects of every block, read from rects.bin's map; empty when the snapshot has none
    or they are in a format this build does not know."""

    def __init__(self, data: Mapped | None, n_blocks: int) -> None:
        self.offsets: npt.NDArray[np.uint32] = np.zeros(0, dtype="<u4")
        self.rows: npt.NDArray[np.void] = np.zeros(0, dtype=RECT_DTYPE)
        if data is None or len(data) < RECTS_HEADER.itemsize:
            return
        header = np.frombuffer(data, dtype=RECTS_HEADER, count=1)[0]
        if int(header["format"]) != RECTS_FORMAT:
            return
        if int(header["blocks"]) != n_blocks:
            raise ValueError(f"{RECTS} is for {int(header['blocks'])} blocks, not {n_blocks}")
        start = RECTS_HEADER.itemsize
        self.offsets = np.frombuffer(data, dtype="<u4", count=n_blocks + 1, offset=start)
        start += self.offsets.nbytes
        if len(data) - start != int(self.offsets[-1]) * RECT_DTYPE.itemsize:
            raise ValueError(f"{RECTS} does not hold the rects it counts")
        self.rows = np.frombuffer(data, dtype=RECT_DTYPE, offset=start)

    def of(self, start: int, end: int) -> list[tuple[PageRect, ...]]:
        """The rects of blocks [start, end), one tuple per block (one pass over their rows)."""
        if not len(self.offsets):
            return [()] * (end - start)
        bounds = self.offsets[start : end + 1].tolist()
        rows = self.rows[bounds[0] : bounds[-1]]
        flat = list(
            zip(
                rows["page"].tolist(),
                (rows["x0"] / 10).tolist(),
                (rows["y0"] / 10).tolist(),
                (rows["x1"] / 10).tolist(),
                (rows["y1"] / 10).tolist(),
                strict=True,
            )
        )
        base = bounds[0]
        return [tuple(flat[lo - base : hi - base]) for lo, hi in pairwise(bounds)]


_COMPARED = ("block_index", "section", "page_start", "page_end", "tokens", "text_length")


def _info(doc: DocumentRecord, block_start: int, block_count: int) -> DocumentInfo:
    return DocumentInfo(
        doc_id=doc.doc_id,
        content_hash=doc.content_hash,
        source=doc.source,
        source_label=doc.source_label,
        title=doc.title,
        aliases=doc.aliases,
        lang=doc.lang,
        format=doc.format,
        pages=doc.pages,
        parser_version=doc.parser_version,
        chunker_version=doc.chunker_version,
        sections=doc.sections,
        block_start=block_start,
        block_count=block_count,
        report=None
        if doc.report is None
        else msgspec.structs.replace(doc.report, parse_seconds=None),
    )


class BlockStore:
    """Read side of the block store over memory maps; safe for concurrent readers."""

    def __init__(
        self,
        meta: Mapped,
        text: Mapped,
        folded: Mapped,
        documents: bytes,
        rects: Mapped | None = None,
    ) -> None:
        if len(meta) % BLOCK_DTYPE.itemsize:
            raise ValueError(f"{BLOCKS_META} is not a whole number of rows")
        decoded = msgspec.msgpack.decode(documents, type=_LazyDocumentsFile)
        if decoded.format_version != DOCUMENTS_FORMAT:
            raise ValueError(f"{DOCUMENTS} has format {decoded.format_version}")
        if len(decoded.block_ids) != len(decoded.documents):
            raise ValueError(f"{DOCUMENTS}: block ids do not match documents")
        if decoded.page_labels and len(decoded.page_labels) != len(decoded.documents):
            raise ValueError(f"{DOCUMENTS}: page labels do not match documents")
        self.documents: tuple[DocumentInfo, ...] = decoded.documents
        self._raw_ids = decoded.block_ids
        self._raw_labels = decoded.page_labels
        self._ids: dict[int, tuple[str, ...]] = {}
        self._id_maps: dict[int, dict[str, int]] = {}
        self.meta: npt.NDArray[np.void] = np.frombuffer(meta, dtype=BLOCK_DTYPE)
        self.text = text
        self.folded = folded
        self.n_blocks = len(self.meta)
        expected = sum(d.block_count for d in self.documents)
        if expected != self.n_blocks:
            raise ValueError(f"{BLOCKS_META} has {self.n_blocks} rows, documents say {expected}")
        self._folded_starts: list[int] | None = None
        self._by_doc_id = {d.doc_id: i for i, d in enumerate(self.documents)}
        self._rects = _Rects(rects, self.n_blocks)

    def release(self) -> None:
        """Drop every array that views the maps so they can be closed."""
        self.meta = np.zeros(0, dtype=BLOCK_DTYPE)
        self._rects = _Rects(None, 0)
        self._folded_starts = None
        self.text = b""
        self.folded = b""

    def doc_ordinal(self, doc_id: str) -> int | None:
        return self._by_doc_id.get(doc_id)

    def block_ids(self, doc: int) -> tuple[str, ...]:
        ids = self._ids.get(doc)
        if ids is None:
            ids = msgspec.msgpack.decode(self._raw_ids[doc], type=tuple[str, ...])
            self._ids[doc] = ids
        return ids

    def page_labels(self, doc: int) -> tuple[str, ...]:
        """The printed label of each page of document `doc`; () when it has none recorded."""
        if not self._raw_labels:
            return ()
        labels: tuple[str, ...] = msgspec.msgpack.decode(
            self._raw_labels[doc], type=tuple[str, ...]
        )
        return labels

    def block_rects(self, ordinal: int) -> tuple[PageRect, ...]:
        """Where block `ordinal` is printed; () for a block that is not from a PDF and for
        snapshots written before rects were kept."""
        if not 0 <= ordinal < self.n_blocks:
            raise IndexError(f"block ordinal {ordinal} out of range 0..{self.n_blocks - 1}")
        return self._rects.of(ordinal, ordinal + 1)[0]

    def block_ordinal(self, doc: int, block_id: str) -> int | None:
        """The ordinal of `block_id` in document `doc`, or None."""
        index = self._id_maps.get(doc)
        if index is None:
            index = {b: i for i, b in enumerate(self.block_ids(doc))}
            self._id_maps[doc] = index
        i = index.get(block_id)
        return None if i is None else self.documents[doc].block_start + i

    def block_records(self, doc: int) -> tuple[BlockRecord, ...]:
        """The blocks of document `doc` as records, in block_index order (one pass over its
        rows: carrying a document into the next snapshot reads every block)."""
        info = self.documents[doc]
        rows = self.meta[info.block_range]
        starts = rows["text_offset"].tolist()
        ends = (rows["text_offset"] + rows["text_length"]).tolist()
        text = self.text
        return tuple(
            BlockRecord(
                block_index=block_index,
                block_id=block_id,
                section=section,
                text=text[start:end].decode("utf-8"),
                tokens=tokens,
                page_start=page_start or None,
                page_end=page_end or None,
                rects=rects,
            )
            for (
                block_index,
                block_id,
                section,
                start,
                end,
                tokens,
                page_start,
                page_end,
                rects,
            ) in zip(
                rows["block_index"].tolist(),
                self.block_ids(doc),
                rows["section"].tolist(),
                starts,
                ends,
                rows["tokens"].tolist(),
                rows["page_start"].tolist(),
                rows["page_end"].tolist(),
                self._rects.of(info.block_start, info.block_start + info.block_count),
                strict=True,
            )
        )

    def row(self, ordinal: int) -> tuple[int, ...]:
        if not 0 <= ordinal < self.n_blocks:
            raise IndexError(f"block ordinal {ordinal} out of range 0..{self.n_blocks - 1}")
        return tuple(int(v) for v in self.meta[ordinal].item())

    def block_text(self, ordinal: int) -> str:
        row = self.meta[ordinal]
        start = int(row["text_offset"])
        return self.text[start : start + int(row["text_length"])].decode("utf-8")

    def folded_text(self, ordinal: int) -> str:
        row = self.meta[ordinal]
        start = int(row["folded_offset"])
        return self.folded[start : start + int(row["folded_length"])].decode("utf-8")

    def folded_starts(self) -> list[int]:
        """Block offsets in folded.bin for `scan`, built on the first scan (not at open)."""
        starts = self._folded_starts
        if starts is None:
            starts = block_starts(self.meta["folded_offset"], len(self.folded))
            self._folded_starts = starts
        return starts

    def ranges(self, docs: Sequence[int] | None) -> list[tuple[int, int]]:
        """Block ordinal ranges [start, end) covering `docs` (None = all), merged and sorted."""
        if docs is None:
            return [(0, self.n_blocks)] if self.n_blocks else []
        spans: list[tuple[int, int]] = []
        for doc in sorted(set(docs)):
            if not 0 <= doc < len(self.documents):
                raise IndexError(f"document ordinal {doc} out of range")
            info = self.documents[doc]
            if not info.block_count:
                continue
            start, end = info.block_start, info.block_start + info.block_count
            if spans and spans[-1][1] == start:
                spans[-1] = (spans[-1][0], end)
            else:
                spans.append((start, end))
        return spans
