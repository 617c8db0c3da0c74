"""The trace store on disk: round trips, listing filters, content-addressed artifacts, retention,
and a store left by a killed process or a damaged file still opening."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.trace import ArtifactUnavailable, Span, TraceNotFound, TraceStore, TraceStoreError
from engine.trace.model import (
    ArtifactPut,
    ArtifactRef,
    DropsAdd,
    ManifestPut,
    SpanPut,
    TraceHead,
    sha256_hex,
    span_id_for,
)
from engine.trace.store import DB_NAME, ORPHAN_GRACE_S, SCHEMA_VERSION
from tests.corpus import REPO

DAY = 86400.0


def tid(n: int) -> str:
    return f"{n:032x}"


def trace_ops(
    n: int,
    *,
    started: float,
    artifacts: tuple[bytes, ...] = (),
    status: str = "ok",
    cost: float = 0.0,
    termination: str = "finished",
    spans: int = 3,
) -> list[object]:
    trace_id = tid(n)
    refs = tuple(
        ArtifactRef(kind="answer", sha256=sha256_hex(a), size=len(a), stored=True)
        for a in artifacts
    )
    ops: list[object] = [
        TraceHead(
            trace_id=trace_id,
            started=started,
            ended=started + 1.5,
            question=f"question {n}",
            status=status,  # type: ignore[arg-type]
            termination_reason=termination,
            tokens=100 * n,
            cost=cost,
            manifest_hash="f" * 64,
            snapshot_id="s1",
            collection="default",
        ),
        ManifestPut(sha256="f" * 64, body=b'{"app_version":"0.1.0"}'),
    ]
    for i in range(spans):
        ops.append(
            SpanPut(
                span=Span(
                    trace_id=trace_id,
                    span_id=span_id_for(trace_id, f"s{i}"),
                    parent_id=None if i == 0 else span_id_for(trace_id, "s0"),
                    kind="request" if i == 0 else "turn",
                    name=f"span {i}",
                    start=started + i,
                    end=started + i + 0.5,
                    status="ok",
                    attributes={"gen_ai.usage.input_tokens": i},
                    artifacts=refs if i == 0 else (),
                )
            )
        )
    ops.extend(ArtifactPut(trace_id=trace_id, sha256=sha256_hex(a), data=a) for a in artifacts)
    return ops


def test_round_trip_of_a_trace_with_spans_manifest_and_artifacts(tmp_path: Path) -> None:
    now = time.time()
    with TraceStore(tmp_path / "traces") as store:
        store.apply(trace_ops(1, started=now, artifacts=(b"the answer",)))  # type: ignore[arg-type]
        record = store.get(tid(1))
        assert record.summary.question == "question 1"
        assert record.summary.status == "ok" and record.summary.termination_reason == "finished"
        assert record.summary.spans == 3 and record.summary.duration_ms == pytest.approx(1500)
        assert record.manifest == {"app_version": "0.1.0"}
        assert [s.name for s in record.spans] == ["span 0", "span 1", "span 2"]
        assert record.spans[1].parent_id == record.spans[0].span_id
        (ref,) = record.spans[0].artifacts
        assert store.read_artifact(ref.sha256) == b"the answer"
        assert store.resolve(tid(1)[:8]) == tid(1) == store.resolve(tid(1).upper())


def test_listing_filters_by_time_status_cost_and_termination(tmp_path: Path) -> None:
    now = time.time()
    with TraceStore(tmp_path / "traces") as store:
        store.apply(trace_ops(1, started=now - 3 * DAY, cost=0.5))  # type: ignore[arg-type]
        store.apply(
            trace_ops(2, started=now - 1 * DAY, status="error", termination="budget")  # type: ignore[arg-type]
        )
        store.apply(trace_ops(3, started=now, cost=0.01))  # type: ignore[arg-type]
        assert [s.trace_id for s in store.list_traces()] == [tid(3), tid(2), tid(1)]
        assert [s.trace_id for s in store.list_traces(status="error")] == [tid(2)]
        assert [s.trace_id for s in store.list_traces(termination_reason="budget")] == [tid(2)]
        assert [s.trace_id for s in store.list_traces(min_cost=0.1)] == [tid(1)]
        assert [s.trace_id for s in store.list_traces(since=now - 2 * DAY)] == [tid(3), tid(2)]
        assert [s.trace_id for s in store.list_traces(limit=1, offset=1)] == [tid(2)]
        assert store.list_traces(kind="ingest") == []
        plan = store._conn.execute(
            "EXPLAIN QUERY PLAN SELECT trace_id FROM traces WHERE status = 'ok' ORDER BY started"
        ).fetchall()
        assert "traces_by_status" in str(plan)


def test_listing_searches_question_words_caps_cost_and_sorts(tmp_path: Path) -> None:
    now = time.time()
    with TraceStore(tmp_path / "traces") as store:
        store.apply(trace_ops(1, started=now - 2, cost=0.5))  # type: ignore[arg-type]
        store.apply(trace_ops(2, started=now - 1, cost=0.01))  # type: ignore[arg-type]
        store.apply(trace_ops(13, started=now, cost=0.2))  # type: ignore[arg-type]
        ids = lambda **f: [s.trace_id for s in store.list_traces(**f)]  # noqa: E731
        assert ids(text="QUESTION 1") == [tid(13), tid(1)]  # every word, any case
        assert ids(text="question 13") == [tid(13)]
        assert ids(text="50%_") == []  # LIKE's wildcards are plain characters here
        assert ids(max_cost=0.2) == [tid(13), tid(2)]
        assert ids(order="cost") == [tid(1), tid(13), tid(2)]
        assert ids(order="oldest") == [tid(1), tid(2), tid(13)]
        assert ids(order="tokens")[0] == tid(13)


def test_drops_mark_a_trace_partial_even_when_its_rows_never_arrived(tmp_path: Path) -> None:
    with TraceStore(tmp_path / "traces") as store:
        store.apply([DropsAdd(trace_id=tid(7), count=3), DropsAdd(trace_id=tid(7), count=2)])
        summary = store.get(tid(7)).summary
        assert summary.partial and summary.dropped == 5 and summary.status == "running"


def test_artifacts_are_stored_once_and_checked_against_their_hash(tmp_path: Path) -> None:
    shared = b"a block of text both traces returned"
    with TraceStore(tmp_path / "traces") as store:
        store.apply(trace_ops(1, started=time.time(), artifacts=(shared,)))  # type: ignore[arg-type]
        store.apply(trace_ops(2, started=time.time(), artifacts=(shared,)))  # type: ignore[arg-type]
        files = [p for p in (tmp_path / "traces" / "artifacts").rglob("*") if p.is_file()]
        assert len(files) == 1
        files[0].write_bytes(b"tampered")
        with pytest.raises(ArtifactUnavailable, match="damaged"):
            store.read_artifact(sha256_hex(shared))
        with pytest.raises(ArtifactUnavailable, match="not in the store"):
            store.read_artifact("0" * 64)


def test_prefixes_must_name_one_trace(tmp_path: Path) -> None:
    with TraceStore(tmp_path / "traces") as store:
        store.apply(trace_ops(0x1A, started=time.time()) + trace_ops(0x1B, started=time.time()))  # type: ignore[arg-type]
        with pytest.raises(TraceNotFound, match="more than one"):
            store.resolve("0000")
        with pytest.raises(TraceNotFound, match="no trace"):
            store.resolve("ffff")
        with pytest.raises(TraceNotFound, match="not a trace id"):
            store.resolve("zz")


def test_retention_by_age_deletes_old_traces_and_their_unshared_artifacts(tmp_path: Path) -> None:
    now = time.time()
    shared, old_only, new_only = b"shared", b"only the old trace", b"only the new trace"
    with TraceStore(tmp_path / "traces") as store:
        store.apply(trace_ops(1, started=now - 40 * DAY, artifacts=(shared, old_only)))  # type: ignore[arg-type]
        store.apply(trace_ops(2, started=now - 1 * DAY, artifacts=(shared, new_only)))  # type: ignore[arg-type]
        report = store.prune(retention_days=30, max_bytes=10**9, now=now)
        assert report.traces_deleted == 1 and report.artifacts_deleted == 1
        assert [s.trace_id for s in store.list_traces()] == [tid(2)]
        assert store.read_artifact(sha256_hex(shared)) == shared
        assert store.read_artifact(sha256_hex(new_only)) == new_only
        with pytest.raises(ArtifactUnavailable):
            store.read_artifact(sha256_hex(old_only))
        assert not store.artifact_path(sha256_hex(old_only)).exists()
        assert store._conn.execute(
            "SELECT count(*) FROM spans WHERE trace_id = ?", (tid(1),)
        ).fetchone() == (0,)


def test_retention_by_size_keeps_the_newest_traces_that_fit(tmp_path: Path) -> None:
    now = time.time()
    with TraceStore(tmp_path / "traces") as store:
        for n in range(1, 21):
            blob = bytes([n]) * 50_000
            store.apply(trace_ops(n, started=now - (30 - n) * 60, artifacts=(blob,)))  # type: ignore[arg-type]
        before = store.size_bytes()
        assert before > 1_000_000
        report = store.prune(retention_days=0, max_bytes=400_000, now=now)
        assert report.bytes_after <= 400_000 < report.bytes_before
        kept = sorted(int(s.trace_id, 16) for s in store.list_traces(limit=100))
        assert kept and kept == list(range(21 - len(kept), 21))  # the newest survive
        on_disk = [p for p in store.artifacts.rglob("*") if p.is_file()]
        assert len(on_disk) == len(kept)


def test_orphan_artifact_files_are_swept_only_once_old(tmp_path: Path) -> None:
    with TraceStore(tmp_path / "traces") as store:
        young = store.artifact_path("a" * 64)
        old = store.artifact_path("b" * 64)
        for p in (young, old):
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(b"never committed")
        past = time.time() - ORPHAN_GRACE_S - 10
        os.utime(old, (past, past))
        store.prune(retention_days=0, max_bytes=10**9)
        assert young.exists() and not old.exists()


def test_a_damaged_database_is_moved_aside_and_a_new_one_started(tmp_path: Path) -> None:
    root = tmp_path / "traces"
    root.mkdir()
    (root / DB_NAME).write_bytes(b"this is not an SQLite database, just bytes" * 100)
    with TraceStore(root) as store:
        assert store.damaged_moved_to is not None and store.damaged_moved_to.exists()
        store.apply(trace_ops(1, started=time.time()))  # type: ignore[arg-type]
        assert len(store.list_traces()) == 1


def test_a_store_from_a_newer_version_is_refused_with_a_reason(tmp_path: Path) -> None:
    root = tmp_path / "traces"
    TraceStore(root).close()
    with sqlite3.connect(root / DB_NAME) as conn:
        conn.execute(
            "UPDATE meta SET value = ? WHERE key = 'schema_version'", (SCHEMA_VERSION + 1,)
        )
    with pytest.raises(TraceStoreError, match="newer Citewise"):
        TraceStore(root)


def test_a_root_that_is_a_file_is_a_store_error(tmp_path: Path) -> None:
    (tmp_path / "traces").write_text("in the way")
    with pytest.raises(TraceStoreError):
        TraceStore(tmp_path / "traces")


WRITER = """
import sys, time
from pathlib import Path
from engine.trace.store import TraceStore
from engine.trace.model import ArtifactPut, Span, SpanPut, TraceHead, sha256_hex, span_id_for

store = TraceStore(Path(sys.argv[1]))
n = first = int(sys.argv[2])
while True:
    trace_id = f"{n:032x}"
    blob = (f"artifact {n} " * 5000).encode()
    ops = [TraceHead(trace_id=trace_id, started=time.time(), question=f"w{n}", status="ok")]
    ops += [
        SpanPut(span=Span(trace_id=trace_id, span_id=span_id_for(trace_id, str(i)),
                          parent_id=None, kind="turn", name=str(i), start=time.time(), end=None))
        for i in range(20)
    ]
    ops.append(ArtifactPut(trace_id=trace_id, sha256=sha256_hex(blob), data=blob))
    store.apply(ops)
    if n == first:
        print("ready", flush=True)  # one batch is committed: the kill comes mid-stream
    n += 1
"""


def test_a_store_killed_mid_write_opens_whole_and_keeps_working(tmp_path: Path) -> None:
    root = tmp_path / "traces"
    for round_, delay in enumerate((0.3, 0.05, 0.15)):
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(root), str(round_ * 1_000_000)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == b"ready", (
            proc.stderr.read() if proc.stderr else b""
        )
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        with TraceStore(root) as store:
            assert store.damaged_moved_to is None
            assert store._conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
            traces = [s for s in store.list_traces(limit=100_000) if s.question.startswith("w")]
            assert traces, "the writer committed nothing before it was killed"
            assert any(int(s.trace_id, 16) >= round_ * 1_000_000 for s in traces)
            # batches are atomic: a trace has all 20 spans and its artifact, or is absent
            assert all(s.spans == 20 for s in traces)
            for s in traces[:50]:
                (sha,) = store.trace_artifacts(s.trace_id)
                assert store.read_artifact(sha).startswith(b"artifact ")
            store.apply(trace_ops(900_000_000 + round_, started=time.time()))  # type: ignore[arg-type]
