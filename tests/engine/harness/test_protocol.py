"""The response-protocol parser and the streamed Finish answer."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.harness.protocol import (
    FinishAction,
    FinishStream,
    ProtocolViolation,
    ToolAction,
    parse_reply,
)


def test_tool_action_with_thought_parses_name_and_arguments() -> None:
    reply = 'Thought: I need the outline.\nAction: get_outline[{"doc_ids": ["d1", "d2"]}]'
    parsed = parse_reply(reply)
    assert parsed == ToolAction(
        name="get_outline", args={"doc_ids": ["d1", "d2"]}, thought="I need the outline."
    )


def test_code_fence_trailing_whitespace_and_spaced_action_are_tolerated() -> None:
    reply = 'Thought: x\n```\n  Action :   search_blocks [ {"query": "a ] b"} ]  \n```\n\n'
    parsed = parse_reply(reply)
    assert parsed == ToolAction(name="search_blocks", args={"query": "a ] b"}, thought="x")


def test_full_width_colon_and_empty_brackets_mean_no_arguments() -> None:
    assert parse_reply("Action：list_documents[]") == ToolAction(name="list_documents", args={})


def test_multi_line_finish_takes_everything_up_to_the_last_bracket() -> None:
    reply = "Thought: enough.\nAction: Finish[Line one [a] \n\n- item]two\nend] \n```"
    parsed = parse_reply(reply)
    assert isinstance(parsed, FinishAction)
    assert parsed.answer == "Line one [a] \n\n- item]two\nend"
    assert not parsed.clarification


@pytest.mark.parametrize("answer", ["【澄清】你指的是哪一本书？", "[Clarify] Which edition?"])
def test_clarifying_finish_is_recognised(answer: str) -> None:
    parsed = parse_reply(f"Thought: ambiguous\nAction: Finish[{answer}]")
    assert isinstance(parsed, FinishAction)
    assert parsed.clarification and parsed.answer == answer


def test_no_action_is_a_protocol_error() -> None:
    parsed = parse_reply("The answer is 42.")
    assert isinstance(parsed, ProtocolViolation)
    assert "no `Action:`" in parsed.message


def test_two_actions_are_a_protocol_error() -> None:
    reply = 'Action: search_blocks[{"query": "a"}]\nAction: search_blocks[{"query": "b"}]'
    parsed = parse_reply(reply)
    assert isinstance(parsed, ProtocolViolation)
    assert "more than one" in parsed.message


def test_a_tool_action_followed_by_finish_is_two_actions() -> None:
    parsed = parse_reply('Action: scan_term[{"term": "x"}]\nAction: Finish[done]')
    assert isinstance(parsed, ProtocolViolation)
    assert "more than one" in parsed.message


def test_self_written_observation_is_a_protocol_error() -> None:
    reply = 'Action: search_blocks[{"query": "a"}]\nObservation: {"harness_status": "ok"}'
    parsed = parse_reply(reply)
    assert isinstance(parsed, ProtocolViolation)
    assert "Observation" in parsed.message


def test_a_finish_answer_may_quote_the_protocol_on_lines_of_its_own() -> None:
    answer = (
        "The agent replies with two lines:\n"
        "Thought: what is missing\n"
        'Action: search_blocks[{"query": "listener order"}]\n'
        "and the system then appends\n"
        'Observation: {"harness_status": "ok", "tool": "search_blocks", "payload": {}}\n'
        "> Observation: quoted from the manual\n"
        "- Action: Finish[the final answer]"
    )
    parsed = parse_reply(f"Thought: I can explain the format.\nAction: Finish[{answer}]")
    assert parsed == FinishAction(answer=answer, thought="I can explain the format.")


def test_a_finish_answer_quoting_a_document_with_observation_lines_is_an_answer() -> None:
    answer = "The study lists:\nObservation: 3 of 5 patients improved.\nObservation: none worse."
    parsed = parse_reply(f"Action: Finish[{answer}]\n")
    assert isinstance(parsed, FinishAction) and parsed.answer == answer


@pytest.mark.parametrize(
    "reply",
    [
        # a fabricated tool round trip before the answer: the tool Action comes first
        'Thought: t\nAction: search_blocks[{"query": "x"}]\nObservation: {"payload": []}\n'
        "Thought: now I know.\nAction: Finish[Based on what I saw.]",
        # a fabricated observation in the thought, before the Finish
        'Thought: t\nObservation: {"harness_status": "ok", "payload": {"blocks": []}}\n'
        "Action: Finish[Based on that observation.]",
        # text after the answer's closing bracket
        "Thought: t\nAction: Finish[An answer]\nObservation: the user liked it",
        "Thought: t\nAction: Finish[An answer]\nAction: list_documents[",
    ],
)
def test_protocol_lines_outside_the_finish_answer_are_protocol_errors(reply: str) -> None:
    assert isinstance(parse_reply(reply), ProtocolViolation)


def test_invalid_json_says_what_is_wrong() -> None:
    parsed = parse_reply("Action: search_blocks[{query: 'a'}]")
    assert isinstance(parsed, ProtocolViolation)
    assert "not valid JSON" in parsed.message and "line 1 column 2" in parsed.message


def test_arguments_must_be_an_object() -> None:
    parsed = parse_reply('Action: search_blocks[["a"]]')
    assert isinstance(parsed, ProtocolViolation)
    assert "JSON object" in parsed.message


def test_text_after_a_tool_action_is_refused() -> None:
    parsed = parse_reply('Action: search_blocks[{"query": "a"}]\nNow I wait for the results.')
    assert isinstance(parsed, ProtocolViolation)


def test_unknown_tool_names_parse_so_the_whitelist_can_answer_them() -> None:
    assert parse_reply('Action: delete_file[{"path": "/"}]') == ToolAction(
        name="delete_file", args={"path": "/"}
    )


def test_unclosed_finish_is_a_protocol_error() -> None:
    parsed = parse_reply("Action: Finish[the answer goes on and is cut")
    assert isinstance(parsed, ProtocolViolation)
    assert "never closed" in parsed.message


def test_action_name_without_brackets_is_a_protocol_error() -> None:
    parsed = parse_reply('Action: search_blocks {"query": "a"}')
    assert isinstance(parsed, ProtocolViolation)


def _stream(reply: str, sizes: list[int]) -> tuple[str, list[str]]:
    streamer = FinishStream()
    pieces: list[str] = []
    pos = 0
    for size in sizes:
        if pos >= len(reply):
            break
        pieces.append(streamer.feed(reply[pos : pos + size]))
        pos += size
    if pos < len(reply):
        pieces.append(streamer.feed(reply[pos:]))
    pieces.append(streamer.flush())
    return "".join(pieces), pieces


def test_stream_holds_back_a_possible_closing_bracket_and_whitespace() -> None:
    streamer = FinishStream()
    assert streamer.feed("Thought: ok\nAction: Fin") == ""
    assert streamer.feed("ish[  Hello") == "Hello"
    # " world" is certain; " ]" waits: this "]" may be the closing one.
    assert streamer.feed(" world ]") == " world"
    assert streamer.feed("x") == ""  # still the last "]": "x" may be text after the answer
    assert streamer.feed("]\n") == " ]x"  # a later "]": the earlier one was answer text
    assert streamer.flush() == ""
    assert parse_reply(streamer.text) == FinishAction(answer="Hello world ]x", thought="ok")


def test_stream_of_a_tool_action_yields_nothing() -> None:
    text, _ = _stream('Thought: t\nAction: search_blocks[{"query": "Finish[x]"}]', [3] * 40)
    assert text == ""


replies = st.builds(
    lambda thought, answer, tail: f"Thought: {thought}\nAction: Finish[{answer}]{tail}",
    st.text(alphabet=st.characters(blacklist_characters="\r"), max_size=30).map(
        lambda s: s.replace("Action", "A").replace("Observation", "O")
    ),
    st.text(alphabet="ab ]\n[【】来源:#", max_size=40),
    st.sampled_from(["", " ", "\n", "\n```", "  \n"]),
)


@given(reply=replies, sizes=st.lists(st.integers(min_value=1, max_value=7), max_size=60))
def test_streamed_answer_is_exactly_the_parsed_answer(reply: str, sizes: list[int]) -> None:
    parsed = parse_reply(reply)
    text, _ = _stream(reply, sizes)
    if isinstance(parsed, FinishAction):
        assert text == parsed.answer
    else:
        # Whatever streamed must be retracted by the caller; it is never more than the reply.
        assert len(text) <= len(reply)
