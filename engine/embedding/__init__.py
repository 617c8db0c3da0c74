"""Embedding providers (built-in model, OpenAI-compatible endpoints), the content-addressed
embedding cache and `embed_texts`. Callers import from here, not from the submodules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from index.lazy import lazy_attributes

if TYPE_CHECKING:  # the same names, for type checkers; at run time each loads on first use
    from engine.embedding.base import EmbeddingProvider, EmbeddingResult, Vectors, normalise
    from engine.embedding.batching import EmbedOutcome, EmbedProgress, embed_texts
    from engine.embedding.cache import EmbeddingCache, text_hash
    from engine.embedding.local import LocalEmbedding, local_model_id
    from engine.embedding.openai_compat import OpenAICompatibleEmbedding
    from engine.errors import EMBEDDING_RETRYABLE_CODES as RETRYABLE_CODES
    from engine.errors import EmbeddingError
    from engine.errors import EmbeddingErrorCode as ErrorCode

# public name -> (module, name there): importing the package loads none of them (PEP 562)
_EXPORTS: dict[str, tuple[str, str]] = {
    "EmbeddingProvider": ("engine.embedding.base", "EmbeddingProvider"),
    "EmbeddingResult": ("engine.embedding.base", "EmbeddingResult"),
    "Vectors": ("engine.embedding.base", "Vectors"),
    "normalise": ("engine.embedding.base", "normalise"),
    "EmbedOutcome": ("engine.embedding.batching", "EmbedOutcome"),
    "EmbedProgress": ("engine.embedding.batching", "EmbedProgress"),
    "embed_texts": ("engine.embedding.batching", "embed_texts"),
    "EmbeddingCache": ("engine.embedding.cache", "EmbeddingCache"),
    "text_hash": ("engine.embedding.cache", "text_hash"),
    "LocalEmbedding": ("engine.embedding.local", "LocalEmbedding"),
    "local_model_id": ("engine.embedding.local", "local_model_id"),
    "OpenAICompatibleEmbedding": ("engine.embedding.openai_compat", "OpenAICompatibleEmbedding"),
    "RETRYABLE_CODES": ("engine.errors", "EMBEDDING_RETRYABLE_CODES"),
    "EmbeddingError": ("engine.errors", "EmbeddingError"),
    "ErrorCode": ("engine.errors", "EmbeddingErrorCode"),
}

__all__ = [
    "RETRYABLE_CODES",
    "EmbedOutcome",
    "EmbedProgress",
    "EmbeddingCache",
    "EmbeddingError",
    "EmbeddingProvider",
    "EmbeddingResult",
    "ErrorCode",
    "LocalEmbedding",
    "OpenAICompatibleEmbedding",
    "Vectors",
    "embed_texts",
    "local_model_id",
    "normalise",
    "text_hash",
]


__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS, __all__)
