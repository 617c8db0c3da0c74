"""The chat model client (DeepSeek and any OpenAI-compatible endpoint), its errors and pricing.
Callers import from here, not from the submodules."""

from __future__ import annotations

from typing import TYPE_CHECKING

from index.lazy import lazy_attributes

if TYPE_CHECKING:  # the same names, for type checkers; at run time each loads on first use
    from engine.chat.client import (
        ChatClient,
        ChatMessage,
        ChatResponse,
        ChatUsage,
        OnDelta,
        StreamDelta,
    )
    from engine.chat.pricing import billed_tokens, cost_of
    from engine.errors import CHAT_RETRYABLE_CODES as RETRYABLE_CODES
    from engine.errors import ChatError
    from engine.errors import ChatErrorCode as ErrorCode

# public name -> (module, name there): importing the package loads none of them (PEP 562)
_EXPORTS: dict[str, tuple[str, str]] = {
    "ChatClient": ("engine.chat.client", "ChatClient"),
    "ChatMessage": ("engine.chat.client", "ChatMessage"),
    "ChatResponse": ("engine.chat.client", "ChatResponse"),
    "ChatUsage": ("engine.chat.client", "ChatUsage"),
    "OnDelta": ("engine.chat.client", "OnDelta"),
    "StreamDelta": ("engine.chat.client", "StreamDelta"),
    "billed_tokens": ("engine.chat.pricing", "billed_tokens"),
    "cost_of": ("engine.chat.pricing", "cost_of"),
    "RETRYABLE_CODES": ("engine.errors", "CHAT_RETRYABLE_CODES"),
    "ChatError": ("engine.errors", "ChatError"),
    "ErrorCode": ("engine.errors", "ChatErrorCode"),
}

__all__ = [
    "RETRYABLE_CODES",
    "ChatClient",
    "ChatError",
    "ChatMessage",
    "ChatResponse",
    "ChatUsage",
    "ErrorCode",
    "OnDelta",
    "StreamDelta",
    "billed_tokens",
    "cost_of",
]


__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS, __all__)
