"""Synthetic snapshots at 10k–100k blocks, made from the real corpus text, for benchmarks.

Replicas are perturbed, not deduplicated: every block of copy k gets a distinct marker token
(`r{k}x{i}`) so texts, hashes and BM25 statistics differ per copy. Vectors are random unit
vectors (seeded) unless real ones are passed — the index work does not depend on their meaning.
With `topics`, each block's vectors lie near one of that many random topic directions, as real
embeddings cluster by subject: an approximate (HNSW) search then finds a query's neighbours as
it does on real vectors, where on uniformly random ones it finds next to none of them.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from bench.runner import CORPUS
from index.records import (
    BlockRecord,
    DocumentRecord,
    EmbeddingSpec,
    RetrievalParams,
    SectionRecord,
    SnapshotManifest,
    VectorLayout,
)
from index.snapshot import Snapshot, build_snapshot

BLOCKS_PER_DOC = 500
SECTION_BLOCKS = 8
# With topics, a vector is TOPIC_WEIGHT of its topic's direction plus noise of the rest (unit
# length either way): ~0.6 from its topic, ~0.36 from another vector of the same topic, ~0
# from the others; the sentence windows of one block share its topic.
TOPIC_WEIGHT = 0.6


def corpus_paragraphs() -> list[str]:
    """Paragraphs of the corpus's text documents (Markdown and the Chinese book)."""
    texts = [p.read_text(encoding="utf-8") for p in sorted((CORPUS / "docs").rglob("*.md"))]
    texts.append((CORPUS / "docs" / "debian-reference.zh-cn.txt").read_text(encoding="utf-8"))
    paras = [" ".join(p.split()) for t in texts for p in t.split("\n\n")]
    return [p for p in paras if len(p) > 80]


def corpus_headings() -> list[str]:
    """Markdown headings of the corpus, without their marks."""
    lines = (
        line.lstrip("#").strip()
        for p in sorted((CORPUS / "docs").rglob("*.md"))
        for line in p.read_text(encoding="utf-8").splitlines()
        if line.startswith("#")
    )
    return [line for line in lines if line] or ["Part"]


def _records(n_blocks: int, first_doc: int = 0) -> Iterator[DocumentRecord]:
    paras = corpus_paragraphs()
    headings = corpus_headings()
    n_docs = max(1, -(-n_blocks // BLOCKS_PER_DOC))
    made = 0
    for d in range(first_doc, first_doc + n_docs):
        count = min(BLOCKS_PER_DOC, n_blocks - made)
        h = hashlib.sha256(f"synthetic-{d}".encode()).hexdigest()
        # A section every SECTION_BLOCKS blocks, two levels deep, titled with corpus headings
        # (as real outlines are: the heading-path field search reads grows with them).
        n_sections = max(1, -(-count // SECTION_BLOCKS))
        sections = tuple(
            SectionRecord(
                path=f"{headings[(d + s // 8) % len(headings)]} > "
                f"{headings[(d * 31 + s) % len(headings)]} ({s})",
                title=headings[(d * 31 + s) % len(headings)],
                ordinal=s,
                depth=2,
                parent=-1,
                direct_blocks=0,
                subtree_blocks=0,
                direct_tokens=0,
                subtree_tokens=0,
                first_sentence="",
            )
            for s in range(n_sections)
        )
        blocks = tuple(
            BlockRecord(
                block_index=i,
                block_id=f"{d:05d}{i:05d}",
                section=i // SECTION_BLOCKS,
                text=f"{paras[(made + i) % len(paras)]} r{d}x{i}",
                tokens=100,
            )
            for i in range(count)
        )
        made += count
        yield DocumentRecord(
            doc_id=f"d{h[:12]}",
            content_hash=h,
            source=f"synthetic/{d:05d}.md",
            source_label=f"synthetic/{d:05d}.md",
            title=f"Synthetic {d}",
            sections=sections,
            blocks=blocks,
        )


def build_synthetic(
    directory: Path,
    n_blocks: int,
    *,
    dim: int = 512,
    exact_search_max_blocks: int = 10**9,
    seed: int = 7,
    parent: Path | None = None,
    extra_blocks: int = 0,
    parts_per_block: int = 0,
    topics: int = 0,
) -> SnapshotManifest:
    """The snapshot of `n_blocks` synthetic blocks; `extra_blocks` > 0 adds one more document
    of that many blocks after them (the same first documents and vectors as without it, so
    with `parent` the build is a one-document add). `parts_per_block` > 0 stores that many
    vectors per block (a sentence-window layout) instead of one. `topics` > 0 clusters the vectors
    around that many topic directions (see the module's docstring)."""
    rng = np.random.default_rng(seed)
    centres = _unit(rng.standard_normal((topics, dim)).astype(np.float32)) if topics else None
    docs = list(_records(n_blocks))
    if extra_blocks:
        docs += list(_records(extra_blocks, first_doc=len(docs)))[:1]
    vectors = []
    for doc in docs:
        rows = len(doc.blocks) * max(1, parts_per_block)
        v = _unit(rng.standard_normal((rows, dim)).astype(np.float32))
        if centres is not None:
            per_block = rows // len(doc.blocks)
            topic = np.repeat(rng.integers(0, topics, size=len(doc.blocks)), per_block)
            noise = np.sqrt(1.0 - TOPIC_WEIGHT**2)
            v = _unit(TOPIC_WEIGHT * centres[topic] + noise * v)
        vectors.append(v)
    counts = None
    layout = None
    if parts_per_block:
        counts = [np.full(len(doc.blocks), parts_per_block) for doc in docs]
        # The shipped sentence layout: each block's first vector stands for the whole block.
        layout = VectorLayout(granularity="sentence", window=1, stride=1, with_block=True)
    manifest = SnapshotManifest(
        snapshot_id=directory.name,
        parent_id=None,
        collection="bench",
        status="ready",
        created_at="2026-01-01T00:00:00Z",
        embedding=EmbeddingSpec(provider="synthetic", model="random", dimensions=dim),
        retrieval=RetrievalParams(
            bm25_k1=1.2,
            bm25_b=0.75,
            rrf_k=60,
            top_k=5,
            min_similarity=0.2,
            exact_search_max_blocks=exact_search_max_blocks,
        ),
        vector_layout=layout,
    )
    return build_snapshot(
        directory,
        manifest,
        docs,
        vectors,
        parent=parent,
        k1=1.2,
        b=0.75,
        exact_search_max_blocks=exact_search_max_blocks,
        part_counts=counts,
    )


def _unit(v: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    out: npt.NDArray[np.float32] = v / np.linalg.norm(v, axis=1, keepdims=True)
    return out


def kept_synthetic(
    scratch: Path, n_blocks: int, **options: Any
) -> tuple[Path, SnapshotManifest, float, str]:
    """`build_synthetic(directory, n_blocks, **options)` in `scratch`, or, when the
    CITEWISE_BENCH_SNAPSHOTS folder is set, kept there and reused by later runs: a 600k-vector
    HNSW graph takes most of an hour on a loaded 2-core machine, and a benchmark rerun after
    a change to search alone should not pay it again. Returns (directory, manifest, build
    seconds of the run that built it, where it came from). The folder is keyed by the
    arguments only: empty it after changing how snapshots are written."""
    keep = os.environ.get("CITEWISE_BENCH_SNAPSHOTS")
    name = f"s{n_blocks}" + "".join(f"_{k}{v}" for k, v in sorted(options.items()))
    if not keep:
        directory = scratch / name
        t0 = time.perf_counter()
        manifest = build_synthetic(directory, n_blocks, **options)
        return directory, manifest, time.perf_counter() - t0, "built in this run"
    directory, record = Path(keep) / name, Path(keep) / f"{name}.build.json"
    if record.is_file() and directory.is_dir():
        built = json.loads(record.read_text(encoding="utf-8"))
        with Snapshot.open(directory) as snap:
            manifest = snap.manifest
        return directory, manifest, float(built["seconds"]), f"kept from {built['at']}"
    shutil.rmtree(directory, ignore_errors=True)  # a build that never finished
    t0 = time.perf_counter()
    manifest = build_synthetic(directory, n_blocks, **options)
    seconds = time.perf_counter() - t0
    at = datetime.now(UTC).isoformat(timespec="seconds")
    record.write_text(json.dumps({"seconds": seconds, "at": at}), encoding="utf-8")
    return directory, manifest, seconds, "built in this run (kept)"
