"""The chat model client (DeepSeek and any OpenAI-compatible endpoint), its errors and pricing.
Callers import from here, not from the submodules."""

from engine.chat.client import (
    ChatClient,
    ChatMessage,
    ChatResponse,
    ChatUsage,
    OnDelta,
    StreamDelta,
)
from engine.chat.errors import RETRYABLE_CODES, ChatError, ErrorCode
from engine.chat.pricing import billed_tokens, cost_of

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
