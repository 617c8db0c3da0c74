"""The chat client: OpenAI-compatible POST {base_url}/chat/completions over httpx (DeepSeek first).

Non-streaming and SSE streaming calls return one assembled ChatResponse or raise ChatError; a
stream cut before `data: [DONE]` is an error, never a partial answer. The client never retries,
never swallows cancellation, and never puts the API key anywhere but the Authorization header.
"""

from __future__ import annotations

import functools
import ssl
from collections.abc import Awaitable, Callable, Sequence
from typing import Literal, Self
from urllib.parse import urlsplit

import anyio
import httpx
import msgspec

from engine.chat.sse import SSEDecoder
from engine.chat.status import StatusContext, error_for_status, redact, vendor_text
from engine.errors import CaBundleError, ChatError, ProviderCause, SSEError
from engine.network import error_chain, is_json, transport_cause
from engine.network import ssl_context as network_ssl_context

DEEPSEEK_HOST = "api.deepseek.com"


class ChatMessage(msgspec.Struct, frozen=True):
    role: Literal["system", "user", "assistant"]
    content: str


class ChatUsage(msgspec.Struct, frozen=True):
    """The vendor's token counts; cache hit/miss are DeepSeek's fields (OpenAI's
    `prompt_tokens_details.cached_tokens` is read as hits), 0 when not reported."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    prompt_cache_hit_tokens: int = 0
    prompt_cache_miss_tokens: int = 0
    reasoning_tokens: int = 0


class ChatResponse(msgspec.Struct, frozen=True):
    """One complete answer. `reasoning_content` (a reasoning model's thinking) is never part of
    `content`; `usage` is None when the vendor reported none."""

    content: str
    reasoning_content: str = ""
    usage: ChatUsage | None = None
    finish_reason: str | None = None
    model: str = ""
    response_id: str = ""


class StreamDelta(msgspec.Struct, frozen=True):
    """The text one SSE chunk added: answer text and reasoning text, kept apart."""

    content: str = ""
    reasoning: str = ""


OnDelta = Callable[[StreamDelta], Awaitable[None]]

# -- wire formats ----------------------------------------------------------------------------


class _StreamOptions(msgspec.Struct):
    include_usage: bool


class _Request(msgspec.Struct, omit_defaults=True):
    # Field order is the byte order on the wire; traces and tests compare the exact bytes.
    model: str
    messages: Sequence[ChatMessage]
    max_tokens: int
    temperature: float
    stream: bool
    stream_options: _StreamOptions | None = None


class _PromptDetails(msgspec.Struct):
    cached_tokens: int | None = None


class _CompletionDetails(msgspec.Struct):
    reasoning_tokens: int | None = None


class _Usage(msgspec.Struct):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    prompt_cache_hit_tokens: int | None = None
    prompt_cache_miss_tokens: int | None = None
    prompt_tokens_details: _PromptDetails | None = None
    completion_tokens_details: _CompletionDetails | None = None


class _Message(msgspec.Struct):
    content: str | None = None
    reasoning_content: str | None = None


class _Choice(msgspec.Struct):
    message: _Message
    index: int = 0
    finish_reason: str | None = None


class _Completion(msgspec.Struct):
    choices: list[_Choice]
    usage: _Usage | None = None
    model: str | None = None
    id: str | None = None


class _Delta(msgspec.Struct):
    content: str | None = None
    reasoning_content: str | None = None


class _ChunkChoice(msgspec.Struct):
    delta: _Delta | None = None
    index: int = 0
    finish_reason: str | None = None


class _ErrorDetail(msgspec.Struct):
    message: str | None = None


class _Chunk(msgspec.Struct):
    choices: list[_ChunkChoice] | None = None
    usage: _Usage | None = None
    model: str | None = None
    id: str | None = None
    error: _ErrorDetail | str | None = None


_encode = msgspec.json.Encoder().encode
_decode_completion = msgspec.json.Decoder(_Completion).decode
_decode_chunk = msgspec.json.Decoder(_Chunk).decode


def _usage(raw: _Usage | None) -> ChatUsage | None:
    if raw is None:
        return None
    prompt = raw.prompt_tokens or 0
    completion = raw.completion_tokens or 0
    hit = raw.prompt_cache_hit_tokens
    if hit is None and raw.prompt_tokens_details is not None:
        hit = raw.prompt_tokens_details.cached_tokens
    details = raw.completion_tokens_details
    return ChatUsage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=raw.total_tokens or prompt + completion,
        prompt_cache_hit_tokens=hit or 0,
        prompt_cache_miss_tokens=raw.prompt_cache_miss_tokens or 0,
        reasoning_tokens=(details.reasoning_tokens or 0) if details else 0,
    )


# -- transport -------------------------------------------------------------------------------


@functools.lru_cache(maxsize=8)
def ssl_context(ca_bundle: str | None) -> ssl.SSLContext:
    """One context per CA setting for the process (loading certificates takes ~0.1 s)."""
    try:
        return network_ssl_context(ca_bundle)
    except CaBundleError as exc:
        raise ChatError("connection", str(exc), retryable=False) from None


def http_client(
    *, timeout_s: float, proxy: str | None = None, ca_bundle: str | None = None
) -> httpx.AsyncClient:
    """An httpx client with Citewise's network settings: `proxy` None or empty means the
    standard *_PROXY environment variables, `ca_bundle` None or empty the system certificates.
    Each read (and the connect) is bounded by `timeout_s`."""
    return httpx.AsyncClient(
        timeout=httpx.Timeout(timeout_s),
        proxy=proxy or None,
        verify=ssl_context(ca_bundle or None),
        trust_env=True,
    )


class ChatClient:
    """Chat completions from one OpenAI-compatible endpoint with one model and key.

    `complete()` bounds the whole exchange by `timeout_s`; `stream()` bounds the wait for the
    answer to start and each gap between chunks by it (a long answer that keeps flowing is not
    cut). An injected `client` is used as is and is not closed by aclose().
    """

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str,
        timeout_s: float = 120.0,
        temperature: float = 0.0,
        proxy: str | None = None,
        ca_bundle: str | None = None,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.url = self.base_url + "/chat/completions"
        self.model = model
        self.timeout_s = timeout_s
        self.temperature = temperature
        parts = urlsplit(self.base_url)
        host = (parts.hostname or "").lower()
        self.provider: str = "deepseek" if host == DEEPSEEK_HOST else "openai_compatible"
        self._host = parts.netloc or self.base_url
        self._where = (
            "DeepSeek" if self.provider == "deepseek" else f"the chat service at {self._host}"
        )
        self._ctx = StatusContext(
            url=self.url,
            base_url=self.base_url,
            host=self._host,
            model=model,
            deepseek=self.provider == "deepseek",
        )
        self._api_key = api_key
        self._owns_client = client is None
        self._client = client or http_client(timeout_s=timeout_s, proxy=proxy, ca_bundle=ca_bundle)

    def __repr__(self) -> str:
        return f"ChatClient(url={self.url!r}, model={self.model!r}, provider={self.provider!r})"

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()

    # -- the two calls -----------------------------------------------------------------------

    async def complete(self, messages: Sequence[ChatMessage], *, max_tokens: int) -> ChatResponse:
        """One answer, non-streaming. Raises ChatError."""
        body = self._body(messages, max_tokens, stream=False)
        answering = False
        try:
            # httpx bounds each read; fail_after bounds the whole exchange (a slow drip, or
            # DeepSeek's keep-alive blank lines while a request waits in its queue).
            with anyio.fail_after(self.timeout_s):
                async with self._client.stream(
                    "POST", self.url, content=body, headers=self._headers("application/json")
                ) as response:
                    answering = response.status_code == 200
                    await response.aread()
        except (TimeoutError, httpx.TimeoutException):
            raise self._timeout() from None
        except httpx.TransportError as exc:
            # `from None`: the httpx exception holds the request, and with it the key header.
            raise self._connection_error(exc, answering=answering) from None
        if response.status_code != 200:
            raise self._status_error(response)
        return self._parse_completion(response.content)

    async def stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int,
        on_delta: OnDelta | None = None,
    ) -> ChatResponse:
        """One answer over SSE: `on_delta` is awaited for each chunk that adds text, as it
        arrives; the assembled answer (with usage from the final chunk) is returned only after
        `data: [DONE]`. Raises ChatError."""
        body = self._body(messages, max_tokens, stream=True)
        answering = False
        try:
            async with self._client.stream(
                "POST", self.url, content=body, headers=self._headers("text/event-stream")
            ) as response:
                answering = response.status_code == 200
                if response.status_code != 200:
                    await response.aread()
                    raise self._status_error(response)
                ctype = response.headers.get("content-type", "").lower()
                if ctype.startswith("application/json"):
                    # A server that ignored `stream: true` and answered in one piece.
                    await response.aread()
                    result = self._parse_completion(response.content)
                    if on_delta is not None and (result.content or result.reasoning_content):
                        await on_delta(StreamDelta(result.content, result.reasoning_content))
                    return result
                return await self._read_stream(response, on_delta)
        except httpx.TimeoutException:
            raise self._timeout() from None
        except httpx.TransportError as exc:
            raise self._connection_error(exc, answering=answering) from None

    # -- streaming ---------------------------------------------------------------------------

    async def _read_stream(
        self, response: httpx.Response, on_delta: OnDelta | None
    ) -> ChatResponse:
        content: list[str] = []
        reasoning: list[str] = []
        usage: ChatUsage | None = None
        finish_reason: str | None = None
        model = response_id = ""
        saw_choice = False
        decoder = SSEDecoder()
        finished = False
        async for raw in response.aiter_bytes():
            try:
                events = decoder.feed(raw)
            except SSEError as exc:
                raise self._bad_response(str(exc)) from None
            for event in events:
                if event.data.strip() == "[DONE]":
                    finished = True
                    break
                chunk = self._parse_chunk(event.data, event.event)
                model = chunk.model or model
                response_id = chunk.id or response_id
                if chunk.usage is not None:
                    usage = _usage(chunk.usage)
                for choice in chunk.choices or ():
                    if choice.index != 0:
                        continue
                    saw_choice = True
                    finish_reason = choice.finish_reason or finish_reason
                    delta = choice.delta
                    if delta is None or not (delta.content or delta.reasoning_content):
                        continue
                    piece = StreamDelta(delta.content or "", delta.reasoning_content or "")
                    content.append(piece.content)
                    reasoning.append(piece.reasoning)
                    if on_delta is not None:
                        await on_delta(piece)
            if finished:
                break
        if not finished:
            for event in decoder.end():
                if event.data.strip() == "[DONE]":
                    finished = True
        if not finished:
            raise ChatError(
                "connection",
                f"the connection to {self._where} ended in the middle of the answer (no "
                "[DONE] after the last chunk); the partial answer was discarded: ask again",
                retryable=True,
            )
        if not saw_choice:
            raise self._bad_response("a stream without any choices")
        return ChatResponse(
            content="".join(content),
            reasoning_content="".join(reasoning),
            usage=usage,
            finish_reason=finish_reason,
            model=model,
            response_id=response_id,
        )

    def _parse_chunk(self, data: str, event: str) -> _Chunk:
        try:
            chunk = _decode_chunk(data)
        except msgspec.DecodeError as exc:
            raise self._bad_response(f"a stream chunk that is not valid JSON: {exc}") from None
        if chunk.error is not None or event == "error":
            error = chunk.error
            said = error if isinstance(error, str) else (error.message if error else "") or ""
            said = vendor_text(msgspec.json.encode({"error": said}), self._api_key)
            raise ChatError(
                "server_error",
                f"{self._where} reported an error in the middle of the answer"
                f"{': ' + said if said else ''}; the partial answer was discarded: ask again",
                vendor_message=said,
            )
        return chunk

    # -- helpers -----------------------------------------------------------------------------

    def _body(self, messages: Sequence[ChatMessage], max_tokens: int, *, stream: bool) -> bytes:
        return _encode(
            _Request(
                model=self.model,
                messages=messages,
                max_tokens=max_tokens,
                temperature=self.temperature,
                stream=stream,
                stream_options=_StreamOptions(include_usage=True) if stream else None,
            )
        )

    def _headers(self, accept: str) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": accept}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    def _parse_completion(self, content: bytes) -> ChatResponse:
        try:
            parsed = _decode_completion(content)
        except msgspec.DecodeError as exc:
            said = vendor_text(content[:2000], self._api_key)
            raise self._bad_response(
                f"not a chat completion: {exc}; it began {said[:80]!r}",
                cause="not_api" if is_json(content) else "not_json",
            ) from None
        choice = next((c for c in parsed.choices if c.index == 0), None)
        if choice is None:
            raise self._bad_response("a completion without choices", cause="not_api")
        return ChatResponse(
            content=choice.message.content or "",
            reasoning_content=choice.message.reasoning_content or "",
            usage=_usage(parsed.usage),
            finish_reason=choice.finish_reason,
            model=parsed.model or "",
            response_id=parsed.id or "",
        )

    def _status_error(self, response: httpx.Response) -> ChatError:
        return error_for_status(
            response.status_code,
            response.content,
            response.headers.get("retry-after"),
            self._ctx,
            self._api_key,
        )

    def _timeout(self) -> ChatError:
        return ChatError(
            "timeout",
            f"{self._where} did not answer within {self.timeout_s:g} s; check your network or "
            "proxy, or raise chat.timeout_s",
        )

    def _connection_error(self, exc: httpx.TransportError, *, answering: bool = False) -> ChatError:
        causes = list(error_chain(exc))
        said = next((str(c) for c in causes if str(c)), "")
        detail = redact(said, self._api_key) or "no details"
        cause = transport_cause(exc)
        hint = "check chat.base_url, your network and the proxy settings"
        if cause == "tls":
            hint = (
                "the secure connection failed (the server's certificate is not trusted): if "
                "your network uses its own certificates (a company proxy), set "
                "network.ca_bundle to their PEM file"
            )
        what = f"{type(exc).__name__}: {detail}"
        if answering:
            return ChatError(
                "connection",
                f"the connection to {self._where} broke off in the middle of the answer "
                f"({what}); any partial answer was discarded: ask again",
            )
        if isinstance(exc, httpx.ConnectError | httpx.ProxyError | httpx.UnsupportedProtocol):
            return ChatError(
                "connection", f"could not connect to {self.url} ({what}); {hint}", cause=cause
            )
        return ChatError(
            "connection",
            f"the connection to {self.url} was lost before an answer came ({what}); {hint}",
            cause=cause,
        )

    def _bad_response(self, what: str, *, cause: ProviderCause = "") -> ChatError:
        return ChatError(
            "bad_response",
            f"{self._where} sent an answer Citewise cannot use ({what}); check that "
            f"chat.base_url ({self.base_url}) points at an OpenAI-compatible API",
            cause=cause,
        )
