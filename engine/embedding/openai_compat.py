"""Embeddings from any OpenAI-compatible `/embeddings` endpoint over httpx.

Every failure leaves as an EmbeddingError with a stable code and a sentence for a person.
The API key goes into the Authorization header and nowhere else: never into a log, a message,
an exception or a repr (vendor error text is redacted before it is quoted).
"""

from __future__ import annotations

import functools
import ssl
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx
import msgspec
import numpy as np

from engine import redaction
from engine.embedding.base import EmbeddingResult, normalise
from engine.embedding.cache import cache_scope
from engine.errors import CaBundleError, EmbeddingError, ProviderCause, provider_code_for_status
from engine.network import is_json, parse_retry_after, ssl_context, transport_cause
from index.records import EmbeddingSpec

PROVIDER = "openai_compatible"
_VENDOR_TEXT_MAX = 300


class _Item(msgspec.Struct):
    embedding: list[float]
    index: int = -1


class _Usage(msgspec.Struct):
    prompt_tokens: int = 0
    total_tokens: int = 0


class _Response(msgspec.Struct):
    data: list[_Item]
    usage: _Usage | None = None


class _ErrorDetail(msgspec.Struct):
    message: str = ""
    type: str | None = None
    code: str | int | None = None


class _ErrorBody(msgspec.Struct):
    error: _ErrorDetail | str | None = None


_decode_response = msgspec.json.Decoder(_Response).decode
_decode_error = msgspec.json.Decoder(_ErrorBody).decode


@functools.lru_cache(maxsize=8)
def _ssl_context(ca_bundle: str | None) -> ssl.SSLContext:
    """One context per CA setting for the process (loading certificates takes ~0.1 s)."""
    try:
        return ssl_context(ca_bundle)
    except CaBundleError as exc:
        raise EmbeddingError("connection", str(exc), retryable=False) from None


class OpenAICompatibleEmbedding:
    """POST {base_url}/embeddings with {"model", "input"[, "dimensions"]}.

    `send_dimensions` adds the "dimensions" field (models that can shorten their vectors, e.g.
    text-embedding-3-*); many other vendors reject it, so it is off unless asked for.
    `proxy` None or empty means the standard *_PROXY environment variables; `ca_bundle` None
    or empty means the system certificates. An injected `client` is used as is and is not
    closed by aclose().
    """

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        dimensions: int,
        api_key: str,
        timeout_s: float = 60.0,
        send_dimensions: bool = False,
        proxy: str | None = None,
        ca_bundle: str | None = None,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        if dimensions < 1:
            raise ValueError("dimensions must be positive")
        self.spec = EmbeddingSpec(provider=PROVIDER, model=model, dimensions=dimensions)
        self._url = base_url.rstrip("/") + "/embeddings"
        # The embedding cache keys this provider's vectors by its endpoint too.
        self.cache_scope = cache_scope(PROVIDER, self._url)
        self._host = urlsplit(base_url).netloc or base_url
        self._api_key = api_key
        self._timeout_s = timeout_s
        self._send_dimensions = send_dimensions
        self._owns_client = client is None
        self._client = client or httpx.AsyncClient(
            timeout=httpx.Timeout(timeout_s),
            proxy=proxy or None,
            verify=_ssl_context(ca_bundle),
            trust_env=True,
        )

    def __repr__(self) -> str:
        return f"OpenAICompatibleEmbedding(url={self._url!r}, model={self.spec.model!r})"

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()

    async def embed(self, texts: Sequence[str]) -> EmbeddingResult:
        if not texts:
            return EmbeddingResult(vectors=np.zeros((0, self.spec.dimensions), dtype=np.float32))
        body: dict[str, Any] = {"model": self.spec.model, "input": list(texts)}
        if self._send_dimensions:
            body["dimensions"] = self.spec.dimensions
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        response = await self._post(msgspec.json.encode(body), headers)
        if response.status_code != 200:
            raise self._status_error(response)
        return self._parse(response.content, len(texts))

    async def _post(self, content: bytes, headers: dict[str, str]) -> httpx.Response:
        # httpx's timeout bounds each read; fail_after bounds the whole exchange (a slow drip).
        try:
            with anyio.fail_after(self._timeout_s):
                return await self._client.post(self._url, content=content, headers=headers)
        except (TimeoutError, httpx.TimeoutException):
            raise EmbeddingError(
                "timeout",
                f"the embedding service at {self._host} did not answer within "
                f"{self._timeout_s:g} s; check your network or proxy, or raise "
                "embedding.timeout_s",
            ) from None
        except httpx.TransportError as exc:
            # `from None`: the httpx exception holds the request, and with it the key header.
            cause = transport_cause(exc)
            hint = (
                "the secure connection failed: if your network uses its own certificates, set "
                "network.ca_bundle to their PEM file"
                if cause == "tls"
                else "check embedding.base_url, your network and the proxy settings"
            )
            raise EmbeddingError(
                "connection",
                f"could not reach the embedding service at {self._url} "
                f"({type(exc).__name__}: {self._redact(str(exc)) or 'no details'}); {hint}",
                cause=cause,
            ) from None

    def _redact(self, text: str) -> str:
        return redaction.redact(text, self._api_key)

    def _vendor_text(self, response: httpx.Response) -> tuple[str, str]:
        """The vendor's error message (redacted, shortened) and its error code or type."""
        code = ""
        try:
            parsed = _decode_error(response.content)
        except msgspec.DecodeError:
            text = response.text
        else:
            if isinstance(parsed.error, _ErrorDetail):
                text = parsed.error.message
                code = str(parsed.error.code or parsed.error.type or "")
            else:
                text = parsed.error or response.text
        text = " ".join(self._redact(text).split())
        if len(text) > _VENDOR_TEXT_MAX:
            text = text[: _VENDOR_TEXT_MAX - 1] + "…"
        return text, code

    def _status_error(self, response: httpx.Response) -> EmbeddingError:
        status = response.status_code
        where = f"the embedding service at {self._host}"
        text, vendor_code = self._vendor_text(response)
        said = f": {text}" if text else ""
        code = provider_code_for_status(status)
        page = bool(response.content.strip()) and not is_json(response.content)
        if page and code in ("unauthorized", "bad_request"):
            # A web page, not an API's JSON error: the address is wrong, not the key.
            return EmbeddingError(
                "bad_request",
                f"POST {self._url} was answered with a web page (HTTP {status}), not by an "
                "embeddings API; check embedding.base_url (it usually ends in /v1)",
                status=status,
                cause="not_json",
            )
        if code == "unauthorized":
            # The vendor's wording is left out: some echo part of the key back.
            return EmbeddingError(
                "unauthorized",
                f"{where} refused the API key (HTTP {status}); check the embedding key in "
                "Settings (or CITEWISE_EMBEDDING_API_KEY) and that it may use this model",
                status=status,
            )
        if code == "no_balance":
            return EmbeddingError(
                "no_balance",
                f"{where} says the account has no balance left (HTTP 402); top up the account "
                "or switch to the built-in embedding model",
                status=status,
                vendor_message=text,
            )
        if code == "rate_limited" and "quota" in vendor_code.casefold():
            # OpenAI answers 429 insufficient_quota when the plan, not the rate, is the limit.
            return EmbeddingError(
                "quota",
                f"{where} says the quota is used up (HTTP 429{said}); check the plan and "
                "billing of this key, or switch to the built-in embedding model",
                retryable=False,
                status=status,
                vendor_message=text,
            )
        if code == "rate_limited":
            return EmbeddingError(
                "rate_limited",
                f"{where} is limiting the request rate (HTTP 429{said}); Citewise waits and "
                "retries once; if it keeps happening lower embedding.concurrency or "
                "embedding.batch_size",
                retry_after=parse_retry_after(response.headers.get("retry-after")),
                status=status,
                vendor_message=text,
            )
        if code == "server_error":
            return EmbeddingError(
                "server_error",
                f"{where} had an internal error (HTTP {status}{said}); this is usually "
                "temporary: try again later",
                retry_after=parse_retry_after(response.headers.get("retry-after")),
                status=status,
                vendor_message=text,
            )
        return EmbeddingError(
            "bad_request",
            f"{where} rejected the request (HTTP {status}{said}); check embedding.base_url "
            f"and embedding.model ({self.spec.model!r})",
            status=status,
            vendor_message=text,
        )

    def _bad_response(self, what: str, *, cause: ProviderCause = "") -> EmbeddingError:
        return EmbeddingError(
            "bad_response",
            f"the embedding service at {self._host} sent an answer Citewise cannot use "
            f"({what}); check that embedding.base_url points at an OpenAI-compatible API",
            cause=cause,
        )

    def _parse(self, content: bytes, expected: int) -> EmbeddingResult:
        try:
            parsed = _decode_response(content)
        except msgspec.DecodeError as exc:
            cause: ProviderCause = "not_api" if is_json(content) else "not_json"
            raise self._bad_response(f"not an embeddings response: {exc}", cause=cause) from None
        if len(parsed.data) != expected:
            raise self._bad_response(f"{len(parsed.data)} vectors for {expected} texts")
        items = parsed.data
        if all(item.index >= 0 for item in items):
            items = sorted(items, key=lambda item: item.index)
            if [item.index for item in items] != list(range(expected)):
                raise self._bad_response("vector indices do not match the texts")
        lengths = {len(item.embedding) for item in items}
        if lengths != {self.spec.dimensions}:
            got = ", ".join(str(n) for n in sorted(lengths))
            raise EmbeddingError(
                "wrong_dimension",
                f"the model {self.spec.model!r} returned vectors of {got} dimensions but "
                f"embedding.dimensions is {self.spec.dimensions}; set embedding.dimensions to "
                "the model's size (a new snapshot is built with it)",
                retryable=False,
            )
        matrix = np.array([item.embedding for item in items], dtype=np.float32)
        if not np.isfinite(matrix).all() or not np.linalg.norm(matrix, axis=1).all():
            raise self._bad_response("vectors with non-finite or all-zero values")
        usage = parsed.usage
        tokens = (usage.total_tokens or usage.prompt_tokens) if usage else 0
        return EmbeddingResult(vectors=normalise(matrix), tokens=tokens)
