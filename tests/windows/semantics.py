"""Windows file semantics on Linux: what NTFS refuses while this process holds a file.

On Windows a file that is open (Python, SQLite and usearch open without FILE_SHARE_DELETE) or
memory-mapped cannot be deleted or renamed, nor can a folder that contains one; os.rename does
not overwrite; os.replace cannot replace a folder; and antivirus scanners or indexers hold any
file for a moment. Linux allows all of it, so code that works here can lose data there.

`WindowsSemantics` patches os.unlink/os.remove/os.rename/os.replace/os.rmdir (pathlib and
shutil.rmtree go through them) to refuse what Windows would refuse. What is held is what the
kernel says this process holds: every descriptor in /proc/self/fd and every mapped file in
/proc/self/maps, so Python's open, os.open, mmap, numpy memmaps, SQLite and usearch's native
maps all count, and nothing is held once it is closed and unmapped. Refusals raise
PermissionError with winerror 32 (ERROR_SHARING_VIOLATION), as Python does on Windows.
Optionally, a seeded random share of operations under the watched roots fails the same way,
as if a scanner had the file open at that moment.
"""

from __future__ import annotations

import errno
import os
import random
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

SHARING_VIOLATION = 32  # "The process cannot access the file because it is being used…"
ACCESS_DENIED = 5
ALREADY_EXISTS = 183

PathArg = str | bytes | os.PathLike[str] | os.PathLike[bytes]


def _text(path: PathArg, dir_fd: int | None = None) -> str:
    text = os.fsdecode(os.fspath(path))
    if dir_fd is not None and not os.path.isabs(text):
        text = os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), text)
    return os.path.abspath(text)


def held_paths() -> set[str]:
    """Every file or folder this process has open or mapped, and its working directory."""
    held = {os.getcwd()}
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # the descriptor listdir itself used, closed meanwhile
        if target.startswith("/"):
            held.add(target.removesuffix(" (deleted)"))
    with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
        for line in maps:
            fields = line.rstrip("\n").split(maxsplit=5)
            if len(fields) == 6 and fields[5].startswith("/"):
                held.add(fields[5].removesuffix(" (deleted)"))
    return held


def windows_error(code: int, path: str, message: str) -> PermissionError:
    exc = PermissionError(errno.EACCES, message, path)
    exc.winerror = code  # type: ignore[attr-defined]  # Python sets it only on Windows
    return exc


@dataclass
class Refusal:
    operation: str
    path: str
    why: str  # "held" (this process has it open or mapped) or "scanner" (random)


@dataclass
class WindowsSemantics:
    """Install with `install(monkeypatch)`; `refusals` records every refused operation."""

    roots: tuple[Path, ...]  # random interference only here; held files anywhere
    interference: float = 0.0  # share of operations under the roots that a "scanner" refuses
    seed: int = 22
    refusals: list[Refusal] = field(default_factory=list)
    _random: random.Random = field(init=False)
    _real: dict[str, Callable[..., Any]] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self._random = random.Random(self.seed)
        self.roots = tuple(Path(os.path.abspath(r)) for r in self.roots)

    # -- what Windows refuses ----------------------------------------------------------------
    def _under_roots(self, path: str) -> bool:
        return any(path == str(r) or path.startswith(f"{r}/") for r in self.roots)

    @staticmethod
    def _holds(path: str, held: set[str], *, inside: bool) -> bool:
        prefix = path.rstrip("/") + "/"
        return path in held or (inside and any(h.startswith(prefix) for h in held))

    def _check(self, operation: str, *paths: str, inside: bool) -> None:
        held = held_paths()
        for path in paths:
            if self._holds(path, held, inside=inside):
                self.refusals.append(Refusal(operation, path, "held"))
                raise windows_error(
                    SHARING_VIOLATION,
                    path,
                    "The process cannot access the file because it is being used by another "
                    "process",
                )
        scanned = self.interference and any(self._under_roots(p) for p in paths)
        if scanned and self._random.random() < self.interference:
            self.refusals.append(Refusal(operation, paths[0], "scanner"))
            raise windows_error(
                SHARING_VIOLATION,
                paths[0],
                "The process cannot access the file because it is being used by another process",
            )

    def held_refusals(self) -> list[Refusal]:
        return [r for r in self.refusals if r.why == "held"]

    def scanner_refusals(self) -> list[Refusal]:
        return [r for r in self.refusals if r.why == "scanner"]

    # -- the patched functions ---------------------------------------------------------------
    def _unlink(self, path: PathArg, *, dir_fd: int | None = None) -> None:
        self._check("unlink", _text(path, dir_fd), inside=False)
        self._real["unlink"](path, dir_fd=dir_fd)

    def _rmdir(self, path: PathArg, *, dir_fd: int | None = None) -> None:
        self._check("rmdir", _text(path, dir_fd), inside=True)
        self._real["rmdir"](path, dir_fd=dir_fd)

    def _move(self, operation: str, src: PathArg, dst: PathArg, **kw: Any) -> None:
        source = _text(src, kw.get("src_dir_fd"))
        target = _text(dst, kw.get("dst_dir_fd"))
        self._check(operation, source, target, inside=True)
        if os.path.lexists(target) and os.path.normcase(source) != os.path.normcase(target):
            if operation == "rename":  # MoveFileExW without MOVEFILE_REPLACE_EXISTING
                raise FileExistsError(
                    errno.EEXIST, "Cannot create a file when that file already exists", target
                )
            if os.path.isdir(target):  # MoveFileEx cannot replace a folder
                self.refusals.append(Refusal(operation, target, "folder"))
                raise windows_error(ACCESS_DENIED, target, "Access is denied")
        self._real[operation](src, dst, **kw)

    def _rename(self, src: PathArg, dst: PathArg, **kw: Any) -> None:
        self._move("rename", src, dst, **kw)

    def _replace(self, src: PathArg, dst: PathArg, **kw: Any) -> None:
        self._move("replace", src, dst, **kw)

    def install(self, monkeypatch: pytest.MonkeyPatch) -> WindowsSemantics:
        for name in ("unlink", "rmdir", "rename", "replace"):
            self._real[name] = getattr(os, name)
        monkeypatch.setattr(os, "unlink", self._unlink)
        monkeypatch.setattr(os, "remove", self._unlink)
        monkeypatch.setattr(os, "rmdir", self._rmdir)
        monkeypatch.setattr(os, "rename", self._rename)
        monkeypatch.setattr(os, "replace", self._replace)
        # Windows has no descriptor-relative calls: rmtree removes by path there, one entry at
        # a time, which is also what lets it remove everything but the held files.
        monkeypatch.setattr(shutil, "_use_fd_functions", False)
        monkeypatch.setattr(shutil.rmtree, "avoids_symlink_attacks", False)
        # The retries are about counts, not wall time: keep them fast in tests.
        monkeypatch.setattr("index.fsutil.RETRY_BACKOFF_S", 0.001)
        return self
