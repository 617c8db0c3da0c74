"""Per-collection conversations: each request's question and final answer, one JSON line each,
in HOME/conversations/<collection>/<conversation_id>.jsonl.

Only questions, final answers and what each cost are kept (never observations, prompts or
keys). A line is written whole in one append; a torn last line after a crash is skipped when
reading. Fields are only ever appended, with defaults, so older lines still load.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import secrets
from pathlib import Path

import msgspec

from actors.errors import ConversationError
from engine.crashpoints import crash_point
from engine.harness import EarlierTurn, TerminationReason
from engine.paths import DataDir, check_collection_name
from engine.trace.model import trace_id_for
from engine.versions.formats import CONVERSATION_FORMAT

_ID = re.compile(r"^c[0-9]{8}-[0-9]{6}-[0-9a-f]{6}$")


class ConversationTurn(msgspec.Struct, frozen=True, kw_only=True):
    format_version: int = CONVERSATION_FORMAT
    request_id: str
    question: str
    answer: str | None
    termination_reason: TerminationReason
    snapshot_id: str | None
    created_at: str
    # Appended in format 1 (absent from older lines): the request's cost line and its trace.
    agent_turns: int = 0
    tool_calls: int = 0
    used_tokens: int = 0
    cost: float = 0.0
    currency: str = ""  # "" = not recorded (a line written before cost was kept)
    trace_id: str = ""  # "" = derive it from request_id (engine.trace.trace_id_for)

    @property
    def cost_known(self) -> bool:
        return bool(self.currency)

    @property
    def trace(self) -> str:
        """The id of this request's trace (the traces page's `?id=`)."""
        return self.trace_id or trace_id_for(self.request_id)


class ConversationSummary(msgspec.Struct, frozen=True, kw_only=True):
    conversation_id: str
    turns: int
    first_question: str
    updated_at: str


_decoder = msgspec.json.Decoder(ConversationTurn)
_encoder = msgspec.json.Encoder()


def conversations_dir(data: DataDir, collection: str) -> Path:
    return data.root / "conversations" / check_collection_name(collection)


class ConversationStore:
    """The conversations of one collection. Thread-safe for appends (one write per line)."""

    def __init__(self, data: DataDir, collection: str) -> None:
        self.collection = collection
        self.root = conversations_dir(data, collection)

    def new_id(self) -> str:
        now = dt.datetime.now(dt.UTC)
        return f"c{now:%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"

    def path(self, conversation_id: str) -> Path:
        if not _ID.match(conversation_id):
            raise ConversationError(
                f"{conversation_id!r} is not a conversation id (they look like "
                "c20250101-120000-abc123); see `citewise ask --json` output for yours"
            )
        return self.root / f"{conversation_id}.jsonl"

    def exists(self, conversation_id: str) -> bool:
        return self.path(conversation_id).is_file()

    def load(self, conversation_id: str) -> list[ConversationTurn]:
        try:
            raw = self.path(conversation_id).read_bytes()
        except FileNotFoundError:
            return []
        turns = []
        for line in raw.splitlines():
            if not line.strip():
                continue
            try:
                turns.append(_decoder.decode(line))
            except (msgspec.DecodeError, msgspec.ValidationError):
                continue  # a torn last line after a crash, or a line from a newer format
        return turns

    def earlier(self, conversation_id: str) -> list[EarlierTurn]:
        """The answered questions of the conversation, oldest first, for the next prompt."""
        return [
            EarlierTurn(t.question, t.answer)
            for t in self.load(conversation_id)
            if t.answer is not None
        ]

    def append(self, conversation_id: str, turn: ConversationTurn) -> None:
        path = self.path(conversation_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        line = _encoder.encode(turn) + b"\n"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, line)
            crash_point("conversation.append:before-fsync")
            os.fsync(fd)
        finally:
            os.close(fd)
        crash_point("conversation.append:after-fsync")

    def list(self) -> list[ConversationSummary]:
        """Every conversation of the collection, most recently updated first."""
        if not self.root.is_dir():
            return []
        out = []
        for file in self.root.glob("*.jsonl"):
            turns = self.load(file.stem)
            if turns:
                out.append(
                    ConversationSummary(
                        conversation_id=file.stem,
                        turns=len(turns),
                        first_question=turns[0].question,
                        updated_at=turns[-1].created_at,
                    )
                )
        return sorted(out, key=lambda s: (s.updated_at, s.conversation_id), reverse=True)
