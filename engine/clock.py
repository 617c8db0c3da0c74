"""The one clock: `Clock` is the interface code that stamps or ages things takes, and
`utc_timestamp` the one way a moment is written down (ISO 8601, seconds, `Z`)."""

from __future__ import annotations

import datetime as dt
from typing import Protocol


class Clock(Protocol):
    def now(self) -> dt.datetime:
        """The current moment, timezone-aware (UTC)."""
        ...


class SystemClock:
    def now(self) -> dt.datetime:
        return dt.datetime.now(dt.UTC)


SYSTEM_CLOCK: Clock = SystemClock()


def utc_timestamp(moment: dt.datetime | None = None) -> str:
    """`2026-12-01T21:24:50Z`: the moment (now when omitted) in UTC, to the second."""
    moment = (moment or dt.datetime.now(dt.UTC)).astimezone(dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_timestamp(text: str) -> dt.datetime:
    """The moment a `utc_timestamp` (or any ISO 8601 text with an offset or `Z`) names."""
    moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)
