"""Fixtures for the web UI: NiceGUI's simulated User (no browser) on asyncio, a App on a
temporary data directory, an in-memory credential store, and a small imported collection.

NiceGUI's `user` fixture plugin cannot be named in `pytest_plugins` here (pytest refuses that
outside the top-level conftest), so `ui_user` uses its `user_simulation` directly.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import keyring
import keyring.backend
import keyring.backends.fail
import msgspec
import pytest
from nicegui.testing import User, user_simulation

from actors.app import App
from engine.config import dump_config, load_config, parse_config
from engine.paths import DataDir
from tests.corpus import make_app, run_import

EVENTS_MD = (
    "# Node events\n\n"
    "## Emitters\n\n"
    "An EventEmitter calls every listener synchronously, in the order in which they were "
    "registered.\n\n"
    "## Errors\n\n"
    "When an error event has no listener, the process throws the error and exits.\n"
)
STREAMS_MD = (
    "# Streams\n\n"
    "## Backpressure\n\n"
    "A writable stream buffers data until the highWaterMark is reached; then write() returns "
    "false and the producer should wait for the drain event.\n"
)


class MemoryKeyring(keyring.backend.KeyringBackend):
    """A credential store that lives in this process only (tests never touch the real one)."""

    priority = 1

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.passwords: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.passwords.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.passwords[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self.passwords.pop((service, username), None)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No key anywhere: no credential store and no key variables."""
    monkeypatch.delenv("CITEWISE_DEEPSEEK_API_KEY", raising=False)
    monkeypatch.delenv("CITEWISE_EMBEDDING_API_KEY", raising=False)
    previous = keyring.get_keyring()
    keyring.set_keyring(keyring.backends.fail.Keyring())  # type: ignore[no-untyped-call]
    try:
        yield
    finally:
        keyring.set_keyring(previous)


@pytest.fixture
def memory_keyring(no_keys: None) -> Iterator[MemoryKeyring]:
    previous = keyring.get_keyring()
    store = MemoryKeyring()
    keyring.set_keyring(store)
    try:
        yield store
    finally:
        keyring.set_keyring(previous)


def service_for(root: Path, **sections: dict[str, Any]) -> App:
    """A App on its own data directory whose config.toml holds `sections` (so saving
    settings from a page keeps them, as it would for a person)."""
    data = DataDir(root).ensure()
    data.config_file.write_text(dump_config(parse_config(sections, {})), encoding="utf-8")
    return App(data, load_config(data.config_file))


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "events.md").write_text(EVENTS_MD, encoding="utf-8")
    (folder / "streams.md").write_text(STREAMS_MD, encoding="utf-8")
    return folder


@pytest.fixture(scope="session")
def imported_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory whose default collection holds the two small Markdown documents,
    imported once per session: tests change only their own `home_copy` of it."""
    root = tmp_path_factory.mktemp("ui-home")
    folder = root / "docs"
    folder.mkdir()
    (folder / "events.md").write_text(EVENTS_MD, encoding="utf-8")
    (folder / "streams.md").write_text(STREAMS_MD, encoding="utf-8")
    result = run_import(make_app(root / "home"), [folder])
    # The whole result on failure: a rare not-ready import under load was seen once, uncaught.
    assert result.status == "ready", result
    return root / "home"


@pytest.fixture
def home_copy(imported_home: Path, tmp_path: Path) -> Path:
    """A private copy of `imported_home` that a test may change."""
    target = tmp_path / "home"
    shutil.copytree(imported_home, target)
    return target


@pytest.fixture
async def ui_user() -> AsyncIterator[User]:
    """A simulated browser user; register the pages (web.pages.register) inside the test."""
    async with user_simulation() as user:
        yield user


async def tool_result(app: App, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """One of the five tools on the active snapshot, its result as JSON data."""
    result: dict[str, Any] = msgspec.json.decode((await app.run_tool(name, args)).json)
    return result
