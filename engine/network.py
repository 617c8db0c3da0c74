"""What every HTTP client of ours shares: TLS trust, reading Retry-After, and naming what lies
under a failed connection or an unusable reply (a ProviderCause for the person's sentence).

With no CA bundle, the operating system's trust store (through truststore where installed:
on Windows it holds the roots a company installs for its proxy); with one, that file alone.
"""

from __future__ import annotations

import email.utils
import socket
import ssl
import time
from collections.abc import Iterator

import httpx
import msgspec

from engine.errors import CaBundleError, ProviderCause

MAX_RETRY_AFTER_S = 30.0  # a longer Retry-After is shortened: callers retry once at most


def ssl_context(ca_bundle: str | None) -> ssl.SSLContext:
    if not ca_bundle:
        try:
            import truststore
        except ImportError:
            return ssl.create_default_context()
        return truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        return ssl.create_default_context(cafile=ca_bundle)
    except (OSError, ssl.SSLError) as exc:
        raise CaBundleError(
            f"the CA bundle {ca_bundle!r} cannot be used ({exc}); fix network.ca_bundle in the "
            "settings or clear it to use the system certificates"
        ) from None


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP date), capped."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    if seconds != seconds:  # NaN
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_S)


def error_chain(exc: BaseException) -> Iterator[BaseException]:
    """`exc` and what caused it, depth first (the async backends wrap OS errors differently)."""
    seen: set[int] = set()
    stack = [exc]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        if isinstance(current, BaseExceptionGroup):
            stack.extend(reversed(current.exceptions))
        for linked in (current.__context__, current.__cause__):
            if linked is not None:
                stack.append(linked)


def transport_cause(exc: BaseException) -> ProviderCause:
    """What a transport error was, as far as the chain of causes tells: a TLS handshake or
    certificate failure, a proxy failure, a host name with no address, a refused connection."""
    chain = list(error_chain(exc))
    text = " ".join(str(c) for c in chain).casefold()
    if any(isinstance(c, ssl.SSLError) for c in chain) or "certificate" in text:
        return "tls"
    if any(isinstance(c, httpx.ProxyError) for c in chain):
        return "proxy"
    if any(isinstance(c, socket.gaierror) for c in chain) or "name or service not known" in text:
        return "dns"
    if any(isinstance(c, ConnectionRefusedError) for c in chain) or "refused" in text:
        return "refused"
    return ""


def is_json(body: bytes) -> bool:
    """Whether `body` is JSON at all (a web page, plain text or nothing is not)."""
    try:
        msgspec.json.decode(body)
    except msgspec.DecodeError:
        return False
    return True
