"""embed_texts waits at `before_batch` before each batch: an import paused in the middle of a
big document sends no further batch until it is resumed."""

from __future__ import annotations

import anyio
import pytest

from actors.import_progress import PauseGate
from engine.embedding import OpenAICompatibleEmbedding, embed_texts
from tests.servers.embedding_server import EmbeddingServer

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "trio"


async def test_a_paused_gate_holds_the_next_batch_until_resumed(
    embedding_server: EmbeddingServer,
) -> None:
    gate = PauseGate()
    texts = [f"text number {i}" for i in range(12)]
    provider = OpenAICompatibleEmbedding(
        base_url=embedding_server.url,
        model="test-embedding",
        dimensions=embedding_server.dimensions,
        api_key="sk-test",
        timeout_s=5.0,
    )
    sent_while_paused: list[int] = []

    def after_batch(_: object) -> None:
        if len(embedding_server.requests) == 1:
            gate.pause()  # paused once the first batch is back

    try:
        async with anyio.create_task_group() as tg:

            async def resume_later() -> None:
                await anyio.sleep(0.5)
                sent_while_paused.append(len(embedding_server.requests))
                gate.resume()

            tg.start_soon(resume_later)
            outcome = await embed_texts(
                provider,
                None,
                texts,
                batch_size=4,
                concurrency=1,
                on_progress=after_batch,
                before_batch=gate.wait,
            )
    finally:
        await provider.aclose()
    assert sent_while_paused == [1]
    assert len(embedding_server.requests) == 3 and outcome.vectors.shape == (12, 8)
