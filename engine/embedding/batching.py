"""embed_texts: many texts through one provider, with the cache, batching, a concurrency
limit and at most one automatic retry per batch.

It never embeds a text twice (cache first, duplicates within a call once), writes every
finished batch to the cache at once (a crash loses only batches in flight: a resumed import
embeds only what no finished batch holds), and never hides a failure: the second failure of a
batch, or any non-retryable one, fails the whole call.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Sequence

import anyio
import anyio.to_thread
import msgspec
import numpy as np
import numpy.typing as npt

from engine.crashpoints import crash_point, register
from engine.embedding.base import EmbeddingProvider, EmbeddingResult, Vectors
from engine.embedding.cache import EmbeddingCache, text_hash
from engine.errors import EmbeddingError

DEFAULT_RETRY_BACKOFF_S = 1.0  # wait before the one retry when the vendor names no time
# Reached once a finished batch's vectors are committed to the cache; the resume test kills
# there (tests/actors/test_ingest_resume.py).
(BATCH_CACHED_POINT,) = register("embedding.batch:after-cache-write")


class EmbedProgress(msgspec.Struct, frozen=True, kw_only=True):
    texts_done: int  # input texts that have their vector (cache hits included)
    texts_total: int
    tokens: int  # vendor-counted embedding tokens so far
    cache_hits: int


class EmbedOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """Vectors for every input text, in input order (float32 [n, dim], unit length).

    `cache_hits` counts input texts served from the cache, and `from_cache` says which ones
    (bool [n], input order); `calls` counts provider requests, retries included; `tokens` is
    the vendor's count, never mixed with chat tokens.
    """

    vectors: Vectors
    tokens: int
    cache_hits: int
    calls: int
    from_cache: npt.NDArray[np.bool_]


async def _embed_once_or_twice(
    provider: EmbeddingProvider, texts: list[str], retry_backoff_s: float, counter: list[int]
) -> EmbeddingResult:
    for attempt in (1, 2):
        counter[0] += 1
        try:
            result = await provider.embed(texts)
        except EmbeddingError as exc:
            if attempt == 2 or not exc.retryable:
                raise
            wait = exc.retry_after if exc.retry_after is not None else retry_backoff_s
            await anyio.sleep(wait)
            continue
        expected = (len(texts), provider.spec.dimensions)
        if result.vectors.shape != expected:
            raise EmbeddingError(
                "bad_response",
                f"the embedding provider returned vectors of shape {result.vectors.shape} "
                f"for {expected[0]} texts of {expected[1]} dimensions",
                retryable=False,
            )
        return result
    raise AssertionError("unreachable: the second attempt returns or raises")


async def embed_texts(
    provider: EmbeddingProvider,
    cache: EmbeddingCache | None,
    texts: Sequence[str],
    *,
    batch_size: int,
    concurrency: int,
    on_progress: Callable[[EmbedProgress], None] | None = None,
    retry_backoff_s: float = DEFAULT_RETRY_BACKOFF_S,
    before_batch: Callable[[], Awaitable[None]] | None = None,
    granularity: str = "block",
) -> EmbedOutcome:
    """Vectors for `texts`. Raises EmbeddingError when a batch cannot be embedded.

    At most `concurrency` batches of at most `batch_size` distinct texts are in flight;
    `on_progress` is called (in the caller's task context) after the cache lookup and after
    every finished batch. `before_batch` is awaited before each batch is sent (an import's
    pause gate: a paused import stops between batches, not only between documents).
    `granularity` is part of every cache key (see `text_hash`).
    """
    if batch_size < 1 or concurrency < 1:
        raise ValueError("batch_size and concurrency must be positive")
    spec = provider.spec
    # A service names its endpoint in the cache key (engine/embedding/cache.cache_scope).
    endpoint_scope: str | None = getattr(provider, "cache_scope", None)
    out = np.zeros((len(texts), spec.dimensions), dtype=np.float32)
    from_cache = np.zeros(len(texts), dtype=np.bool_)
    positions: dict[str, list[int]] = {}
    for i, text in enumerate(texts):
        positions.setdefault(text, []).append(i)
    unique = list(positions)
    hashes = [text_hash(t, granularity) for t in unique]

    found: list[str] = []
    matrix = np.zeros((0, spec.dimensions), dtype=np.float32)
    if cache is not None and unique:
        found, matrix = await anyio.to_thread.run_sync(
            functools.partial(cache.find, spec, hashes, scope=endpoint_scope)
        )
    row_of = {h: i for i, h in enumerate(found)}
    tokens = 0
    missing: list[tuple[str, str]] = []  # (text, hash)
    hit_rows: list[int] = []  # positions in `texts` served from the cache
    hit_sources: list[int] = []  # and the row of `matrix` each one takes
    for text, h in zip(unique, hashes, strict=True):
        source = row_of.get(h)
        if source is None:
            missing.append((text, h))
        else:
            rows = positions[text]
            hit_rows += rows
            hit_sources += [source] * len(rows)
    if hit_rows:  # one assignment: per text, numpy's indexing cost more than the lookup
        out[hit_rows] = matrix[hit_sources]
        from_cache[hit_rows] = True
    hits = done = len(hit_rows)

    def report() -> None:
        if on_progress is not None:
            on_progress(
                EmbedProgress(
                    texts_done=done, texts_total=len(texts), tokens=tokens, cache_hits=hits
                )
            )

    if unique:
        report()
    batches = [missing[i : i + batch_size] for i in range(0, len(missing), batch_size)]
    pending = iter(batches)
    calls = [0]
    failures: list[EmbeddingError] = []

    async def worker(scope: anyio.CancelScope) -> None:
        nonlocal done, tokens
        for batch in pending:
            if before_batch is not None:
                await before_batch()
            batch_texts = [text for text, _ in batch]
            try:
                result = await _embed_once_or_twice(provider, batch_texts, retry_backoff_s, calls)
            except EmbeddingError as exc:
                failures.append(exc)
                scope.cancel()
                return
            vectors = result.vectors
            if cache is not None:
                vectors = cache.stored_form(vectors)
                items = [(h, vectors[j]) for j, (_, h) in enumerate(batch)]
                await anyio.to_thread.run_sync(
                    functools.partial(cache.put_many, spec, items, scope=endpoint_scope)
                )
                crash_point(BATCH_CACHED_POINT)
            for j, text in enumerate(batch_texts):
                out[positions[text]] = vectors[j]
                done += len(positions[text])
            tokens += result.tokens
            report()

    async with anyio.create_task_group() as tg:
        for _ in range(min(concurrency, len(batches))):
            tg.start_soon(worker, tg.cancel_scope)
    if failures:
        raise failures[0]
    return EmbedOutcome(
        vectors=out, tokens=tokens, cache_hits=hits, calls=calls[0], from_cache=from_cache
    )
