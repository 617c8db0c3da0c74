"""The traces page's views built from a stored trace: the story turn by turn, the waterfall and
totals, evidence as a conversation, the re-run estimate, answer diffs and two traces compared.
Pure functions over records, so each case is a small hand-made trace."""

from __future__ import annotations

import json
from typing import Any

from actors.trace_compare import answer_diff, compare_traces, rerun_estimate
from actors.trace_story import (
    AdmissionStep,
    ModelStep,
    StoryBlock,
    StoryInputs,
    ToolStep,
    build_story,
    cited_sentences,
    conversation_of,
    observation_of,
    thought_of,
)
from actors.trace_timeline import trace_totals, waterfall
from engine.chat import ChatMessage
from engine.trace import ArtifactRef, Span, SpanEvent, TraceRecord, TraceSummary
from engine.trace import model as m

T0 = 1_700_000_000.0
BLOCK = "d1#b3"


def span(
    key: str, kind: str, parent: str | None, start: float, end: float | None, **a: Any
) -> Span:
    return Span(
        trace_id="t" * 32,
        span_id=key.ljust(16, "0")[:16],
        parent_id=None if parent is None else parent.ljust(16, "0")[:16],
        kind=kind,  # type: ignore[arg-type]
        name=key,
        start=T0 + start,
        end=None if end is None else T0 + end,
        status="error" if a.pop("failed", False) else "ok",
        attributes=a,
        events=tuple(a.pop("_events", ())) if "_events" in a else (),
    )


def record(
    *,
    trace_id: str = "a" * 32,
    refused: bool = False,
    blocks: tuple[str, ...] = (BLOCK, "d2#b1"),
    manifest: dict[str, Any] | None = None,
    answer_sha: str = "h1",
) -> TraceRecord:
    final_events = (
        SpanEvent(
            name="citation",
            at=T0 + 2,
            attributes={
                "citewise.citation": BLOCK,
                "citewise.citation.valid": True,
                "citewise.citation.index": 1,
                "citewise.citation.title": "Node events",
                "citewise.citation.section": "Node events > Emitters",
                "citewise.citation.page_start": 4,
                "citewise.citation.page_end": 4,
            },
        ),
    )
    spans = [
        span(
            "request",
            "request",
            None,
            0,
            2.0,
            **{
                m.INPUT_TOKENS: 900,
                m.OUTPUT_TOKENS: 60,
                m.CACHE_READ_TOKENS: 512,
                m.REQUEST_MODEL: "deepseek-chat",
            },
        ),
        span("turn1", "turn", "request", 0.01, 1.0, **{m.TURN: 1, m.FINAL_TURN: False}),
        span(
            "llm1",
            "llm_call",
            "turn1",
            0.02,
            0.5,
            **{
                m.TURN: 1,
                m.ATTEMPT: 1,
                m.INPUT_TOKENS: 400,
                m.OUTPUT_TOKENS: 20,
                m.CACHE_READ_TOKENS: 0,
                m.COST: 0.0001,
                m.REQUEST_MODEL: "deepseek-chat",
                m.LATENCY_MS: 480.0,
            },
        ),
        span(
            "tool1",
            "tool_call",
            "turn1",
            0.51,
            0.6,
            **{
                m.TURN: 1,
                m.TOOL_NAME: "search_blocks",
                m.TOOL_CALL_ID: "call-1",
                m.TOOL_ARGS: '{"query":"listener order"}',
                m.HARNESS_STATUS: "ok",
                m.TOOL_OUTCOME: "ok",
                m.TOOL_BLOCKS: list(blocks),
                m.EMBEDDING_TOKENS: 7,
            },
        ),
        span(
            "adm1",
            "admission",
            "turn1",
            0.6,
            0.61,
            failed=refused,
            **{
                m.TURN: 1,
                m.TOOL_NAME: "search_blocks",
                m.ADMISSION_VERDICT: "context_budget_exceeded" if refused else "accepted",
                m.ADMISSION_RESULT_TOKENS: 1709,
                m.ADMISSION_NEEDED: 305_217 if refused else 4_000,
                m.ADMISSION_AVAILABLE: 100_000 if refused else 400_000,
                m.ADMISSION_USED: 2_000,
            },
        ),
        span("turn2", "turn", "request", 1.0, 2.0, **{m.TURN: 2, m.FINAL_TURN: False}),
        span(
            "llm2",
            "llm_call",
            "turn2",
            1.01,
            1.9,
            **{
                m.TURN: 2,
                m.ATTEMPT: 1,
                m.INPUT_TOKENS: 500,
                m.OUTPUT_TOKENS: 40,
                m.CACHE_READ_TOKENS: 512,
                m.COST: 0.0002,
            },
        ),
    ]
    final = Span(
        trace_id="t" * 32,
        span_id="final".ljust(16, "0"),
        parent_id="request".ljust(16, "0"),
        kind="final",
        name="final answer",
        start=T0 + 1.01,
        end=T0 + 2.0,
        status="ok",
        attributes={m.CITATIONS: [BLOCK], m.CITATIONS_VALID: [True], m.TERMINATION: "finished"},
        events=final_events,
        artifacts=(ArtifactRef(kind="answer", sha256=answer_sha, size=10, stored=False),),
    )
    spans.append(final)
    summary = TraceSummary(
        trace_id=trace_id,
        started_at="2026-12-02T01:00:00.000Z",
        question="How do listeners run?",
        status="ok",
        termination_reason="finished",
        tokens=960,
        cost=0.0003,
        currency="USD",
        duration_ms=2000.0,
        manifest_hash="m1",
        snapshot_id="s1",
        collection="default",
    )
    return TraceRecord(summary=summary, manifest=manifest or {}, spans=spans)


def test_the_story_tells_each_turn_its_decision_tool_results_admission_and_cost() -> None:
    inputs = StoryInputs(
        replies={"llm1".ljust(16, "0"): "Thought: I should search.\nAction: search_blocks[{}]"},
        answer=f"Listeners run in order.【来源:{BLOCK}】 Made up.",
        blocks={BLOCK: StoryBlock(citation=BLOCK, title="Node events", section="Emitters")},
    )
    story = build_story(record(), inputs)
    assert [t.number for t in story.turns] == [1, 2]
    model, tool, admission = story.turns[0].steps
    assert isinstance(model, ModelStep) and model.thought == "I should search."
    assert model.input_tokens == 400 and model.cost == 0.0001
    assert isinstance(tool, ToolStep) and tool.args == {"query": "listener order"}
    assert [b.title for b in tool.blocks] == ["Node events", ""]  # d2#b1 could not be looked up
    assert isinstance(admission, AdmissionStep) and admission.verdict == "accepted"
    assert admission.result_tokens == 1709 and admission.left == 396_000
    (second,) = story.turns[1].steps
    assert isinstance(second, ModelStep) and second.cache_read_tokens == 512
    assert second.thought is None  # metadata mode: the reply was not kept
    assert [(s.text, s.citations) for s in story.sentences] == [
        ("Listeners run in order.", [BLOCK]),
        ("Made up.", []),
    ]
    (cited,) = story.citations
    assert cited.valid and cited.block.page_start == 4 and cited.block.title == "Node events"


def test_a_refused_result_says_what_it_needed_and_what_the_context_allows() -> None:
    story = build_story(record(refused=True), StoryInputs())
    admission = story.turns[0].steps[2]
    assert isinstance(admission, AdmissionStep)
    assert (admission.verdict, admission.needed, admission.available) == (
        "context_budget_exceeded",
        305_217,
        100_000,
    )


def test_thought_and_cited_sentences_read_the_protocol() -> None:
    assert thought_of("Thought: look it up\nAction: Finish[x]") == "look it up"
    assert thought_of("Action: Finish[x]") == ""
    pieces = cited_sentences("A.【来源:d1#b1】【来源:d1#b2】 B【来源:d2#b1, d2#b2】 C")
    assert [(p.text, p.citations) for p in pieces] == [
        ("A.", ["d1#b1", "d1#b2"]),
        ("B", ["d2#b1", "d2#b2"]),
        ("C", []),
    ]


def test_the_waterfall_places_every_span_and_the_totals_keep_embedding_tokens_apart() -> None:
    rows = waterfall(record())
    assert [r.kind for r in rows][:3] == ["request", "turn", "llm_call"]
    root = rows[0]
    assert root.depth == 0 and root.left == 0 and root.width == 1.0
    llm = rows[2]
    assert llm.depth == 2 and llm.detail == "deepseek-chat"
    assert round(llm.offset_ms) == 20 and round(llm.duration_ms or 0) == 480
    assert all(0 <= r.left <= 1 and r.left + r.width <= 1.0001 for r in rows)
    manifest = {
        "prompt_bundle": {"id": "baseline", "version": "1.0.0"},
        "snapshot": {"id": "s1", "collection": "default", "status": "ready_partial"},
        "chat": {"model": "deepseek-chat"},
    }
    totals = trace_totals(record(manifest=manifest))
    assert (totals.model_calls, totals.tool_calls, totals.refused_calls) == (2, 1, 0)
    assert (totals.chat_tokens, totals.embedding_tokens) == (960, 7)
    assert totals.cache_read_tokens == 512 and totals.input_tokens == 900
    assert totals.snapshot_status == "ready_partial" and totals.prompt_bundle == "baseline@1.0.0"
    assert totals.model == "deepseek-chat"


def test_evidence_becomes_a_conversation_with_observations_read_out() -> None:
    payload = {
        "blocks": [
            {
                "citation": BLOCK,
                "title": "Node events",
                "section": "Emitters",
                "page_start": 2,
                "page_end": 3,
                "text": "An EventEmitter calls listeners.",
            }
        ],
        "total": 1,
    }
    observation = (
        "Observation from the system.\n<<<DATA 123456789012>>>\n"
        + json.dumps(
            {"harness_status": "ok", "tool": "search_blocks", "payload": payload, "message": None}
        )
        + "\n<<<END DATA 123456789012>>>"
    )
    messages = [
        ChatMessage(role="system", content="You are Citewise."),
        ChatMessage(role="user", content="How do listeners run?"),
        ChatMessage(role="assistant", content="Thought: search\nAction: search_blocks[{}]"),
        ChatMessage(role="user", content=observation),
    ]
    kinds = [c.kind for c in conversation_of(messages)]
    assert kinds == ["system", "question", "reply", "observation"]
    view = conversation_of(messages)[-1].observation
    assert view is not None and view.tool == "search_blocks" and view.outcome == "ok"
    assert view.blocks[0].title == "Node events" and view.blocks[0].page_end == 3
    empty = observation.replace('"total": 1', '"total": 0, "empty_reason": "no_match"')
    assert (observation_of(empty) or view).outcome == "no_match"
    assert observation_of("just a question") is None


def test_the_rerun_estimate_multiplies_this_traces_usage() -> None:
    estimate = rerun_estimate(record(), 3)
    assert (estimate.tokens, estimate.model_calls_per_run) == (2880, 2)
    assert abs(estimate.cost - 0.0009) < 1e-12 and estimate.currency == "USD"


def test_answer_diff_marks_added_and_removed_words_and_chinese_characters() -> None:
    pieces = answer_diff("Listeners run in order.", "Listeners run one after another.")
    assert [p.op for p in pieces] == ["same", "removed", "added", "same"]
    assert "".join(p.text for p in pieces if p.op != "added") == "Listeners run in order."
    assert "".join(p.text for p in pieces if p.op != "removed") == (
        "Listeners run one after another."
    )
    zh = answer_diff("监听器按顺序运行", "监听器同步运行")
    assert ("removed", "按顺序") in [(p.op, p.text) for p in zh]
    assert answer_diff("same", "same") == [answer_diff("same", "same")[0]]


def test_two_traces_compared_name_manifest_changes_tool_calls_blocks_and_answers() -> None:
    first = record(
        manifest={"prompt_bundle": {"id": "baseline", "version": "1"}, "request_id": "x"}
    )
    second = record(
        trace_id="b" * 32,
        blocks=(BLOCK, "d9#b9"),
        manifest={"prompt_bundle": {"id": "baseline", "version": "2"}, "request_id": "y"},
        answer_sha="h2",
    )
    result = compare_traces(first, second, "Listeners run in order.", "Listeners run in turn.")
    assert [(c.key, c.first, c.second) for c in result.manifest_changes] == [
        ("prompt_bundle.version", "1", "2")
    ]
    (pair,) = result.calls
    assert pair.first is not None and pair.second is not None and not pair.same
    assert result.only_first == ["d2#b1"] and result.only_second == ["d9#b9"]
    assert result.same_question and result.same_answer is False
    assert {p.op for p in result.answer_diff} == {"same", "removed", "added"}
    unknown = compare_traces(first, second)
    assert unknown.same_answer is False and unknown.answer_diff == []  # hashes differ
