"""The section as context in the vector list (issue 21): with sentence-window vectors, a block
ranks by its best part's similarity plus a share of its section's (the unit mean of the
section's whole-block vectors), so of two equally close sentences the one in the section about
the question's topic comes first. The block's own similarity alone decides the floor, and one
vector per block (which already holds its context) ranks by similarity alone."""

from __future__ import annotations

from pathlib import Path

import msgspec
import numpy as np
import numpy.typing as npt
import pytest

from engine.tools.contracts import ToolInternals
from engine.tools.retrieval import DEFAULT_FUSION, SECTION_CONTEXT_WEIGHT, Fusion, search
from engine.trace import model as m
from engine.trace.recorder import retrieval_attributes
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

DIM = 16
PARAMS = RetrievalParams(
    bm25_k1=1.2, bm25_b=0.75, rrf_k=60, top_k=5, min_similarity=0.2, exact_search_max_blocks=1000
)
SENTENCES = VectorLayout(granularity="sentence", window=1, stride=1, with_block=True)
QUERY = "which sentence answers the question"


def unit(**axes: float) -> npt.NDArray[np.float32]:
    """A unit vector from components on named axes e0..e15."""
    v = np.zeros(DIM, dtype=np.float32)
    for name, value in axes.items():
        v[int(name[1:])] = value
    return np.asarray(v / np.linalg.norm(v), dtype=np.float32)


# Per block: its whole-block vector, then its sentence's. The query is e0.
# Section "Topic": a0's sentence is 0.60 from the query and the section as a whole is close;
# a2 is close only through its section (0.15 of its own, under the floor).
# Section "Elsewhere": b0's sentence is a little closer (0.62), its section is far.
BLOCKS = {
    "a0": ("Topic", [unit(e0=0.55, e3=0.835), unit(e0=0.6, e2=0.8)]),
    "a1": ("Topic", [unit(e0=0.5, e4=0.866), unit(e0=0.3, e9=0.954)]),
    "a2": ("Topic", [unit(e0=0.15, e10=0.989), unit(e0=0.1, e11=0.995)]),
    "b0": ("Elsewhere", [unit(e0=0.1, e5=0.995), unit(e0=0.62, e6=0.785)]),
    "b1": ("Elsewhere", [unit(e7=1.0), unit(e8=1.0)]),
}


def _record() -> DocumentRecord:
    titles = list(dict.fromkeys(title for title, _ in BLOCKS.values()))
    sections = tuple(
        SectionRecord(
            path=title,
            title=title,
            ordinal=i,
            depth=1,
            parent=-1,
            direct_blocks=sum(1 for t, _ in BLOCKS.values() if t == title),
            subtree_blocks=sum(1 for t, _ in BLOCKS.values() if t == title),
            direct_tokens=2,
            subtree_tokens=2,
            first_sentence="",
        )
        for i, title in enumerate(titles)
    )
    blocks = tuple(
        BlockRecord(
            block_index=i,
            block_id=name,
            section=titles.index(title),
            text=f"{title} {name} text",
            tokens=3,
        )
        for i, (name, (title, _)) in enumerate(BLOCKS.items())
    )
    return DocumentRecord(
        doc_id="d",
        content_hash="hd",
        source="d.txt",
        source_label="d.txt",
        title="d",
        sections=sections,
        blocks=blocks,
    )


def _snapshot(directory: Path, layout: VectorLayout) -> Snapshot:
    sentences = layout.granularity == "sentence"
    rows = [v for _, parts in BLOCKS.values() for v in (parts if sentences else parts[:1])]
    counts = np.asarray([2 if sentences else 1] * len(BLOCKS), dtype=np.int64)
    manifest = SnapshotManifest(
        snapshot_id="s",
        parent_id=None,
        collection="c",
        status="ready",
        created_at="2026-12-03T00:00:00Z",
        embedding=EmbeddingSpec(provider="local", model="m", dimensions=DIM),
        retrieval=PARAMS,
        vector_layout=layout,
    )
    build_snapshot(
        directory,
        manifest,
        [_record()],
        [np.stack(rows)],
        k1=1.2,
        b=0.75,
        exact_search_max_blocks=1000,
        part_counts=[counts] if sentences else None,
    )
    return Snapshot.open(directory)


def _names(snap: Snapshot, ordinals: tuple[int, ...]) -> list[str]:
    return [snap.block(o).block_id for o in ordinals]


@pytest.fixture
def sentences(tmp_path: Path) -> Snapshot:
    return _snapshot(tmp_path / "sentences", SENTENCES)


def test_of_two_close_sentences_the_one_in_the_sections_topic_ranks_first(
    sentences: Snapshot,
) -> None:
    query = unit(e0=1.0)
    shipped = search(sentences, QUERY, query, None, PARAMS, "vector")
    assert _names(sentences, shipped.ordinals) == ["a0", "b0", "a1"]
    alone = search(
        sentences,
        QUERY,
        query,
        None,
        PARAMS,
        "vector",
        msgspec.structs.replace(DEFAULT_FUSION, section_context_weight=0.0),
    )
    assert _names(sentences, alone.ordinals) == ["b0", "a0", "a1"]
    assert all(r.section_similarity is None for r in alone.trace.ranking)

    # the trace keeps each block's own similarity and shows its section's beside it
    first = shipped.trace.ranking[0]
    assert first.similarity == pytest.approx(0.6, abs=2e-3)  # float16 storage
    topic = (BLOCKS["a0"][1][0] + BLOCKS["a1"][1][0] + BLOCKS["a2"][1][0]) / 3
    assert first.section_similarity == pytest.approx(
        float(topic[0] / np.linalg.norm(topic)), abs=2e-3
    )
    assert SECTION_CONTEXT_WEIGHT * first.section_similarity < 0.2  # a share, not a takeover
    attributes = retrieval_attributes(ToolInternals(search=shipped.trace))
    assert attributes[m.RETRIEVAL_SECTION_SIMILARITIES] == [
        r.section_similarity for r in shipped.trace.ranking
    ]
    assert m.RETRIEVAL_SECTION_SIMILARITIES not in retrieval_attributes(
        ToolInternals(search=alone.trace)
    )


def test_a_block_under_the_floor_stays_out_however_close_its_section(sentences: Snapshot) -> None:
    query = unit(e0=1.0)
    strong = Fusion(section_context_weight=1.0)  # would lift a2 (0.15) far above the floor
    found = search(sentences, QUERY, query, None, PARAMS, "vector", strong)
    assert "a2" not in _names(sentences, found.ordinals)
    assert found.trace.vector_below_floor >= 1


def test_one_vector_per_block_ranks_by_similarity_alone(tmp_path: Path) -> None:
    snap = _snapshot(tmp_path / "blocks", VectorLayout())
    query = unit(e0=1.0)
    found = search(snap, QUERY, query, None, PARAMS, "vector")
    assert _names(snap, found.ordinals) == ["a0", "a1"]  # whole-block similarity 0.55, 0.5
    assert all(r.section_similarity is None for r in found.trace.ranking)


def test_hybrid_search_orders_the_vector_list_with_the_section(sentences: Snapshot) -> None:
    query = unit(e0=1.0)
    found = search(sentences, "zzzz", query, None, PARAMS, "hybrid")  # no keyword matches
    assert _names(sentences, found.ordinals) == ["a0", "b0", "a1"]
    assert [r.vector_rank for r in found.trace.ranking] == [1, 2, 3]
