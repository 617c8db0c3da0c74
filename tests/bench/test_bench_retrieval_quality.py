"""bench retrieval_quality's keyword-side variants do what they are named for, each on and off:
Snowball stems let "listening" find "listeners", jieba adds whole words beside the bigrams, the
old term filter keeps a query of function words alone, and query bigrams across a jieba word
boundary are dropped; Rocchio feedback moves the query vector toward its first result and leaves
a no_match alone; the halves split by id parity."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import numpy as np
import pytest

from bench.bench_retrieval_quality import (
    VARIANTS,
    Feedback,
    Question,
    keyword_variant,
    with_feedback,
)
from engine.embedding import LocalEmbedding
from engine.evaluation.gold import GoldItem
from engine.tools import default_retrieval_params
from engine.tools.retrieval import DEFAULT_FUSION, search
from index.snapshot import Snapshot
from tests.engine.tools.snapshots import document, record, section, write_snapshot

VARIANT = {v.name: v for v in VARIANTS}


@pytest.fixture(scope="module")
def snap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Snapshot]:
    docs = [
        record(document("Events", section("Events", 1, "Add listeners to an emitter.")), "e.md"),
        record(document("计算", section("简介", 1, "计算机科学研究算法。"), lang="zh"), "z.md"),
    ]
    with Snapshot.open(write_snapshot(tmp_path_factory.mktemp("quality") / "snap", docs)) as s:
        yield s


def _keyword(snap: Snapshot, query: str) -> tuple[tuple[str, ...], int]:
    outcome = search(snap, query, None, None, default_retrieval_params(), "keyword")
    return outcome.trace.query_tokens, outcome.trace.keyword_candidates


def test_stems_on_find_another_form_of_the_word_and_off_do_not(
    snap: Snapshot, tmp_path: Path
) -> None:
    assert _keyword(snap, "listening") == (("listening",), 0)
    with keyword_variant(snap, VARIANT["bigrams+stem"], tmp_path):
        tokens, candidates = _keyword(snap, "listening")
        assert "listen" in tokens and candidates == 1
    assert _keyword(snap, "listening") == (("listening",), 0)  # restored


def test_segmentation_on_adds_whole_words_beside_the_bigrams_and_off_does_not(
    snap: Snapshot, tmp_path: Path
) -> None:
    assert "计算机" not in _keyword(snap, "计算机")[0]
    with keyword_variant(snap, VARIANT["bigrams+jieba"], tmp_path):
        tokens, candidates = _keyword(snap, "计算机")
        assert {"计算", "算机", "计算机"} <= set(tokens) and candidates == 1
    assert "计算机" not in _keyword(snap, "计算机")[0]


def test_query_words_on_drop_bigrams_across_a_word_boundary_and_off_keep_them(
    snap: Snapshot, tmp_path: Path
) -> None:
    # jieba reads 计算机 / 里 / 研究: 机里 and 里研 straddle two words.
    shipped = _keyword(snap, "计算机里研究")
    assert {"机里", "里研"} <= set(shipped[0])
    with keyword_variant(snap, VARIANT["bigrams, query bigrams within jieba words"], tmp_path):
        tokens, candidates = _keyword(snap, "计算机里研究")
        assert set(tokens) == {"计算", "算机", "研究"} and candidates == 1
        assert _keyword(snap, "机里") == (("机里",), 0)  # nothing else left: kept
    assert _keyword(snap, "计算机里研究") == shipped  # restored


def test_the_old_term_filter_keeps_function_words_the_shipped_one_drops(
    snap: Snapshot, tmp_path: Path
) -> None:
    assert _keyword(snap, "to an") == ((), 0)
    with keyword_variant(snap, VARIANT["bigrams, old term filter"], tmp_path):
        assert _keyword(snap, "to an") == (("to", "an"), 1)


def test_halves_split_by_the_parity_of_the_id_number() -> None:
    def half(ident: str) -> str:
        item = GoldItem(id=ident, lang="en", kind="fact", question="q")
        return Question("s", item, np.zeros(1, dtype=np.float32), ()).half

    assert [half(i) for i in ("en-fact-01", "zh-para-02", "s2-cross-07", "cov-10")] == [
        "A",
        "B",
        "A",
        "B",
    ]


def test_vector_feedback_moves_the_query_toward_its_first_result_and_keeps_no_match(
    tmp_path: Path,
) -> None:
    embedder = LocalEmbedding()
    manual = document(
        "Manual",
        section("Halting", 1, "To power off the machine from a terminal, run shutdown -h now."),
        section("Printing", 1, "CUPS manages printers; lpstat lists the queues."),
        section("Sound", 1, "PulseAudio mixes the sound of several programs."),
    )
    path = write_snapshot(tmp_path / "snap", [record(manual, "m.md")], embedder)
    params = default_retrieval_params()
    feedback = with_feedback(Feedback(blocks=1, weight=0.5))
    query = "How do I turn the computer off from a terminal?"
    vector = np.asarray(anyio.run(embedder.embed, [query]).vectors[0], dtype=np.float32)
    with Snapshot.open(path) as snap:
        plain = search(snap, query, vector, None, params, "vector")
        moved = feedback(snap, query, vector, None, params, "vector", DEFAULT_FUSION)
        assert plain.ordinals[0] == moved.ordinals[0]
        before, after = plain.trace.ranking[0].similarity, moved.trace.ranking[0].similarity
        assert before is not None and after is not None and after > before
        # A query with no vector candidate gets no feedback: it stays no_match.
        nothing = anyio.run(embedder.embed, ["？？？"]).vectors[0]
        empty = feedback(
            snap, "？？？", np.asarray(nothing, np.float32), None, params, "vector", DEFAULT_FUSION
        )
        assert empty.ordinals == () and empty.trace.vector_candidates == 0
