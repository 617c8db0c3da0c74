"""The embedding provider interface, its result and its one error type.

A provider turns texts into L2-normalised float32 vectors, written against anyio only (works
under trio and asyncio). Errors from the outside world (HTTP, sockets, the model) are translated
into EmbeddingError at the provider's boundary; an error message never contains an API key.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

import msgspec
import numpy as np
import numpy.typing as npt

from index.records import EmbeddingSpec

Vectors = npt.NDArray[np.float32]

ErrorCode = Literal[
    "unauthorized",  # 401/403: the key is wrong, revoked or lacks access
    "no_balance",  # 402: the account has no credit left
    "quota",  # the vendor's quota is used up (e.g. OpenAI's 429 insufficient_quota)
    "rate_limited",  # 429: too many requests for now
    "server_error",  # 5xx
    "timeout",
    "connection",  # refused, reset, DNS, TLS, proxy
    "bad_request",  # another 4xx: wrong base URL or model name, input the vendor refused
    "bad_response",  # not JSON, missing data, wrong count
    "wrong_dimension",  # vectors of another length than the configured dimensions
]

RETRYABLE_CODES: frozenset[str] = frozenset(
    {"rate_limited", "server_error", "timeout", "connection"}
)


class EmbeddingError(Exception):
    """An embedding request that failed.

    `code` is stable (see ErrorCode), `message` tells a person what happened and what to do,
    `retryable` says whether one more attempt may succeed, after `retry_after` seconds if the
    vendor said so.
    """

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        *,
        retryable: bool | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.code: ErrorCode = code
        self.message = message
        self.retryable = code in RETRYABLE_CODES if retryable is None else retryable
        self.retry_after = retry_after

    def __reduce__(self) -> tuple[type[EmbeddingError], tuple[str, str], dict[str, object]]:
        # Survives pickling (worker processes), which Exception's default args would not.
        return (type(self), (self.code, self.message), dict(self.__dict__))


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
