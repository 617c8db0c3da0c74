"""The heading-path field of a snapshot, written at build time so a first search reads it.

Search treats each section's heading path as a second BM25 field (engine/tools/retrieval.py):
term postings over the snapshot's sections (global section numbers, documents in ordinal
order), each section's token count, and each block's global section. Computing them from the
outlines took most of a first search on a large snapshot; here they are one file, decoded on
first use. It stores what `tokenize` makes of the paths, nothing retrieval-specific.
"""

from __future__ import annotations

import bisect
import itertools
import mmap
from collections import Counter
from collections.abc import Sequence

import msgspec
import numpy as np
import numpy.typing as npt

from index.records import BlockRecord, DocumentRecord
from index.textnorm import TOKENIZER_VERSION, tokenize

SECTION_PATHS = "section_paths.msgpack"
SECTION_PATHS_FORMAT = 1


class _File(msgspec.Struct, frozen=True, kw_only=True):
    format_version: int = SECTION_PATHS_FORMAT
    tokenizer_version: str
    terms: list[str]  # sorted
    offsets: bytes  # <u4 [len(terms) + 1]: term i's postings are [offsets[i], offsets[i + 1])
    sections: bytes  # <u4 global section numbers, ascending within a term
    tf: bytes  # <u4 the term's count in that section's path
    lengths: bytes  # <u4 token count of each section's path
    block_section: bytes  # <u4 the global section of each block, by ordinal
    # The same counts by section, so a child snapshot carries a document's without tokenizing:
    doc_sections: bytes = b""  # <u4 [n_docs + 1]: document d's sections are [d, d + 1)
    row_offsets: bytes = b""  # <u4 [n_sections + 1] into row_terms / row_tf
    row_terms: bytes = b""  # <u4 term ids of each section's path, ascending
    row_tf: bytes = b""  # <u4


SectionCounts = list[tuple[str, int]]  # one section's path: (token, count), tokens sorted


def section_counts(doc: DocumentRecord) -> list[SectionCounts]:
    """What the heading-path field holds for each of the document's sections."""
    return [sorted(Counter(tokenize(section.path)).items()) for section in doc.sections]


def section_paths_file(
    documents: Sequence[DocumentRecord],
    blocks: Sequence[Sequence[BlockRecord]],
    counts: Sequence[list[SectionCounts] | None] | None = None,
) -> bytes:
    """The file for `documents` whose blocks, in ordinal order, are `blocks[i]`; `counts[i]`,
    when given, is `section_counts(documents[i])` known ahead (from the parent)."""
    postings: dict[str, list[tuple[int, int]]] = {}
    lengths: list[int] = []
    per_section: list[SectionCounts] = []
    doc_sections = [0]
    block_section: list[npt.NDArray[np.uint32]] = []
    for i, (doc, doc_blocks) in enumerate(zip(documents, blocks, strict=True)):
        first = len(lengths)
        known = None if counts is None else counts[i]
        for row in section_counts(doc) if known is None else known:
            for token, tf in row:
                postings.setdefault(token, []).append((len(lengths), tf))
            lengths.append(sum(tf for _, tf in row))
            per_section.append(row)
        doc_sections.append(len(lengths))
        local = np.fromiter((b.section for b in doc_blocks), dtype=np.uint32, count=len(doc_blocks))
        block_section.append(local + np.uint32(first))
    terms = sorted(postings)
    term_id = {t: k for k, t in enumerate(terms)}
    offsets = np.zeros(len(terms) + 1, dtype="<u4")
    offsets[1:] = np.cumsum([len(postings[t]) for t in terms], dtype=np.int64)
    flat = np.asarray([e for t in terms for e in postings[t]], dtype="<u4").reshape(-1, 2)
    row_offsets = np.zeros(len(per_section) + 1, dtype="<u4")
    row_offsets[1:] = np.cumsum([len(p) for p in per_section], dtype=np.int64)
    rows = [(term_id[t], tf) for p in per_section for t, tf in p]
    row_pairs = np.asarray(rows, dtype="<u4").reshape(-1, 2)
    everything = np.concatenate(block_section) if block_section else np.zeros(0, "<u4")
    return msgspec.msgpack.encode(
        _File(
            tokenizer_version=TOKENIZER_VERSION,
            terms=terms,
            offsets=offsets.tobytes(),
            sections=np.ascontiguousarray(flat[:, 0]).tobytes(),
            tf=np.ascontiguousarray(flat[:, 1]).tobytes(),
            lengths=np.asarray(lengths, dtype="<u4").tobytes(),
            block_section=everything.astype("<u4").tobytes(),
            doc_sections=np.asarray(doc_sections, dtype="<u4").tobytes(),
            row_offsets=row_offsets.tobytes(),
            row_terms=np.ascontiguousarray(row_pairs[:, 0]).tobytes(),
            row_tf=np.ascontiguousarray(row_pairs[:, 1]).tobytes(),
        )
    )


class SectionPaths:
    """The decoded file: postings by term, section lengths, each block's section."""

    def __init__(self, raw: bytes | memoryview | mmap.mmap) -> None:
        file = msgspec.msgpack.decode(raw, type=_File)
        if file.format_version > SECTION_PATHS_FORMAT:
            raise ValueError(f"{SECTION_PATHS} format {file.format_version} is too new")
        self.tokenizer_version = file.tokenizer_version
        self._terms = file.terms
        self._offsets = np.frombuffer(file.offsets, dtype="<u4")
        self._sections = np.frombuffer(file.sections, dtype="<u4")
        self._tf = np.frombuffer(file.tf, dtype="<u4")
        self.section_lengths: npt.NDArray[np.float64] = np.frombuffer(
            file.lengths, dtype="<u4"
        ).astype(np.float64)
        self.block_section: npt.NDArray[np.int64] = np.frombuffer(
            file.block_section, dtype="<u4"
        ).astype(np.int64)
        self._doc_sections = np.frombuffer(file.doc_sections, dtype="<u4")
        self._row_offsets = np.frombuffer(file.row_offsets, dtype="<u4")
        self._row_terms = np.frombuffer(file.row_terms, dtype="<u4")
        self._row_tf = np.frombuffer(file.row_tf, dtype="<u4")

    def document_counts(self, doc: int) -> list[SectionCounts] | None:
        """`section_counts` of document `doc` as this file holds them (None if it does not)."""
        if doc + 1 >= len(self._doc_sections):
            return None
        first, end = int(self._doc_sections[doc]), int(self._doc_sections[doc + 1])
        lo, hi = int(self._row_offsets[first]), int(self._row_offsets[end])
        ids, tfs = self._row_terms[lo:hi].tolist(), self._row_tf[lo:hi].tolist()
        bounds = (self._row_offsets[first : end + 1].astype(np.int64) - lo).tolist()
        terms = self._terms
        out = [
            [(terms[ids[k]], tfs[k]) for k in range(start, stop)]
            for start, stop in itertools.pairwise(bounds)
        ]
        return out

    def get(self, token: str) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]] | None:
        """(global sections whose path holds `token`, its count in each), or None."""
        i = bisect.bisect_left(self._terms, token)
        if i == len(self._terms) or self._terms[i] != token:
            return None
        start, end = int(self._offsets[i]), int(self._offsets[i + 1])
        return (
            self._sections[start:end].astype(np.int64),
            self._tf[start:end].astype(np.float64),
        )
