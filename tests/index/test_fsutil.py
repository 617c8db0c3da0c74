"""Durable writes: files written together are fsynced together, each past its crash points."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from index.fsutil import (
    atomic_write,
    file_sha256,
    files_sha256,
    synced_together,
    write_new_file,
)

_WRITE_THREE = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from index.fsutil import synced_together, write_new_file

    folder = Path(sys.argv[1])
    with synced_together():
        for name in ("a", "b", "c"):
            write_new_file(folder / name, name.encode() * 1000)
        if sys.argv[2] == "fail":
            raise SystemExit(3)
    """
)


def _run(folder: Path, mode: str, env: dict[str, str]) -> int:
    root = Path(__file__).resolve().parents[2]
    return subprocess.run(
        [sys.executable, "-c", _WRITE_THREE, str(folder), mode],
        env={**os.environ, "PYTHONPATH": str(root), **env},
        cwd=root,
        check=False,
    ).returncode


def test_files_written_together_are_all_written_before_any_is_fsynced(tmp_path: Path) -> None:
    log = tmp_path / "points"
    assert _run(tmp_path, "ok", {"CITEWISE_CRASH_LOG": str(log)}) == 0
    reached = log.read_text().split()
    assert reached.count("snapshot.file:before-fsync") == 3
    assert reached.count("snapshot.file:after-fsync") == 3
    killed = tmp_path / "killed"
    killed.mkdir()
    assert _run(killed, "ok", {"CITEWISE_CRASH_AT": "snapshot.file:before-fsync"}) != 0
    assert sorted(p.name for p in killed.iterdir()) == ["a", "b", "c"]


def test_a_block_that_fails_fsyncs_nothing(tmp_path: Path) -> None:
    log = tmp_path / "points"
    assert _run(tmp_path, "fail", {"CITEWISE_CRASH_LOG": str(log)}) == 3
    assert not log.exists() or "fsync" not in log.read_text()


def test_outside_a_block_each_file_is_fsynced_as_it_is_written(tmp_path: Path) -> None:
    with synced_together():
        pass
    assert write_new_file(tmp_path / "x", [b"ab", b"c"]) == 3
    with pytest.raises(FileExistsError):
        write_new_file(tmp_path / "x", b"again")


def test_many_files_hash_as_one_by_one(tmp_path: Path) -> None:
    paths = [tmp_path / str(k) for k in range(5)]
    for k, path in enumerate(paths):
        path.write_bytes(bytes([k]) * (k * 70_000))
    assert files_sha256(paths) == [file_sha256(p) for p in paths]


def test_an_atomic_write_syncs_file_and_folder_unless_it_is_only_a_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd))[1])
    target = tmp_path / "entry"
    atomic_write(target, b"first")
    assert len(synced) == (2 if os.name != "nt" else 1)  # the file, then its folder
    synced.clear()
    atomic_write(target, b"second", durable=False)
    assert synced == [] and target.read_bytes() == b"second"
    assert [p.name for p in tmp_path.iterdir()] == ["entry"]  # no temporary file left
