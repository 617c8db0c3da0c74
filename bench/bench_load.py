"""Load: 20 concurrent questions through the UI's actors while an import runs.

Figures: every request's termination reason, traces and conversation turns lost, the event
loop's lag (a task sleeping 10 ms, how late it wakes) and peak RSS (VmHWM). The peer is the
same questions asked with no import running, in the same run.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import anyio

from bench.runner import Report

QUESTIONS = 20
BARE_SECONDS = 3.0


async def _bare_loop_lag() -> list[float]:
    """The sampler alone on an idle loop: how late a 10 ms sleep wakes on this machine now."""
    lag = []
    end = time.perf_counter() + BARE_SECONDS
    while time.perf_counter() < end:
        t0 = time.perf_counter()
        await anyio.sleep(0.010)
        lag.append((time.perf_counter() - t0 - 0.010) * 1000)
    return sorted(lag)


def concurrent_questions(report: Report, quick: bool) -> None:
    from tests.hardening.load_run import run_load, servers

    report.title = "Load: 20 questions at once while an import runs"
    more_docs = 4 if quick else 10
    with servers() as urls, tempfile.TemporaryDirectory() as tmp:
        bare = anyio.run(_bare_loop_lag, backend="asyncio")
        root = Path(tmp)
        loaded = anyio.run(
            lambda: run_load(root / "a" / "home", urls, questions=QUESTIONS, more_docs=more_docs),
            backend="asyncio",
        )
        quiet = anyio.run(
            lambda: run_load(root / "b" / "home", urls, questions=QUESTIONS, more_docs=0),
            backend="asyncio",
        )
    for key, value in loaded.figures().items():
        report.figure(key, value)
    report.figure("quiet_loop_lag_ms_p99", round(quiet.lag_p(0.99), 2))
    report.figure("bare_loop_lag_ms_p99", round(bare[int(0.99 * (len(bare) - 1))], 2))
    report.figure("quiet_seconds", round(quiet.seconds, 2))
    lost = (
        loaded.without_reason
        + len(loaded.traces_missing)
        + len(loaded.traces_partial)
        + len(loaded.turns_missing)
    )
    report.target("requests lost (no reason, trace or turn)", lost, 0)
    report.target("event loop lag p99 (ms) during the load", loaded.lag_p(0.99), 100)
    report.target(
        "peak RSS growth during the load (MiB)", loaded.rss_peak_mb - loaded.rss_before_mb, 300
    )
    report.notes.append(
        f"{QUESTIONS} questions start together on one asyncio loop through "
        "App.ask (as the ask page does), each a search_blocks turn and a streamed "
        "Finish from the scripted chat server; meanwhile the library's ImportJob imports "
        f"{more_docs} documents whose embedding requests each wait 50 ms. Servers run in a "
        "child process. Full trace mode."
    )
    report.notes.append(
        "loop_thread_cpu_ms_p99 is the CPU the loop's own thread used during a sample: the "
        "app's blocking work. The rest of a sample's lag is time the thread waited for the CPU "
        "or the GIL (worker threads: trace writers, searches, the import). bare_loop_lag is the "
        "sampler alone in the same process just before, the machine's own noise."
    )
    report.notes.append(
        "The quiet peer asks the same questions with an empty import, in the same run, so the "
        "lag the import adds can be read side by side."
    )
