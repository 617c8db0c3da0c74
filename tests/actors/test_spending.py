"""Spending: the ledger's daily and monthly totals, caps validated like every setting, and
`citewise ask` refused at a reached cap before any model call (loopback chat server)."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from actors.spending import LEDGER_DIR, Spending, SpendingCapReached, SpendingLedger
from engine.config import ChatSettings, Price, load_config, parse_config
from engine.errors import ConfigError
from tests.corpus import REPO, make_app, run_import
from tests.servers.chat_server import ChatServer, Text, Usage

EVENTS = "# Node events\n\n## Emitters\n\nAn EventEmitter calls every listener synchronously.\n"
TZ = dt.timezone(dt.timedelta(hours=8))


class Clock:
    def __init__(self, now: dt.datetime) -> None:
        self.now = now

    def __call__(self) -> dt.datetime:
        return self.now


def test_totals_count_today_and_this_month_in_the_local_calendar(tmp_path: Path) -> None:
    clock = Clock(dt.datetime(2026, 10, 31, 23, 0, tzinfo=TZ))
    ledger = SpendingLedger(tmp_path, clock)
    ledger.record("r1", 0.5, "USD")  # last month
    clock.now = dt.datetime(2026, 11, 29, 23, 59, tzinfo=TZ)
    ledger.record("r2", 0.25, "USD")  # yesterday
    ledger.record("r3", 9.0, "CNY")  # another currency
    clock.now = dt.datetime(2026, 11, 30, 0, 1, tzinfo=TZ)
    ledger.record("r4", 0.125, "USD")
    ledger.record("r5", 0.0, "USD")  # free: not written
    with (tmp_path / "2026-11.jsonl").open("ab") as f:
        f.write(b'{"format_version": 1, "at": "2026-11-30T0')  # cut short by a crash

    chat = ChatSettings(daily_cap=1.0, monthly_cap=0.375, price=Price(currency="USD"))
    totals = Spending(ledger, chat).totals()

    assert (totals.day, totals.month) == ("2026-11-30", "2026-11")
    assert (totals.spent_today, totals.spent_this_month) == (0.125, 0.375)
    assert totals.other_currencies == ("CNY",)
    with pytest.raises(SpendingCapReached, match="monthly spending cap") as caught:
        Spending(ledger, chat).admit()
    assert (caught.value.period, caught.value.spent, caught.value.cap) == ("month", 0.375, 0.375)
    clock.now = dt.datetime(2026, 12, 1, 8, 0, tzinfo=TZ)  # a new month starts from zero
    assert Spending(ledger, chat).admit().spent_this_month == 0.0


def test_caps_are_validated_and_overridable_from_the_environment(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"chat\.daily_cap = -1 .*>= 0"):
        parse_config({"chat": {"daily_cap": -1}}, {})
    config = tmp_path / "config.toml"
    config.write_text("[chat]\nmonthly_cap = 5.0\n", encoding="utf-8")
    loaded = load_config(config, {"CITEWISE_CHAT_DAILY_CAP": "0.5"})
    assert (loaded.chat.daily_cap, loaded.chat.monthly_cap) == (0.5, 5.0)
    with pytest.raises(ConfigError, match="CITEWISE_CHAT_MONTHLY_CAP"):
        load_config(config, {"CITEWISE_CHAT_MONTHLY_CAP": "lots"})


@pytest.fixture(scope="module")
def ask_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("spending")
    docs = root / "docs"
    docs.mkdir()
    (docs / "events.md").write_text(EVENTS, encoding="utf-8")
    assert run_import(make_app(root / "home"), [docs]).status == "ready"
    return root / "home"


def ask(
    home: Path, server: ChatServer, *extra_env: tuple[str, str]
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CITEWISE_")}
    env.update(
        CITEWISE_HOME=str(home),
        CITEWISE_CHAT_BASE_URL=server.url,
        CITEWISE_DEEPSEEK_API_KEY="test",
        PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring",
        **dict(extra_env),
    )
    return subprocess.run(
        [sys.executable, "-m", "cli", "ask", "How do listeners run?", "--json"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_request_is_recorded_and_the_next_one_refused_at_the_cap(
    tmp_path: Path, ask_home: Path, chat_server: ChatServer
) -> None:
    home = tmp_path / "home"
    shutil.copytree(ask_home, home)
    (home / "config.toml").write_text(  # dear tokens, so small usage costs visibly
        "[chat.price]\ninput_cache_miss = 280.0\noutput = 420.0\n", encoding="utf-8"
    )
    usage = Usage(prompt_tokens=1000, completion_tokens=500, cache_hit=0)
    chat_server.script(Text("Thought: known.\nAction: Finish[They run in order.]", usage=usage))
    cap = ("CITEWISE_CHAT_DAILY_CAP", "0.4")

    first = ask(home, chat_server, cap)

    assert first.returncode == 0, first.stderr
    cost = json.loads(first.stdout)["cost"]
    assert cost == pytest.approx(0.28 + 0.21)  # 1000 input tokens (miss), 500 output
    lines = [json.loads(x) for x in next((home / LEDGER_DIR).iterdir()).read_text().splitlines()]
    assert [(e["cost"], e["currency"]) for e in lines] == [(pytest.approx(cost), "USD")]
    assert lines[0]["request_id"] == json.loads(first.stdout)["request_id"]

    second = ask(home, chat_server, cap)

    assert second.returncode == 1 and second.stdout == ""
    assert "daily spending cap is reached" in second.stderr and "0.4 USD" in second.stderr
    assert len(chat_server.requests) == 1  # refused before any model call
    no_daily = ("CITEWISE_CHAT_DAILY_CAP", "0")
    raised = ask(home, chat_server, no_daily, ("CITEWISE_CHAT_MONTHLY_CAP", "0.45"))
    assert raised.returncode == 1 and "monthly spending cap is reached" in raised.stderr
    assert len(chat_server.requests) == 1
