"""What every HTTP client of ours shares: TLS trust and reading Retry-After.

With no CA bundle, the operating system's trust store (through truststore where installed:
on Windows it holds the roots a company installs for its proxy); with one, that file alone.
"""

from __future__ import annotations

import email.utils
import ssl
import time

from engine.errors import CaBundleError

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
