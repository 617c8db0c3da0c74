"""The response protocol: parse ONE `Action: tool[{json}]` or `Action: Finish[answer]` from a
model reply, and stream a Finish answer as it arrives.

Only the model's own reply is ever parsed here, never observation or document text. It never
decides whether a tool is allowed (the whitelist is the state machine's), only what was asked.
"""

from __future__ import annotations

import json
import re
from typing import Literal

import msgspec

PROTOCOL_VERSION = "react-1"

CLARIFY_PREFIXES = ("【澄清】", "[Clarify]")

# `Action:` at the start of a line, tolerating indentation, a blockquote or list marker, bold
# markup and a full-width colon; the name follows on the same line.
_ACTION = re.compile(r"(?im)^[ \t>*\-]*(?:\*\*)?action(?:\*\*)?[ \t]*[:：](?:\*\*)?[ \t]*")
_OBSERVATION = re.compile(r"(?im)^[ \t>*\-`]*(?:\*\*)?observation(?:\*\*)?[ \t]*[:：]")
_NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)[ \t]*\[")
_THOUGHT = re.compile(r"(?is)^\s*(?:\*\*)?thought(?:\*\*)?\s*[:：]\s*")
_FENCE_TAIL = re.compile(r"(?:\s*`{3,})+\s*$")
_FINISH = "finish"


class ToolAction(msgspec.Struct, frozen=True, kw_only=True):
    kind: Literal["tool"] = "tool"
    name: str
    args: dict[str, object]
    thought: str = ""


class FinishAction(msgspec.Struct, frozen=True, kw_only=True):
    kind: Literal["finish"] = "finish"
    answer: str
    clarification: bool = False
    thought: str = ""


class ProtocolViolation(msgspec.Struct, frozen=True, kw_only=True):
    """A reply that breaks the protocol; `message` tells the model what to fix."""

    kind: Literal["protocol_error"] = "protocol_error"
    message: str


Parsed = ToolAction | FinishAction | ProtocolViolation

_FORMAT_HINT = (
    'Reply with a Thought and exactly one Action: either `Action: tool_name[{"arg": "value"}]` '
    "or `Action: Finish[your answer]`."
)


def is_clarification(answer: str) -> bool:
    return answer.lstrip().startswith(CLARIFY_PREFIXES)


def _thought(reply: str, action_start: int) -> str:
    return _THOUGHT.sub("", reply[:action_start].strip(), count=1).strip().strip("`").strip()


def parse_reply(reply: str) -> Parsed:
    """The one Action of `reply`, or what is wrong with it.

    A Finish takes everything from `Finish[` up to the reply's last `]` as the answer,
    whatever its lines start with: an answer may explain the protocol or quote a document
    with `Action:` or `Observation:` lines. Outside that answer the protocol holds: an
    `Observation:` line (before the Action, or after a tool call or the answer's `]`) is a
    self-written observation, and a second `Action:` outside the answer is two Actions.

    Tolerated: code fences around the Action, a multi-line Finish, trailing whitespace, spaces
    around `Action:`, `list_documents[]` for no arguments. Refused: no Action, two Actions, a
    self-written Observation, arguments that are not one JSON object, text after a tool call.
    Unknown tool names parse (the whitelist check answers them with tool_unavailable).
    """
    starts = list(_ACTION.finditer(reply))
    if not starts:
        if _OBSERVATION.search(reply):
            return _self_observed()
        return ProtocolViolation(message="Your reply has no `Action:` line. " + _FORMAT_HINT)
    first = starts[0]
    if _OBSERVATION.search(reply, 0, first.start()):
        return _self_observed()
    name_match = _NAME.match(reply, first.end())
    if name_match is None:
        return ProtocolViolation(
            message="The text after `Action:` is not `name[...]`: give the tool name (or "
            "Finish) immediately followed by square brackets. " + _FORMAT_HINT
        )
    name = name_match.group(1)
    thought = _thought(reply, first.start())
    body_start = name_match.end()
    if name.lower() == _FINISH:
        return _finish(reply, body_start, thought)
    if _OBSERVATION.search(reply, first.end()):
        return _self_observed()
    if len(starts) > 1:
        return _two_actions()
    return _tool(name, reply[body_start:], thought)


def _self_observed() -> ProtocolViolation:
    return ProtocolViolation(
        message="Your reply contains an `Observation:` line outside a Finish answer. "
        "Observations are written by the system after it runs your Action; never write one "
        "yourself. " + _FORMAT_HINT
    )


def _two_actions() -> ProtocolViolation:
    return ProtocolViolation(
        message="Your reply has more than one `Action:`. Give exactly one Action per reply "
        "and wait for its Observation. " + _FORMAT_HINT
    )


def _finish(reply: str, body_start: int, thought: str) -> Parsed:
    close = reply.rfind("]")
    if close < body_start:
        return ProtocolViolation(
            message="`Action: Finish[` is never closed with `]`. Put the whole answer inside "
            "the brackets; if the answer is long, make it shorter so it fits."
        )
    # Only text after the answer's last `]` is outside it (it holds no `]` by construction).
    if _OBSERVATION.search(reply, close + 1):
        return _self_observed()
    if _ACTION.search(reply, close + 1):
        return ProtocolViolation(
            message="Your reply has an `Action:` after `Finish[...]`. Finish ends the turn: "
            "put everything of the answer inside its brackets and nothing after them."
        )
    answer = reply[body_start:close].strip()
    if not answer:
        return ProtocolViolation(message="`Finish[]` is empty: put the answer inside it.")
    return FinishAction(answer=answer, clarification=is_clarification(answer), thought=thought)


def _tool(name: str, rest: str, thought: str) -> Parsed:
    text = _FENCE_TAIL.sub("", rest).rstrip()
    if not text.endswith("]"):
        return ProtocolViolation(
            message=f"`Action: {name}[` must end with `]` and nothing may follow the Action; "
            "wait for the Observation. " + _FORMAT_HINT
        )
    inner = text[:-1].strip()
    if not inner:
        return ToolAction(name=name, args={}, thought=thought)
    try:
        value, end = json.JSONDecoder().raw_decode(inner)
    except json.JSONDecodeError as exc:
        return ProtocolViolation(
            message=f"The arguments of {name} are not valid JSON ({exc.msg} at line "
            f"{exc.lineno} column {exc.colno}). Write them as one JSON object, e.g. "
            f'{name}[{{"query": "..."}}], with double-quoted keys and strings.'
        )
    if inner[end:].strip():
        return ProtocolViolation(
            message=f"Unexpected text after the JSON arguments of {name}: "
            f"{inner[end:].strip()[:60]!r}. Give one JSON object inside the brackets and "
            "nothing after the Action."
        )
    if not isinstance(value, dict):
        return ProtocolViolation(
            message=f"The arguments of {name} must be a JSON object ({{...}}), not "
            f"{type(value).__name__ if value is not None else 'null'}."
        )
    return ToolAction(name=name, args=value, thought=thought)


class FinishStream:
    """Feeds a reply as it streams; returns the part of a Finish answer that is certain.

    The concatenation of everything `feed` and `flush` return is exactly the parsed answer
    of a reply that parses as Finish. A possible closing `]` and trailing whitespace are held
    back until text after them shows they are not the end. Nothing is returned before the
    reply's first Action turns out to be `Finish[`. Work per chunk is proportional to the chunk.
    """

    def __init__(self) -> None:
        self._text = ""
        self._scan = 0  # where the next search for an Action line starts (a line start)
        self._decided = False
        self._start: int | None = None  # absolute index of the answer's first character
        self._close = -1  # absolute index of the last "]" at or after the answer start
        self._sent = 0  # absolute index up to which the answer has been returned

    @property
    def started(self) -> bool:
        return self._start is not None and self._sent > self._start

    @property
    def text(self) -> str:
        return self._text

    def feed(self, delta: str) -> str:
        if not delta:
            return ""
        offset = len(self._text)
        self._text += delta
        if not self._decided:
            self._decide()
            if self._decided and self._start is not None:
                offset = self._start
        if self._start is None:
            return ""
        close = self._text.rfind("]", max(offset, self._start))
        if close >= 0:
            self._close = close
        return self._release(final=False)

    def _decide(self) -> None:
        m = _ACTION.search(self._text, self._scan)
        if m is None:
            self._scan = self._text.rfind("\n") + 1
            return
        name = _NAME.match(self._text, m.end())
        if name is None:
            # Not complete yet ("Action: Fin") or malformed: wait while it still may complete.
            tail = self._text[m.end() :]
            if "\n" in tail or len(tail) > 64:
                self._decided = True
            return
        self._decided = True
        if name.group(1).lower() == _FINISH:
            self._start = name.end()
            self._sent = name.end()

    def _release(self, *, final: bool) -> str:
        assert self._start is not None
        text = self._text
        if self._sent == self._start:  # leading whitespace is never part of the answer
            lead = self._start
            while lead < len(text) and text[lead].isspace():
                lead += 1
            if lead == len(text):
                return ""
            self._start = self._sent = lead
        if final:
            end = self._close if self._close >= 0 else self._start
        else:
            end = self._close if self._close >= 0 else len(text)
        while end > self._sent and text[end - 1].isspace():
            end -= 1
        if end <= self._sent:
            return ""
        out = text[self._sent : end]
        self._sent = end
        return out

    def flush(self) -> str:
        """The rest of the answer once the reply is complete (what was held back)."""
        if self._start is None:
            return ""
        return self._release(final=True)
