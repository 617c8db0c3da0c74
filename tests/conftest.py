"""Fixtures shared by every test directory.

The whole shared corpus is imported once per run (local embedding model, about a minute); tests
that need fresh state of their own copy its embedding cache so nothing is embedded twice.

`./test` runs the suite in pytest-xdist workers, one per core, each test module whole in one
worker (`--dist loadfile`, so module fixtures are made once), the modules marked `slow` (tens
of seconds each) first, so that the workers finish together. The corpus is imported by the
first worker that needs it, into a folder all workers share, while any other that needs it
waits (a file lock): one import per run, as without workers.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from filelock import FileLock

from tests.corpus import DOCS, make_app, run_import

pytest_plugins = [
    "tests.servers.embedding_server",
    "tests.servers.chat_server",
    "tests.packaging.build_session",
]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Modules in this order (each keeps its place among its kind): the first that needs the
    imported corpus, which starts the import; the other slow ones; the slow ones that need the
    corpus, by when it is imported (not a worker waiting for it); then the rest."""
    needing = {item.path for item in items if "corpus_home" in getattr(item, "fixturenames", ())}
    first = next((item.path for item in items if item.path in needing), None)

    def rank(item: pytest.Item) -> int:
        if item.path == first:
            return 0
        if item.get_closest_marker("slow") is None:
            return 3
        return 2 if item.path in needing else 1

    items.sort(key=rank)  # stable


# pytest-xdist sets COLUMNS=80 in its workers. Rich fixes the width of a console made while
# COLUMNS is set (cli/output.py makes its consoles on import), so a test could no longer choose
# the width of what the CLI prints, as it can in one process without workers.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.pop("COLUMNS", None)


IMPORTED = ".imported"  # written in the shared corpus folder once its import succeeded


@pytest.fixture(scope="session")
def corpus_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A data directory holding the whole shared corpus, imported once. Treat as read-only."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):  # one process, no xdist workers
        root = tmp_path_factory.mktemp("corpus-home")
        _import_corpus(root)
        yield root
        return
    shared = tmp_path_factory.getbasetemp().parent  # the run's folder, above each worker's
    root = shared / "corpus-home"
    with FileLock(shared / "corpus-home.lock"):
        if not (root / IMPORTED).exists():
            shutil.rmtree(root, ignore_errors=True)  # a worker that failed half-way
            root.mkdir()
            _import_corpus(root)
            (root / IMPORTED).touch()
    yield root


def _import_corpus(root: Path) -> None:
    result = run_import(make_app(root), [DOCS])
    assert result.status == "ready", result


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty data directory, also set as CITEWISE_HOME for code that reads the environment."""
    root = tmp_path / "home"
    root.mkdir()
    monkeypatch.setenv("CITEWISE_HOME", str(root))
    return root


@pytest.fixture
def warm_home(home: Path, corpus_home: Path) -> Path:
    """A fresh data directory that already has the corpus's embeddings cached."""
    (home / "cache").mkdir(exist_ok=True)
    shutil.copy2(corpus_home / "cache" / "embeddings.sqlite", home / "cache" / "embeddings.sqlite")
    return home
