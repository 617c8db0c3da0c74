"""Kill -9 the importer right after a batch of a big document is cached: the resumed import
embeds no text a finished batch holds, keeps the finished document, and says what it reused.

The importer is the real CLI in a subprocess, embedding through the loopback server (which
records every text asked for) one batch at a time, so the kill lands exactly at the named point
`embedding.batch:after-cache-write` (engine/embedding/batching.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

from actors.catalog import Catalog
from actors.ingest import embedding_text, record_from_snapshot
from engine.crashpoints import AT_ENV
from engine.embedding.batching import BATCH_CACHED_POINT
from engine.paths import DataDir
from tests.corpus import REPO
from tests.servers.embedding_server import EmbeddingServer

BATCH = 4
FINISHED_SECTIONS = 14


def _document(path: Path, name: str, sections: int) -> Path:
    """A Markdown file of `sections` sections with two distinct paragraphs each (one block per
    section at the default block size)."""
    lines = [f"# {name}"]
    for s in range(sections):
        lines += [
            f"## {name} part {s}",
            f"{name} section {s} opens with its own sentence about topic {s * 7 + 3}. " * 3,
            f"It closes on a second paragraph, number {s}, of the {name} document. " * 3,
        ]
    path.write_text("\n\n".join(lines) + "\n", encoding="utf-8")
    return path


def _run(
    home: Path, server: EmbeddingServer, argv: list[str], crash_at: str = ""
) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CITEWISE_")}
    env.update(
        {
            "CITEWISE_HOME": str(home),
            "CITEWISE_EMBEDDING_PROVIDER": "openai_compatible",
            "CITEWISE_EMBEDDING_BASE_URL": server.url,
            "CITEWISE_EMBEDDING_MODEL": "test-embedding",
            "CITEWISE_EMBEDDING_DIMENSIONS": str(server.dimensions),
            "CITEWISE_EMBEDDING_API_KEY": "sk-test",
            "CITEWISE_EMBEDDING_BATCH_SIZE": str(BATCH),
            "CITEWISE_EMBEDDING_CONCURRENCY": "1",  # no batch in flight at the kill
            "CITEWISE_INGEST_PARSE_WORKERS": "1",  # the larger document is embedded first
        }
    )
    if crash_at:
        env[AT_ENV] = crash_at
    done = subprocess.run(
        [sys.executable, "-m", "cli", "import", *argv, "--json"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.returncode, done.stdout


def _texts(server: EmbeddingServer, since: int = 0) -> list[str]:
    return [t for r in server.requests[since:] if isinstance(r.body, dict) for t in r.body["input"]]


def test_a_kill_mid_document_resumes_without_embedding_a_finished_batch_again(
    tmp_path: Path, embedding_server: EmbeddingServer
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    _document(docs / "finished.md", "finished", FINISHED_SECTIONS)  # larger: embedded first
    _document(docs / "big.md", "big", 12)
    home = tmp_path / "home"

    # The finished document's batches (a block for its title, one a section), then two of the
    # big one's, are cached; then the kill.
    finished_blocks = FINISHED_SECTIONS + 1
    finished_batches = -(-finished_blocks // BATCH)
    seen = len(embedding_server.requests)
    code, _ = _run(
        home,
        embedding_server,
        [str(docs)],
        crash_at=f"{BATCH_CACHED_POINT}#{finished_batches + 2}",
    )
    assert code == -signal.SIGKILL
    before = _texts(embedding_server, seen)
    assert len(before) == finished_blocks + 2 * BATCH

    seen = len(embedding_server.requests)
    code, out = _run(home, embedding_server, [])  # resume the interrupted job
    assert code == 0, out
    result = json.loads(out)
    after = _texts(embedding_server, seen)

    catalog = Catalog(DataDir(home), "default")
    manifest = catalog.active_manifest()
    assert manifest is not None and manifest.status == "ready"
    blocks = {Path(d.source).name: d.blocks for d in manifest.documents}
    assert blocks == {"big.md": 13, "finished.md": finished_blocks}
    with catalog.pin_active() as snap:
        assert snap is not None
        block_texts = {
            embedding_text(record, b)
            for i in range(len(snap.documents))
            for record in [record_from_snapshot(snap, i)]
            for b in range(len(record.blocks))
        }
    # (a build may embed texts of its own, e.g. calibration probes: only blocks are counted)
    after = [t for t in after if t in block_texts]

    assert not set(before) & set(after), "a text of a finished batch was embedded again"
    assert max(Counter(before + after).values()) == 1
    assert set(before) | set(after) == block_texts
    assert result["documents_resumed"] == 1
    assert result["stats"]["embedding_cache_hits"] == finished_blocks + 2 * BATCH
    assert result["stats"]["blocks_embedded"] == len(after) == 13 - 2 * BATCH
