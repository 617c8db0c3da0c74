"""kill -9 the real CLI at every named crash point and at random moments; the data survives.

One reference session (import, add, remove with GC, ask with full traces, roll back, a batch
in which every file fails, a prompt bundle made, frozen and promoted) records which points each
step reaches. Then each point is killed at once, in a copy of the data directory as it was
before its step; after the kill the invariants of tests/hardening/crash_session.py must hold,
and so must they after the step is resumed. bench/bench_crash.py runs the long version.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from index.crashpoints import CRASH_POINTS, UPGRADE_POINTS
from tests.corpus import REPO
from tests.hardening.crash_session import CrashSession, Outcome
from tests.servers.chat_server import ChatServer
from tests.servers.embedding_server import EmbeddingServer

pytestmark = pytest.mark.slow  # tens of seconds: started first (tests/conftest.py)

RANDOM_KILLS = 4
PARALLEL = 2  # kills run in separate copies of the data directory; two at a time


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CrashSession]:
    embedding = EmbeddingServer().start()
    chat = ChatServer().start()
    try:
        crash = CrashSession(tmp_path_factory.mktemp("crash"), embedding, chat)
        crash.prepare()
        yield crash
    finally:
        chat.stop()
        embedding.stop()


def _report(outcomes: list[Outcome]) -> str:
    return "\n".join(f"{o.step} {o.target}: {v}" for o in outcomes for v in o.violations)


def _reach_three_times(env: dict[str, str], name: str) -> subprocess.CompletedProcess[str]:
    code = (
        "from engine.crashpoints import crash_point\n"
        "for i in range(3):\n"
        "    print(i, flush=True)\n"
        f"    crash_point({name!r})\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_point_kills_at_its_nth_reach_and_logs_every_reach(tmp_path: Path) -> None:
    log = tmp_path / "reached.log"
    env = {"CITEWISE_CRASH_AT": "snapshot.committed#2", "CITEWISE_CRASH_LOG": str(log)}
    done = _reach_three_times(env, "snapshot.committed")
    assert done.returncode == -signal.SIGKILL
    assert done.stdout.split() == ["0", "1"]
    assert log.read_text().split() == ["snapshot.committed"] * 2
    assert _reach_three_times({}, "snapshot.committed").stdout.split() == ["0", "1", "2"]


def test_an_armed_run_refuses_a_point_name_nobody_registered(tmp_path: Path) -> None:
    done = _reach_three_times({"CITEWISE_CRASH_LOG": str(tmp_path / "log")}, "snapshot.comitted")
    assert done.returncode == 1 and "neither in CRASH_POINTS nor registered" in done.stderr


def test_a_normal_session_reaches_every_named_point(session: CrashSession) -> None:
    # `citewise upgrade` has its own crash test (tests/upgrade/test_upgrade_crash.py).
    expected = set(CRASH_POINTS) - set(UPGRADE_POINTS)
    assert expected - set(session.reached_points()) == set()


def test_a_kill_at_every_named_point_loses_nothing_and_resumes(session: CrashSession) -> None:
    targets = session.first_targets()
    with ThreadPoolExecutor(PARALLEL) as pool:
        outcomes = list(pool.map(lambda t: session.kill_at(*t), targets))
    assert len(outcomes) >= 20
    assert not _report(outcomes), _report(outcomes)
    not_killed = [o.target for o in outcomes if not o.killed]
    assert not not_killed, f"these points were not reached when killed at: {not_killed}"
    assert {o.target.split("#")[0] for o in outcomes} >= set(CRASH_POINTS) - set(UPGRADE_POINTS)


def test_kills_at_random_moments_lose_nothing_and_resume(session: CrashSession) -> None:
    rng = random.Random(20261130)
    busy = [i for i, s in enumerate(session.steps) if s.kind in ("import", "remove", "ask")]
    outcomes = [session.kill_randomly(rng.choice(busy), rng) for _ in range(RANDOM_KILLS)]
    assert not _report(outcomes), _report(outcomes)
