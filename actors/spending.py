"""What chat requests have cost today and this month, and the caps that refuse new requests.

A small append-only ledger, HOME/spending/YYYY-MM.jsonl, gets one line per request that cost
something, written when the request ends (also when it was stopped); the totals are sums over
it in the configured price currency, by the local calendar. Caps are checked once per request,
before any model call; a request already running is never cut off by them. Trace retention
never touches the ledger, so the totals do not shrink when old traces are removed.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from actors.errors import SpendingCapReached
from engine.config import ChatSettings

if TYPE_CHECKING:
    from actors.app import App

LEDGER_DIR = "spending"
LEDGER_FORMAT = 1

Clock = Callable[[], dt.datetime]


def local_now() -> dt.datetime:
    return dt.datetime.now().astimezone()


class SpendEntry(msgspec.Struct, frozen=True, kw_only=True):
    format_version: int = LEDGER_FORMAT
    at: str  # local time with its UTC offset, ISO-8601
    day: str  # YYYY-MM-DD in local time, the day the cost counts for
    request_id: str
    cost: float
    currency: str


class SpendingTotals(msgspec.Struct, frozen=True, kw_only=True):
    day: str  # YYYY-MM-DD
    month: str  # YYYY-MM
    spent_today: float
    spent_this_month: float
    currency: str
    daily_cap: float  # 0 = no cap
    monthly_cap: float
    other_currencies: tuple[str, ...] = ()  # entries in another currency, not in the sums


_entry_decoder = msgspec.json.Decoder(SpendEntry)
_encode = msgspec.json.Encoder().encode


class SpendingLedger:
    """The ledger files under `root` (HOME/spending). Small file operations; call from a
    thread. Appends are one write of one line, so two processes can share it."""

    def __init__(self, root: Path, clock: Clock = local_now) -> None:
        self.root = root
        self.clock = clock

    def record(self, request_id: str, cost: float, currency: str) -> None:
        if cost <= 0:
            return
        now = self.clock()
        entry = SpendEntry(
            at=now.isoformat(timespec="seconds"),
            day=now.date().isoformat(),
            request_id=request_id,
            cost=cost,
            currency=currency,
        )
        self.root.mkdir(parents=True, exist_ok=True)
        line = _encode(entry) + b"\n"
        fd = os.open(self._file(now), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)

    def totals(self, currency: str) -> tuple[str, str, float, float, tuple[str, ...]]:
        """(day, month, spent today, spent this month, other currencies seen this month)."""
        now = self.clock()
        day, month = now.date().isoformat(), now.strftime("%Y-%m")
        today = month_total = 0.0
        others: set[str] = set()
        for entry in self._entries(self._file(now)):
            if entry.currency != currency:
                others.add(entry.currency)
                continue
            month_total += entry.cost
            if entry.day == day:
                today += entry.cost
        return day, month, today, month_total, tuple(sorted(others))

    def _file(self, now: dt.datetime) -> Path:
        return self.root / f"{now.strftime('%Y-%m')}.jsonl"

    @staticmethod
    def _entries(path: Path) -> list[SpendEntry]:
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return []
        out = []
        for line in raw.splitlines():
            try:
                out.append(_entry_decoder.decode(line))
            except (msgspec.DecodeError, msgspec.ValidationError):
                continue  # a line cut short by a crash costs that one request's figure
        return out


class Spending:
    """The ledger and the caps of the current settings: `admit()` before a request,
    `record()` when it ends."""

    def __init__(self, ledger: SpendingLedger, chat: ChatSettings) -> None:
        self.ledger = ledger
        self.chat = chat

    def totals(self) -> SpendingTotals:
        currency = self.chat.price.currency
        day, month, today, this_month, others = self.ledger.totals(currency)
        return SpendingTotals(
            day=day,
            month=month,
            spent_today=today,
            spent_this_month=this_month,
            currency=currency,
            daily_cap=self.chat.daily_cap,
            monthly_cap=self.chat.monthly_cap,
            other_currencies=others,
        )

    def admit(self) -> SpendingTotals:
        """The totals, or SpendingCapReached when a cap is reached (spent ≥ cap)."""
        totals = self.totals()
        if totals.daily_cap and totals.spent_today >= totals.daily_cap:
            raise SpendingCapReached("day", totals.spent_today, totals.daily_cap, totals.currency)
        if totals.monthly_cap and totals.spent_this_month >= totals.monthly_cap:
            raise SpendingCapReached(
                "month", totals.spent_this_month, totals.monthly_cap, totals.currency
            )
        return totals

    def record(self, request_id: str, cost: float, currency: str) -> None:
        self.ledger.record(request_id, cost, currency)


def spending_for(app: App) -> Spending:
    """The spending of the app's data directory under its current settings."""
    return Spending(SpendingLedger(app.data.root / LEDGER_DIR), app.config.chat)
