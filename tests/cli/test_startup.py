"""What a command loads before it answers: `--version` and `--help` import no app, and `status`
no parser, UI, OCR runtime, vector library, event loop or HTTP client (each in a fresh
process, as a user runs it; bench/bench_startup.py times them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.corpus import REPO

# The parsers, the UI, the OCR runtime, the vector library; and for these three commands also
# the event loop and the HTTP client (status reads a few files: no actors, no network code).
HEAVY = (
    "pymupdf",
    "fitz",
    "nicegui",
    "onnxruntime",
    "usearch",
    "rapidocr_onnxruntime",
    "cv2",
    "trio",
    "httpx",
)
PROBE = """
import json, sys
from cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
heavy = {heavy!r}
loaded = sorted({{m.split(".")[0] for m in sys.modules}} & set(heavy))
app = sorted(m for m in sys.modules if m.startswith(("actors.", "index.", "web.")))
light = {{name: name in sys.modules for name in ("numpy", "keyring")}}
print("\\nLOADED " + json.dumps({{"heavy": loaded, "app": app, "light": light}}), file=sys.stderr)
"""


def _python(code: str, *argv: str, home: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    """`python -c code argv…` in a fresh process on data directory `home`, as a user runs it
    (no CITEWISE_ or OPENBLAS_ settings of this shell, `extra` added)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CITEWISE_", "OPENBLAS_"))}
    env.update(CITEWISE_HOME=str(home), PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring")
    env.update(extra)
    return subprocess.run(
        [sys.executable, "-c", code, *argv],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _loaded(home: Path, *argv: str) -> dict[str, Any]:
    done = _python(PROBE.format(heavy=HEAVY), *argv, home=home)
    line = done.stderr.rsplit("LOADED ", 1)[-1]
    assert done.returncode == 0, done.stderr
    loaded: dict[str, Any] = json.loads(line)
    return loaded


@pytest.mark.parametrize("argv", [["--version"], ["--help"]])
def test_version_and_help_load_no_app(tmp_path: Path, argv: list[str]) -> None:
    loaded = _loaded(tmp_path, *argv)
    assert loaded["heavy"] == []
    # No App: the parser, the version, errors (and the packages' 30-line lazy-name helper).
    assert set(loaded["app"]) <= {"actors.errors", "index.lazy"}


def test_status_loads_no_parser_ui_ocr_runtime_vector_library_or_event_loop(tmp_path: Path) -> None:
    loaded = _loaded(tmp_path, "status", "--json")
    assert loaded["heavy"] == []
    # status reads manifests: no snapshot reader, and so no numpy (it costs what the peer does)
    assert "index.snapshot" not in loaded["app"]
    assert loaded["light"] == {"numpy": False, "keyring": False}
    assert "actors.app" in loaded["app"]  # it did open the app
    assert not [m for m in loaded["app"] if m in ("actors.ingest", "actors.parse_pool")]


def test_format_versions_the_start_gate_repeats_match_their_modules() -> None:
    """The registry repeats the versions of modules that load numpy; a bump in one of them
    without the registry would let an old data directory through the start gate unmigrated."""
    import importlib

    from engine.versions import formats

    versions = formats.current_versions()
    for name, (module, constant) in formats.MIRRORED.items():
        assert versions[name] == getattr(importlib.import_module(module), constant), name


# Records OPENBLAS_NUM_THREADS as it is when numpy is first imported (OpenBLAS reads it then).
BLAS_PROBE = """
import importlib.abc, json, os, sys
seen = []
class Watch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "numpy":
            seen.append(os.environ.get("OPENBLAS_NUM_THREADS"))
        return None
sys.meta_path.insert(0, Watch())
from cli import main
main(sys.argv[1:])
print("\\nSEEN " + json.dumps(seen), file=sys.stderr)
"""


@pytest.mark.parametrize(("chosen", "expected"), [(None, "1"), ("3", "3")])
def test_a_tool_call_runs_blas_on_one_thread_unless_the_user_chose(
    tmp_path: Path, chosen: str | None, expected: str
) -> None:
    extra = {} if chosen is None else {"OPENBLAS_NUM_THREADS": chosen}
    done = _python(BLAS_PROBE, "tool", "list_documents", "{}", home=tmp_path, **extra)
    assert '"collection_unavailable"' in done.stdout, done.stderr  # nothing imported yet
    assert json.loads(done.stderr.rsplit("SEEN ", 1)[-1]) == [expected]


VECTORS = """
import sys
import numpy as np
from engine.embedding.local import shared_model
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
texts = list(dict.fromkeys(line.strip() for line in lines if line.strip()))[:300]  # no ties
model = shared_model()
queries = np.concatenate([model.encode([t]) for t in texts[:60]])
np.savez(sys.argv[2], queries=queries, blocks=model.encode(texts))
"""


def test_one_blas_thread_embeds_vectors_that_rank_as_two_threads_do(tmp_path: Path) -> None:
    """OpenBLAS sums in another order on another thread count, so the vectors may differ in the
    last bits (about 3e-7 here, and two copies of one text in one batch differ as much); what a
    replay compares, the order of the distinct blocks a query finds, must not change with it."""
    import numpy as np

    source = REPO.parent / "shared" / "corpus" / "docs" / "nodejs-md" / "events.md"
    runs = []
    for threads in ("1", "2"):
        out = tmp_path / f"vectors-{threads}.npz"
        done = _python(VECTORS, str(source), str(out), home=tmp_path, OPENBLAS_NUM_THREADS=threads)
        assert done.returncode == 0, done.stderr
        with np.load(out) as z:
            runs.append((z["queries"], z["blocks"]))
    (q1, b1), (q2, b2) = runs
    assert q1.shape == (60, b1.shape[1]) and b1.shape[0] == 300
    assert np.abs(q1 - q2).max() < 1e-5 and np.abs(b1 - b2).max() < 1e-5
    top1 = np.argsort(-(q1 @ b1.T), axis=1, kind="stable")[:, :10]
    top2 = np.argsort(-(q2 @ b2.T), axis=1, kind="stable")[:, :10]
    assert (top1 == top2).all()
