"""How a chat service's refusal reads: the ChatError for a non-200 answer, the vendor's words.

Every failure of a chat call leaves as a ChatError (engine/errors.py) with a stable code, a
sentence for a person and a `retryable` flag. It never holds the API key: vendor text is redacted
before it is quoted, and the wording of a refused key is never quoted at all (some vendors echo
the key back).
"""

from __future__ import annotations

import msgspec

from engine import redaction
from engine.errors import ChatError, provider_code_for_status
from engine.network import is_json, parse_retry_after

_VENDOR_TEXT_MAX = 300


def redact(text: str, secret: str) -> str:
    """`text` without `secret`, any key this process knows, or anything key-shaped."""
    return redaction.redact(text, secret)


class _ErrorDetail(msgspec.Struct):
    message: str | None = None
    type: str | None = None
    code: str | int | None = None


class _ErrorBody(msgspec.Struct):
    error: _ErrorDetail | str | None = None
    message: str | None = None


_decode_error = msgspec.json.Decoder(_ErrorBody).decode


def vendor_text(body: bytes, secret: str) -> str:
    """The vendor's error message from an OpenAI-style error body (or the raw text), redacted,
    on one line and at most 300 characters."""
    try:
        parsed = _decode_error(body)
    except msgspec.DecodeError:
        text = body.decode("utf-8", errors="replace")
    else:
        if isinstance(parsed.error, _ErrorDetail):
            text = parsed.error.message or str(parsed.error.code or parsed.error.type or "")
        else:
            text = parsed.error or parsed.message or ""
    text = " ".join(redact(text, secret).split())
    if len(text) > _VENDOR_TEXT_MAX:
        text = text[: _VENDOR_TEXT_MAX - 1] + "…"
    return text


class StatusContext(msgspec.Struct, frozen=True):
    """What an HTTP error message needs to say where the request went (never the key)."""

    url: str
    base_url: str
    host: str
    model: str
    deepseek: bool


def error_for_status(
    status: int, body: bytes, retry_after: str | None, ctx: StatusContext, secret: str
) -> ChatError:
    """The ChatError for a non-200 answer of POST {base_url}/chat/completions."""
    where = "DeepSeek" if ctx.deepseek else f"the chat service at {ctx.host}"
    said = vendor_text(body, secret)
    quoted = f": {said}" if said else ""
    code = provider_code_for_status(status)
    page = bool(body.strip()) and not is_json(body)
    if page and code in ("unauthorized", "bad_request"):
        # A web page, not an API's JSON error: the address is wrong, whatever the status says
        # (a site's 403 is not a refused key).
        return ChatError(
            "bad_request",
            f"POST {ctx.url} was answered with a web page (HTTP {status}), not by a chat API; "
            f"check chat.base_url ({ctx.base_url}): DeepSeek's base URL is "
            "https://api.deepseek.com, other OpenAI-compatible services usually end in /v1",
            status=status,
            cause="not_json",
        )
    if code == "unauthorized":
        key = "the DeepSeek key" if ctx.deepseek else "the chat API key"
        # The vendor's wording is left out of the message: some echo part of the key back.
        return ChatError(
            "unauthorized",
            f"{where} refused {key} (HTTP {status}); check it with `citewise keys test` and "
            "set it again in Settings if it is wrong or revoked",
            status=status,
        )
    if code == "no_balance":
        top_up = "at platform.deepseek.com" if ctx.deepseek else "with the vendor"
        return ChatError(
            "no_balance",
            f"{where} says the account has no balance left (HTTP 402{quoted}); top up the "
            f"account {top_up}, then ask again",
            status=status,
            vendor_message=said,
        )
    if code == "rate_limited":
        return ChatError(
            "rate_limited",
            f"{where} is limiting the request rate (HTTP 429{quoted}); wait a moment and ask again",
            retry_after=parse_retry_after(retry_after),
            status=status,
            vendor_message=said,
        )
    if code == "server_error":
        return ChatError(
            "server_error",
            f"{where} had an internal error or is overloaded (HTTP {status}{quoted}); this is "
            "usually temporary: try again in a moment",
            retry_after=parse_retry_after(retry_after),
            status=status,
            vendor_message=said,
        )
    return ChatError(
        "bad_request",
        f"POST {ctx.url} was rejected (HTTP {status}{quoted}); check chat.base_url "
        f"({ctx.base_url}) and chat.model ({ctx.model!r}): DeepSeek's base URL is "
        "https://api.deepseek.com, other OpenAI-compatible services usually end in /v1",
        status=status,
        vendor_message=said,
    )
