"""Counting DeepSeek tokens exactly: the counter (`counter`, over DeepSeek's own tokenizer.json)
and the pre-tokenizer it counts words with (`pretokens`)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    try:
        module, attribute = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
