"""Windows realities, simulated here: renames that fail while another program holds a file,
data directories with paths beyond 260 characters, the credential store's 2,560-byte limit,
and the per-user (local, not roaming) data directory."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import keyring
import keyring.backend
import pytest

from engine.errors import SecretTooLong
from engine.paths import data_home, long_path
from engine.secrets import MAX_SECRET_BYTES, set_key
from index.fsutil import atomic_write, replace_with_retry
from tests.upgrade.formats_v2 import make_v1_home, tree, upgrade_v2
from tests.upgrade.test_upgrade import assert_new_data_complete
from tests.web.conftest import MemoryKeyring


@pytest.fixture(scope="module")
def v1_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("v1-windows")
    return make_v1_home(base / "home", base / "docs")


class HeldFiles:
    """os.replace as Windows behaves while an antivirus scanner holds the target: the first
    `times` renames onto a held name fail with PermissionError (ERROR_SHARING_VIOLATION)."""

    def __init__(self, names: set[str], times: int) -> None:
        self.names, self.left = names, {n: times for n in names}
        self.refused = 0
        self.real = os.replace

    def __call__(self, src: object, dst: object) -> None:
        name = Path(os.fspath(dst)).name  # type: ignore[arg-type]
        if self.left.get(name, 0) > 0:
            self.left[name] -= 1
            self.refused += 1
            raise PermissionError(32, "The process cannot access the file", os.fspath(dst))  # type: ignore[arg-type]
        self.real(src, dst)  # type: ignore[arg-type]


def test_a_rename_onto_a_briefly_held_file_is_retried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = HeldFiles({"ACTIVE"}, times=3)
    monkeypatch.setattr(os, "replace", held)
    atomic_write(tmp_path / "ACTIVE", b"new")
    assert (tmp_path / "ACTIVE").read_bytes() == b"new" and held.refused == 3


def test_a_file_held_for_good_fails_the_rename_and_keeps_the_old_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "ACTIVE").write_bytes(b"old")
    (tmp_path / "new").write_bytes(b"new")
    monkeypatch.setattr(os, "replace", HeldFiles({"ACTIVE"}, times=100))
    with pytest.raises(PermissionError):
        replace_with_retry(tmp_path / "new", tmp_path / "ACTIVE")
    assert (tmp_path / "ACTIVE").read_bytes() == b"old"


def test_the_upgrade_switch_waits_out_a_scanner_holding_its_files(
    v1_template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    shutil.copytree(v1_template, home)
    before = tree(home)
    held = HeldFiles({"config.toml", "traces.sqlite", "formats.json"}, times=2)
    monkeypatch.setattr(os, "replace", held)
    upgrade_v2(home)
    monkeypatch.undo()
    assert held.refused == 6
    assert_new_data_complete(home, before)


def test_a_data_directory_deeper_than_260_characters_upgrades(
    v1_template: Path, tmp_path: Path
) -> None:
    deep = tmp_path.joinpath(*(["Documents and Settings of a long user name"] * 7), "Citewise")
    assert len(str(deep)) > 260
    shutil.copytree(v1_template, deep)
    before = tree(deep)
    upgrade_v2(deep)
    assert_new_data_complete(deep, before)


def test_long_paths_get_the_extended_prefix_on_windows_only() -> None:
    local = r"C:\Users\Ann\AppData\Local\Citewise\collections\default\snapshots\s1\text.bin"
    assert long_path(local, system="win32") == "\\\\?\\" + local
    assert long_path("\\\\?\\" + local, system="win32") == "\\\\?\\" + local
    assert long_path(r"\\nas\share\Citewise", system="win32") == r"\\?\UNC\nas\share\Citewise"
    assert long_path("/home/ann/.local/share/Citewise", system="linux") == (
        "/home/ann/.local/share/Citewise"
    )


class CredentialManager(MemoryKeyring):
    """An in-memory store with Windows Credential Manager's limit: 2,560 bytes of UTF-16."""

    def set_password(self, service: str, username: str, password: str) -> None:
        if len(password.encode("utf-16-le")) > 2560:
            raise OSError(1783, "CredWrite", "The stub received bad data.")  # what Windows says
        super().set_password(service, username, password)


@pytest.fixture
def credential_manager() -> Iterator[CredentialManager]:
    previous = keyring.get_keyring()
    store = CredentialManager()
    keyring.set_keyring(store)
    try:
        yield store
    finally:
        keyring.set_keyring(previous)


def test_an_oversize_key_is_refused_with_an_explanation_before_anything_is_written(
    credential_manager: CredentialManager,
) -> None:
    fits = "k" * (MAX_SECRET_BYTES // 2)
    set_key("deepseek", fits)
    assert credential_manager.passwords[("citewise", "deepseek")] == fits
    for too_long in ("k" * (MAX_SECRET_BYTES // 2 + 1), "密" * 1300):
        with pytest.raises(SecretTooLong, match="2560 bytes") as info:
            set_key("embedding", too_long)
        assert "CITEWISE_EMBEDDING_API_KEY" in str(info.value)
    assert ("citewise", "embedding") not in credential_manager.passwords


def test_on_windows_the_data_directory_is_in_the_local_not_the_roaming_profile(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("WIN_PD_OVERRIDE_LOCAL_APPDATA", r"C:\Users\Ann\AppData\Local")
    monkeypatch.setenv("WIN_PD_OVERRIDE_APPDATA", r"C:\Users\Ann\AppData\Roaming")
    home = str(data_home(environ={}, system="win32"))
    assert home.startswith(r"C:\Users\Ann\AppData\Local") and home.endswith("Citewise")
    assert "Roaming" not in home
    assert data_home(environ={"CITEWISE_HOME": "/portable/data"}, system="win32") == Path(
        "/portable/data"
    )
