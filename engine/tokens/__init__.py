"""Counting DeepSeek tokens exactly: the counter (`counter`, over DeepSeek's own tokenizer.json)
and the pre-tokenizer it counts words with (`pretokens`)."""

from engine.tokens.counter import TokenCounter, preload, tokenizer_file, tokenizer_version

__all__ = ["TokenCounter", "preload", "tokenizer_file", "tokenizer_version"]
