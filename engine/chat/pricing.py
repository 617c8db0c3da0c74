"""What a chat call cost, from the vendor's usage and the configured per-million-token prices.

Cache-hit input, cache-miss input and output tokens are priced apart (DeepSeek's price table);
when the vendor reports no miss count, every prompt token that was not a hit is a miss. It never
guesses usage: a response without usage is counted by the caller with the tokenizer.
"""

from __future__ import annotations

from engine.chat.client import ChatUsage
from engine.config import Price

PER = 1_000_000


def billed_tokens(usage: ChatUsage) -> tuple[int, int, int]:
    """(cache-hit input, cache-miss input, output) tokens as they are billed."""
    hit = max(usage.prompt_cache_hit_tokens, 0)
    miss = usage.prompt_cache_miss_tokens
    if miss <= 0:
        miss = max(usage.prompt_tokens - hit, 0)
    return hit, miss, max(usage.completion_tokens, 0)


def cost_of(usage: ChatUsage, price: Price) -> float:
    """The cost of one call in `price.currency`; reasoning tokens are part of the output."""
    hit, miss, output = billed_tokens(usage)
    return (
        hit * price.input_cache_hit + miss * price.input_cache_miss + output * price.output
    ) / PER
