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
from engine.chat.pricing import billed_tokens, cost_of
from engine.errors import CHAT_RETRYABLE_CODES as RETRYABLE_CODES
from engine.errors import ChatError
from engine.errors import ChatErrorCode as ErrorCode

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
