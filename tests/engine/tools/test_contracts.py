"""Tool contracts: every reader of a result (harness, citations, trace, evaluation) reads the
same typed Structs, and what it reads agrees with the JSON the model was shown."""

from __future__ import annotations

import json
from typing import Any

import anyio
import msgspec
import pytest

from engine.tools import (
    RESULTS,
    TOOL_NAMES,
    ToolInternals,
    ToolOutcome,
    cited_refs,
    decode_result,
    error_of,
    located_refs,
    outcome_of,
    read_result,
    returned_citations,
    returned_items,
    run_tool,
    shown_text,
)
from engine.tools.describe import _COMMON_FIELDS, _TEXT, returns_text
from index.records import EmbeddingSpec
from index.snapshot import Snapshot
from tests.engine.tools.snapshots import context, library, write_snapshot


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> list[ToolOutcome]:
    """One real call of every tool that needs no embedding, plus an error and an empty result."""
    snap = Snapshot.open(write_snapshot(tmp_path_factory.mktemp("contracts") / "snap", library()))
    events = next(d.doc_id for d in snap.documents if d.source == "nodejs-md/events.md")
    calls: list[tuple[str, dict[str, Any]]] = [
        ("list_documents", {}),
        ("get_outline", {"doc_ids": [events]}),
        ("list_blocks", {"doc_id": events}),
        ("scan_term", {"term": "listeners"}),
        ("scan_term", {"term": "no such string anywhere"}),
        ("list_blocks", {"doc_id": "missing"}),
    ]

    async def run_all() -> list[ToolOutcome]:
        ctx = context(snap)
        return [await run_tool(ctx, name, args) for name, args in calls]

    try:
        return anyio.run(run_all)
    finally:
        snap.close()


def test_every_result_is_a_frozen_struct_and_every_tool_has_one() -> None:
    assert set(RESULTS) == set(TOOL_NAMES)
    for kind in RESULTS.values():
        assert kind.__struct_config__.frozen, kind


def test_the_accessors_say_what_the_models_json_says(outcomes: list[ToolOutcome]) -> None:
    for outcome in outcomes:
        data = json.loads(outcome.json)
        items = data.get("blocks") or data.get("hits") or []
        assert returned_citations(outcome.result) == [i["citation"] for i in items]
        refs = [(i["doc_id"], i["block_id"]) for i in items]
        # Evidence is a block whose full text was returned; a scan hit only locates one.
        full_text = "blocks" in data
        assert cited_refs(outcome.result) == (refs if full_text else [])
        assert located_refs(outcome.result) == ([] if full_text else refs)
        assert [shown_text(i) for i in returned_items(outcome.result)] == [
            i.get("text", i.get("snippet")) for i in items
        ]
        error = error_of(outcome.result)
        assert (error is None) == ("error" not in data)
        expected = data["error"]["code"] if error else data.get("empty_reason") or "ok"
        assert outcome_of(outcome.result) == expected
    assert {outcome_of(o.result) for o in outcomes} == {"ok", "no_match", "scope_not_found"}


def test_a_result_read_back_from_its_json_is_the_result(outcomes: list[ToolOutcome]) -> None:
    for outcome in outcomes:
        assert decode_result(outcome.tool, outcome.json) == outcome.result
        assert read_result(outcome.tool, outcome.json) == outcome.result


def test_read_result_answers_none_for_anything_that_is_not_the_tools_result(
    outcomes: list[ToolOutcome],
) -> None:
    blocks = next(o for o in outcomes if o.tool == "list_blocks" and o.ok)
    assert read_result("get_outline", blocks.json) is None  # a result, but not an outline
    assert read_result("delete_documents", blocks.json) is None
    assert read_result("list_blocks", None) is None
    assert read_result("list_blocks", b"{") is None
    with pytest.raises(msgspec.ValidationError):
        decode_result("get_outline", blocks.json)


def test_internals_keep_the_trace_artifacts_json() -> None:
    spec = EmbeddingSpec(provider="local", model="m", dimensions=8)
    encode = msgspec.json.encode
    assert encode(ToolInternals()) == b"{}"
    # A failed embedding records its retry wait even when the vendor named none.
    assert encode(ToolInternals(embedding_error="timeout", retry_after=None)) == (
        b'{"embedding_error":"timeout","retry_after":null}'
    )
    assert encode(ToolInternals(snapshot_embedding=None, provider_embedding=spec)) == (
        b'{"snapshot_embedding":null,"provider_embedding":'
        b'{"provider":"local","model":"m","dimensions":8}}'
    )
    assert encode(ToolInternals(exception="E", detail="d")) == b'{"exception":"E","detail":"d"}'
    internals = ToolInternals(embedding_error="rate_limited", retry_after=2.5)
    assert msgspec.json.decode(encode(internals), type=ToolInternals) == internals


def test_returns_names_every_field_of_the_result_the_tool_encodes() -> None:
    for name in TOOL_NAMES:
        text = returns_text(name)
        fields = {f.encode_name for f in msgspec.structs.fields(RESULTS[name])}
        for field in fields - _COMMON_FIELDS:
            assert field in text, (name, field)
        _, notes, _, _, _ = _TEXT[name]
        assert set(notes) <= fields, name  # a note on a field the result does not have
    assert returns_text("scan_term").startswith(
        "hits [{citation, doc_id, block_id, title, source_label, section, snippet, count}]"
    )
