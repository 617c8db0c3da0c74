"""The import's embedding pipeline gives the built-in model's own vectors: `embed_texts` through
the provider the app opens (provider_for, default settings) returns, for every text, exactly
what the model alone returns on the same texts in the same batches, with or without the cache,
with duplicates, cache hits and several batches in flight."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine.config import parse_config
from engine.embedding import EmbeddingCache, embed_texts
from engine.embedding.base import Vectors, normalise
from engine.embedding.local import shared_model
from engine.embedding.providers import provider_for

_PROSE = (
    "the resolver retries each query after a timeout; dns.lookup uses the system's "
    "getaddrinfo in the thread pool while dns.resolve sends queries over the network. "
    "readline reads a stream one line at a time and emits a line event for each. "
    "如何用 apt 安装软件包？系统会先解析依赖关系，再下载并解压每一个软件包。"
)
_WORDS = _PROSE.split()


def _texts(n: int) -> list[str]:
    """`n` distinct texts of 3 to ~45 words (different lengths pad differently in a batch)."""
    out = []
    for i in range(n):
        length = 3 + (i * 37) % 40
        start = (i * 11) % len(_WORDS)
        words = [_WORDS[(start + k) % len(_WORDS)] for k in range(length)]
        out.append(f"Part {i}: " + " ".join(words))
    return out


def _model_alone(distinct: list[str], batch_size: int) -> dict[str, Vectors]:
    """The model's vectors for `distinct`, encoded in consecutive batches of `batch_size`."""
    model = shared_model()
    found: dict[str, Vectors] = {}
    for i in range(0, len(distinct), batch_size):
        batch = distinct[i : i + batch_size]
        for text, vector in zip(batch, normalise(model.encode(batch)), strict=True):
            found[text] = vector
    return found


@pytest.fixture
def anyio_backend() -> str:
    return "trio"


@pytest.mark.anyio
async def test_pipeline_vectors_are_the_models_own(tmp_path: Path) -> None:
    config = parse_config({}, {})
    size = config.embedding.batch_size
    distinct = _texts(2 * size + 9)  # two full batches and a short one, two in flight
    texts = distinct + distinct[5:12]  # repeats are embedded once and placed everywhere
    want = _model_alone(distinct, size)
    provider = provider_for(config.embedding, config.network, "")
    try:
        bare = await embed_texts(
            provider,
            None,
            texts,
            batch_size=size,
            concurrency=config.embedding.concurrency,
            granularity="sentence",
        )
        with EmbeddingCache(tmp_path / "embeddings.sqlite") as cache:
            first = await embed_texts(
                provider, cache, texts, batch_size=size, concurrency=2, granularity="sentence"
            )
            again = await embed_texts(
                provider, cache, texts, batch_size=size, concurrency=2, granularity="sentence"
            )
            stored = cache.stored_form(np.stack([want[t] for t in texts]))
    finally:
        await provider.aclose()
    expected = np.stack([want[t] for t in texts])
    # Bit for bit: one model call per pipeline batch, nothing rescaled or reordered on the way.
    assert bare.vectors.dtype == np.float32 and np.array_equal(bare.vectors, expected)
    assert bare.calls == 3 and first.calls == 3 and again.calls == 0
    # Through the cache, a fresh vector is what a later hit returns: the stored form of the
    # model's vector, the same on the miss and on the hit.
    assert first.cache_hits == 0 and again.cache_hits == len(texts)
    assert np.array_equal(first.vectors, stored) and np.array_equal(again.vectors, stored)
    np.testing.assert_allclose(first.vectors, expected, atol=2e-3)  # float16 storage


@pytest.mark.anyio
async def test_a_text_gets_the_same_vector_in_any_batch() -> None:
    config = parse_config({}, {})
    distinct = _texts(40)
    provider = provider_for(config.embedding, config.network, "")
    try:
        together = await embed_texts(provider, None, distinct, batch_size=40, concurrency=1)
        apart = await embed_texts(provider, None, distinct, batch_size=7, concurrency=2)
    finally:
        await provider.aclose()
    alone = np.stack([normalise(shared_model().encode([t]))[0] for t in distinct[:5]])
    # Padding within a batch moves a vector by float rounding only (~2e-7 measured).
    np.testing.assert_allclose(together.vectors, apart.vectors, atol=1e-5)
    np.testing.assert_allclose(together.vectors[:5], alone, atol=1e-5)
