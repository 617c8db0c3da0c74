"""The admission arithmetic of SPEC §6 at its edges, and budgets from the config."""

from __future__ import annotations

from engine.config import parse_config
from engine.harness.budget import Budgets, admit, check_final, refusal_message

B = Budgets(
    max_context_tokens=10_000,
    max_request_tokens=30_000,
    finalization_reserve_tokens=2_000,
    max_tool_calls=3,
    max_output_tokens=3_000,
)


def test_budgets_come_from_the_budget_and_chat_sections() -> None:
    config = parse_config(
        {
            "budget": {"max_context_tokens": 50_000, "max_tool_calls": 2},
            "chat": {"max_output_tokens": 1234},
        },
        {},
    )
    b = Budgets.from_config(config)
    assert (b.max_context_tokens, b.max_request_tokens, b.max_tool_calls) == (50_000, 400_000, 2)
    assert (b.finalization_reserve_tokens, b.max_output_tokens) == (4_000, 1234)


def test_context_condition_admits_exactly_fitting_prompt() -> None:
    # prompt + max_output == max_context: 7_000 + 3_000 = 10_000
    assert admit(B, used_tokens=0, prompt_tokens=7_000, result_tokens=500).accepted


def test_context_condition_refuses_one_token_over() -> None:
    over = admit(B, used_tokens=0, prompt_tokens=7_001, result_tokens=500)
    assert over.verdict == "context_budget_exceeded"
    assert (over.needed, over.available, over.result_tokens) == (10_001, 10_000, 500)


def test_request_condition_keeps_the_finalization_reserve() -> None:
    # used + prompt + output <= request - reserve: 18_000 + 7_000 + 3_000 = 28_000
    fits = admit(B, used_tokens=18_000, prompt_tokens=7_000)
    assert fits.accepted and fits.needed == 28_000 == fits.available
    over = admit(B, used_tokens=18_001, prompt_tokens=7_000)
    assert over.verdict == "request_budget_exceeded"
    assert (over.needed, over.available) == (28_001, 28_000)


def test_context_is_checked_before_the_request_budget() -> None:
    both = admit(B, used_tokens=29_000, prompt_tokens=9_000)
    assert both.verdict == "context_budget_exceeded"


def test_final_turn_spends_the_reserve_and_asks_for_at_most_the_reserve() -> None:
    assert B.final_output_tokens == 2_000
    # used + prompt + final output <= the whole request budget
    assert check_final(B, used_tokens=20_000, prompt_tokens=8_000).accepted
    over = check_final(B, used_tokens=20_001, prompt_tokens=8_000)
    assert over.verdict == "request_budget_exceeded" and over.needed == 30_001
    assert check_final(B, used_tokens=0, prompt_tokens=8_001).verdict == "context_budget_exceeded"


def test_refusal_messages_name_the_sizes_and_the_remedy() -> None:
    over = admit(B, used_tokens=0, prompt_tokens=7_001, result_tokens=500)
    text = refusal_message(over, "list_blocks")
    assert "10001" in text and "10000" in text and "500" in text
    assert "max_context_tokens" in text and "Narrow the scope" in text
    req = refusal_message(admit(B, used_tokens=18_001, prompt_tokens=7_000), "scan_term")
    assert "28001" in req and "28000" in req and "max_request_tokens" in req
