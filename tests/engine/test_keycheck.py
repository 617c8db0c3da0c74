"""Key connectivity tests against real loopback chat and embedding servers, on asyncio and trio:
each failure mode gives its own code and a message that says what to do, never the key."""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

import anyio
import pytest

from engine.config import ChatSettings, EmbeddingSettings, NetworkSettings
from engine.keycheck import PROBE_TEXT, check_chat_key, check_embedding
from tests.engine.test_chat_client import _self_signed as self_signed
from tests.servers import embedding_server as emb
from tests.servers.chat_server import (
    ChatServer,
    Delay,
    Drop,
    Malformed,
    Status,
    Text,
)
from tests.servers.embedding_server import EmbeddingServer
from tests.servers.page_server import Page, html, json_page, serving, vendor_refusal
from tests.servers.timeouts import timeout_for

API_KEY = "sk-keycheck-3d9f1a7c5e2b4d80"
NET = NetworkSettings()


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def chat_settings(base_url: str, **kw: Any) -> ChatSettings:
    return ChatSettings(base_url=base_url, **{"model": "deepseek-chat", "timeout_s": 2.0, **kw})


def embedding_settings(base_url: str, **kw: Any) -> EmbeddingSettings:
    options: dict[str, Any] = {"model": "test-embedding", "dimensions": 8, "timeout_s": 2.0}
    return EmbeddingSettings(provider="openai_compatible", base_url=base_url, **{**options, **kw})


async def closed_port() -> int:
    with anyio.fail_after(5):
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        await listener.aclose()  # nothing listens on this port any more
    return int(port)


# -- chat ------------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("style", ["openai", "deepseek"])
async def test_a_working_chat_key_is_confirmed_with_a_one_token_request(
    chat_server: ChatServer, style: str
) -> None:
    chat_server.script(Text("p"))
    base_url = chat_server.url if style == "openai" else chat_server.origin
    result = await check_chat_key(chat_settings(base_url), NET, API_KEY)
    assert (result.ok, result.code) == (True, "ok")
    assert "'deepseek-chat'" in result.message
    assert result.latency_ms > 0
    (request,) = chat_server.requests
    assert request.body["max_tokens"] == 1 and request.body["stream"] is False
    assert request.headers["authorization"] == f"Bearer {API_KEY}"


@pytest.mark.anyio
@pytest.mark.parametrize("key", [None, ""])
async def test_no_chat_key_says_where_to_set_one(chat_server: ChatServer, key: str | None) -> None:
    result = await check_chat_key(chat_settings(chat_server.url), NET, key)
    assert (result.ok, result.code) == (False, "no_key")
    assert "CITEWISE_DEEPSEEK_API_KEY" in result.message and "Settings" in result.message
    assert chat_server.requests == []


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("fault", "code", "advice"),
    [
        (Status(401), "unauthorized", "citewise keys set"),
        (Status(403), "unauthorized", "citewise keys set"),
        (Status(402), "no_balance", "top up"),
        (Status(429), "rate_limited", "could not be tested"),
        (Status(503), "server_error", "could not be tested"),
        (Delay(3.0), "timeout", "proxy"),
        (Drop(), "unreachable", "chat.base_url"),
        (Malformed(b"<html>Welcome to our homepage</html>"), "not_an_api", "chat.base_url"),
        (Status(400, "max_tokens is out of range"), "bad_request", "max_tokens is out of range"),
    ],
    ids=lambda v: f"{type(v).__name__}{getattr(v, 'status', '')}" if not isinstance(v, str) else v,
)
async def test_chat_failures_get_their_code_and_advice(
    chat_server: ChatServer, fault: Any, code: str, advice: str
) -> None:
    chat_server.script(fault)
    settings = chat_settings(chat_server.url, timeout_s=timeout_for(fault))
    result = await check_chat_key(settings, NET, API_KEY)
    assert (result.ok, result.code) == (False, code)
    assert advice in result.message
    assert result.latency_ms > 0


@pytest.mark.anyio
async def test_a_key_the_server_does_not_know_is_refused(chat_server: ChatServer) -> None:
    chat_server.api_key = "sk-the-right-key-0000"
    result = await check_chat_key(chat_settings(chat_server.url), NET, API_KEY)
    assert (result.ok, result.code) == (False, "unauthorized")
    assert "HTTP 401" in result.message


@pytest.mark.anyio
async def test_unreachable_chat_service_names_the_url() -> None:
    port = await closed_port()
    base_url = f"http://127.0.0.1:{port}"
    result = await check_chat_key(chat_settings(base_url), NET, API_KEY)
    assert (result.ok, result.code) == (False, "unreachable")
    assert f"{base_url}/chat/completions" in result.message


@pytest.mark.anyio
async def test_wrong_chat_base_url_is_named(chat_server: ChatServer) -> None:
    base_url = chat_server.url + "/nope"
    result = await check_chat_key(chat_settings(base_url), NET, API_KEY)
    assert (result.ok, result.code) == (False, "wrong_base_url")
    assert f"{base_url}/chat/completions does not exist" in result.message
    assert "https://api.deepseek.com" in result.message


@pytest.mark.anyio
async def test_wrong_chat_model_lists_the_models_on_offer(chat_server: ChatServer) -> None:
    result = await check_chat_key(
        chat_settings(chat_server.url, model="deepseek-chatt"), NET, API_KEY
    )
    assert (result.ok, result.code) == (False, "wrong_model")
    assert "'deepseek-chatt'" in result.message and "chat.model" in result.message
    assert "deepseek-chat, deepseek-reasoner" in result.message
    assert [r.path for r in chat_server.requests] == ["/v1/chat/completions", "/v1/models"]
    assert chat_server.requests[1].headers["authorization"] == f"Bearer {API_KEY}"


@pytest.mark.anyio
@pytest.mark.parametrize("status", [400, 401, 402, 429, 500])
async def test_the_chat_key_never_appears_in_a_verdict(
    chat_server: ChatServer, status: int
) -> None:
    chat_server.script(Status(status, message="echo", echo_key=True))
    result = await check_chat_key(chat_settings(chat_server.url), NET, API_KEY)
    assert not result.ok
    assert API_KEY not in repr(result)
    assert API_KEY[5:17] not in repr(result)


# -- embeddings ------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_built_in_embedding_model_needs_no_key() -> None:
    result = await check_embedding(EmbeddingSettings(provider="local"), NET, None)
    assert (result.ok, result.code) == (True, "ok")
    assert "512 dimensions" in result.message
    assert result.latency_ms > 0


@pytest.mark.anyio
async def test_a_working_embedding_key_is_confirmed(embedding_server: EmbeddingServer) -> None:
    result = await check_embedding(embedding_settings(embedding_server.url), NET, API_KEY)
    assert (result.ok, result.code) == (True, "ok")
    assert "vector of 8 dimensions" in result.message
    (request,) = embedding_server.requests
    assert request.body["input"] == [PROBE_TEXT]
    assert request.headers["authorization"] == f"Bearer {API_KEY}"


@pytest.mark.anyio
async def test_no_embedding_key_says_where_to_set_one(embedding_server: EmbeddingServer) -> None:
    result = await check_embedding(embedding_settings(embedding_server.url), NET, None)
    assert (result.ok, result.code) == (False, "no_key")
    assert "CITEWISE_EMBEDDING_API_KEY" in result.message and "built-in" in result.message
    assert embedding_server.requests == []


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("fault", "code", "advice"),
    [
        (emb.Status(401), "unauthorized", "citewise keys set"),
        (emb.Status(402), "no_balance", "top up"),
        (emb.Status(429, code="insufficient_quota"), "quota", "billing"),
        (emb.Status(503), "server_error", "try again"),
        (emb.WrongDimension(), "wrong_dimension", "embedding.dimensions"),
        (emb.Delay(3.0), "timeout", "proxy"),
        (emb.Drop(), "unreachable", "embedding.base_url"),
        (emb.Malformed(), "not_an_api", "embedding.base_url"),
    ],
    ids=lambda v: f"{type(v).__name__}{getattr(v, 'status', '')}" if not isinstance(v, str) else v,
)
async def test_embedding_failures_get_their_code_and_advice(
    embedding_server: EmbeddingServer, fault: Any, code: str, advice: str
) -> None:
    embedding_server.script(fault)
    settings = embedding_settings(embedding_server.url, timeout_s=timeout_for(fault))
    result = await check_embedding(settings, NET, API_KEY)
    assert (result.ok, result.code) == (False, code)
    assert advice in result.message
    assert API_KEY not in result.message


@pytest.mark.anyio
async def test_wrong_embedding_base_url_is_named(embedding_server: EmbeddingServer) -> None:
    base_url = embedding_server.url + "/nope"
    result = await check_embedding(embedding_settings(base_url), NET, API_KEY)
    assert (result.ok, result.code) == (False, "wrong_base_url")
    assert f"{base_url}/embeddings does not exist" in result.message


@pytest.mark.anyio
async def test_an_embedding_model_the_service_does_not_list_is_named(
    chat_server: ChatServer,
) -> None:
    # The chat server lists its models but has no /embeddings route: a 404 for the model.
    settings = embedding_settings(chat_server.url, model="text-embedding-9")
    result = await check_embedding(settings, NET, API_KEY)
    assert (result.ok, result.code) == (False, "wrong_model")
    assert "'text-embedding-9'" in result.message and "embedding.model" in result.message


@pytest.mark.anyio
async def test_unreachable_embedding_service_is_reported() -> None:
    port = await closed_port()
    result = await check_embedding(embedding_settings(f"http://127.0.0.1:{port}/v1"), NET, API_KEY)
    assert (result.ok, result.code) == (False, "unreachable")
    assert f"127.0.0.1:{port}" in result.message


# -- a wrong address is not a refused key (real loopback servers that are no chat API) --------


WRONG_ADDRESSES = [
    pytest.param(html(200), "not_an_api", id="homepage"),
    pytest.param(html(403, b"<html><h1>403 Forbidden</h1></html>"), "not_an_api", id="html403"),
    pytest.param(html(401, b"<html>Log in first</html>"), "not_an_api", id="html401"),
    pytest.param(Page(200, "text/plain", b"hello"), "not_an_api", id="plain-text"),
    pytest.param(json_page(200, {"status": "ok", "items": []}), "not_an_api", id="other-json"),
    pytest.param(html(404, b"<html>Not Found</html>"), "wrong_base_url", id="html404"),
    pytest.param(json_page(404, {"detail": "Not Found"}), "wrong_base_url", id="json404"),
    pytest.param(vendor_refusal(403), "unauthorized", id="vendor403"),
    pytest.param(vendor_refusal(401), "unauthorized", id="vendor401"),
]


@pytest.mark.anyio
@pytest.mark.parametrize(("page", "code"), WRONG_ADDRESSES)
async def test_what_answers_at_the_chat_address_decides_the_verdict(page: Page, code: str) -> None:
    with serving(page) as served:
        result = await check_chat_key(chat_settings(served.url), NET, API_KEY)
    assert (result.ok, result.code) == (False, code)
    assert result.facts["host"] == served.url.removeprefix("http://")
    assert result.facts.get("status", "200") == str(page.status)
    assert API_KEY not in repr(result)


@pytest.mark.anyio
@pytest.mark.parametrize(("page", "code"), WRONG_ADDRESSES)
async def test_what_answers_at_the_embedding_address_decides_the_verdict(
    page: Page, code: str
) -> None:
    with serving(page) as served:
        result = await check_embedding(embedding_settings(served.url), NET, API_KEY)
    assert (result.ok, result.code) == (False, code)
    assert result.facts["host"] == served.url.removeprefix("http://")


@pytest.mark.anyio
async def test_https_to_a_server_that_speaks_no_tls_is_a_tls_failure() -> None:
    with serving(html(200)) as served:
        base_url = served.url.replace("http://", "https://")
        chat = await check_chat_key(chat_settings(base_url), NET, API_KEY)
        embedding = await check_embedding(embedding_settings(base_url), NET, API_KEY)
    assert (chat.ok, chat.code) == (False, "tls")
    assert (embedding.ok, embedding.code) == (False, "tls")
    assert "network.ca_bundle" in chat.message


@pytest.mark.anyio
async def test_nothing_listening_is_unreachable_with_the_host_as_a_fact() -> None:
    port = await closed_port()
    result = await check_chat_key(chat_settings(f"http://127.0.0.1:{port}"), NET, API_KEY)
    assert (result.code, result.facts["host"]) == ("unreachable", f"127.0.0.1:{port}")


@pytest.mark.anyio
async def test_a_timeout_names_the_seconds_waited(chat_server: ChatServer) -> None:
    chat_server.script(Delay(3.0))
    result = await check_chat_key(chat_settings(chat_server.url, timeout_s=0.3), NET, API_KEY)
    assert (result.code, result.facts["seconds"]) == ("timeout", "0.3")


@pytest.mark.anyio
async def test_a_wrong_model_lists_the_offered_models_as_a_fact(chat_server: ChatServer) -> None:
    result = await check_chat_key(chat_settings(chat_server.url, model="nope"), NET, API_KEY)
    assert result.code == "wrong_model"
    assert result.facts["models"] == "deepseek-chat, deepseek-reasoner"


@pytest.mark.anyio
async def test_a_certificate_the_system_does_not_trust_is_a_tls_failure(tmp_path: Path) -> None:
    cert_file, key_file = self_signed(tmp_path)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert_file, key_file)
    server = ChatServer(tls=tls).start()
    try:
        untrusted = await check_chat_key(chat_settings(server.url), NET, API_KEY)
        server.script(Text("p"))
        trusted = await check_chat_key(
            chat_settings(server.url), NetworkSettings(ca_bundle=str(cert_file)), API_KEY
        )
    finally:
        server.stop()
    assert (untrusted.ok, untrusted.code) == (False, "tls")
    assert (trusted.ok, trusted.code) == (True, "ok")
