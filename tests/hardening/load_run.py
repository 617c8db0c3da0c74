"""Load: many questions at once through the UI's actors while an import runs, on one event loop.

The scripted chat and embedding servers run in a child process (`python -m
tests.hardening.load_run serve`), so their threads do not share this process's GIL and the
loop lag measured here is the app's own. A sampler task sleeping 10 ms records how late it
wakes (the loop lag); peak memory is VmHWM from /proc/self/status.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from actors.app import App
from actors.asking import AskResult
from actors.conversations import ConversationStore
from actors.trace_setup import open_store
from engine.trace.model import trace_id_for
from tests.corpus import DOCS, REPO, make_app

SAMPLE_S = 0.010
DIMENSIONS = 8


@dataclass
class LoadResult:
    questions: int
    seconds: float
    termination_reasons: dict[str, int]
    without_reason: int
    traces_missing: list[str]
    traces_partial: list[str]
    turns_missing: list[str]
    lag_ms: list[float]
    busy_ms: list[float]  # CPU the loop's thread spent during each sample's 10 ms sleep
    import_status: str | None
    import_documents: int
    rss_before_mb: float
    rss_peak_mb: float
    errors: list[str] = field(default_factory=list)

    def lag_p(self, q: float) -> float:
        return _quantile(self.lag_ms, q)

    def busy_p(self, q: float) -> float:
        return _quantile(self.busy_ms, q)

    def figures(self) -> dict[str, Any]:
        return {
            "questions": self.questions,
            "seconds": round(self.seconds, 2),
            "termination_reasons": self.termination_reasons,
            "requests_without_reason": self.without_reason,
            "traces_missing": len(self.traces_missing),
            "traces_partial": len(self.traces_partial),
            "conversation_turns_missing": len(self.turns_missing),
            "loop_lag_ms_p50": round(statistics.median(self.lag_ms), 2) if self.lag_ms else 0,
            "loop_lag_ms_p99": round(self.lag_p(0.99), 2),
            "loop_lag_ms_max": round(max(self.lag_ms, default=0.0), 2),
            "loop_thread_cpu_ms_p99": round(self.busy_p(0.99), 2),
            "lag_samples": len(self.lag_ms),
            "import_status": self.import_status,
            "import_documents": self.import_documents,
            "rss_before_mb": round(self.rss_before_mb, 1),
            "rss_peak_mb": round(self.rss_peak_mb, 1),
            "errors": self.errors,
        }


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def proc_status_mb(field_name: str) -> float:
    """A memory figure (VmRSS, VmHWM) of this process from /proc, in MiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field_name + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


# -- the servers, in a child process -------------------------------------------------------------
def _serve() -> None:
    from tests.servers.chat_server import ChatServer, Reply, Text
    from tests.servers.embedding_server import Delay, EmbeddingServer

    def reply(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]["content"]
        if last.startswith("<question>"):
            return Text(
                'Thought: search.\nAction: search_blocks[{"query": "event listeners order"}]',
                chunk_delay_s=0.005,
            )
        return Text(
            "Thought: done.\nAction: Finish[Listeners are called synchronously, in order.]",
            chunk_chars=6,
            chunk_delay_s=0.01,
        )

    chat = ChatServer().start()
    chat.script(*[reply] * 1_000_000)
    embedding = EmbeddingServer(DIMENSIONS).start()
    embedding.script(*[Delay(0.05)] * 1_000_000)  # an import that lasts while questions run
    print(json.dumps({"chat": chat.url, "embedding": embedding.url}), flush=True)
    try:
        sys.stdin.read()  # until the parent closes the pipe
    finally:
        chat.stop()
        embedding.stop()


@contextmanager
def servers() -> Iterator[dict[str, str]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.hardening.load_run", "serve"],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        urls: dict[str, str] = json.loads(proc.stdout.readline())
        yield urls
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# -- the run ---------------------------------------------------------------------------------------
def load_app(home: Path, urls: dict[str, str]) -> App:
    os.environ.setdefault("CITEWISE_EMBEDDING_API_KEY", "sk-load-embedding")
    os.environ.setdefault("CITEWISE_DEEPSEEK_API_KEY", "sk-load-chat")
    return make_app(
        home,
        embedding={
            "provider": "openai_compatible",
            "base_url": urls["embedding"],
            "model": "load-embedding",
            "dimensions": DIMENSIONS,
            "batch_size": 16,
        },
        chat={"base_url": urls["chat"]},
        trace={"mode": "full"},
    )


def corpus(root: Path, *, more_docs: int) -> tuple[Path, Path]:
    """(a small first batch, the batch imported during the load)."""
    first, during = root / "first", root / "during"
    first.mkdir(parents=True)
    during.mkdir(parents=True)
    shutil.copy(DOCS / "nodejs-md" / "events.md", first)
    pool = sorted((DOCS / "python-faq").glob("*.html")) + sorted(
        p for p in (DOCS / "nodejs-md").glob("*.md") if p.name != "events.md"
    )
    for path in pool[:more_docs]:
        shutil.copy(path, during)
    return first, during


async def run_load(
    home: Path, urls: dict[str, str], *, questions: int, more_docs: int
) -> LoadResult:
    first, during = corpus(home.parent / "load-docs", more_docs=more_docs)
    app = load_app(home, urls)
    errors: list[str] = []
    async with app.running():  # the app's one trace writer and its import task, as in the UI
        await app.warm()
        await app.import_paths([first])
        warm = await app.ask("warm-up: what is an event emitter?").wait()
        assert warm is not None  # the first question pays one-time imports; it is not measured
        lag: list[float] = []
        busy: list[float] = []
        results: dict[int, AskResult | None] = {}
        stop = anyio.Event()

        async def sample() -> None:
            while not stop.is_set():
                t0, cpu0 = time.perf_counter(), time.thread_time()
                await anyio.sleep(SAMPLE_S)
                lag.append((time.perf_counter() - t0 - SAMPLE_S) * 1000)
                busy.append((time.thread_time() - cpu0) * 1000)

        async def one(i: int) -> None:
            run = app.ask(f"In what order are event listeners called? ({i})")
            try:
                results[i] = await run.wait()
            except Exception as exc:  # counted: a question that ended without a result
                errors.append(f"question {i}: {type(exc).__name__}: {exc}")
                results[i] = None

        rss_before = proc_status_mb("VmRSS")
        t0 = time.perf_counter()
        job = app.start_import([during])
        async with anyio.create_task_group() as tg:
            tg.start_soon(sample)
            async with anyio.create_task_group() as work:
                work.start_soon(job.finished.wait)
                for i in range(questions):
                    work.start_soon(one, i)
            stop.set()
        seconds = time.perf_counter() - t0
        if job.error:
            errors.append(f"import: {job.error}")
        assert app.trace_writer is not None
        await app.trace_writer.flush()  # every trace of the run stored before it is read
        return _outcome(
            app, questions, seconds, results, (lag, busy), job.result, rss_before, errors
        )


def _outcome(
    app: App,
    questions: int,
    seconds: float,
    results: dict[int, AskResult | None],
    lag: tuple[list[float], list[float]],
    imported: Any,
    rss_before: float,
    errors: list[str],
) -> LoadResult:
    reasons: dict[str, int] = {}
    traces_missing, traces_partial, turns_missing = [], [], []
    store = open_store(app)
    conversations = ConversationStore(app.data, app.resolve_collection(None))
    try:
        known = {t.trace_id: t for t in store.list_traces(limit=10_000, kind=None)}
        for result in results.values():
            if result is None:
                continue
            f = result.finished
            reasons[f.termination_reason] = reasons.get(f.termination_reason, 0) + 1
            trace = known.get(trace_id_for(f.request_id))
            if trace is None:
                traces_missing.append(f.request_id)
            elif trace.partial or trace.status == "running":
                traces_partial.append(f.request_id)
            turns = conversations.load(result.conversation_id)
            if not any(t.request_id == f.request_id for t in turns):
                turns_missing.append(f.request_id)
    finally:
        store.close()
    return LoadResult(
        questions=questions,
        seconds=seconds,
        termination_reasons=reasons,
        without_reason=sum(1 for r in results.values() if r is None) + questions - len(results),
        traces_missing=traces_missing,
        traces_partial=traces_partial,
        turns_missing=turns_missing,
        lag_ms=lag[0],
        busy_ms=lag[1],
        import_status=None if imported is None else imported.status,
        import_documents=0 if imported is None else imported.stats.documents_succeeded,
        rss_before_mb=rss_before,
        rss_peak_mb=proc_status_mb("VmHWM"),
        errors=errors,
    )


if __name__ == "__main__":
    if sys.argv[1:] == ["serve"]:
        _serve()
