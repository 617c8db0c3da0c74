"""The messages of one request with their token counts, counted once when they are added.

A turn tokenises only its new messages, so checking a 100K-token history stays cheap. The
estimate adds a fixed per-message allowance for the chat template's role markers; it never
re-counts old messages and never changes a message once added.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import msgspec

from engine.chat import ChatMessage
from engine.tokens import TokenCounter

# DeepSeek's chat template wraps each message in role markers (<｜User｜>, <｜Assistant｜>,
# <｜end▁of▁sentence｜>): one or two tokens. We allow 4 per message and 3 per prompt (begin of
# sentence and the assistant's opening marker) so that the estimate errs on the high side.
MESSAGE_OVERHEAD = 4
PROMPT_OVERHEAD = 3

Role = Literal["system", "user", "assistant"]
EntryKind = Literal[
    "system", "earlier_question", "earlier_answer", "question", "reply", "observation", "notice"
]


class Entry(msgspec.Struct, frozen=True):
    message: ChatMessage
    tokens: int  # content tokens + MESSAGE_OVERHEAD
    kind: EntryKind


def message_tokens(counter: TokenCounter, content: str) -> int:
    """What one message adds to a prompt estimate."""
    return counter.count(content) + MESSAGE_OVERHEAD


class History:
    """system message, earlier Q&A of the conversation (droppable, oldest first), then the
    question and this request's replies and observations, in order."""

    def __init__(self, counter: TokenCounter) -> None:
        self._counter = counter
        self._entries: list[Entry] = []
        self._total = PROMPT_OVERHEAD

    @property
    def entries(self) -> Sequence[Entry]:
        return self._entries

    @property
    def prompt_tokens(self) -> int:
        """Estimated prompt tokens of a model call with exactly these messages."""
        return self._total

    def tokens_for(self, content: str) -> int:
        return message_tokens(self._counter, content)

    def prompt_tokens_with(self, *extra_tokens: int) -> int:
        """The prompt estimate if messages of these sizes (from `tokens_for`) were added."""
        return self._total + sum(extra_tokens)

    def add(
        self,
        role: Role,
        content: str,
        kind: EntryKind,
        *,
        tokens: int | None = None,
    ) -> Entry:
        """Append a message; `tokens` when its count is already known (never recounted)."""
        entry = Entry(
            ChatMessage(role=role, content=content),
            self.tokens_for(content) if tokens is None else tokens,
            kind,
        )
        self._entries.append(entry)
        self._total += entry.tokens
        return entry

    def add_to_last_user(self, text: str) -> Entry:
        """Append `text` to the last message when it is the user's (some endpoints refuse two
        user messages in a row), else add it as a new user message; recounts that one only."""
        if self._entries and self._entries[-1].message.role == "user":
            last = self._entries.pop()
            self._total -= last.tokens
            content = f"{last.message.content}\n\n{text}"
            return self.add("user", content, last.kind)
        return self.add("user", text, "notice")

    def messages(self, *extra: ChatMessage) -> list[ChatMessage]:
        return [e.message for e in self._entries] + list(extra)

    def earlier_pairs(self) -> int:
        return sum(1 for e in self._entries if e.kind == "earlier_question")

    def drop_oldest_earlier_pair(self) -> bool:
        """Remove the oldest earlier question and its answer; False when there is none."""
        for i, e in enumerate(self._entries):
            if e.kind == "earlier_question":
                end = i + 1
                if end < len(self._entries) and self._entries[end].kind == "earlier_answer":
                    end += 1
                removed = self._entries[i:end]
                del self._entries[i:end]
                self._total -= sum(r.tokens for r in removed)
                return True
        return False
