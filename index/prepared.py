"""A document prepared for a snapshot build ahead of it, while other documents still parse.

`prepare_document` does all the per-document work of a build (block order, encoded and folded
text, BM25 term counts, heading-path counts, vector keys), so `build_snapshot` given the result
only assembles. The snapshot files are byte for byte the same with or without it. It holds no
file handles.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from index import blockstore
from index.blockstore import BlockLayout, FoldedBlocks
from index.bm25 import TermCounts, count_terms
from index.records import DocumentRecord
from index.sections import SectionCounts, section_counts
from index.textnorm import fold, folded_tokens
from index.vectors import part_key, vector_key


class PreparedDocument:
    """What a build computes for one document, computed once; made by `prepare_document`.

    Usable only with the record it was prepared from: `check` compares the identity and block
    ids and refuses any other record.
    """

    __slots__ = (
        "block_ids",
        "blocks",
        "chunker_version",
        "content_hash",
        "counts",
        "doc_id",
        "folded",
        "keys",
        "parser_version",
        "part_counts",
        "part_keys",
        "section_paths",
        "section_titles",
        "sections",
    )

    def __init__(
        self,
        record: DocumentRecord,
        blocks: BlockLayout,
        folded: FoldedBlocks,
        counts: TermCounts,
        keys: npt.NDArray[np.uint64],
        sections: list[SectionCounts],
        part_keys: npt.NDArray[np.uint64] | None = None,
        part_counts: npt.NDArray[np.int64] | None = None,
    ) -> None:
        self.doc_id = record.doc_id
        self.content_hash = record.content_hash
        self.parser_version = record.parser_version
        self.chunker_version = record.chunker_version
        self.section_titles = tuple(s.title for s in record.sections)
        self.section_paths = tuple(s.path for s in record.sections)
        self.block_ids = tuple(b.block_id for b in blocks.blocks)
        self.blocks = blocks
        self.folded = folded
        self.counts = counts
        self.keys = keys
        self.sections = sections  # its heading paths' counts (index.sections.section_counts)
        self.part_keys = part_keys  # the keys of its vectors when a block has several
        self.part_counts = part_counts  # how many parts each block has, for part_keys

    def part_keys_for(self, counts: npt.NDArray[np.int64]) -> npt.NDArray[np.uint64] | None:
        """The keys of the vectors of blocks with `counts` parts each, when prepared so."""
        if self.part_keys is None or self.part_counts is None:
            return None
        return self.part_keys if np.array_equal(self.part_counts, counts) else None

    def check(self, record: DocumentRecord) -> None:
        """ValueError unless `record` is the document this was prepared from (titles, aliases
        and labels may differ: nothing prepared depends on them)."""
        if record.doc_id != self.doc_id or record.content_hash != self.content_hash:
            raise ValueError(
                f"document {record.doc_id!r} ({record.source}) was given the preparation of "
                f"{self.doc_id!r}: prepare it again from this record"
            )
        if (
            record.parser_version != self.parser_version
            or record.chunker_version != self.chunker_version
            or len(record.blocks) != len(self.block_ids)
            or tuple(s.title for s in record.sections) != self.section_titles
            or tuple(s.path for s in record.sections) != self.section_paths
            or tuple(b.block_id for b in self.blocks.blocks) != self.block_ids
            or any(
                record.blocks[i] is not b and record.blocks[i] != b
                for i, b in zip(self.blocks.order, self.blocks.blocks, strict=True)
            )
        ):
            raise ValueError(
                f"document {record.doc_id!r} ({record.source}) differs from the record it was "
                "prepared from (parser, chunker, outline or blocks): prepare it again"
            )


class PreparedParts(NamedTuple):
    """The costly part of a preparation (folded text, BM25 term counts, vector keys, heading
    path counts): what another process computes from a record and hands back
    (`prepared_parts`), to be joined to that record where it is (`prepared_from`)."""

    folded: FoldedBlocks
    counts: TermCounts
    keys: npt.NDArray[np.uint64]
    sections: list[SectionCounts]
    part_keys: npt.NDArray[np.uint64] | None
    part_counts: npt.NDArray[np.int64] | None


def prepare_document(
    record: DocumentRecord, part_counts: npt.NDArray[np.int64] | None = None
) -> PreparedDocument:
    """Everything a snapshot build computes for `record` alone; with `part_counts` (vectors
    per block, in record order, for a layout of several), the keys of those vectors too.

    ValueError for a record no snapshot may hold (see blockstore.ordered_blocks).
    """
    return prepare_laid_out(record, blockstore.layout(record), part_counts)


def prepare_laid_out(
    record: DocumentRecord,
    blocks: BlockLayout,
    part_counts: npt.NDArray[np.int64] | None = None,
) -> PreparedDocument:
    """`prepare_document` of a record whose `blockstore.layout` is already known."""
    return PreparedDocument(record, blocks, *_parts(record, blocks, part_counts))


def prepared_parts(
    record: DocumentRecord, part_counts: npt.NDArray[np.int64] | None = None
) -> PreparedParts:
    """The costly part of `prepare_document(record, part_counts)`; ValueError as it."""
    return _parts(record, blockstore.layout(record), part_counts)


def prepared_from(record: DocumentRecord, parts: PreparedParts) -> PreparedDocument:
    """`prepare_document(record, ...)` from `prepared_parts` of an equal record (only the block
    layout, a cheap pass, is made here)."""
    blocks = blockstore.layout(record)
    if (
        len(parts.keys) != len(blocks.blocks)
        or len(parts.folded.lengths) != len(blocks.blocks)
        or len(parts.sections) != len(record.sections)
    ):
        raise ValueError(f"the prepared parts of {record.doc_id!r} are of another record")
    return PreparedDocument(record, blocks, *parts)


def _parts(
    record: DocumentRecord, blocks: BlockLayout, part_counts: npt.NDArray[np.int64] | None
) -> PreparedParts:
    folds, folded = blockstore.fold_blocks(blocks.blocks)
    # A block's BM25 tokens are those of "section title\ntext": the bag of its section's
    # folded title (folded once per section) plus the bag of its folded text.
    titles = [folded_tokens(fold(s.title)) for s in record.sections]
    counts = count_terms(
        titles[b.section] + folded_tokens(text)
        for b, text in zip(blocks.blocks, folds, strict=True)
    )
    keys = vector_keys(record.doc_id, blocks)
    if part_counts is not None:
        part_counts = np.asarray(part_counts, dtype=np.int64)
        if part_counts.shape != (len(blocks.blocks),):
            raise ValueError(f"part counts of {record.doc_id!r}: one per block")
    parts = None if part_counts is None else part_keys(record.doc_id, blocks, part_counts)
    return PreparedParts(folded, counts, keys, section_counts(record), parts, part_counts)


def vector_keys(doc_id: str, blocks: BlockLayout) -> npt.NDArray[np.uint64]:
    """The vector key of each block, in block order."""
    return np.fromiter(
        (vector_key(doc_id, b.block_id) for b in blocks.blocks), np.uint64, len(blocks.blocks)
    )


def part_keys(
    doc_id: str, blocks: BlockLayout, counts: npt.NDArray[np.int64]
) -> npt.NDArray[np.uint64]:
    """The key of each vector of blocks with several, `counts[i]` for doc.blocks[i]: block by
    block in block order, a block's parts in order."""
    ordered = np.asarray(counts, dtype=np.int64)[np.asarray(blocks.order, dtype=np.int64)]
    return np.fromiter(
        (
            part_key(doc_id, block.block_id, j)
            for block, n in zip(blocks.blocks, ordered.tolist(), strict=True)
            for j in range(n)
        ),
        np.uint64,
        int(ordered.sum()),
    )
