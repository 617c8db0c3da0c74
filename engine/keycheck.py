"""Connectivity tests for the two keys: one tiny real request each, and a verdict for a person.

The chat check asks for a 1-token completion; the embedding check embeds one short text and
checks the vector size. Each says exactly what is wrong (no key, refused key, no balance, rate
limit, timeout, TLS, a wrong address: nothing there, no such name, 404, a web page or another
JSON API; wrong model, wrong dimension) and what to do. A check never raises for a failure it
can name, never retries, and never puts a key into its message or its facts.
"""

from __future__ import annotations

import time
from typing import Literal
from urllib.parse import urlsplit

import httpx
import msgspec

from engine.chat import ChatClient, ChatError, ChatMessage
from engine.chat.client import http_client
from engine.config import ChatSettings, EmbeddingSettings, NetworkSettings
from engine.embedding import (
    EmbeddingError,
    EmbeddingProvider,
    LocalEmbedding,
    OpenAICompatibleEmbedding,
)
from engine.errors import ProviderError
from engine.secrets import ENV_NAMES

CheckCode = Literal[
    "ok",
    "no_key",
    "unauthorized",
    "no_balance",
    "quota",
    "rate_limited",
    "server_error",
    "timeout",
    "unreachable",  # nothing answers at that address (connection refused, reset)
    "unknown_host",  # the host name has no address (DNS)
    "proxy",  # the proxy refused or failed
    "tls",  # the secure connection failed (certificate not trusted, handshake)
    "wrong_base_url",  # 404: no API at that path
    "not_an_api",  # a web page, non-JSON, or JSON that is not an OpenAI-compatible API
    "wrong_model",
    "wrong_dimension",
    "bad_request",
    "bad_response",
]
MAX_CHECK_TIMEOUT_S = 20.0  # a connectivity test answers in seconds or reports a timeout
PROBE_TEXT = "Citewise connectivity test / 连通性测试"
_MODELS_SHOWN = 8


class KeyCheck(msgspec.Struct, frozen=True):
    """The verdict: `ok`, a stable `code`, a `message` for a person (English, with the setting
    to change), how long the request took (0 when none was sent), and `facts`: the values a
    translated sentence for the code names (host, model, models, seconds, status, got,
    expected), never a key."""

    ok: bool
    code: CheckCode
    message: str
    latency_ms: float = 0.0
    facts: dict[str, str] = msgspec.field(default_factory=dict)


_CONNECTION_CODES: dict[str, CheckCode] = {
    "dns": "unknown_host",
    "refused": "unreachable",
    "proxy": "proxy",
    "tls": "tls",
}


def _connection_check(error: ProviderError, latency: float, facts: dict[str, str]) -> KeyCheck:
    return KeyCheck(
        False, _CONNECTION_CODES.get(error.cause, "unreachable"), error.message, latency, facts
    )


def _host(base_url: str) -> str:
    return urlsplit(base_url).netloc or base_url


class _Model(msgspec.Struct):
    id: str


class _ModelList(msgspec.Struct):
    data: list[_Model]


_decode_models = msgspec.json.Decoder(_ModelList).decode


def _elapsed_ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000.0, 1)


def _timeout(settings_timeout: float) -> float:
    return min(settings_timeout, MAX_CHECK_TIMEOUT_S)


async def _listed_models(
    base_url: str, api_key: str, network: NetworkSettings, timeout_s: float
) -> list[str] | None:
    """The model ids GET {base_url}/models lists, or None when the endpoint gives no list."""
    try:
        async with http_client(
            timeout_s=timeout_s, proxy=network.proxy, ca_bundle=network.ca_bundle
        ) as client:
            response = await client.get(
                base_url.rstrip("/") + "/models",
                headers={"Authorization": f"Bearer {api_key}", "Accept": "application/json"},
            )
    except (httpx.HTTPError, ChatError):
        return None
    if response.status_code != 200:
        return None
    try:
        return [m.id for m in _decode_models(response.content).data]
    except msgspec.DecodeError:
        return None


def _wrong_model(model: str, host: str, offered: list[str], setting: str) -> str:
    shown = ", ".join(offered[:_MODELS_SHOWN]) + (", …" if len(offered) > _MODELS_SHOWN else "")
    return (
        f"{host} does not offer the model {model!r}; set {setting} to one it lists "
        f"({shown or 'it lists none'})"
    )


# -- chat ------------------------------------------------------------------------------------


async def check_chat_key(
    settings: ChatSettings, network: NetworkSettings, api_key: str | None
) -> KeyCheck:
    """Send one 1-token completion with this key and say whether it works and, if not, why."""
    if not api_key:
        return KeyCheck(
            False,
            "no_key",
            "no DeepSeek key is set: add it in Settings or with `citewise keys set`; where "
            f"the system has no credential store, set {ENV_NAMES['deepseek']} instead",
        )
    timeout_s = _timeout(settings.timeout_s)
    facts = {"host": _host(settings.base_url), "model": settings.model}
    try:
        client = ChatClient(
            base_url=settings.base_url,
            model=settings.model,
            api_key=api_key,
            timeout_s=timeout_s,
            temperature=settings.temperature,
            proxy=network.proxy or None,
            ca_bundle=network.ca_bundle or None,
        )
    except ChatError as error:  # an unusable CA bundle
        return KeyCheck(False, "tls", error.message, 0.0, facts)
    if client.provider == "deepseek":
        facts["host"] = "DeepSeek"
    started = time.perf_counter()
    try:
        async with client:
            response = await client.complete([ChatMessage("user", "ping")], max_tokens=1)
    except ChatError as error:
        latency = _elapsed_ms(started)
        return await _chat_failure(error, settings, network, api_key, facts, latency)
    who = "DeepSeek" if client.provider == "deepseek" else client.url
    facts["model"] = response.model or settings.model
    return KeyCheck(
        True,
        "ok",
        f"the key works: {who} answered with the model {facts['model']!r}",
        _elapsed_ms(started),
        facts,
    )


async def _chat_failure(
    error: ChatError,
    settings: ChatSettings,
    network: NetworkSettings,
    api_key: str,
    facts: dict[str, str],
    latency: float,
) -> KeyCheck:
    url = settings.base_url.rstrip("/") + "/chat/completions"
    timeout_s = _timeout(settings.timeout_s)
    if error.status is not None:
        facts["status"] = str(error.status)
    match error.code:
        case "unauthorized":
            message = (
                f"the key was refused (HTTP {error.status}): it is wrong, revoked or has no "
                "access to this model; copy it again from the vendor's console (DeepSeek: "
                "platform.deepseek.com → API keys) and save it with `citewise keys set`"
            )
            return KeyCheck(False, "unauthorized", message, latency, facts)
        case "no_balance":
            return KeyCheck(
                False,
                "no_balance",
                "the key is valid but the account has no balance left (HTTP 402); top up the "
                "account (DeepSeek: platform.deepseek.com → Top up) and test again",
                latency,
                facts,
            )
        case "rate_limited" | "server_error":
            return KeyCheck(
                False, error.code, f"the key could not be tested: {error.message}", latency, facts
            )
        case "timeout":
            facts["seconds"] = f"{timeout_s:g}"
            return KeyCheck(
                False,
                "timeout",
                f"no answer from {url} within {timeout_s:g} s: check your internet connection, "
                "firewall and proxy (network.proxy), and that chat.base_url is right",
                latency,
                facts,
            )
        case "connection":
            return _connection_check(error, latency, facts)
        case "bad_response":
            return KeyCheck(
                False,
                "not_an_api" if error.cause in ("not_json", "not_api") else "bad_response",
                f"{url} answered, but not like an OpenAI-compatible chat API; check "
                "chat.base_url (DeepSeek: https://api.deepseek.com; other services usually "
                "end in /v1)",
                latency,
                facts,
            )
        case _:
            pass
    if error.cause == "not_json" and error.status != 404:
        return KeyCheck(False, "not_an_api", error.message, latency, facts)
    offered = await _listed_models(settings.base_url, api_key, network, timeout_s)
    if offered is not None and settings.model not in offered:
        message = _wrong_model(settings.model, facts["host"], offered, "chat.model")
        return KeyCheck(False, "wrong_model", message, latency, _models(facts, offered))
    if error.status == 404 and offered is None:
        return KeyCheck(
            False,
            "wrong_base_url",
            f"{url} does not exist (HTTP 404); check chat.base_url: DeepSeek's is "
            "https://api.deepseek.com, other OpenAI-compatible services usually end in /v1",
            latency,
            facts,
        )
    return KeyCheck(False, "bad_request", error.message, latency, facts)


def _models(facts: dict[str, str], offered: list[str]) -> dict[str, str]:
    shown = ", ".join(offered[:_MODELS_SHOWN]) + (", …" if len(offered) > _MODELS_SHOWN else "")
    return {**facts, "models": shown or "–"}


# -- embeddings ------------------------------------------------------------------------------


async def check_embedding(
    settings: EmbeddingSettings, network: NetworkSettings, api_key: str | None
) -> KeyCheck:
    """Embed one short text with the configured provider and check the vector size."""
    provider: EmbeddingProvider
    timeout_s = _timeout(settings.timeout_s)
    facts = {"host": _host(settings.base_url), "model": settings.model}
    if settings.provider == "local":
        provider = LocalEmbedding(batch_size=1)
        dimensions = provider.spec.dimensions
        facts = {"model": provider.spec.model}
    elif not api_key:
        return KeyCheck(
            False,
            "no_key",
            "no embedding key is set: add it in Settings or with `citewise keys set`; where "
            f"the system has no credential store, set {ENV_NAMES['embedding']} instead (or "
            "choose the built-in model, which needs no key)",
        )
    else:
        try:
            provider = OpenAICompatibleEmbedding(
                base_url=settings.base_url,
                model=settings.model,
                dimensions=settings.dimensions,
                api_key=api_key,
                timeout_s=timeout_s,
                proxy=network.proxy or None,
                ca_bundle=network.ca_bundle or None,
            )
        except EmbeddingError as error:
            return KeyCheck(False, "tls", error.message, 0.0, facts)
        dimensions = settings.dimensions
    facts["expected"] = str(dimensions)
    started = time.perf_counter()
    try:
        result = await provider.embed([PROBE_TEXT])
    except EmbeddingError as error:
        latency = _elapsed_ms(started)
        return await _embedding_failure(error, settings, network, api_key or "", facts, latency)
    finally:
        await provider.aclose()
    latency = _elapsed_ms(started)
    got = result.vectors.shape[1] if result.vectors.ndim == 2 else 0
    if got != dimensions:
        return KeyCheck(
            False,
            "wrong_dimension",
            f"the model returned {got}-dimensional vectors, expected {dimensions}; set "
            "embedding.dimensions to the model's size",
            latency,
            {**facts, "got": str(got)},
        )
    if settings.provider == "local":
        return KeyCheck(
            True,
            "ok",
            f"the built-in embedding model works ({dimensions} dimensions); it needs no key",
            latency,
            facts,
        )
    return KeyCheck(
        True,
        "ok",
        f"the key works: {settings.model!r} at {settings.base_url} returned a vector of "
        f"{dimensions} dimensions",
        latency,
        facts,
    )


async def _embedding_failure(
    error: EmbeddingError,
    settings: EmbeddingSettings,
    network: NetworkSettings,
    api_key: str,
    facts: dict[str, str],
    latency: float,
) -> KeyCheck:
    url = settings.base_url.rstrip("/") + "/embeddings"
    if error.status is not None:
        facts["status"] = str(error.status)
    match error.code:
        case "unauthorized":
            return KeyCheck(
                False,
                "unauthorized",
                "the embedding key was refused: it is wrong, revoked or has no access to "
                f"{settings.model!r}; copy it again from the vendor's console and save it with "
                "`citewise keys set`",
                latency,
                facts,
            )
        case "wrong_dimension":
            return KeyCheck(False, error.code, error.message, latency, facts)
        case "no_balance" | "quota" | "rate_limited" | "server_error":
            return KeyCheck(False, error.code, error.message, latency, facts)
        case "timeout":
            facts["seconds"] = f"{_timeout(settings.timeout_s):g}"
            return KeyCheck(
                False,
                "timeout",
                f"no answer from {url} within {_timeout(settings.timeout_s):g} s: check your "
                "internet connection, firewall and proxy (network.proxy), and that "
                "embedding.base_url is right",
                latency,
                facts,
            )
        case "connection":
            return _connection_check(error, latency, facts)
        case "bad_response":
            return KeyCheck(
                False,
                "not_an_api" if error.cause in ("not_json", "not_api") else "bad_response",
                f"{url} answered, but not like an OpenAI-compatible embeddings API; check "
                "embedding.base_url (it usually ends in /v1)",
                latency,
                facts,
            )
        case _:
            pass
    if error.cause == "not_json" and error.status != 404:
        return KeyCheck(False, "not_an_api", error.message, latency, facts)
    timeout_s = _timeout(settings.timeout_s)
    offered = await _listed_models(settings.base_url, api_key, network, timeout_s)
    if offered is not None and settings.model not in offered:
        return KeyCheck(
            False,
            "wrong_model",
            _wrong_model(settings.model, settings.base_url, offered, "embedding.model"),
            latency,
            _models(facts, offered),
        )
    if error.status == 404 and offered is None:
        return KeyCheck(
            False,
            "wrong_base_url",
            f"{url} does not exist (HTTP 404); check embedding.base_url (OpenAI-compatible "
            "services usually end in /v1)",
            latency,
            facts,
        )
    return KeyCheck(False, "bad_request", error.message, latency, facts)
