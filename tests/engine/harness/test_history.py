"""Message history: counted once per message, earlier Q&A dropped oldest first."""

from __future__ import annotations

import time

from engine.harness.history import MESSAGE_OVERHEAD, PROMPT_OVERHEAD, History
from engine.tokens import TokenCounter

COUNTER = TokenCounter()


def test_prompt_estimate_is_the_sum_of_counted_messages_plus_overheads() -> None:
    h = History(COUNTER)
    texts = ["You are a helper.", "什么是事件循环？", "Thought: x\nAction: Finish[y]"]
    for role, text in zip(("system", "user", "assistant"), texts, strict=True):
        h.add(role, text, "reply")  # type: ignore[arg-type]
    expected = PROMPT_OVERHEAD + sum(COUNTER.count(t) + MESSAGE_OVERHEAD for t in texts)
    assert h.prompt_tokens == expected
    assert h.prompt_tokens_with(10, 5) == expected + 15
    assert [m.content for m in h.messages()] == texts


def test_given_token_counts_are_trusted_and_never_recounted() -> None:
    h = History(COUNTER)
    h.add("user", "whatever the text", "observation", tokens=1234)
    assert h.prompt_tokens == PROMPT_OVERHEAD + 1234


def test_dropping_earlier_pairs_removes_the_oldest_question_with_its_answer() -> None:
    h = History(COUNTER)
    h.add("system", "sys", "system")
    for i in range(3):
        h.add("user", f"q{i}", "earlier_question")
        h.add("assistant", f"a{i}", "earlier_answer")
    h.add("user", "now", "question")
    before = h.prompt_tokens
    assert h.drop_oldest_earlier_pair()
    assert [m.content for m in h.messages()] == ["sys", "q1", "a1", "q2", "a2", "now"]
    dropped = COUNTER.count("q0") + COUNTER.count("a0") + 2 * MESSAGE_OVERHEAD
    assert h.prompt_tokens == before - dropped
    assert h.drop_oldest_earlier_pair() and h.drop_oldest_earlier_pair()
    assert not h.drop_oldest_earlier_pair()
    assert h.earlier_pairs() == 0 and [m.content for m in h.messages()] == ["sys", "now"]


def test_a_notice_joins_the_last_user_message_and_is_counted_with_it() -> None:
    h = History(COUNTER)
    h.add("system", "sys", "system")
    h.add("user", "observation text", "observation")
    h.add_to_last_user("Finish now.")
    msgs = h.messages()
    assert len(msgs) == 2 and msgs[-1].content == "observation text\n\nFinish now."
    assert h.prompt_tokens == (
        PROMPT_OVERHEAD
        + COUNTER.count("sys")
        + COUNTER.count("observation text\n\nFinish now.")
        + 2 * MESSAGE_OVERHEAD
    )


def test_adding_to_a_long_history_costs_only_the_new_message() -> None:
    h = History(COUNTER)
    block = "The event loop runs callbacks in phases; timers fire first. 事件循环按阶段运行。 " * 40
    COUNTER.count(block)  # load the tokenizer outside the timing
    while h.prompt_tokens < 100_000:
        h.add("user", block, "observation")
    t0 = time.perf_counter()
    for _ in range(20):
        h.add("assistant", 'Thought: more.\nAction: search_blocks[{"query": "timers"}]', "reply")
        h.messages()
    per_turn_ms = (time.perf_counter() - t0) / 20 * 1000
    assert per_turn_ms < 5, per_turn_ms
