"""The executor: arguments validated into invalid_argument payloads, errors as data, the exact
model-facing JSON with its own token count, trace-only data kept out of it — on both backends."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from engine.tools import (
    RESULTS,
    TOOL_CONTRACT_VERSION,
    TOOL_NAMES,
    ErrorResult,
    ToolOutcome,
    UnknownTool,
    decode_result,
    run_tool,
)
from index.snapshot import Snapshot
from tests.engine.tools.snapshots import COUNTER, context, library, server_embedder, write_snapshot
from tests.servers.embedding_server import EmbeddingServer

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def snap(
    tmp_path: Path, embedding_server: EmbeddingServer, open_snapshot: Callable[[Path], Snapshot]
) -> Iterator[Snapshot]:
    path = write_snapshot(tmp_path / "snap", library(), server_embedder(embedding_server))
    yield open_snapshot(path)


@pytest.fixture
def run(snap: Snapshot, embedding_server: EmbeddingServer) -> Callable[[str, Any], Any]:
    ctx = context(snap, server_embedder(embedding_server))

    async def run_(name: str, args: Any) -> ToolOutcome:
        return await run_tool(ctx, name, args)

    return run_


def doc_id(snap: Snapshot, source: str) -> str:
    return next(d.doc_id for d in snap.documents if d.source == source)


def calls(snap: Snapshot) -> list[tuple[str, dict[str, Any]]]:
    events = doc_id(snap, "nodejs-md/events.md")
    return [
        ("list_documents", {}),
        ("get_outline", {"doc_ids": [events]}),
        ("search_blocks", {"query": "how many listeners before a warning"}),
        ("list_blocks", {"doc_id": events}),
        ("scan_term", {"term": "listeners"}),
    ]


async def test_every_result_reports_the_token_count_of_its_own_exact_json(
    run: Callable[..., Any], snap: Snapshot
) -> None:
    for name, args in calls(snap):
        outcome = await run(name, args)
        assert outcome.ok, outcome.json
        text = outcome.json.decode("utf-8")
        assert COUNTER.count(text) == outcome.token_estimate
        assert json.loads(text)["token_estimate"] == outcome.token_estimate
        assert outcome.result.token_estimate == outcome.token_estimate


async def test_a_four_digit_token_estimate_is_still_exact(
    tmp_path: Path, open_snapshot: Callable[[Path], Snapshot]
) -> None:
    from tests.engine.tools.snapshots import document, record, section

    long = document("Long", *(section(f"Part {i}", 1, "word " * 120) for i in range(12)))
    snap = open_snapshot(write_snapshot(tmp_path / "long", [record(long, "long.md")]))
    outcome = await run_tool(context(snap), "list_blocks", {"doc_id": snap.documents[0].doc_id})
    assert outcome.token_estimate >= 1000
    assert COUNTER.count(outcome.json.decode()) == outcome.token_estimate


async def test_a_name_that_is_not_one_of_the_five_tools_raises_unknown_tool(
    run: Callable[..., Any],
) -> None:
    with pytest.raises(UnknownTool):
        await run("delete_documents", {})


@pytest.mark.parametrize(
    ("name", "args", "mentions"),
    [
        ("search_blocks", {"query": 5}, "query"),
        ("search_blocks", {"query": "x", "doc_ids": "d1"}, "doc_ids"),
        ("search_blocks", {"query": "x", "doc_ids": [3]}, "doc_ids[0]"),
        ("search_blocks", {"query": "x", "limit": 10}, "limit"),
        ("search_blocks", {}, "query"),
        ("search_blocks", {"query": "x", "doc_ids": None}, "doc_ids"),
        ("get_outline", {"doc_ids": "d1"}, "doc_ids"),
        ("list_blocks", {"section_paths": []}, "doc_id"),
        ("list_blocks", {"doc_id": ""}, "doc_id"),
        ("list_blocks", {"doc_id": "d", "section_paths": "Intro"}, "section_paths"),
        ("list_documents", {"source": ["a"]}, "source"),
        ("list_documents", {"title": "x"}, "title"),
        ("scan_term", {"term": ["a"]}, "term"),
        ("scan_term", '{"term": "a",}', "JSON"),
        ("scan_term", b"[1, 2]", "object"),
        ("scan_term", "", "JSON"),
    ],
)
async def test_malformed_arguments_are_invalid_argument_naming_the_field(
    run: Callable[..., Any], name: str, args: Any, mentions: str
) -> None:
    outcome = await run(name, args)
    assert isinstance(outcome.result, ErrorResult)
    assert outcome.result.error.code == "invalid_argument"
    assert outcome.result.error.retryable is False
    assert mentions in outcome.result.error.message


@pytest.mark.parametrize("name", ["search_blocks", "scan_term", "get_outline"])
async def test_an_explicit_empty_doc_ids_list_is_invalid_argument(
    run: Callable[..., Any], name: str
) -> None:
    args: dict[str, Any] = {"doc_ids": []}
    if name == "search_blocks":
        args["query"] = "events"
    if name == "scan_term":
        args["term"] = "events"
    outcome = await run(name, args)
    assert isinstance(outcome.result, ErrorResult)
    assert outcome.result.error.code == "invalid_argument"
    assert "doc_ids" in outcome.result.error.message


@pytest.mark.parametrize(("name", "field"), [("search_blocks", "query"), ("scan_term", "term")])
@pytest.mark.parametrize("blank", ["", "   ", "\n\t "])
async def test_a_blank_query_or_term_is_invalid_argument(
    run: Callable[..., Any], name: str, field: str, blank: str
) -> None:
    outcome = await run(name, {field: blank})
    assert isinstance(outcome.result, ErrorResult)
    assert outcome.result.error.code == "invalid_argument"
    assert field in outcome.result.error.message


async def test_arguments_as_text_bytes_or_object_give_the_same_json(
    run: Callable[..., Any], snap: Snapshot
) -> None:
    for name, args in calls(snap):
        as_object = await run(name, args)
        as_text = await run(name, json.dumps(args))
        as_bytes = await run(name, json.dumps(args).encode())
        assert as_object.json == as_text.json == as_bytes.json


async def test_without_a_snapshot_every_tool_answers_collection_unavailable(
    run: Callable[..., Any], snap: Snapshot
) -> None:
    ctx = context(None)
    for name, args in calls(snap):
        outcome = await run_tool(ctx, name, args)
        assert isinstance(outcome.result, ErrorResult), name
        assert outcome.result.error.code == "collection_unavailable"


async def test_a_failure_inside_a_tool_becomes_tool_internal_error_not_an_exception(
    tmp_path: Path, snap: Snapshot, embedding_server: EmbeddingServer
) -> None:
    args = calls(snap)
    broken = Snapshot.open(snap.path)
    broken.close()  # every read now raises SnapshotError inside the tool
    ctx = context(broken, server_embedder(embedding_server))
    for name, arguments in args:
        outcome = await run_tool(ctx, name, arguments)
        assert isinstance(outcome.result, ErrorResult), name
        assert outcome.result.error.code == "tool_internal_error"
        assert "closed" in outcome.result.error.message
        assert outcome.internal.exception == "SnapshotError"


async def test_results_carry_the_contract_version_and_read_back_as_themselves(
    run: Callable[..., Any], snap: Snapshot
) -> None:
    for name, args in [*calls(snap), ("list_blocks", {"doc_id": "missing"})]:
        outcome = await run(name, args)
        assert json.loads(outcome.json)["contract_version"] == TOOL_CONTRACT_VERSION
        again = decode_result(outcome.tool, outcome.json)
        assert again == outcome.result
        assert isinstance(again, ErrorResult if outcome.is_error else RESULTS[outcome.tool])


# SPEC §15: these names are fixed; more may be added, none renamed.
SPEC_FIELDS = {
    "list_documents": (
        {"documents", "total", "token_estimate"},
        {"doc_id", "title", "source_label", "aliases", "lang", "sections", "blocks"},
    ),
    "get_outline": (
        {"documents", "token_estimate"},
        {"doc_id", "title", "source_label", "sections"},
    ),
    "search_blocks": (
        {"blocks", "total", "token_estimate"},
        {
            "citation",
            "doc_id",
            "block_id",
            "title",
            "source_label",
            "section",
            "page_start",
            "page_end",
            "text",
        },
    ),
    "list_blocks": (
        {"blocks", "total", "token_estimate"},
        {
            "citation",
            "doc_id",
            "block_id",
            "title",
            "source_label",
            "section",
            "page_start",
            "page_end",
            "text",
        },
    ),
    "scan_term": (
        {"hits", "count", "token_estimate"},
        {"citation", "doc_id", "block_id", "title", "source_label", "section", "snippet", "count"},
    ),
}


async def test_result_json_has_the_field_names_spec_section_15_fixes(
    run: Callable[..., Any], snap: Snapshot
) -> None:
    outline_fields = {
        "path", "ordinal", "depth", "direct_blocks", "subtree_blocks", "direct_tokens",
        "subtree_tokens", "first_sentence",
    }  # fmt: skip
    for name, args in calls(snap):
        data = json.loads((await run(name, args)).json)
        top, item = SPEC_FIELDS[name]
        assert top <= data.keys(), name
        items = data.get("documents") or data.get("blocks") or data.get("hits")
        assert items, name
        assert item <= items[0].keys(), name
        if name == "get_outline":
            assert outline_fields <= items[0]["sections"][0].keys()
    error = json.loads((await run("list_blocks", {"doc_id": "missing"})).json)
    assert error["error"].keys() == {"code", "message", "retryable"}


async def test_search_scores_and_ranks_reach_the_trace_never_the_model(
    run: Callable[..., Any],
) -> None:
    outcome = await run("search_blocks", {"query": "listeners warning memory leaks"})
    search = outcome.internal.search
    assert search is not None and search.ranking
    assert {"fused", "keyword_rank", "similarity"} <= msgspec.to_builtins(search.ranking[0]).keys()
    assert outcome.internal.embedding_tokens is not None and outcome.internal.embedding_tokens > 0
    for word in (b"fused", b"score", b"rank", b"similarity"):
        assert word not in outcome.json


def test_every_tool_has_a_result_type() -> None:
    assert set(RESULTS) == set(TOOL_NAMES)


# Every text argument of every tool, blank: the message names it in words, never msgspec's.
BLANK_ARGUMENTS = [
    ("list_documents", {"source": " "}, "source"),
    ("list_documents", {"lang": ""}, "lang"),
    ("list_documents", {"title_contains": "\t"}, "title_contains"),
    ("get_outline", {"doc_ids": [" "]}, "doc_ids[0]"),
    ("get_outline", {"doc_ids": [""]}, "doc_ids[0]"),
    ("search_blocks", {"query": "  "}, "query"),
    ("search_blocks", {"query": "x", "doc_ids": ["d", "\n"]}, "doc_ids[1]"),
    ("list_blocks", {"doc_id": " "}, "doc_id"),
    ("list_blocks", {"doc_id": ""}, "doc_id"),
    ("list_blocks", {"doc_id": "d", "section_paths": [" "]}, "section_paths[0]"),
    ("scan_term", {"term": ""}, "term"),
    ("scan_term", {"term": "x", "doc_ids": [" "]}, "doc_ids[0]"),
]


@pytest.mark.parametrize(("name", "args", "field"), BLANK_ARGUMENTS)
async def test_a_blank_argument_of_any_tool_is_named_in_plain_words(
    run: Callable[..., Any], name: str, args: dict[str, Any], field: str
) -> None:
    outcome = await run(name, args)
    assert isinstance(outcome.result, ErrorResult)
    assert outcome.result.error.code == "invalid_argument"
    message = outcome.result.error.message
    assert f"`{field}` must not be blank" in message
    assert "regex" not in message and "Expected `" not in message


@pytest.mark.parametrize(
    ("name", "args", "words"),
    [
        ("search_blocks", {"query": 5}, "`query` must be text (a JSON string), not a whole number"),
        ("get_outline", {"doc_ids": "d1"}, "`doc_ids` must be a list (a JSON array), not text"),
        ("search_blocks", {"query": "x", "doc_ids": []}, "`doc_ids` must list at least one item"),
        ("scan_term", {"term": None}, "`term` must be text (a JSON string), not null"),
        ("scan_term", b"[1, 2]", "the arguments must be a JSON object, not a list"),
    ],
)
async def test_a_wrong_type_or_an_empty_list_is_said_in_plain_words(
    run: Callable[..., Any], name: str, args: Any, words: str
) -> None:
    outcome = await run(name, args)
    assert isinstance(outcome.result, ErrorResult)
    assert words in outcome.result.error.message
    assert "Expected `" not in outcome.result.error.message


async def test_a_query_over_the_length_limit_is_invalid_argument_naming_the_limit(
    snap: Snapshot, embedding_server: EmbeddingServer
) -> None:
    import dataclasses
    import time

    ctx = dataclasses.replace(context(snap, server_embedder(embedding_server)), max_query_chars=50)
    before = len(embedding_server.requests)
    at_limit = await run_tool(ctx, "search_blocks", {"query": "listeners " * 4 + "x" * 10})
    assert at_limit.ok, at_limit.json
    over = await run_tool(ctx, "search_blocks", {"query": "  " + "y" * 51 + "  "})
    assert isinstance(over.result, ErrorResult)
    assert over.result.error.code == "invalid_argument" and not over.result.error.retryable
    assert "51 characters" in over.result.error.message
    assert "limit is 50 (retrieval.max_query_chars)" in over.result.error.message
    assert len(embedding_server.requests) == before + 1  # the long query was never embedded
    # the default limit refuses the 200 KB query at once instead of searching for 8 s
    t0 = time.perf_counter()
    huge = await run_tool(context(snap), "search_blocks", {"query": "word " * 40_000})
    assert isinstance(huge.result, ErrorResult) and "limit is 4,000" in huge.result.error.message
    assert time.perf_counter() - t0 < 1.0


async def test_collection_unavailable_carries_the_reason_it_is_given(snap: Snapshot) -> None:
    import dataclasses

    ctx = dataclasses.replace(context(None), unavailable="snapshot s1 is damaged (x is missing)")
    for name, args in calls(snap):
        outcome = await run_tool(ctx, name, args)
        assert isinstance(outcome.result, ErrorResult)
        assert outcome.result.error.code == "collection_unavailable"
        assert outcome.result.error.message == "snapshot s1 is damaged (x is missing)"
