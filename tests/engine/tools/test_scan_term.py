"""scan_term: exactly what a naive NFC + casefold count per block finds — every hit in scope, in
document then block order — and empty results that say why."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.tools import ErrorResult, ScanTermResult, ToolOutcome, run_tool
from index.snapshot import Snapshot
from index.textnorm import fold
from tests.engine.tools.snapshots import context, library, plain, write_snapshot


@pytest.fixture
def snap(tmp_path: Path, open_snapshot: Callable[[Path], Snapshot]) -> Snapshot:
    docs = [*library(), plain("nothing", []), plain("german", ["Die STRASSE und die Straße."])]
    return open_snapshot(write_snapshot(tmp_path / "s", docs))


def scan(snap: Snapshot, **args: Any) -> ToolOutcome:
    return anyio.run(run_tool, context(snap), "scan_term", args)


def hits(outcome: ToolOutcome) -> list[tuple[str, int]]:
    assert isinstance(outcome.result, ScanTermResult), outcome.json
    assert outcome.result.count == sum(h.count for h in outcome.result.hits)
    return [(h.citation, h.count) for h in outcome.result.hits]


def test_every_hit_comes_with_citation_section_snippet_and_count(snap: Snapshot) -> None:
    outcome = scan(snap, term="listeners")
    assert isinstance(outcome.result, ScanTermResult)
    result = outcome.result
    assert [h.section for h in result.hits] == [
        "Events / Class: EventEmitter / emitter.setMaxListeners(n)",
        "Events / Class: EventEmitter / emitter.setMaxListeners(n)",
        "Events / Notes",
    ]
    # The first block holds the heading "emitter.setMaxListeners(n)" as well.
    assert [h.count for h in result.hits] == [2, 1, 1] and result.count == 4
    for hit in result.hits:
        assert "listeners" in fold(hit.snippet)
        assert hit.citation == f"{hit.doc_id}#{hit.block_id}"
        assert (hit.title, hit.source_label) == ("Events", "nodejs-md/events.md")


def test_the_term_is_trimmed_and_matched_with_nfc_and_casefold_only(snap: Snapshot) -> None:
    assert hits(scan(snap, term="  LISTENERS\n")) == hits(scan(snap, term="listeners"))
    # casefold: "ß" is "ss", so both spellings match both words.
    assert hits(scan(snap, term="straße")) == hits(scan(snap, term="STRASSE"))
    assert [c for _, c in hits(scan(snap, term="strasse"))] == [2]
    # No tokenising or stemming: a substring counts, another word form does not.
    assert hits(scan(snap, term="listen"))
    assert scan(snap, term="listenings").result.count == 0  # type: ignore[union-attr]
    # No punctuation folding: the typographic apostrophe is another character.
    assert hits(scan(snap, term="Can’t")) == []
    assert len(hits(scan(snap, term="Can't"))) == 1


def test_chinese_terms_match_inside_running_text(snap: Snapshot) -> None:
    found = scan(snap, term="关闭系统")
    assert [c for _, c in hits(found)] == [2]  # heading and body of 1.1.8
    assert hits(scan(snap, term="控制台")) and not hits(scan(snap, term="控制 台"))


def test_scope_limits_hits_and_unknown_documents_fail_the_whole_call(snap: Snapshot) -> None:
    ids = {d.source: d.doc_id for d in snap.documents}
    everywhere = hits(scan(snap, term="event"))
    scoped = hits(scan(snap, term="event", doc_ids=[ids["nodejs-md/events.md"]]))
    assert scoped == everywhere  # only Events mentions it
    assert hits(scan(snap, term="event", doc_ids=[ids["python-faq/library.html"]])) == []
    failed = scan(snap, term="event", doc_ids=[ids["nodejs-md/events.md"], "dghost"])
    assert isinstance(failed.result, ErrorResult)
    assert failed.result.error.code == "scope_not_found"
    assert "dghost" in failed.result.error.message


def test_empty_results_say_no_match_scope_empty_or_collection_empty(
    snap: Snapshot, tmp_path: Path, open_snapshot: Callable[[Path], Snapshot]
) -> None:
    missing = scan(snap, term="zyzzyva")
    assert isinstance(missing.result, ScanTermResult)
    assert (missing.result.count, missing.result.empty_reason) == (0, "no_match")
    empty_doc = scan(snap, term="a", doc_ids=["dnothing"])
    assert isinstance(empty_doc.result, ScanTermResult)
    assert empty_doc.result.empty_reason == "scope_empty"
    empty = open_snapshot(write_snapshot(tmp_path / "empty", []))
    nothing = scan(empty, term="a")
    assert isinstance(nothing.result, ScanTermResult)
    assert nothing.result.empty_reason == "collection_empty"


# Unicode edges: ß/ẞ (casefold to "ss"), dotted and dotless i, final sigma, the "ﬁ" ligature,
# é composed and decomposed, CJK, and whitespace — plus plain letters to make hits likely.
_PIECES = ["a", "A", "s", "S", "ß", "ẞ", "i", "I", "İ", "ı", "σ", "ς", "Σ", "ﬁ", "fi", "é",
           "e\u0301", "E\u0301", "中", "文", "锁", "文件", " ", "\n", "’", "'"]  # fmt: skip
_texts = st.lists(st.sampled_from(_PIECES), max_size=25).map("".join)


@given(
    documents=st.lists(st.lists(_texts, max_size=4), min_size=1, max_size=3),
    data=st.data(),
)
@settings(max_examples=80, deadline=None)
def test_scan_finds_exactly_what_a_naive_scan_finds(
    documents: list[list[str]], data: st.DataObject
) -> None:
    records = [plain(f"n{i}", texts) for i, texts in enumerate(documents)]
    sources = [t for texts in documents for t in texts if t.strip()]
    term = data.draw(
        st.one_of(
            _texts,
            st.sampled_from(sources or ["a"]).flatmap(
                lambda t: st.tuples(st.integers(0, len(t)), st.integers(0, len(t))).map(
                    lambda ij: t[min(ij) : max(ij)]
                )
            ),
        )
    )
    scope = data.draw(st.none() | st.lists(st.sampled_from(records), min_size=1, unique=True))
    args: dict[str, Any] = {"term": term}
    if scope is not None:
        args["doc_ids"] = [r.doc_id for r in scope]
    with (
        tempfile.TemporaryDirectory() as tmp,
        Snapshot.open(write_snapshot(Path(tmp) / "s", records)) as snap,
    ):
        outcome = scan(snap, **args)
    if not term.strip():
        assert isinstance(outcome.result, ErrorResult)
        assert outcome.result.error.code == "invalid_argument"
        return
    needle = fold(term.strip())
    expected = [
        (f"{r.doc_id}#{b.block_id}", fold(b.text).count(needle))
        for r in records
        if scope is None or r in scope
        for b in r.blocks
        if needle in fold(b.text)
    ]
    assert hits(outcome) == expected
