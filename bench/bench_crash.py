"""The long crash run: kill -9 the real CLI hundreds of times, at named points and at random
moments, and count the invariant violations (there must be none).

Uses the session and invariants of tests/hardening/crash_session.py (the CI test kills once per
named point). Each kill starts from a copy of the data directory as it was before its step, so
iterations are independent; two run at a time. Also measures what an unarmed crash point costs.
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.runner import Report

ITERATIONS = 500
QUICK_ITERATIONS = 30
RANDOM_SHARE = 0.3  # the rest are kills at named points
SEED = 20261130
PARALLEL = 2


def crash_iterations(report: Report, quick: bool) -> None:
    from index.crashpoints import CRASH_POINTS, UPGRADE_POINTS
    from tests.hardening.crash_session import CrashSession, Outcome, summarize
    from tests.servers.chat_server import ChatServer
    from tests.servers.embedding_server import EmbeddingServer

    report.title = "Crash safety: kill -9 at named points and random moments"
    n = QUICK_ITERATIONS if quick else ITERATIONS
    rng = random.Random(SEED)
    embedding = EmbeddingServer().start()
    chat = ChatServer().start()
    t0 = time.monotonic()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            session = CrashSession(Path(tmp), embedding, chat)
            session.prepare()
            # Every point first (its first reach), then a random (step, point, n-th reach)
            # among all the reference session reached, or a kill at a random moment.
            named = session.targets()
            busy = [i for i, s in enumerate(session.steps) if s.kind in ("import", "remove", "ask")]
            plan: list[tuple[int, str, int] | tuple[int, None, int]] = list(session.first_targets())
            while len(plan) < n:
                if rng.random() < RANDOM_SHARE:
                    plan.append((rng.choice(busy), None, rng.randrange(1 << 30)))
                else:
                    plan.append(rng.choice(named))
            plan = plan[:n]

            def one(item: tuple[int, str | None, int]) -> Outcome:
                step, point, nth = item
                try:
                    if point is None:
                        return session.kill_randomly(step, random.Random(nth))
                    return session.kill_at(step, point, nth)
                except Exception as exc:  # a check that could not run counts as a violation
                    name = session.steps[step].name
                    return Outcome(name, f"{point}#{nth}", False, [f"harness: {exc!r}"])

            with ThreadPoolExecutor(PARALLEL) as pool:
                outcomes = list(pool.map(one, plan))
            commands = session.commands_run
    finally:
        chat.stop()
        embedding.stop()
    seconds = time.monotonic() - t0

    summary = summarize(outcomes)
    for key, value in summary.items():
        report.figure(key, value)
    expected = set(CRASH_POINTS) - set(UPGRADE_POINTS)
    covered = {o.target.split("#")[0] for o in outcomes if o.killed and "#" in o.target}
    report.figure("points_registered", len(expected))
    report.figure("points_not_covered", sorted(expected - covered))
    report.figure("cli_commands_run", commands)
    report.figure("seconds", round(seconds, 1))
    report.figure(
        "seconds_per_iteration_p50", round(statistics.median(o.seconds for o in outcomes), 2)
    )
    report.target("invariant violations", summary["violations"], 0)
    report.target("named points not covered", len(expected - covered), 0)
    per_step = Counter(o.step for o in outcomes)
    per_step_killed = Counter(o.step for o in outcomes if o.killed)
    report.table(
        "Kills per step",
        ["step", "iterations", "killed", "random moments"],
        [
            [
                s,
                per_step[s],
                per_step_killed[s],
                sum(o.step == s and "#" not in o.target for o in outcomes),
            ]
            for s in per_step
        ],
    )
    violations = [[o.step, o.target, v] for o in outcomes for v in o.violations]
    if violations:
        report.table("Violations", ["step", "kill", "violation"], violations[:50])
    report.notes.append(
        "Session: import 4 small documents (Markdown cut to 6 kB, HTML, EPUB) through the "
        "loopback embedding server, add one, remove one (GC), ask through the loopback chat "
        "server with full traces, roll back the active snapshot, import a batch where every "
        "file fails, make/freeze/promote a prompt bundle. A kill that lands after its step "
        "already finished (random moments) still gets its invariants checked and its resume."
    )
    report.notes.append(
        "Invariants after the kill: the active pointer reads; the active snapshot verifies its "
        "content hash, opens, searches (BM25 and HNSW), each document has all its blocks and "
        "the imported file's hash; it is the old snapshot or the complete new one; the trace "
        "store opens without being moved aside, passes integrity_check and every artifact row "
        "has its file; conversations and prompt bundles load; status works. After the resume: "
        "the exit code and documents equal the uninterrupted run's, journaled documents are "
        "present, no job is pending, no half build or trash is left, the killed process's "
        "traces are marked partial, the baseline bundle is the expected one."
    )


def point_overhead(report: Report, quick: bool) -> None:
    """What an unarmed crash_point costs, beside an empty function call."""
    from index.crashpoints import crash_point

    def empty(name: str) -> None:
        return None

    n = 200_000 if quick else 2_000_000
    rounds = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            crash_point("catalog.pointer:after-replace")
        t1 = time.perf_counter()
        for _ in range(n):
            empty("catalog.pointer:after-replace")
        t2 = time.perf_counter()
        rounds.append(((t1 - t0) / n * 1e9, (t2 - t1) / n * 1e9))
    point_ns = statistics.median(r[0] for r in rounds)
    empty_ns = statistics.median(r[1] for r in rounds)
    report.title = "Cost of an unarmed crash point"
    report.figure("crash_point_ns", round(point_ns, 1))
    report.figure("empty_call_ns", round(empty_ns, 1))
    report.target("unarmed crash_point / empty call", point_ns / empty_ns, 1.5)
    report.notes.append(
        "A snapshot build reaches about 30 points and an fsync costs milliseconds, so the "
        "points add well under a microsecond per build."
    )
