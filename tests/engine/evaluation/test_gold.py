"""Loading gold sets: the shared corpus's gold file, and invalid lines refused with their line."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from engine.evaluation import GoldError, load_gold, normalize, parse_gold, skipped_note

GOLD = Path(__file__).resolve().parents[3] / ".." / "shared" / "corpus" / "gold.jsonl"


def _line(**fields: Any) -> dict[str, Any]:
    item: dict[str, Any] = {
        "id": "q1",
        "lang": "en",
        "kind": "fact",
        "question": "How many listeners?",
        "documents": ["events.md"],
        "evidence": [
            {"document": "events.md", "page": None, "quote": "a useful default that helps"}
        ],
        "answer_must_include": ["10"],
    }
    item.update(fields)
    return item


def _gold(*items: dict[str, Any]) -> bytes:
    return "\n".join(json.dumps(i, ensure_ascii=False) for i in items).encode()


def test_the_shared_gold_set_loads_with_the_kinds_its_readme_lists() -> None:
    gold = load_gold(GOLD)
    kinds = Counter(i.kind for i in gold.items)
    assert kinds == {
        "fact": 11,
        "paraphrase": 6,
        "cross_lingual": 4,
        "coverage": 4,
        "scan": 4,
        "compare": 3,
        "absent": 2,
        "out_of_scope": 2,
    }
    assert sum(1 for i in gold.items if i.is_retrieval) == 28
    assert len(gold.sha256) == 64


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"evidence": [{"document": "events.md", "quote": "too short"}]}, r"9 characters"),
        (
            {"evidence": [{"document": "other.md", "quote": "a useful default that helps"}]},
            "not among",
        ),
        ({"kind": "scan", "evidence": [], "term": "x"}, "min_count"),
        ({"kind": "coverage"}, "expected_sections"),
        ({"kind": "absent"}, "no evidence"),
        ({"answer_must_include": [[]]}, r"answer_must_include\[0\] is empty"),
        ({"extra": 1}, "unknown field"),
    ],
)
def test_an_invalid_line_is_refused_with_its_line_number(
    fields: dict[str, Any], problem: str
) -> None:
    data = _gold(_line(id="ok"), _line(**fields))
    with pytest.raises(GoldError, match=rf"<gold>:2.*{problem}"):
        parse_gold(data)


def test_duplicate_ids_and_empty_files_are_refused() -> None:
    with pytest.raises(GoldError, match="already used on line 1"):
        parse_gold(_gold(_line(), _line()))
    with pytest.raises(GoldError, match="no questions"):
        parse_gold(b"\n\n")


def test_a_required_fact_may_list_variants() -> None:
    gold = parse_gold(_gold(_line(answer_must_include=["10", ["memory leak", "内存泄漏"]])))
    assert gold.items[0].facts() == [("10",), ("memory leak", "内存泄漏")]


def test_quotes_match_after_nfc_casefold_and_whitespace_removal() -> None:
    assert normalize("E\u0301 Vent\n Emitter") == normalize("É ventemitter")  # NFC, casefold
    assert normalize("Ｅvent") != normalize("event")  # no compatibility (width) folding
    assert normalize("STRASSE") == normalize("straße")


def test_a_coverage_question_may_list_sections_without_evidence_quotes() -> None:
    cover = _line(
        id="c1", kind="coverage", evidence=[], answer_must_include=[], expected_sections=["A"]
    )
    (item,) = parse_gold(_gold(cover)).items
    assert item.kind == "coverage" and not item.evidence and not item.is_retrieval
    with pytest.raises(GoldError, match="a fact question needs evidence"):
        parse_gold(_gold(_line(evidence=[])))


def test_a_line_of_an_unknown_kind_is_skipped_and_reported_not_fatal() -> None:
    gold = parse_gold(_gold(_line(id="q1"), {"id": "q2", "kind": "trivia", "lang": "xx"}))
    assert [i.id for i in gold.items] == ["q1"]
    (skipped,) = gold.skipped
    assert (skipped.line, skipped.id, skipped.kind) == (2, "q2", "trivia")
    note = skipped_note(gold)
    assert note is not None and "q2 ('trivia', line 2)" in note and "coverage" in note
    assert skipped_note(parse_gold(_gold(_line()))) is None
    with pytest.raises(GoldError, match="already used on line 1"):
        parse_gold(_gold(_line(id="q1"), {"id": "q1", "kind": "trivia"}))
    with pytest.raises(GoldError, match="no questions of a known kind"):
        parse_gold(_gold({"id": "q2", "kind": "trivia"}))
