"""A session of real `citewise` commands that crash tests kill -9 at named points and at random
moments, and the invariants that must hold after each kill and after the work is resumed.

The session imports a small corpus subset (loopback embedding server), adds a document, removes
one (GC runs), asks a question (loopback chat server, full traces), rolls back the active
snapshot, imports a batch in which every file fails, and makes, freezes and promotes a prompt
bundle. A reference run records, per step, the data directory before the step, the points the
step reaches (CITEWISE_CRASH_LOG) and what the step leaves behind. Each kill starts from a copy
of the directory before its step, so a kill costs one step and its resume, not a session.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from actors.catalog import Catalog
from actors.conversations import ConversationStore
from actors.errors import CatalogError
from actors.journal import Journal
from engine.crashpoints import AT_ENV, LOG_ENV
from engine.paths import DataDir
from engine.prompts.registry import BundleRegistry, active_bundle
from engine.trace import TraceStore
from index.snapshot import verify_snapshot
from tests.corpus import DOCS, REPO, make_app
from tests.servers.chat_server import ChatServer, Reply, Text
from tests.servers.embedding_server import EmbeddingServer

StepKind = Literal["import", "remove", "ask", "activate", "prompts"]
DocKey = tuple[str, str, int]  # (source, content hash, blocks)
COMMAND_TIMEOUT_S = 180.0
KILLED = -signal.SIGKILL
TRUNCATE_AT = 6000  # characters of each Markdown file kept: small documents, quick steps


@dataclass(frozen=True)
class Step:
    name: str
    kind: StepKind
    argv: tuple[str, ...]
    collection: str = "default"


@dataclass
class Reference:
    """What the uninterrupted session looked like around one step."""

    home_before: Path
    reached: Counter[str]
    exit_code: int
    seconds: float
    active_after: str | None = None
    docs_after: frozenset[DocKey] = frozenset()
    baseline_after: str = ""


@dataclass
class Outcome:
    """One kill: where, whether it landed, what broke."""

    step: str
    target: str  # "NAME#N" or "random@1.23s"
    killed: bool  # False: the run did not reach the point this time (e.g. fewer trace batches)
    violations: list[str] = field(default_factory=list)
    seconds: float = 0.0


def _truncated(src: Path, dest: Path) -> None:
    text = src.read_text(encoding="utf-8")
    cut = text.rfind("\n\n", 0, TRUNCATE_AT)
    dest.write_text(text[: cut if cut > 0 else TRUNCATE_AT] + "\n", encoding="utf-8")


def make_corpus(root: Path) -> tuple[Path, Path, Path]:
    """(first batch, one more document, a batch in which every file fails), as small files."""
    first, more, broken = root / "first", root / "more", root / "broken"
    for d in (first, more, broken):
        d.mkdir(parents=True)
    _truncated(DOCS / "nodejs-md" / "events.md", first / "events.md")
    _truncated(DOCS / "nodejs-md" / "dns.md", first / "dns.md")
    shutil.copy(DOCS / "python-faq" / "installed.html", first)
    shutil.copy(DOCS / "converted" / "python-faq-general.epub", first)
    _truncated(DOCS / "nodejs-md" / "readline.md", more / "readline.md")
    (broken / "scan.pdf").write_bytes(b"%PDF-1.4\nthis is not a PDF body\n")
    return first, more, broken


def answer_with_a_search(body: dict[str, Any]) -> Reply:
    """A model that searches once, then answers."""
    last = body["messages"][-1]["content"]
    if last.startswith("<question>"):
        return Text('Thought: search.\nAction: search_blocks[{"query": "event listeners"}]')
    return Text("Thought: done.\nAction: Finish[Listeners are called in the order added.]")


def file_hash(path: Path) -> str:
    h = hashlib.sha256()
    h.update(path.read_bytes())
    return h.hexdigest()


class CrashSession:
    """Build with `prepare()` (the reference run), then `kill_at` / `kill_randomly`."""

    def __init__(self, root: Path, embedding: EmbeddingServer, chat: ChatServer) -> None:
        self.root = root
        self.embedding = embedding
        self.chat = chat
        chat.script(*[answer_with_a_search] * 100_000)
        self.first, self.more, self.broken = make_corpus(root / "corpus")
        self.files = {
            **{p.name: p for p in self.first.iterdir()},
            **{p.name: p for p in self.more.iterdir()},
        }
        self.steps: list[Step] = []
        self.references: list[Reference] = []
        self._runs = 0
        self._lock = threading.Lock()
        self._homes = itertools.count()

    # -- running commands --------------------------------------------------------------------
    def env(self, home: Path, *, crash_at: str = "", log: Path | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("CITEWISE_")}
        env.update(
            {
                "CITEWISE_HOME": str(home),
                "CITEWISE_EMBEDDING_PROVIDER": "openai_compatible",
                "CITEWISE_EMBEDDING_BASE_URL": self.embedding.url,
                "CITEWISE_EMBEDDING_MODEL": "test-embedding",
                "CITEWISE_EMBEDDING_DIMENSIONS": str(self.embedding.dimensions),
                "CITEWISE_EMBEDDING_BATCH_SIZE": "8",
                "CITEWISE_EMBEDDING_API_KEY": "sk-test-embedding",
                "CITEWISE_CHAT_BASE_URL": self.chat.url,
                "CITEWISE_DEEPSEEK_API_KEY": "sk-test-chat",
                "CITEWISE_TRACE_MODE": "full",  # artifacts too
                "CITEWISE_RETRIEVAL_EXACT_SEARCH_MAX_BLOCKS": "0",  # every build writes a graph
                "CITEWISE_SNAPSHOTS_KEEP_LAST": "2",
                "CITEWISE_INGEST_PARSE_WORKERS": "1",
            }
        )
        if crash_at:
            env[AT_ENV] = crash_at
        if log is not None:
            env[LOG_ENV] = str(log)
        return env

    def start(self, argv: Sequence[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        with self._lock:
            self._runs += 1
        return subprocess.Popen(
            [sys.executable, "-m", "cli", *argv],
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )

    def run(self, argv: Sequence[str], env: dict[str, str]) -> tuple[int, str]:
        proc = self.start(argv, env)
        try:
            _, err = proc.communicate(timeout=COMMAND_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            return -1, f"timed out after {COMMAND_TIMEOUT_S:.0f} s"
        return proc.returncode, err.decode(errors="replace")

    @property
    def commands_run(self) -> int:
        return self._runs

    # -- the reference session ---------------------------------------------------------------
    def prepare(self) -> None:
        """Run the session once without kills; remember each step's before and after."""
        home = self.root / "reference"
        home.mkdir()
        plan: list[Step] = [
            Step("import", "import", ("import", str(self.first), "--json")),
            Step("add", "import", ("import", str(self.more), "--json")),
            Step("remove", "remove", ("remove", "dns.md", "--json")),
            Step("ask", "ask", ("ask", "How are event listeners called?", "--json")),
            Step("activate", "activate", ()),  # filled in once the id is known
            Step(
                "failing-import",
                "import",
                ("import", str(self.broken), "--collection", "junk", "--json"),
                collection="junk",
            ),
            Step("prompts-new", "prompts", ("prompts", "new", "--from", "baseline", "--id", "x")),
            Step("prompts-freeze", "prompts", ("prompts", "freeze", "x@1")),
            Step("prompts-promote", "prompts", ("prompts", "promote", "x@1", "--yes")),
        ]
        for i, step in enumerate(plan):
            if step.kind == "activate":  # roll back to what `add` made active
                target = self.references[1].active_after
                assert target is not None
                step = Step("activate", "activate", ("snapshots", "activate", target))
            before = self.root / f"before-{i}-{step.name}"
            shutil.copytree(home, before, symlinks=True)
            log = self.root / f"reached-{i}.log"
            t0 = time.monotonic()
            code, err = self.run(step.argv, self.env(home, log=log))
            seconds = time.monotonic() - t0
            if code not in (0, 1):
                raise RuntimeError(f"reference step {step.name} exited {code}: {err}")
            reached = Counter(log.read_text().split()) if log.exists() else Counter()
            ref = Reference(before, reached, code, seconds)
            self._describe_after(home, ref)
            self.steps.append(step)
            self.references.append(ref)

    def _describe_after(self, home: Path, ref: Reference) -> None:
        catalog = Catalog(DataDir(home), "default")
        ref.active_after = catalog.active_id()
        ref.docs_after = self.docs_of(catalog, ref.active_after)
        ref.baseline_after = _baseline(home)

    def reached_points(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for ref in self.references:
            total.update(ref.reached)
        return total

    def targets(self) -> list[tuple[int, str, int]]:
        """Every (step, point, n) the reference session reached."""
        out: list[tuple[int, str, int]] = []
        for i, ref in enumerate(self.references):
            for name, count in sorted(ref.reached.items()):
                out.extend((i, name, n) for n in range(1, count + 1))
        return out

    def first_targets(self) -> list[tuple[int, str, int]]:
        """Each point once: its first reach in the first step that reaches it."""
        seen: set[str] = set()
        out = []
        for i, ref in enumerate(self.references):
            for name in sorted(ref.reached):
                if name not in seen:
                    seen.add(name)
                    out.append((i, name, 1))
        return out

    # -- kills -------------------------------------------------------------------------------
    def kill_at(self, step_index: int, point: str, nth: int = 1) -> Outcome:
        target = f"{point}#{nth}"
        home = self._fresh_home(step_index)
        t0 = time.monotonic()
        code, err = self.run(self.steps[step_index].argv, self.env(home, crash_at=target))
        outcome = Outcome(self.steps[step_index].name, target, killed=code == KILLED)
        if not outcome.killed and code != self.references[step_index].exit_code:
            outcome.violations.append(f"{target}: exit {code} instead of a kill: {err[-400:]}")
        self._check_and_resume(step_index, home, outcome)
        outcome.seconds = time.monotonic() - t0
        shutil.rmtree(home, ignore_errors=True)
        return outcome

    def kill_randomly(self, step_index: int, rng: random.Random) -> Outcome:
        ref = self.references[step_index]
        delay = rng.uniform(0.0, ref.seconds)
        home = self._fresh_home(step_index)
        t0 = time.monotonic()
        proc = self.start(self.steps[step_index].argv, self.env(home))
        try:
            proc.communicate(timeout=delay)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.communicate()
        outcome = Outcome(
            self.steps[step_index].name, f"random@{delay:.2f}s", killed=proc.returncode == KILLED
        )
        self._check_and_resume(step_index, home, outcome)
        outcome.seconds = time.monotonic() - t0
        shutil.rmtree(home, ignore_errors=True)
        return outcome

    def _fresh_home(self, step_index: int) -> Path:
        home = self.root / f"kill-{next(self._homes)}"
        shutil.copytree(self.references[step_index].home_before, home, symlinks=True)
        return home

    def _check_and_resume(self, i: int, home: Path, outcome: Outcome) -> None:
        step = self.steps[i]
        journal = Journal(DataDir(home).journal(step.collection))
        acknowledged = {e.source for e in journal.done() if e.status == "ok"}
        running = _running_traces(home)
        outcome.violations += self.check_crashed(i, home)
        # Resume as a person would, told by `citewise status`: an interrupted import or
        # removal continues from its journal; a removal that took effect before its journal
        # was written leaves only GC to finish; anything else runs again.
        ref = self.references[i]
        expect = ref.exit_code
        if journal.load() is not None:
            argv: tuple[str, ...] = ("import", "--collection", step.collection, "--json")
        elif step.kind == "remove" and self._active_docs(home) == ref.docs_after:
            argv, expect = ("snapshots", "gc", "--json"), 0
        else:
            argv = step.argv
        code, err = self.run(argv, self.env(home))
        if code != expect:
            outcome.violations.append(
                f"resume `{' '.join(argv[:2])}` exited {code}, not {expect}: {err[-400:]}"
            )
        outcome.violations += self.check_resumed(i, home, acknowledged, running)

    # -- invariants --------------------------------------------------------------------------
    def _active_docs(self, home: Path) -> frozenset[DocKey]:
        catalog = Catalog(DataDir(home), "default")
        return self.docs_of(catalog, catalog.active_id())

    def docs_of(self, catalog: Catalog, snapshot_id: str | None) -> frozenset[DocKey]:
        if snapshot_id is None:
            return frozenset()
        manifest = catalog.manifest(snapshot_id)
        assert manifest is not None
        return frozenset((d.source, d.content_hash, d.blocks) for d in manifest.documents)

    def check_crashed(self, i: int, home: Path) -> list[str]:
        """What must hold right after the kill, before anything runs again."""
        ref = self.references[i]
        before_ref = self.references[i - 1] if i else None
        before_id = before_ref.active_after if before_ref else None
        before_docs = before_ref.docs_after if before_ref else frozenset()
        v: list[str] = []
        catalog = Catalog(DataDir(home), "default")
        try:
            active = catalog.active_id()
        except CatalogError as exc:
            return [f"active pointer: {exc}"]
        if active is None and before_id is not None:
            v.append("the active snapshot was lost")
        if active is not None:
            v += self.check_snapshot(catalog, active)
            docs = self.docs_of(catalog, active)
            if active == before_id:
                if docs != before_docs:
                    v.append("the active snapshot changed its documents in place")
            elif self.steps[i].kind == "activate":
                if active != ref.active_after:
                    v.append(f"activation left {active} active, neither old nor new")
            elif self.steps[i].kind in ("import", "remove"):
                if docs != ref.docs_after:
                    missing = sorted(s for s, _, _ in before_docs & ref.docs_after - docs)
                    v.append(f"a new snapshot is active with other documents (lost: {missing})")
            else:
                v.append(f"{self.steps[i].name} changed the active snapshot")
        v += check_traces(home)
        v += check_conversations(home)
        v += check_bundles(home)
        try:
            make_app(home).status()
            Catalog(DataDir(home), "junk").list()
        except Exception as exc:  # any failure to report status is a violation
            v.append(f"status: {type(exc).__name__}: {exc}")
        return v

    def check_snapshot(self, catalog: Catalog, snapshot_id: str) -> list[str]:
        """It verifies, opens, searches, and every document in it is whole and unchanged."""
        v: list[str] = []
        result = verify_snapshot(catalog.snapshot_path(snapshot_id))
        if not result.ok:
            v.append(f"snapshot {snapshot_id} does not verify: {result.problems}")
            return v
        manifest = catalog.manifest(snapshot_id)
        assert manifest is not None
        try:
            with catalog.pinned(snapshot_id) as snap:
                listed = {d.doc_id: d for d in manifest.documents}
                for info in snap.documents:
                    m = listed.get(info.doc_id)
                    if m is None or info.block_count != m.blocks or m.blocks == 0:
                        v.append(f"{info.source}: half a document ({info.block_count} blocks)")
                    source = self.files.get(info.source)
                    if source is None or file_hash(source) != info.content_hash:
                        v.append(f"{info.source}: not the imported file's content")
                    for o in range(info.block_start, info.block_start + info.block_count):
                        if not snap.block(o).text.strip():
                            v.append(f"{info.source}: block {o} is empty")
                            break
                if len(snap.documents) != len(manifest.documents):
                    v.append("the snapshot holds other documents than its manifest lists")
                snap.bm25_search("event listeners", 3)
                probe = np.zeros(self.embedding.dimensions, dtype=np.float32)
                probe[0] = 1.0
                snap.vector_search(probe, 3)
        except Exception as exc:  # opening or searching the active snapshot must work
            v.append(f"snapshot {snapshot_id} cannot be used: {type(exc).__name__}: {exc}")
        return v

    def check_resumed(
        self, i: int, home: Path, acknowledged: set[str], running: set[str]
    ) -> list[str]:
        """After the resume: the job is finished and the state is the reference's."""
        ref = self.references[i]
        step = self.steps[i]
        v: list[str] = []
        data = DataDir(home)
        catalog = Catalog(data, "default")
        active = catalog.active_id()
        docs = self.docs_of(catalog, active)
        if docs != ref.docs_after:
            v.append("after resume the active snapshot holds other documents than expected")
        if step.kind == "activate" and active != ref.active_after:
            v.append("after resume the rolled-back snapshot is not active")
        if active is not None:
            v += self.check_snapshot(catalog, active)
        if step.kind == "import" and step.collection == "default":
            lost = acknowledged - {s for s, _, _ in docs}
            if lost:
                v.append(f"journaled as imported but missing after resume: {sorted(lost)}")
        for collection in ("default", "junk"):
            if Journal(data.journal(collection)).load() is not None:
                v.append(f"an import job of {collection} is still pending after the resume")
        if step.kind in ("import", "remove"):
            v += _leftover_builds(Catalog(data, step.collection))
        if step.kind == "prompts":
            prompts = home / "prompts"
            stale = sorted(
                str(p.relative_to(prompts))
                for pattern in (".new-*", "**/.*.tmp")
                for p in (prompts.glob(pattern) if prompts.is_dir() else ())
            )
            if stale:
                v.append(f"left-overs of a killed bundle write survived the resume: {stale}")
        still = running & _running_traces(home)
        if still:
            v.append(f"traces of the killed process still say running: {sorted(still)}")
        unmarked = running - still - _partial_traces(home)
        if unmarked:
            v.append(f"traces of the killed process are not marked partial: {sorted(unmarked)}")
        if _baseline(home) != ref.baseline_after:
            v.append(f"baseline {_baseline(home)!r} after resume, expected {ref.baseline_after!r}")
        v += check_traces(home)
        return v


def _baseline(home: Path) -> str:
    try:
        bundle = active_bundle(DataDir(home))
    except Exception as exc:  # reported by check_bundles
        return f"error: {exc}"
    return f"{bundle.id}@{bundle.version}:{bundle.hash}"


def _leftover_builds(catalog: Catalog) -> list[str]:
    v = []
    if catalog.snapshots_dir.is_dir():
        for entry in catalog.snapshots_dir.iterdir():
            if not (entry / "manifest.json").exists():
                v.append(f"an unfinished build {entry.name} survived the resume's GC")
    if catalog.trash.is_dir() and any(catalog.trash.iterdir()):
        v.append("trash/ is not empty after the resume's GC")
    if catalog.root.is_dir():
        stale = sorted(str(p.relative_to(catalog.root)) for p in catalog.root.rglob(".*.tmp"))
        if stale:
            v.append(f"temporary files of a killed write survived the resume's GC: {stale}")
    return v


def _trace_rows(home: Path, sql: str) -> list[tuple[Any, ...]]:
    db = home / "traces" / "traces.sqlite"
    if not db.exists():
        return []
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql).fetchall()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return []  # killed before the schema was committed; the next open creates it
        raise
    finally:
        conn.close()


def _running_traces(home: Path) -> set[str]:
    return {r[0] for r in _trace_rows(home, "SELECT trace_id FROM traces WHERE status='running'")}


def _partial_traces(home: Path) -> set[str]:
    return {r[0] for r in _trace_rows(home, "SELECT trace_id FROM traces WHERE dropped > 0")}


def check_traces(home: Path) -> list[str]:
    """The store opens as it is (not moved aside), is intact, and every artifact it lists is
    there with the bytes its name says."""
    root = home / "traces"
    if not root.exists():
        return []
    v: list[str] = []
    try:
        store = TraceStore(root)
    except Exception as exc:  # the store must open after any kill
        return [f"trace store: {type(exc).__name__}: {exc}"]
    try:
        if store.damaged_moved_to is not None:
            v.append(f"the trace database was damaged and moved to {store.damaged_moved_to}")
        for summary in store.list_traces(limit=1000, kind=None):
            store.get(summary.trace_id)
        (check,) = _trace_rows(home, "PRAGMA integrity_check")[0]
        if check != "ok":
            v.append(f"trace database integrity: {check}")
        for (sha,) in _trace_rows(home, "SELECT sha256 FROM artifacts"):
            try:
                store.read_artifact(sha)
            except Exception as exc:  # a row that names a missing or damaged file
                v.append(f"artifact {sha[:12]}: {exc}")
    finally:
        store.close()
    return v


def check_conversations(home: Path) -> list[str]:
    v: list[str] = []
    store = ConversationStore(DataDir(home), "default")
    if not store.root.is_dir():
        return v
    for file in store.root.glob("*.jsonl"):
        lines = [ln for ln in file.read_bytes().splitlines() if ln.strip()]
        turns = store.load(file.stem)
        if len(turns) != len(lines):
            v.append(f"conversation {file.stem}: {len(lines) - len(turns)} unreadable lines")
    return v


def check_bundles(home: Path) -> list[str]:
    try:
        BundleRegistry.of(DataDir(home)).list()
        active_bundle(DataDir(home))
    except Exception as exc:  # the prompt bundles must load after any kill
        return [f"prompt bundles: {type(exc).__name__}: {exc}"]
    return []


def summarize(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    points = {o.target.split("#")[0] for o in outcomes if o.killed and "#" in o.target}
    return {
        "iterations": len(outcomes),
        "killed": sum(o.killed for o in outcomes),
        "named": sum("#" in o.target for o in outcomes),
        "random": sum(o.target.startswith("random") for o in outcomes),
        "points_covered": len(points),
        "violations": sum(len(o.violations) for o in outcomes),
    }
