"""The embedding provider interface and its result.

A provider turns texts into L2-normalised float32 vectors, written against anyio only (works
under trio and asyncio). Errors from the outside world (HTTP, sockets, the model) are translated
into EmbeddingError (engine/errors.py) at the provider's boundary; an error message never
contains an API key.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import msgspec
import numpy as np
import numpy.typing as npt

from index.records import EmbeddingSpec

Vectors = npt.NDArray[np.float32]


class EmbeddingResult(msgspec.Struct, frozen=True, kw_only=True):
    """Vectors in input order, float32 [n, dimensions], each of unit length.

    `tokens` is the vendor's usage count for the request (0 when the vendor reports none; the
    local model always reports 0: nothing is billed, and counting would mean tokenizing twice).
    """

    vectors: Vectors
    tokens: int = 0


class EmbeddingProvider(Protocol):
    """Something that embeds texts. One instance may be used by many tasks at once."""

    @property
    def spec(self) -> EmbeddingSpec: ...

    async def embed(self, texts: Sequence[str]) -> EmbeddingResult:
        """Vectors for `texts`, in order. Raises EmbeddingError."""
        ...

    async def aclose(self) -> None:
        """Release connections or threads; the provider is not used afterwards."""
        ...


def normalise(vectors: npt.ArrayLike) -> Vectors:
    """Rows scaled to unit length, as float32 (a zero row stays zero)."""
    out = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(out / norms, dtype=np.float32)
