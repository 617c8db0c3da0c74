"""A document prepared for a snapshot build ahead of it, while other documents still parse.

`prepare_document` does all the per-document work of a build (block order, encoded and folded
text, BM25 term counts, vector keys), so `build_snapshot` given the result only assembles. The
snapshot files are byte for byte the same with or without it. It holds no file handles.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from index import blockstore
from index.blockstore import BlockLayout, FoldedBlocks
from index.bm25 import TermCounts, count_terms
from index.records import DocumentRecord
from index.textnorm import fold, folded_tokens
from index.vectors import vector_key


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
        "section_titles",
    )

    def __init__(
        self,
        record: DocumentRecord,
        blocks: BlockLayout,
        folded: FoldedBlocks,
        counts: TermCounts,
        keys: npt.NDArray[np.uint64],
    ) -> None:
        self.doc_id = record.doc_id
        self.content_hash = record.content_hash
        self.parser_version = record.parser_version
        self.chunker_version = record.chunker_version
        self.section_titles = tuple(s.title for s in record.sections)
        self.block_ids = tuple(b.block_id for b in blocks.blocks)
        self.blocks = blocks
        self.folded = folded
        self.counts = counts
        self.keys = keys

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
    """The costly part of a preparation (folded text, BM25 term counts, vector keys): what
    another process computes from a record and hands back (`prepared_parts`), to be joined to
    that record where it is (`prepared_from`)."""

    folded: FoldedBlocks
    counts: TermCounts
    keys: npt.NDArray[np.uint64]


def prepare_document(record: DocumentRecord) -> PreparedDocument:
    """Everything a snapshot build computes for `record` alone.

    ValueError for a record no snapshot may hold (see blockstore.ordered_blocks).
    """
    return prepare_laid_out(record, blocks=blockstore.layout(record))


def prepare_laid_out(record: DocumentRecord, blocks: BlockLayout) -> PreparedDocument:
    """`prepare_document` of a record whose `blockstore.layout` is already known."""
    return PreparedDocument(record, blocks, *_parts(record, blocks))


def prepared_parts(record: DocumentRecord) -> PreparedParts:
    """The costly part of `prepare_document(record)`; ValueError as it."""
    return _parts(record, blockstore.layout(record))


def prepared_from(record: DocumentRecord, parts: PreparedParts) -> PreparedDocument:
    """`prepare_document(record)` from `prepared_parts` of an equal record (only the block
    layout, a cheap pass, is made here)."""
    blocks = blockstore.layout(record)
    if len(parts.keys) != len(blocks.blocks) or len(parts.folded.lengths) != len(blocks.blocks):
        raise ValueError(f"the prepared parts of {record.doc_id!r} are of another record")
    return PreparedDocument(record, blocks, *parts)


def _parts(record: DocumentRecord, blocks: BlockLayout) -> PreparedParts:
    folds, folded = blockstore.fold_blocks(blocks.blocks)
    # A block's BM25 tokens are those of "section title\ntext": the bag of its section's
    # folded title (folded once per section) plus the bag of its folded text.
    titles = [folded_tokens(fold(s.title)) for s in record.sections]
    counts = count_terms(
        titles[b.section] + folded_tokens(text)
        for b, text in zip(blocks.blocks, folds, strict=True)
    )
    return PreparedParts(folded, counts, vector_keys(record.doc_id, blocks))


def vector_keys(doc_id: str, blocks: BlockLayout) -> npt.NDArray[np.uint64]:
    """The vector key of each block, in block order."""
    return np.fromiter(
        (vector_key(doc_id, b.block_id) for b in blocks.blocks), np.uint64, len(blocks.blocks)
    )
