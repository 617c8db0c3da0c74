"""Fixtures shared by every test directory.

The whole shared corpus is imported once per session (local embedding model, about a minute);
tests that need fresh state of their own copy its embedding cache so nothing is embedded twice.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.corpus import DOCS, make_app, run_import

pytest_plugins = ["tests.servers.embedding_server", "tests.servers.chat_server"]


@pytest.fixture(scope="session")
def corpus_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A data directory holding the whole shared corpus, imported once. Treat as read-only."""
    root = tmp_path_factory.mktemp("corpus-home")
    result = run_import(make_app(root), [DOCS])
    assert result.status == "ready", result
    yield root


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
