"""The heading-path field of a snapshot, written at build time so a first search reads it.

Search treats each section's heading path as a second BM25 field (engine/tools/retrieval.py):
term postings over the snapshot's sections (global section numbers, documents in ordinal
order), each section's token count, and each block's global section. Computing them from the
outlines took most of a first search on a large snapshot; here they are one file, decoded on
first use. It stores what `tokenize` makes of the paths, nothing retrieval-specific.
"""

from __future__ import annotations

import bisect
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


def section_paths_file(
    documents: Sequence[DocumentRecord], blocks: Sequence[Sequence[BlockRecord]]
) -> bytes:
    """The file for `documents` whose blocks, in ordinal order, are `blocks[i]`."""
    postings: dict[str, list[tuple[int, int]]] = {}
    lengths: list[int] = []
    block_section: list[npt.NDArray[np.uint32]] = []
    for doc, doc_blocks in zip(documents, blocks, strict=True):
        first = len(lengths)
        for section in doc.sections:
            counts = Counter(tokenize(section.path))
            for token, tf in counts.items():
                postings.setdefault(token, []).append((len(lengths), tf))
            lengths.append(sum(counts.values()))
        local = np.fromiter((b.section for b in doc_blocks), dtype=np.uint32, count=len(doc_blocks))
        block_section.append(local + np.uint32(first))
    terms = sorted(postings)
    offsets = np.zeros(len(terms) + 1, dtype="<u4")
    offsets[1:] = np.cumsum([len(postings[t]) for t in terms], dtype=np.int64)
    flat = [entry for t in terms for entry in postings[t]]
    pairs = np.asarray(flat, dtype="<u4").reshape(-1, 2)
    everything = np.concatenate(block_section) if block_section else np.zeros(0, "<u4")
    return msgspec.msgpack.encode(
        _File(
            tokenizer_version=TOKENIZER_VERSION,
            terms=terms,
            offsets=offsets.tobytes(),
            sections=np.ascontiguousarray(pairs[:, 0]).tobytes(),
            tf=np.ascontiguousarray(pairs[:, 1]).tobytes(),
            lengths=np.asarray(lengths, dtype="<u4").tobytes(),
            block_section=everything.astype("<u4").tobytes(),
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
