"""What the ask page shows, folded from a request's events (no UI toolkit involved)."""

from __future__ import annotations

import msgspec

from actors import (
    AdmissionDecided,
    AnswerDelta,
    AnswerRetracted,
    Budgets,
    RequestFinished,
    ToolCallFinished,
    TurnStarted,
)
from engine.harness import Counters
from web.live_answer import LiveAnswer

RID = "r1"
# A search_blocks result as the harness emits it (front ends read it with the tool contract).
PAYLOAD = msgspec.json.encode(
    {
        "blocks": [
            {
                "citation": "dA#b1",
                "doc_id": "dA",
                "block_id": "b1",
                "title": "A",
                "source_label": "a.md",
                "section": "A",
                "page_start": None,
                "page_end": None,
                "text": "Yes.",
            }
        ],
        "total": 1,
        "token_estimate": 0,
        "contract_version": 1,
    }
)


def test_markers_split_across_deltas_become_numbers_and_unknown_ones_are_flagged() -> None:
    live = LiveAnswer(Budgets(max_tool_calls=4))
    live.feed(TurnStarted(request_id=RID, at=0, turn=1, final=False, prompt_tokens=1200))
    live.feed(
        ToolCallFinished(
            request_id=RID,
            at=0,
            turn=1,
            call=1,
            tool="search_blocks",
            args={"query": "x"},
            harness_status="ok",
            outcome="ok",
            payload=PAYLOAD,
        )
    )
    for piece in ("Yes.【来", "源:dA#b1】 No.【来源:dZ#", "b9】 end"):
        live.feed(AnswerDelta(request_id=RID, at=0, text=piece))
        assert "来源" not in live.text and "dA" not in live.text
    assert live.text == "Yes.[1] No.[2?] end"
    assert live.gauge.context_tokens == 1200 and live.gauge.tool_calls == 1
    assert live.gauge.tools_share == 0.25


def test_retraction_discards_the_streamed_text() -> None:
    live = LiveAnswer(Budgets())
    live.feed(AnswerDelta(request_id=RID, at=0, text="A wrong start"))
    live.feed(AnswerRetracted(request_id=RID, at=0, reason="the reply broke the protocol"))
    assert live.text == "" and live.retractions == 1
    assert live.activity is not None and live.activity.key == "ask.retracted"


def test_refused_evidence_is_disclosed_with_the_figures() -> None:
    live = LiveAnswer(Budgets(max_context_tokens=10_000))
    assert not live.disclose_budget
    live.feed(
        AdmissionDecided(
            request_id=RID,
            at=0,
            turn=1,
            tool="list_blocks",
            verdict="context_budget_exceeded",
            prompt_tokens=9_000,
            result_tokens=7_000,
            needed=16_000,
            available=10_000,
            used_tokens=3_000,
        )
    )
    assert live.disclose_budget
    assert live.refused == ["list_blocks: context_budget_exceeded (16000 > 10000 tokens)"]
    assert live.gauge.used_tokens == 3_000 and live.gauge.context_share == 0.9


def test_finished_request_renumbers_the_final_answer_and_takes_the_counters() -> None:
    live = LiveAnswer(Budgets())
    live.feed(AnswerDelta(request_id=RID, at=0, text="partial"))
    live.feed(
        RequestFinished(
            request_id=RID,
            at=1,
            termination_reason="finished",
            answer="Final.【来源:dQ#b2】",
            message="",
            counters=Counters(tool_calls=2, used_tokens=5_000, context_tokens=2_500),
        )
    )
    assert live.text == "Final.[1?]"  # never returned in this request: flagged
    assert (live.gauge.tool_calls, live.gauge.used_tokens) == (2, 5_000)
    assert live.activity is None and live.finished is not None
