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


def _loaded(home: Path, *argv: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CITEWISE_")}
    env.update(CITEWISE_HOME=str(home), PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring")
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=HEAVY), *argv],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
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
