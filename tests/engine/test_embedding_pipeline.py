"""The embedding cache's key names a service's endpoint: two OpenAI-compatible servers that
serve a model of the same name never share vectors, and entries written before the endpoint
was in the key are never read as any endpoint's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from engine.embedding import EmbeddingCache, OpenAICompatibleEmbedding, embed_texts, text_hash
from engine.embedding.cache import cache_scope
from tests.servers.embedding_server import EmbeddingServer, vector_for

MODEL = "same-name-model"
DIMS = 8
TEXTS = [f"passage {i} on the resolver's timeouts" for i in range(6)]


@pytest.fixture
def anyio_backend() -> str:
    return "trio"


@pytest.fixture
def two_servers() -> Iterator[tuple[EmbeddingServer, EmbeddingServer]]:
    a = EmbeddingServer(DIMS).start()
    b = EmbeddingServer(DIMS).start()
    try:
        yield a, b
    finally:
        a.stop()
        b.stop()


def _provider(url: str) -> OpenAICompatibleEmbedding:
    return OpenAICompatibleEmbedding(
        base_url=url, model=MODEL, dimensions=DIMS, api_key="sk-unused", timeout_s=5.0
    )


def _sent(server: EmbeddingServer) -> list[str]:
    return [t for r in server.requests for t in r.body["input"]]


@pytest.mark.anyio
async def test_two_servers_with_the_same_model_name_do_not_share_vectors(
    two_servers: tuple[EmbeddingServer, EmbeddingServer], tmp_path: Path
) -> None:
    a, b = two_servers
    with EmbeddingCache(tmp_path / "embeddings.sqlite") as cache:
        first, second = _provider(a.url), _provider(b.url)
        try:
            from_a = await embed_texts(first, cache, TEXTS, batch_size=4, concurrency=1)
            from_b = await embed_texts(second, cache, TEXTS, batch_size=4, concurrency=1)
            again_a = await embed_texts(first, cache, TEXTS, batch_size=4, concurrency=1)
        finally:
            await first.aclose()
            await second.aclose()
        assert cache.count() == 2 * len(TEXTS)
    assert from_a.cache_hits == 0 and from_b.cache_hits == 0
    assert _sent(a) == TEXTS and _sent(b) == TEXTS  # b was asked, not served a's vectors
    assert again_a.cache_hits == len(TEXTS) and again_a.calls == 0


@pytest.mark.anyio
async def test_entries_keyed_without_the_endpoint_are_not_read(
    two_servers: tuple[EmbeddingServer, EmbeddingServer], tmp_path: Path
) -> None:
    a, _ = two_servers
    provider = _provider(a.url)
    planted = np.ones(DIMS, dtype=np.float32)  # what an old entry of another server held
    with EmbeddingCache(tmp_path / "embeddings.sqlite") as cache:
        cache.put_many(provider.spec, [(text_hash(t), planted) for t in TEXTS])
        try:
            outcome = await embed_texts(provider, cache, TEXTS, batch_size=8, concurrency=1)
        finally:
            await provider.aclose()
    assert outcome.cache_hits == 0 and _sent(a) == TEXTS
    want = np.array([vector_for(t, DIMS) for t in TEXTS], dtype=np.float32)
    want /= np.linalg.norm(want, axis=1, keepdims=True)
    np.testing.assert_allclose(outcome.vectors, want, atol=2e-3)


def test_the_scope_of_one_endpoint_does_not_depend_on_its_spelling() -> None:
    one = cache_scope("openai_compatible", "HTTP://Embed.Example:8080/v1/")
    assert one == cache_scope("openai_compatible", "http://embed.example:8080/v1")
    assert one != cache_scope("openai_compatible", "http://embed.example:8081/v1")
    assert one != cache_scope("openai_compatible", "http://embed.example:8080/V1")  # paths differ
    assert cache_scope("local") == "local"  # the built-in model's entries keep their key
