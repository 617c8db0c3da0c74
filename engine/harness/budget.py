"""Budgets, counters and the ONE admission decision (SPEC §6 arithmetic, fixed).

A tool result enters history only through `admit`; model calls are checked with
`check_turn` / `check_final` on the same arithmetic. Nothing here truncates a result: it fits
whole or not at all. Chat tokens only: embedding tokens are never counted here.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from engine.config import Config


class Budgets(msgspec.Struct, frozen=True, kw_only=True):
    max_context_tokens: int = 100_000
    max_request_tokens: int = 400_000
    finalization_reserve_tokens: int = 4_000
    max_tool_calls: int = 8
    max_output_tokens: int = 4_000

    @classmethod
    def from_config(cls, config: Config) -> Budgets:
        b = config.budget
        return cls(
            max_context_tokens=b.max_context_tokens,
            max_request_tokens=b.max_request_tokens,
            finalization_reserve_tokens=b.finalization_reserve_tokens,
            max_tool_calls=b.max_tool_calls,
            max_output_tokens=config.chat.max_output_tokens,
        )

    @property
    def final_output_tokens(self) -> int:
        """What the finalization turn may ask for: the answer must fit in the reserve."""
        return min(self.max_output_tokens, self.finalization_reserve_tokens)


class Counters(msgspec.Struct, kw_only=True):
    """The request's counters (seed §10.2). Mutated only by the state machine."""

    agent_turns: int = 0  # model decisions, the final Finish included
    tool_calls: int = 0  # logical tool actions dispatched; automatic retries not counted
    model_calls: int = 0  # HTTP model requests, automatic retries counted
    context_tokens: int = 0  # estimated prompt tokens of the next (or last) model call
    used_tokens: int = 0  # chat tokens of this request so far: prompt + completion per call
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hit_tokens: int = 0
    reasoning_tokens: int = 0
    protocol_errors: int = 0  # non-final replies that broke the protocol or named no tool
    model_retries: int = 0
    tool_retries: int = 0

    @property
    def actions(self) -> int:
        """What max_tool_calls limits: tool calls dispatched plus replies that were not a
        valid whitelisted tool call (protocol errors, tools outside the whitelist)."""
        return self.tool_calls + self.protocol_errors


Verdict = Literal["accepted", "context_budget_exceeded", "request_budget_exceeded"]


class Admission(msgspec.Struct, frozen=True, kw_only=True):
    """The outcome of one admission check, with the figures behind it."""

    verdict: Verdict
    prompt_tokens: int  # the next prompt, the candidate included
    needed: int  # tokens the failing (or passing) condition needs
    available: int  # tokens that condition allows
    result_tokens: int = 0  # the candidate's own share of the prompt

    @property
    def accepted(self) -> bool:
        return self.verdict == "accepted"


def _context(budgets: Budgets, prompt_tokens: int, output_tokens: int) -> tuple[int, int]:
    return prompt_tokens + output_tokens, budgets.max_context_tokens


def _request(
    budgets: Budgets, used_tokens: int, prompt_tokens: int, output_tokens: int, reserve: int
) -> tuple[int, int]:
    return (
        used_tokens + prompt_tokens + output_tokens,
        budgets.max_request_tokens - reserve,
    )


def admit(
    budgets: Budgets, *, used_tokens: int, prompt_tokens: int, result_tokens: int = 0
) -> Admission:
    """THE admission: may a tool result (already part of `prompt_tokens`) enter history?

    (a) prompt + max_output_tokens ≤ max_context_tokens, else context_budget_exceeded;
    (b) used + prompt + max_output_tokens ≤ max_request_tokens − finalization_reserve_tokens,
    else request_budget_exceeded. (a) is checked first: a result that cannot fit one context
    is refused as such even when the request budget is also short.
    """
    needed, available = _context(budgets, prompt_tokens, budgets.max_output_tokens)
    if needed > available:
        return Admission(
            verdict="context_budget_exceeded",
            prompt_tokens=prompt_tokens,
            needed=needed,
            available=available,
            result_tokens=result_tokens,
        )
    needed, available = _request(
        budgets,
        used_tokens,
        prompt_tokens,
        budgets.max_output_tokens,
        budgets.finalization_reserve_tokens,
    )
    verdict: Verdict = "accepted" if needed <= available else "request_budget_exceeded"
    return Admission(
        verdict=verdict,
        prompt_tokens=prompt_tokens,
        needed=needed,
        available=available,
        result_tokens=result_tokens,
    )


def check_turn(budgets: Budgets, *, used_tokens: int, prompt_tokens: int) -> Admission:
    """May a normal (tool-enabled) model call be made with this prompt? Same arithmetic."""
    return admit(budgets, used_tokens=used_tokens, prompt_tokens=prompt_tokens)


def check_final(budgets: Budgets, *, used_tokens: int, prompt_tokens: int) -> Admission:
    """May the finalization call be made? It spends the reserve: prompt + final output must
    fit the context, and used + prompt + final output must fit the whole request budget."""
    out = budgets.final_output_tokens
    needed, available = _context(budgets, prompt_tokens, out)
    if needed > available:
        return Admission(
            verdict="context_budget_exceeded",
            prompt_tokens=prompt_tokens,
            needed=needed,
            available=available,
        )
    needed, available = _request(budgets, used_tokens, prompt_tokens, out, 0)
    return Admission(
        verdict="accepted" if needed <= available else "request_budget_exceeded",
        prompt_tokens=prompt_tokens,
        needed=needed,
        available=available,
    )


def refusal_message(admission: Admission, tool: str | None) -> str:
    """The Observation message for a refused result: sizes and what the user can do."""
    what = f"The result of {tool}" if tool else "The next prompt"
    if admission.verdict == "context_budget_exceeded":
        return (
            f"{what} was not admitted: the next model call would need {admission.needed} "
            f"tokens (prompt {admission.prompt_tokens}, of which this result "
            f"{admission.result_tokens}, plus the output allowance) but max_context_tokens "
            f"allows {admission.available}. Nothing of the result was kept. Narrow the scope "
            "(fewer documents or sections, a more specific query) or tell the user to raise "
            "max_context_tokens."
        )
    return (
        f"{what} was not admitted: this request would reach {admission.needed} tokens but "
        f"max_request_tokens minus the finalization reserve allows {admission.available}. "
        "Nothing of the result was kept and no more tools can be called: answer now with "
        "Finish from what you already have, say what is missing, and mention that the user "
        "can raise max_request_tokens or narrow the question."
    )
