"""The provider fault matrix at full length: every fault of tests/hardening/fault_matrix.py on
every surface (a question's answer turn, an import's embedding batch, a query's embedding),
once and persistently, against the loopback servers; a table of fault × surface → status,
retries and verdict, and the totals (faults injected, violations).

Needs a source checkout (the scripted servers live in tests/servers).
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from bench.runner import Report


def faults(report: Report, quick: bool) -> None:
    from tests.hardening import fault_matrix as fm
    from tests.servers.chat_server import ChatServer
    from tests.servers.embedding_server import EmbeddingServer

    report.title = "Provider faults: status, retries and answers under injected faults"
    os.environ["CITEWISE_DEEPSEEK_API_KEY"] = fm.CHAT_KEY
    os.environ["CITEWISE_EMBEDDING_API_KEY"] = fm.EMBEDDING_KEY
    verdicts: list[fm.Verdict] = []

    def modes(fault: fm.Fault) -> list[bool]:
        return [True, False] if fault.retryable else [True]

    with tempfile.TemporaryDirectory(prefix="citewise-faults-") as tmp:
        root = Path(tmp)
        library = fm.build_library(root / "library")
        n = 0

        def case_dir() -> Path:
            nonlocal n
            n += 1
            return root / f"case-{n}"

        def run(make: Callable[[], Awaitable[fm.Verdict]]) -> None:
            verdict = anyio.run(make, backend="trio")
            verdicts.append(verdict)

        for fault in fm.CHAT_FAULTS:
            for persistent in modes(fault):
                chat = ChatServer().start()
                try:
                    home = Path(shutil.copytree(library, case_dir() / "home"))
                    run(functools.partial(fm.chat_case, home, chat, fault, persistent=persistent))
                finally:
                    chat.stop()
        for fault in fm.EMBEDDING_FAULTS:
            for persistent in modes(fault):
                emb = EmbeddingServer().start()
                try:
                    where = case_dir()
                    run(functools.partial(fm.import_case, where, emb, fault, persistent=persistent))
                finally:
                    emb.stop()
                emb, chat = EmbeddingServer().start(), ChatServer().start()
                try:
                    where = case_dir()
                    run(
                        functools.partial(
                            fm.query_case, where, emb, chat, fault, persistent=persistent
                        )
                    )
                finally:
                    emb.stop()
                    chat.stop()

    rows = [
        [
            v.fault,
            v.surface,
            v.status,
            v.code,
            v.hits,
            v.retries,
            "ok" if v.ok else "VIOLATION: " + "; ".join(v.problems),
        ]
        for v in verdicts
    ]
    report.table(
        "Fault × surface",
        ["fault", "surface", "status", "code", "server hits", "retries", "verdict"],
        rows,
    )
    for row in rows:
        print(" | ".join(str(c) for c in row))
    injected = sum(v.faults_injected for v in verdicts)
    violations = sum(len(v.problems) for v in verdicts)
    report.figure("cases", len(verdicts))
    report.figure("faults_injected", injected)
    report.figure("chat_faults", len(fm.CHAT_FAULTS))
    report.figure("embedding_faults", len(fm.EMBEDDING_FAULTS))
    report.figure("max_server_hits_per_step", max(v.hits for v in verdicts))
    report.figure("violations", violations)
    report.target("violations", violations, 0)
    report.target("server hits for one step (one retry at most)", max(v.hits for v in verdicts), 2)
    report.notes.append(
        "Each case runs the real app (actors.asking.ask or App.import_paths) against fresh "
        "loopback servers; hits are counted by the servers. A persistent fault is injected on "
        "every attempt, a one-off fault once and then the server answers normally."
    )
