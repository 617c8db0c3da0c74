"""search_blocks: hybrid candidates that are deterministic across calls and processes, honest
failures when the query cannot be embedded (never a quiet keyword-only search), and empty
results that say why — against a real loopback embedding server, on both backends."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from engine.tools import BlocksResult, ErrorResult, ToolOutcome, default_retrieval_params, run_tool
from engine.tools.contracts import ToolInternals
from engine.tools.retrieval import character_terms, keyword_query, search
from engine.trace import model as m
from engine.trace.recorder import retrieval_attributes
from index.snapshot import Snapshot
from tests.engine.tools.snapshots import context as make_context
from tests.engine.tools.snapshots import (
    document,
    embedding_text,
    library,
    plain,
    record,
    section,
    server_embedder,
    write_snapshot,
    write_snapshot_async,
)
from tests.servers.embedding_server import EmbeddingServer, Status

REPO = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def snap_path(tmp_path: Path, embedding_server: EmbeddingServer) -> Path:
    return write_snapshot(tmp_path / "s", library(), server_embedder(embedding_server))


@pytest.fixture
def snap(snap_path: Path, open_snapshot: Callable[[Path], Snapshot]) -> Snapshot:
    return open_snapshot(snap_path)


async def search_blocks(
    snap: Snapshot, server: EmbeddingServer, model: str = "test-embed", **args: Any
) -> ToolOutcome:
    ctx = make_context(snap, server_embedder(server, model))
    return await run_tool(ctx, "search_blocks", args)


def error_of(outcome: ToolOutcome) -> Any:
    assert isinstance(outcome.result, ErrorResult), outcome.json
    return outcome.result.error


def blocks_of(outcome: ToolOutcome) -> BlocksResult:
    assert isinstance(outcome.result, BlocksResult), outcome.json
    assert outcome.result.total == len(outcome.result.blocks)
    return outcome.result


async def test_returns_at_most_top_k_blocks_with_full_text_and_citations(
    snap: Snapshot, embedding_server: EmbeddingServer
) -> None:
    result = blocks_of(await search_blocks(snap, embedding_server, query="warning listeners"))
    assert 0 < result.total <= default_retrieval_params().top_k
    first = result.blocks[0]
    assert "memory leaks" in first.text  # the setMaxListeners block, whole
    assert first.citation == f"{first.doc_id}#{first.block_id}"
    assert first.section == "Events / Class: EventEmitter / emitter.setMaxListeners(n)"


@pytest.mark.parametrize(("status", "retryable"), [(503, True), (500, True), (401, False)])
async def test_a_failing_embedding_service_is_upstream_unavailable_never_keywords_only(
    snap: Snapshot, embedding_server: EmbeddingServer, status: int, retryable: bool
) -> None:
    embedding_server.script(Status(status))
    before = len(embedding_server.requests)  # building the snapshot embedded its blocks
    outcome = await search_blocks(snap, embedding_server, query="warning listeners")
    error = error_of(outcome)
    assert (error.code, error.retryable) == ("upstream_unavailable", retryable)
    assert b"memory leaks" not in outcome.json  # no block slipped through from BM25
    assert len(embedding_server.requests) == before + 1  # asked once, no silent fallback


async def test_a_different_embedding_model_is_refused_without_searching(
    snap: Snapshot, embedding_server: EmbeddingServer
) -> None:
    before = len(embedding_server.requests)
    outcome = await search_blocks(snap, embedding_server, "other-model", query="listeners")
    error = error_of(outcome)
    assert error.code == "upstream_unavailable" and not error.retryable
    assert "test-embed" in error.message and "other-model" in error.message
    assert len(embedding_server.requests) == before  # the query was not even embedded


async def test_a_snapshot_built_without_vectors_cannot_be_searched(
    tmp_path: Path, embedding_server: EmbeddingServer, open_snapshot: Callable[[Path], Snapshot]
) -> None:
    bare = open_snapshot(await write_snapshot_async(tmp_path / "bare", library(), None))
    error = error_of(await search_blocks(bare, embedding_server, query="listeners"))
    assert error.code == "upstream_unavailable"


async def test_nothing_similar_enough_and_no_shared_word_is_no_match(
    tmp_path: Path, embedding_server: EmbeddingServer, open_snapshot: Callable[[Path], Snapshot]
) -> None:
    strict = msgspec.structs.replace(default_retrieval_params(), min_similarity=0.999)
    path = await write_snapshot_async(
        tmp_path / "strict", library(), server_embedder(embedding_server), params=strict
    )
    snap = open_snapshot(path)
    before = len(embedding_server.requests)
    result = blocks_of(await search_blocks(snap, embedding_server, query="zyzzyva quokka"))
    assert (result.blocks, result.empty_reason) == ((), "no_match")
    assert len(embedding_server.requests) == before + 1  # it did search, and found nothing


async def test_empty_scopes_say_scope_empty_or_collection_empty(
    tmp_path: Path, embedding_server: EmbeddingServer, open_snapshot: Callable[[Path], Snapshot]
) -> None:
    embedder = server_embedder(embedding_server)
    snap = open_snapshot(
        await write_snapshot_async(tmp_path / "a", [*library(), plain("void", [])], embedder)
    )
    scoped = blocks_of(await search_blocks(snap, embedding_server, query="x", doc_ids=["dvoid"]))
    assert scoped.empty_reason == "scope_empty"
    empty = open_snapshot(await write_snapshot_async(tmp_path / "b", [], embedder))
    assert blocks_of(await search_blocks(empty, embedding_server, query="x")).empty_reason == (
        "collection_empty"
    )


async def test_doc_ids_limit_the_search_and_one_unknown_id_fails_the_whole_call(
    snap: Snapshot, embedding_server: EmbeddingServer
) -> None:
    ids = {d.source: d.doc_id for d in snap.documents}
    faq = ids["python-faq/library.html"]
    result = blocks_of(await search_blocks(snap, embedding_server, query="events", doc_ids=[faq]))
    assert {b.doc_id for b in result.blocks} <= {faq}
    error = error_of(await search_blocks(snap, embedding_server, query="x", doc_ids=[faq, "dno"]))
    assert error.code == "scope_not_found" and "dno" in error.message


async def test_fifty_identical_calls_give_byte_identical_results(
    snap: Snapshot, embedding_server: EmbeddingServer
) -> None:
    ctx = make_context(snap, server_embedder(embedding_server))
    args = {"query": "事件 listeners 控制台 threads"}
    first = (await run_tool(ctx, "search_blocks", args)).json
    for _ in range(49):
        assert (await run_tool(ctx, "search_blocks", args)).json == first


async def test_another_process_on_the_same_snapshot_gives_the_same_bytes(
    snap: Snapshot, snap_path: Path, embedding_server: EmbeddingServer
) -> None:
    query = "how many listeners before a warning 控制台"
    here = (await search_blocks(snap, embedding_server, query=query)).json
    program = (
        "import sys, anyio\n"
        "from pathlib import Path\n"
        "from engine.embedding import OpenAICompatibleEmbedding\n"
        "from engine.tokens import TokenCounter\n"
        "from engine.tools import ToolContext, run_tool\n"
        "from index.snapshot import Snapshot\n"
        "async def main():\n"
        "    with Snapshot.open(Path(sys.argv[1])) as snap:\n"
        "        e = OpenAICompatibleEmbedding(base_url=sys.argv[2], model='test-embed',\n"
        "            dimensions=int(sys.argv[3]), api_key='sk-test-key')\n"
        "        out = await run_tool(ToolContext(snap, e, TokenCounter()), 'search_blocks',\n"
        "            {'query': sys.argv[4]})\n"
        "        sys.stdout.buffer.write(out.json)\n"
        "anyio.run(main)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONHASHSEED": "12345"}
    there = subprocess.run(
        [sys.executable, "-c", program, str(snap_path), embedding_server.url,
         str(embedding_server.dimensions), query],
        capture_output=True, check=True, cwd=REPO, env=env, timeout=120,
    ).stdout  # fmt: skip
    assert there == here


def tie_library() -> list[Any]:
    """Two documents whose blocks score exactly alike: same words, same heading, other order."""
    first = document("First", section("Same", 1, "alpha beta gamma"))
    second = document("Second", section("Same", 1, "gamma beta alpha"))
    return [record(second, "b-second.md"), record(first, "a-first.md")]


async def test_ties_are_broken_by_document_order_then_block_index(
    tmp_path: Path, embedding_server: EmbeddingServer, open_snapshot: Callable[[Path], Snapshot]
) -> None:
    keyword_only = msgspec.structs.replace(default_retrieval_params(), min_similarity=0.999)
    embedder = server_embedder(embedding_server)
    snap = open_snapshot(
        await write_snapshot_async(tmp_path / "t", tie_library(), embedder, params=keyword_only)
    )
    result = blocks_of(await search_blocks(snap, embedding_server, query="beta"))
    # Snapshot order is the list order (second, then first), whatever the doc_ids are.
    assert [b.source_label for b in result.blocks] == ["b-second.md", "a-first.md"]


async def test_copies_of_one_text_are_one_candidate_returned_once_as_the_first_copy(
    tmp_path: Path, embedding_server: EmbeddingServer, open_snapshot: Callable[[Path], Snapshot]
) -> None:
    text = "Use os.remove(filename) to delete a file."
    docs = [
        record(document("One", section("Files", 1, text)), "one.html"),
        record(document("Two", section("Files", 1, text.replace(" ", "  "))), "two.docx"),
        record(document("Three", section("Other", 1, "Deleting a file needs os.remove.")), "3.md"),
    ]
    embedder = server_embedder(embedding_server)
    snap = open_snapshot(await write_snapshot_async(tmp_path / "d", docs, embedder))
    # The scripted server embeds by hashing the text: this query's vector is exactly the
    # second copy's, so the vector list ranks that copy first while BM25 ties favour the first.
    query = embedding_text(docs[1], 0)
    result = blocks_of(await search_blocks(snap, embedding_server, query=query))
    sources = [b.source_label for b in result.blocks]
    assert sources.count("one.html") + sources.count("two.docx") == 1
    assert sources[0] == "one.html"  # both lists' votes, under the copy first in the snapshot


def test_navigational_blocks_rank_below_the_content_they_point_to(
    tmp_path: Path, open_snapshot: Callable[[Path], Snapshot]
) -> None:
    entries = [f"4.{i} Shutdown {topic} . . . . . . {20 + i}" for i, topic in enumerate(
        ["basics", "hooks", "order", "timeouts", "remote hosts", "logs"], start=1)]  # fmt: skip
    manual = record(
        document(
            "Manual",
            section("Contents", 1, *entries),
            section("Halting", 1, "Run shutdown -h now as root to halt the machine."),
        ),
        "manual.pdf",
        target_tokens=256,  # the whole table of contents in one block
    )
    snap = open_snapshot(write_snapshot(tmp_path / "n", [manual]))
    params = default_retrieval_params()
    outcome = search(snap, "shutdown", None, None, params, "keyword")
    ranked = {r.ordinal: r for r in outcome.trace.ranking}
    contents, halting = (snap.documents[0].block_start + i for i in (0, 1))
    assert "4.6 Shutdown logs" in snap.block(contents).text
    # On BM25 alone the contents page wins: six mentions against one.
    assert ranked[contents].keyword_score > ranked[halting].keyword_score  # type: ignore[operator]
    assert outcome.ordinals == (halting, contents)
    assert ranked[contents].navigational and not ranked[halting].navigational


def test_a_block_is_found_through_the_headings_above_it(
    tmp_path: Path, open_snapshot: Callable[[Path], Snapshot]
) -> None:
    faq = record(
        document(
            "FAQ",
            section("Threads", 1, "Questions about concurrency follow."),
            section("Can I stop one?", 2, "Not directly; set a flag the worker checks."),
        ),
        "faq.md",
    )
    snap = open_snapshot(write_snapshot(tmp_path / "h", [faq]))
    outcome = search(snap, "threads", None, None, default_retrieval_params(), "keyword")
    texts = [snap.block(o).text for o in outcome.ordinals]
    assert any("set a flag the worker checks" in t for t in texts)  # no "threads" in its body


def test_function_words_are_dropped_and_a_query_of_them_alone_finds_no_keyword_candidate(
    snap: Snapshot,
) -> None:
    params = default_retrieval_params()
    trace = search(snap, "What is the EventEmitter?", None, None, params, "keyword").trace
    assert trace.query_tokens == ("eventemitter",)
    assert set(trace.dropped_tokens) == {"what", "is", "the"}
    for nothing in ("what is this", "的了吗呢吧", "怎么 什么 如何？", "？！。…"):
        outcome = search(snap, nothing, None, None, params, "keyword")
        assert outcome.trace.query_tokens == () and outcome.trace.keyword_candidates == 0
        assert outcome.ordinals == ()


def test_chinese_scaffolding_is_dropped_but_topic_bigrams_and_lone_characters_stay() -> None:
    kept, dropped = keyword_query("为什么控制台的锁会失效？")
    assert {"控制", "制台", "失效"} <= set(kept)
    assert dropped == ["为什", "什么"]  # a bigram with one topic character (台的) stays
    assert keyword_query("锁")[0] == ["锁"]  # a one-character query is still a topic
    assert keyword_query("的") == ([], ["的"])


def test_a_chinese_querys_characters_count_in_blocks_that_match_one_of_its_terms() -> None:
    assert character_terms(["关掉", "掉自", "自动", "更新"]) == ["关", "掉", "自", "动", "更", "新"]
    assert character_terms(["锁", "控制", "台的"]) == ["控", "制", "台"]  # no 的, no 锁 twice
    assert character_terms(["eventemitter", "ab"]) == []


def test_a_block_that_words_the_query_another_way_outranks_one_that_shares_less(
    tmp_path: Path, open_snapshot: Callable[[Path], Snapshot]
) -> None:
    # "关掉" (switch off) and "关闭" (close) share 关; both blocks hold 自动更新 once.
    settings = plain("settings", ["自动更新会在夜里下载补丁包。", "在设置里可以关闭自动更新功能。"])
    snap = open_snapshot(write_snapshot(tmp_path / "h", [settings]))
    params = default_retrieval_params()
    outcome = search(snap, "怎么关掉自动更新", None, None, params, "keyword")
    assert "关" in outcome.trace.character_tokens
    assert "关闭" in snap.block(outcome.ordinals[0]).text
    # the trace says which characters counted
    attributes = retrieval_attributes(ToolInternals(search=outcome.trace))
    assert attributes[m.RETRIEVAL_CHARACTER_TOKENS] == list(outcome.trace.character_tokens)
    english = search(snap, "automatic updates", None, None, params, "keyword").trace
    assert m.RETRIEVAL_CHARACTER_TOKENS not in retrieval_attributes(ToolInternals(search=english))


def test_common_characters_alone_match_no_block(
    tmp_path: Path, open_snapshot: Callable[[Path], Snapshot]
) -> None:
    # Every character of the query is in the block, none of its bigrams: no keyword match.
    snap = open_snapshot(write_snapshot(tmp_path / "h", [plain("p", ["大学生在图书馆读书。"])]))
    outcome = search(snap, "书读馆图", None, None, default_retrieval_params(), "keyword")
    assert outcome.trace.character_tokens == ("书", "读", "馆", "图")
    assert outcome.trace.keyword_candidates == 0 and outcome.ordinals == ()


async def test_each_lists_first_block_keeps_a_place_in_the_result(
    snap: Snapshot, embedding_server: EmbeddingServer
) -> None:
    import anyio.to_thread

    embedder = server_embedder(embedding_server)
    params = msgspec.structs.replace(default_retrieval_params(), top_k=2, min_similarity=-1.0)
    one = msgspec.structs.replace(params, top_k=1)
    rescued = 0
    for query in ["listeners", "控制台", "threads lock", "event error", "file system 文件"]:
        vector = (await embedder.embed([query])).vectors[0]

        def ranked(mode: Any, p: Any = params, v: Any = vector, q: str = query) -> Any:
            return search(snap, q, v, None, p, mode)

        hybrid = await anyio.to_thread.run_sync(ranked, "hybrid")
        for mode in ("keyword", "vector"):
            head = (await anyio.to_thread.run_sync(ranked, mode, one)).ordinals
            assert set(head) <= set(hybrid.ordinals), (query, mode)
        rescued += sum(r.kept_as_list_head for r in hybrid.trace.ranking)
    assert rescued > 0  # the rule made a difference at least once
