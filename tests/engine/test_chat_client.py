"""The chat client against a real loopback OpenAI-compatible server (tests/servers/chat_server),
on asyncio and trio: exact requests, streamed deltas, usage and cost, every failure's code,
cancellation, secrets; the SSE parser; and the server itself driven by the official client."""

from __future__ import annotations

import ipaddress
import itertools
import pickle
import ssl
import time
import traceback
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.chat import (
    ChatClient,
    ChatError,
    ChatMessage,
    ChatResponse,
    ChatUsage,
    StreamDelta,
    billed_tokens,
    cost_of,
)
from engine.chat.sse import ServerSentEvent, SSEDecoder
from engine.config import Price
from engine.errors import SSEError
from engine.network import MAX_RETRY_AFTER_S
from tests.servers.chat_server import (
    ChatServer,
    Delay,
    Drop,
    EmptyChoices,
    Malformed,
    Raw,
    Status,
    Text,
    Usage,
    completion_tokens_for,
)
from tests.servers.timeouts import timeout_for

API_KEY = "sk-chat-5e8b2c7d9a1f4e63b0c2"
MODEL = "deepseek-chat"
HI = [ChatMessage("system", "You answer briefly."), ChatMessage("user", "What is DNS?")]
MODES = ["complete", "stream"]


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@asynccontextmanager
async def open_client(server: ChatServer, **kw: Any) -> AsyncIterator[ChatClient]:
    options: dict[str, Any] = {"base_url": server.url, "timeout_s": 5.0, **kw}
    client = ChatClient(model=options.pop("model", MODEL), api_key=API_KEY, **options)
    try:
        yield client
    finally:
        await client.aclose()


async def ask(client: ChatClient, mode: str, **kw: Any) -> ChatResponse:
    if mode == "stream":
        return await client.stream(HI, max_tokens=200, **kw)
    return await client.complete(HI, max_tokens=200)


class Deltas:
    """An on_delta callback that keeps what it was given and when."""

    def __init__(self) -> None:
        self.seen: list[tuple[float, StreamDelta]] = []

    async def __call__(self, delta: StreamDelta) -> None:
        self.seen.append((time.monotonic(), delta))

    @property
    def content(self) -> list[str]:
        return [d.content for _, d in self.seen if d.content]

    @property
    def reasoning(self) -> list[str]:
        return [d.reasoning for _, d in self.seen if d.reasoning]


# -- happy paths -----------------------------------------------------------------------------


@pytest.mark.anyio
async def test_complete_sends_the_exact_request_and_reads_answer_and_cache_usage(
    chat_server: ChatServer,
) -> None:
    chat_server.script(
        Text(
            "DNS maps names to addresses.",
            usage=Usage(prompt_tokens=1200, completion_tokens=9, cache_hit=1024, cache_miss=176),
        )
    )
    async with open_client(chat_server, temperature=0.3) as client:
        response = await client.complete(HI, max_tokens=321)
    assert response.content == "DNS maps names to addresses."
    assert response.reasoning_content == ""
    assert response.usage == ChatUsage(1200, 9, 1209, 1024, 176, 0)
    assert (response.finish_reason, response.model) == ("stop", MODEL)
    assert response.response_id.startswith("chatcmpl-")
    (request,) = chat_server.requests
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert request.headers["content-type"] == "application/json"
    assert request.raw == (
        b'{"model":"deepseek-chat","messages":[{"role":"system","content":"You answer briefly."},'
        b'{"role":"user","content":"What is DNS?"}],"max_tokens":321,"temperature":0.3,'
        b'"stream":false}'
    )


@pytest.mark.anyio
async def test_stream_hands_over_deltas_in_order_while_the_answer_is_still_being_written(
    chat_server: ChatServer,
) -> None:
    text = "Domain names resolve through a hierarchy of name servers. " * 3
    chat_server.script(
        Text(
            text,
            chunk_chars=10,
            chunk_delay_s=0.03,
            usage=Usage(prompt_tokens=3000, completion_tokens=500, cache_hit=2000),
        )
    )
    deltas = Deltas()
    async with open_client(chat_server) as client:
        response = await client.stream(HI, max_tokens=200, on_delta=deltas)
    assert response.content == text
    assert deltas.content == [text[i : i + 10] for i in range(0, len(text), 10)]
    (request,) = chat_server.requests
    # The first piece reached the caller long before the server wrote the last one.
    assert deltas.seen[0][0] < request.chunk_times[-3]
    assert request.chunks[-1] == b"data: [DONE]\n\n"
    assert request.headers["accept"] == "text/event-stream"
    assert request.raw.endswith(b',"stream":true,"stream_options":{"include_usage":true}}')
    assert response.usage == ChatUsage(3000, 500, 3500, 2000, 1000, 0)
    assert cost_of(response.usage, Price()) == pytest.approx(
        (2000 * 0.028 + 1000 * 0.28 + 500 * 0.42) / 1e6
    )


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_reasoning_is_kept_apart_from_the_answer(chat_server: ChatServer, mode: str) -> None:
    reasoning = "The user asks which port DNS uses. Classic DNS uses port 53."
    chat_server.script(Text("Port 53.", reasoning=reasoning, chunk_chars=7))
    deltas = Deltas()
    async with open_client(chat_server) as client:
        response = await ask(client, mode, on_delta=deltas)
    assert response.content == "Port 53."
    assert response.reasoning_content == reasoning
    assert response.usage is not None
    assert response.usage.reasoning_tokens == completion_tokens_for(reasoning)
    if mode == "stream":
        assert "".join(deltas.reasoning) == reasoning
        assert "".join(deltas.content) == "Port 53."
        assert all(not (d.content and d.reasoning) for _, d in deltas.seen)


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_missing_usage_is_reported_as_none(chat_server: ChatServer, mode: str) -> None:
    chat_server.script(Text("no usage here", usage=None))
    async with open_client(chat_server) as client:
        response = await ask(client, mode)
    assert response.content == "no usage here"
    assert response.usage is None


@pytest.mark.anyio
async def test_openai_cached_tokens_count_as_cache_hits(chat_server: ChatServer) -> None:
    body = (
        b'{"id":"x","model":"gpt","choices":[{"index":0,"message":{"role":"assistant",'
        b'"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":100,'
        b'"completion_tokens":2,"total_tokens":102,"prompt_tokens_details":{"cached_tokens":64}}}'
    )
    chat_server.script(Raw(body, content_type="application/json"))
    async with open_client(chat_server) as client:
        response = await client.complete(HI, max_tokens=5)
    assert response.usage == ChatUsage(100, 2, 102, prompt_cache_hit_tokens=64)
    assert billed_tokens(response.usage) == (64, 36, 2)


def test_cost_prices_cache_hits_misses_and_output_apart() -> None:
    price = Price(input_cache_hit=0.1, input_cache_miss=1.0, output=2.0)
    reported = ChatUsage(
        3000, 500, 3500, prompt_cache_hit_tokens=2000, prompt_cache_miss_tokens=1000
    )
    miss_unreported = ChatUsage(3000, 500, 3500, prompt_cache_hit_tokens=2000)
    no_cache_info = ChatUsage(3000, 500, 3500)
    assert cost_of(reported, price) == pytest.approx((200 + 1000 + 1000) / 1e6)
    assert cost_of(miss_unreported, price) == pytest.approx(cost_of(reported, price))
    assert cost_of(no_cache_info, price) == pytest.approx((3000 + 1000) / 1e6)


@pytest.mark.anyio
async def test_keepalive_comments_and_crlf_line_ends_are_understood(
    chat_server: ChatServer,
) -> None:
    def chunk(text: str) -> bytes:
        return b'data: {"choices":[{"index":0,"delta":{"content":"%s"}}]}\r\n\r\n' % text.encode()

    chat_server.script(
        Raw(
            b": keep-alive\r\n\r\n"
            + chunk("Hel")
            + b": keep-alive\r\n\r\n"
            + chunk("lo")
            + b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\r\n\r\n'
            + b"data: [DONE]\r\n\r\n"
        )
    )
    deltas = Deltas()
    async with open_client(chat_server) as client:
        response = await client.stream(HI, max_tokens=5, on_delta=deltas)
    assert (response.content, response.finish_reason) == ("Hello", "stop")
    assert deltas.content == ["Hel", "lo"]


@pytest.mark.anyio
async def test_a_server_that_ignores_stream_still_gives_the_whole_answer(
    chat_server: ChatServer,
) -> None:
    chat_server.script(Text("one piece", ignore_stream=True))
    deltas = Deltas()
    async with open_client(chat_server) as client:
        response = await client.stream(HI, max_tokens=5, on_delta=deltas)
    assert response.content == "one piece"
    assert deltas.content == ["one piece"]


@pytest.mark.anyio
async def test_provider_and_url_follow_the_base_url() -> None:
    cases = [
        ("https://api.deepseek.com", "deepseek", "https://api.deepseek.com/chat/completions"),
        (
            "https://API.DeepSeek.com/v1/",
            "deepseek",
            "https://API.DeepSeek.com/v1/chat/completions",
        ),
        (
            "https://api.openai.com/v1",
            "openai_compatible",
            "https://api.openai.com/v1/chat/completions",
        ),
    ]
    for base_url, provider, url in cases:
        client = ChatClient(base_url=base_url, model=MODEL, api_key=API_KEY)
        try:
            assert (client.provider, client.url) == (provider, url)
        finally:
            await client.aclose()


# -- failures --------------------------------------------------------------------------------

FAULTS = [
    (Status(401), "unauthorized", False, 401),
    (Status(403), "unauthorized", False, 403),
    (Status(402), "no_balance", False, 402),
    (Status(429), "rate_limited", True, 429),
    (Status(500), "server_error", True, 500),
    (Status(503), "server_error", True, 503),
    (Status(400), "bad_request", False, 400),
    (Status(404), "bad_request", False, 404),
    (Status(422), "bad_request", False, 422),
    (Delay(3.0), "timeout", True, None),
    (Drop(), "connection", True, None),
    (Drop(reset=True), "connection", True, None),
    (Malformed(), "bad_response", True, None),
    (EmptyChoices(), "bad_response", True, None),
]


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("fault", "code", "retryable", "status"),
    FAULTS,
    ids=[f"{type(f).__name__}{getattr(f, 'status', '')}-{c}" for f, c, _, _ in FAULTS],
)
async def test_failures_are_classified_and_not_retried(
    chat_server: ChatServer, mode: str, fault: Any, code: str, retryable: bool, status: int | None
) -> None:
    chat_server.script(fault)
    async with open_client(chat_server, timeout_s=timeout_for(fault)) as client:
        with pytest.raises(ChatError) as info:
            await ask(client, mode)
    assert info.value.code == code
    assert info.value.retryable is retryable
    assert info.value.status == status
    assert len(info.value.message) > 40  # a sentence a person can act on
    assert len(chat_server.requests) == 1


@pytest.mark.anyio
async def test_retry_after_is_read_and_capped(chat_server: ChatServer) -> None:
    in_12s = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 12))
    chat_server.script(
        Status(429, retry_after="7"),
        Status(429, retry_after="86400"),
        Status(503, retry_after=in_12s),
        Status(429),
    )
    waits = []
    async with open_client(chat_server) as client:
        for _ in range(4):
            with pytest.raises(ChatError) as info:
                await client.complete(HI, max_tokens=5)
            waits.append(info.value.retry_after)
    assert waits[:2] == [7.0, MAX_RETRY_AFTER_S]
    assert waits[2] is not None and 9.0 <= waits[2] <= 12.0
    assert waits[3] is None


@pytest.mark.anyio
async def test_wrong_base_url_names_the_url_that_was_called(chat_server: ChatServer) -> None:
    async with open_client(chat_server, base_url=chat_server.url + "/nope/") as client:
        with pytest.raises(ChatError) as info:
            await client.complete(HI, max_tokens=5)
    assert info.value.code == "bad_request"
    assert f"POST {chat_server.url}/nope/chat/completions" in info.value.message
    assert "chat.base_url" in info.value.message


@pytest.mark.anyio
async def test_unknown_model_quotes_the_vendor_and_names_the_model(
    chat_server: ChatServer,
) -> None:
    async with open_client(chat_server, model="deepseek-chatt") as client:
        with pytest.raises(ChatError) as info:
            await client.stream(HI, max_tokens=5)
    assert (info.value.code, info.value.status) == ("bad_request", 400)
    assert "Model Not Exist" in info.value.vendor_message
    assert "'deepseek-chatt'" in info.value.message
    assert chat_server.remaining == 0


@pytest.mark.anyio
async def test_refused_deepseek_key_says_how_to_check_it(chat_server: ChatServer) -> None:
    # DeepSeek's host reached through the loopback server acting as an HTTP proxy.
    chat_server.script(Status(401, message="Authentication Fails", echo_key=True))
    async with open_client(
        chat_server, base_url="http://api.deepseek.com", proxy=chat_server.origin
    ) as client:
        assert client.provider == "deepseek"
        with pytest.raises(ChatError) as info:
            await client.complete(HI, max_tokens=5)
    assert info.value.code == "unauthorized"
    assert "DeepSeek key" in info.value.message
    assert "`citewise keys test`" in info.value.message
    assert chat_server.requests[0].target == "http://api.deepseek.com/chat/completions"


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("cut_cleanly", [False, True])
async def test_a_stream_cut_mid_answer_is_an_error_not_a_partial_answer(
    chat_server: ChatServer, mode: str, cut_cleanly: bool
) -> None:
    text = "The answer is long enough to be cut in the middle of a sentence."
    chat_server.script(Text(text, chunk_chars=5, cut_after_chunks=4, cut_cleanly=cut_cleanly))
    deltas = Deltas()
    async with open_client(chat_server) as client:
        with pytest.raises(ChatError) as info:
            await ask(client, mode, on_delta=deltas)
    assert info.value.code in ("connection", "bad_response")
    assert info.value.retryable
    if mode == "stream":
        assert deltas.content == [text[0:5], text[5:10], text[10:15]]  # what did arrive


@pytest.mark.anyio
async def test_a_stream_without_done_is_refused_even_when_the_text_is_complete(
    chat_server: ChatServer,
) -> None:
    # role chunk + 4 pieces + finish chunk + usage chunk: everything but `data: [DONE]`.
    chat_server.script(
        Text("12345678901234567890", chunk_chars=5, cut_after_chunks=7, cut_cleanly=True)
    )
    async with open_client(chat_server) as client:
        with pytest.raises(ChatError) as info:
            await client.stream(HI, max_tokens=5)
    assert (info.value.code, info.value.retryable) == ("connection", True)
    assert len(chat_server.requests[0].chunks) == 7


@pytest.mark.anyio
async def test_an_error_event_mid_stream_is_a_retryable_server_error(
    chat_server: ChatServer,
) -> None:
    chat_server.script(
        Raw(
            b'data: {"choices":[{"index":0,"delta":{"content":"Hal"}}]}\n\n'
            b'data: {"error":{"message":"Server overloaded, please retry"}}\n\n'
        )
    )
    async with open_client(chat_server) as client:
        with pytest.raises(ChatError) as info:
            await client.stream(HI, max_tokens=5)
    assert (info.value.code, info.value.retryable) == ("server_error", True)
    assert info.value.vendor_message == "Server overloaded, please retry"


@pytest.mark.anyio
async def test_unreachable_server_is_a_connection_error() -> None:
    with anyio.fail_after(5):
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        await listener.aclose()  # nothing listens on this port any more
    client = ChatClient(base_url=f"http://127.0.0.1:{port}/v1", model=MODEL, api_key=API_KEY)
    try:
        with pytest.raises(ChatError) as info:
            await client.stream(HI, max_tokens=5)
    finally:
        await client.aclose()
    assert (info.value.code, info.value.retryable) == ("connection", True)
    assert f"127.0.0.1:{port}" in info.value.message


# -- cancellation ----------------------------------------------------------------------------


@pytest.mark.anyio
async def test_cancelling_mid_stream_stops_promptly_and_closes_the_connection(
    chat_server: ChatServer,
) -> None:
    chat_server.script(Text("x" * 400, chunk_chars=4, chunk_delay_s=0.1))  # 10 s if left alone
    seen: list[StreamDelta] = []
    cancelled_at = 0.0
    returned = False
    async with open_client(chat_server) as client:
        with anyio.CancelScope() as scope:

            async def on_delta(delta: StreamDelta) -> None:
                nonlocal cancelled_at
                seen.append(delta)
                if len(seen) == 2:
                    cancelled_at = time.monotonic()
                    scope.cancel()

            await client.stream(HI, max_tokens=500, on_delta=on_delta)
            returned = True
        stopped_after = time.monotonic() - cancelled_at
    assert scope.cancelled_caught and not returned
    assert stopped_after < 0.5
    (request,) = chat_server.requests
    assert request.disconnected.wait(2.0), "the server never saw the connection close"
    assert request.finished.wait(2.0)
    assert len(request.chunks) < 10  # it stopped writing: no answer was read to the end


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_cancelling_while_waiting_for_the_answer_is_not_turned_into_an_error(
    chat_server: ChatServer, mode: str
) -> None:
    chat_server.script(Delay(5.0))
    started = time.monotonic()
    async with open_client(chat_server) as client:
        with anyio.move_on_after(0.2) as scope:
            await ask(client, mode)
    assert scope.cancelled_caught
    assert time.monotonic() - started < 1.5
    assert chat_server.requests[0].disconnected.wait(2.0)


# -- secrets ---------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    "fault",
    [
        Status(400, message="bad request", echo_key=True),
        Status(401, message="bad key", echo_key=True),
        Status(402, message="no money", echo_key=True),
        Status(429, message="slow down", echo_key=True),
        Status(500, message="oops", echo_key=True),
        Raw(f"<html>your key is {API_KEY}</html>".encode(), content_type="text/html"),
    ],
    ids=lambda f: f"{type(f).__name__}{getattr(f, 'status', '')}",
)
async def test_the_api_key_never_appears_in_errors_or_reprs(
    chat_server: ChatServer, fault: Any
) -> None:
    chat_server.script(fault)
    async with open_client(chat_server) as client:
        with pytest.raises(ChatError) as info:
            await client.complete(HI, max_tokens=5)
        shown = "".join(
            [
                "".join(traceback.format_exception(info.value)),
                repr(info.value),
                info.value.vendor_message,
                repr(client),
                str(client),
                repr(pickle.loads(pickle.dumps(info.value)).__dict__),
            ]
        )
    assert chat_server.requests[0].headers["authorization"] == f"Bearer {API_KEY}"
    assert API_KEY not in shown
    assert API_KEY[8:20] not in shown


def test_chat_error_survives_pickling() -> None:
    error = ChatError("rate_limited", "slow down", retry_after=2.5, status=429, vendor_message="x")
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.code, copy.message, copy.retryable, copy.retry_after, copy.status) == (
        "rate_limited",
        "slow down",
        True,
        2.5,
        429,
    )
    assert copy.vendor_message == "x"


# -- network settings ------------------------------------------------------------------------


@pytest.mark.anyio
async def test_proxy_setting_sends_requests_through_the_proxy(chat_server: ChatServer) -> None:
    chat_server.script(Text("via the proxy"))
    async with open_client(
        chat_server, base_url="http://chat.example.invalid/v1", proxy=chat_server.origin
    ) as client:
        response = await client.stream(HI, max_tokens=5)
    assert response.content == "via the proxy"
    assert chat_server.requests[0].target == "http://chat.example.invalid/v1/chat/completions"


def _self_signed(tmp_path: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 that no system trusts, and its key."""
    pytest.importorskip("cryptography")
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "citewise test server")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp_path / "server.pem", tmp_path / "server.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


@pytest.mark.anyio
async def test_ca_bundle_makes_a_private_certificate_trusted(tmp_path: Path) -> None:
    cert_file, key_file = _self_signed(tmp_path)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert_file, key_file)
    server = ChatServer(tls=tls).start()
    try:
        server.script(Text("over TLS"))
        async with open_client(server, ca_bundle=str(cert_file)) as client:
            assert (await client.complete(HI, max_tokens=5)).content == "over TLS"
        async with open_client(server) as client:  # the system store does not know it
            with pytest.raises(ChatError) as info:
                await client.complete(HI, max_tokens=5)
    finally:
        server.stop()
    assert info.value.code == "connection"
    assert "network.ca_bundle" in info.value.message
    assert server.remaining == 0 and len(server.requests) == 1


def test_an_unusable_ca_bundle_is_refused_naming_the_setting(tmp_path: Path) -> None:
    with pytest.raises(ChatError) as info:
        ChatClient(
            base_url="https://api.deepseek.com",
            model=MODEL,
            api_key=API_KEY,
            ca_bundle=str(tmp_path / "missing.pem"),
        )
    assert (info.value.code, info.value.retryable) == ("connection", False)
    assert "network.ca_bundle" in info.value.message


# -- the server speaks the real protocol -----------------------------------------------------


def test_the_official_openai_client_talks_to_the_scripted_server(chat_server: ChatServer) -> None:
    openai = pytest.importorskip("openai")
    chat_server.script(
        Text("Hello from the server", usage=Usage(prompt_tokens=20, cache_hit=16)),
        Text("Streamed hello, 你好", reasoning="thinking first", chunk_chars=3),
    )
    messages: Any = [{"role": "user", "content": "hello"}]
    with openai.OpenAI(
        api_key=API_KEY, base_url=chat_server.url, max_retries=0, timeout=5.0
    ) as client:
        whole = client.chat.completions.create(model=MODEL, messages=messages, max_tokens=50)
        chunks = list(
            client.chat.completions.create(
                model=MODEL,
                messages=messages,
                max_tokens=50,
                stream=True,
                stream_options={"include_usage": True},
            )
        )
    assert whole.choices[0].message.content == "Hello from the server"
    assert whole.choices[0].finish_reason == "stop"
    assert whole.usage is not None and whole.usage.prompt_tokens == 20
    assert (whole.usage.model_extra or {})["prompt_cache_hit_tokens"] == 16
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    thought = "".join(
        (c.choices[0].delta.model_extra or {}).get("reasoning_content") or ""
        for c in chunks
        if c.choices
    )
    assert (text, thought) == ("Streamed hello, 你好", "thinking first")
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens == completion_tokens_for(
        "Streamed hello, 你好"
    ) + completion_tokens_for("thinking first")
    assert [r.body.get("stream", False) for r in chat_server.requests] == [False, True]


def test_an_empty_script_fails_loudly(chat_server: ChatServer) -> None:
    httpx = pytest.importorskip("httpx")
    answer = httpx.post(
        chat_server.url + "/chat/completions", json={"model": MODEL, "messages": []}
    )
    assert answer.status_code == 500
    assert "script exhausted" in answer.json()["error"]["message"]


# -- the SSE parser --------------------------------------------------------------------------

SSE_STREAM = (
    "\ufeff: comment first\r\n"
    'data: {"a": 1}\r\n'
    "\r\n"
    "event: note\n"
    "id: 7\n"
    "data: 第一行\n"
    "data:second line, no space\n"
    "\n"
    ": keep-alive\r\r"
    "retry: 1500\r"
    "data:  two spaces keep one\r"
    "unknown: ignored\r"
    "\r"
    "data\n"
    "\n"
    "id: 8\n"
    "\n"
    "data: [DONE]\n"
    "\n"
).encode()

SSE_EVENTS = [
    ServerSentEvent(data='{"a": 1}'),
    ServerSentEvent(data="第一行\nsecond line, no space", event="note", id="7"),
    ServerSentEvent(data=" two spaces keep one", id="7", retry=1500),
    ServerSentEvent(data="", id="7"),  # a bare `data` line is an empty data line
    ServerSentEvent(data="[DONE]", id="8"),  # an id-only event sets the id, dispatches nothing
]


def test_sse_decoder_follows_the_event_stream_rules() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(SSE_STREAM) + decoder.end() == SSE_EVENTS


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=len(SSE_STREAM)), max_size=12))
def test_sse_decoder_gives_the_same_events_however_the_bytes_are_split(cuts: list[int]) -> None:
    decoder = SSEDecoder()
    events: list[ServerSentEvent] = []
    bounds = [0, *sorted(cuts), len(SSE_STREAM)]
    for start, end in itertools.pairwise(bounds):
        events += decoder.feed(SSE_STREAM[start:end])
    assert events + decoder.end() == SSE_EVENTS


def test_sse_decoder_delivers_an_unterminated_last_event_at_the_end() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b'data: {"x": 1}\n\ndata: [DO') == [ServerSentEvent(data='{"x": 1}')]
    assert decoder.feed(b"NE]") == []
    assert decoder.end() == [ServerSentEvent(data="[DONE]")]


def test_sse_decoder_refuses_an_endless_line() -> None:
    decoder = SSEDecoder(max_line_bytes=100)
    assert decoder.feed(b"data: " + b"x" * 90) == []
    with pytest.raises(SSEError):
        decoder.feed(b"x" * 20)
