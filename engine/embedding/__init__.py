"""Embedding providers (built-in model, OpenAI-compatible endpoints), the content-addressed
embedding cache and `embed_texts`. Callers import from here, not from the submodules.
"""

from engine.embedding.base import EmbeddingProvider, EmbeddingResult, Vectors, normalise
from engine.embedding.batching import EmbedOutcome, EmbedProgress, embed_texts
from engine.embedding.cache import EmbeddingCache, text_hash
from engine.embedding.local import LocalEmbedding, local_model_id
from engine.embedding.openai_compat import OpenAICompatibleEmbedding
from engine.errors import EMBEDDING_RETRYABLE_CODES as RETRYABLE_CODES
from engine.errors import EmbeddingError
from engine.errors import EmbeddingErrorCode as ErrorCode

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
