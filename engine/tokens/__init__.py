"""Counting DeepSeek tokens exactly: the counter (`counter`, over DeepSeek's own tokenizer.json)
and the pre-tokenizer it counts words with (`pretokens`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from index.lazy import lazy_attributes

if TYPE_CHECKING:  # the same names, for type checkers; at run time each loads on first use
    from engine.tokens.counter import TokenCounter, preload, tokenizer_file, tokenizer_version

# public name -> (module, name there): importing the package loads none of them (PEP 562)
_EXPORTS: dict[str, tuple[str, str]] = {
    "TokenCounter": ("engine.tokens.counter", "TokenCounter"),
    "preload": ("engine.tokens.counter", "preload"),
    "tokenizer_file": ("engine.tokens.counter", "tokenizer_file"),
    "tokenizer_version": ("engine.tokens.counter", "tokenizer_version"),
}

__all__ = ["TokenCounter", "preload", "tokenizer_file", "tokenizer_version"]


__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS, __all__)
