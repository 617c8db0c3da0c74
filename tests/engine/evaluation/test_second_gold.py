"""The second question set (tests/fixtures/gold/second.jsonl, issue 21): it loads, it is about
documents the shared gold set never uses, and every evidence quote lies inside a block the
project itself extracted from the named document (GOLD-FORMAT.md's normalisation)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from actors.catalog import Catalog
from engine.evaluation import load_gold
from engine.evaluation.gold import normalize
from engine.evaluation.retrieval import source_index
from engine.paths import DataDir
from index.snapshot import Snapshot
from tests.corpus import GOLD

SECOND = Path(__file__).resolve().parents[2] / "fixtures" / "gold" / "second.jsonl"


def test_second_set_loads_with_the_kinds_it_promises() -> None:
    gold = load_gold(SECOND)
    kinds = {i.kind for i in gold.items}
    assert len(gold.items) >= 20
    assert {"paraphrase", "cross_lingual", "compare", "fact"} <= kinds
    assert all(i.is_retrieval for i in gold.items)
    assert all(
        len({e.document for e in i.evidence}) == 2 for i in gold.items if i.kind == "compare"
    )
    assert all(i.lang == "zh" for i in gold.items if i.kind == "cross_lingual")


def test_second_set_uses_no_document_of_the_shared_gold_set() -> None:
    shared = {d for i in load_gold(GOLD).items for d in i.documents}
    mine = {d for i in load_gold(SECOND).items for d in i.documents}
    assert mine and not mine & shared


@pytest.fixture(scope="module")
def corpus(corpus_home: Path) -> Iterator[Snapshot]:
    with Catalog(DataDir(corpus_home), "default").pin_active() as snap:
        assert snap is not None
        yield snap


# Quotes the shared verifier finds in the file but the project's own extraction does not: a
# finding about the parser, kept in the set (the question is fair) and named here so that a
# new gap, or a known one closing, makes the test fail. None is known: s2-fact-02's section of
# python-faq/extending.html ("You can't. Use <a>PyTuple_Pack()</a> instead.", under a heading
# that is a link back to the contents) was dropped as a menu until parser html-3.
KNOWN_EXTRACTION_GAPS: set[str] = set()


@pytest.mark.slow
def test_every_second_set_quote_is_inside_one_extracted_block(corpus: Snapshot) -> None:
    by_name = source_index(corpus)
    doc_index = {info.doc_id: n for n, info in enumerate(corpus.documents)}
    missing = []
    for item in load_gold(SECOND).items:
        for ev in item.evidence:
            info = corpus.documents[doc_index[by_name[ev.document]]]
            texts = (normalize(corpus.block(o).text) for o in range(*_bounds(info.block_range)))
            if not any(normalize(ev.quote) in t for t in texts):
                missing.append(f"{item.id}: {ev.quote!r}")
    assert set(missing) == KNOWN_EXTRACTION_GAPS


def _bounds(block_range: range | slice) -> tuple[int, int]:
    return int(block_range.start or 0), int(block_range.stop)
