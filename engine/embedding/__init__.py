"""Embedding providers (built-in model, OpenAI-compatible endpoints), the content-addressed
embedding cache and `embed_texts`. Callers import from here, not from the submodules.
"""

from engine.embedding.base import (
    RETRYABLE_CODES,
    EmbeddingError,
    EmbeddingProvider,
    EmbeddingResult,
    ErrorCode,
    Vectors,
    normalise,
)
from engine.embedding.batching import EmbedOutcome, EmbedProgress, embed_texts
from engine.embedding.cache import EmbeddingCache, text_hash
from engine.embedding.local import LocalEmbedding, local_model_id
from engine.embedding.openai_compat import OpenAICompatibleEmbedding

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
