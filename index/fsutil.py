"""Durable file writes (write-and-fsync, fsync directories, atomic replace), read-only maps,
removals that survive Windows file locking, and the one file hash.

Used for snapshot files (written once) and small pointer files (replaced atomically). Nothing
here ever truncates an existing file in place or maps a file writable. On Windows a file that
any process holds open or mapped cannot be renamed or deleted (and antivirus scanners hold new
files briefly): renames and removals retry with backoff, and a removal that still fails reports
it, so that its caller leaves the entry for a later sweep instead of failing.
"""

from __future__ import annotations

import contextlib
import hashlib
import mmap
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from pathlib import Path

from index.crashpoints import crash_point

Mapped = mmap.mmap | bytes  # a read-only file view; bytes only for empty files

# Attempts and the first delay (it grows linearly): about 0.75 s in all before giving up.
RETRY_ATTEMPTS = 6
RETRY_BACKOFF_S = 0.05


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes, read in chunks (never the whole file in memory)."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def fsync_dir(directory: Path) -> None:
    """Make a directory's entries durable. Windows cannot open directories; NTFS journals them."""
    if os.name == "nt":
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# The files written inside `synced_together`, with their crash-point labels (None outside).
_to_sync: ContextVar[list[tuple[Path, str | None]] | None] = ContextVar("_to_sync", default=None)
_IO_THREADS = 4  # fsyncs (and hashes) in flight at once; the disk batches them
_io_pool: ThreadPoolExecutor | None = None
_io_pool_lock = threading.Lock()


def _threads() -> ThreadPoolExecutor:
    """The threads that fsync and hash files together, started on first use and kept (a
    build would otherwise spend more starting them than the fsyncs take)."""
    global _io_pool
    with _io_pool_lock:
        if _io_pool is None:
            _io_pool = ThreadPoolExecutor(_IO_THREADS, thread_name_prefix="citewise-io")
        return _io_pool


@contextlib.contextmanager
def synced_together() -> Iterator[None]:
    """Files created by `write_new_file` (and passed to `fsync_file`) inside the block are
    fsynced together when it ends, several at once from threads: the disk then flushes many
    files in one go (a snapshot's 17 files on this host: 50 -> 10 ms) instead of waiting for
    each in turn. Each file still passes its crash points just before and after its fsync. When
    the block raises, nothing is fsynced (the caller discards what it wrote)."""
    pending: list[tuple[Path, str | None]] = []
    token = _to_sync.set(pending)
    try:
        yield
    finally:
        _to_sync.reset(token)
    if len(pending) < 2:
        for path, point in pending:
            _fsync_path(path, point)
        return
    for done in [_threads().submit(_fsync_path, path, point) for path, point in pending]:
        done.result()


def _fsync_path(path: Path, point: str | None) -> None:
    if point:
        crash_point(f"{point}:before-fsync")
    with open(path, "rb+") as f:
        os.fsync(f.fileno())
    if point:
        crash_point(f"{point}:after-fsync")


def write_new_file(
    path: Path, chunks: bytes | Iterable[bytes], *, point: str = "snapshot.file"
) -> int:
    """Create `path` (it must not exist), write `chunks`, fsync (inside `synced_together`: at
    its end); return the size in bytes.

    `point` names the crash points before and after the fsync (its callers write snapshots).
    """
    size = 0
    pending = _to_sync.get()
    with open(path, "xb") as f:
        for chunk in [chunks] if isinstance(chunks, bytes) else chunks:
            f.write(chunk)
            size += len(chunk)
        f.flush()
        if pending is None:
            crash_point(f"{point}:before-fsync")
            os.fsync(f.fileno())
    if pending is None:
        crash_point(f"{point}:after-fsync")
    else:
        pending.append((path, point))
    return size


def fsync_file(path: Path, *, point: str | None = None) -> None:
    """fsync a file that something else (e.g. usearch) wrote (inside `synced_together`: at its
    end); `point` names crash points."""
    pending = _to_sync.get()
    if pending is None:
        _fsync_path(path, point)
    else:
        pending.append((path, point))


def files_sha256(paths: Sequence[Path]) -> list[str]:
    """`file_sha256` of each of `paths`, several at once from threads (hashing large data
    releases the GIL)."""
    if len(paths) < 2:
        return [file_sha256(path) for path in paths]
    return list(_threads().map(file_sha256, paths))


def _with_retry(operation: Callable[[], None]) -> None:
    """Run `operation`, retried with growing delays while it raises PermissionError."""
    for attempt in range(RETRY_ATTEMPTS):
        try:
            operation()
            return
        except PermissionError:
            if attempt == RETRY_ATTEMPTS - 1:
                raise
            time.sleep(RETRY_BACKOFF_S * (attempt + 1))


def replace_with_retry(source: Path, target: Path) -> None:
    """os.replace, retried briefly on PermissionError (antivirus and indexers hold files)."""
    _with_retry(lambda: os.replace(source, target))


def remove_file(path: Path) -> bool:
    """Delete a file, retried on PermissionError; False when it is still there (held open or
    mapped by some process), so the caller can leave it for a later sweep. A missing file
    counts as removed."""
    try:
        _with_retry(lambda: path.unlink(missing_ok=True))
    except PermissionError:
        return False
    return True


def remove_tree(path: str | os.PathLike[str]) -> bool:
    """Delete a folder and everything in it, retrying what could not be removed; False when
    something (a file held open or mapped) is still there after the retries. What could be
    removed is gone either way, so only call this on a folder nothing needs any more."""
    for attempt in range(RETRY_ATTEMPTS):
        if not os.path.lexists(path):
            return True
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.lexists(path):
            return True
        if attempt < RETRY_ATTEMPTS - 1:
            time.sleep(RETRY_BACKOFF_S * (attempt + 1))
    return False


def remove_superseded(current: Path, prefix: str) -> list[str]:
    """Remove the other files in `current`'s folder whose names start with `prefix`: copies
    an earlier install or format wrote (a cache keyed by version in its name is never read
    again once the version moves on). One still held open or mapped stays for the next call.
    Returns the names removed."""
    removed = []
    with contextlib.suppress(OSError):
        for entry in sorted(current.parent.iterdir()):
            stale = entry.name.startswith(prefix) and entry != current and entry.is_file()
            if stale and remove_file(entry):
                removed.append(entry.name)
    return removed


def sweep(directory: Path) -> list[str]:
    """Remove every entry of a holding area (a trash folder, a work area); return the names of
    those still held, which the next sweep tries again."""
    if not directory.is_dir():
        return []
    left = []
    for entry in sorted(directory.iterdir()):
        gone = remove_tree(entry) if entry.is_dir() else remove_file(entry)
        if not gone:
            left.append(entry.name)
    return left


def atomic_write(
    path: Path, data: bytes, *, point: str | None = None, durable: bool = True
) -> None:
    """Replace `path` with `data` so a reader sees the old or the new content, never a mix.

    Writes a temporary file beside it, fsyncs it, renames it over `path`, fsyncs the directory.
    `point` labels the crash points between those steps (index.crashpoints.ATOMIC_STEPS).
    `durable=False` leaves out both fsyncs, for a cache only: a killed process still leaves the
    old content or the new, but after a power cut the file may be empty or cut short, which
    its reader must take for a miss.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    replaced = False
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            if point:
                crash_point(f"{point}:before-fsync")
            if durable:
                os.fsync(f.fileno())
        if point:
            crash_point(f"{point}:before-replace")
        replace_with_retry(tmp, path)
        replaced = True
    finally:
        if not replaced:
            remove_file(tmp)  # if held, it stays: killed_writes() finds it after this process
    if point:
        crash_point(f"{point}:after-replace")
    if durable:
        fsync_dir(path.parent)
    if point:
        crash_point(f"{point}:after-dir-fsync")


def process_alive(pid: int) -> bool:
    """Whether a process with this id exists (signal 0; on Windows, OpenProcess)."""
    if sys.platform == "win32":
        return _windows_process_alive(pid)  # signal 0 would terminate it there
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


def _windows_process_alive(pid: int) -> bool:
    """OpenProcess answers for a running process (or refuses with access denied, which also
    means it exists); a process that has exited still has a handle until the last one closes,
    so its exit code tells it apart. Anything unexpected counts as alive: a live write's
    temporary file must never be swept."""
    if sys.platform != "win32":
        return True
    import ctypes
    from ctypes import wintypes

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
    kernel32.OpenProcess.restype = wintypes.HANDLE
    kernel32.OpenProcess.argtypes = [wintypes.DWORD, wintypes.BOOL, wintypes.DWORD]
    handle = kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
    if not handle:
        return ctypes.get_last_error() != 87  # ERROR_INVALID_PARAMETER: no such process
    try:
        code = wintypes.DWORD()
        if not kernel32.GetExitCodeProcess(handle, ctypes.byref(code)):
            return True
        return code.value == 259  # STILL_ACTIVE
    finally:
        kernel32.CloseHandle(handle)


def killed_writes(directory: Path) -> list[Path]:
    """Temporary files atomic_write left in `directory` when its process died before the
    rename (their names carry the dead process's id)."""
    out = []
    for tmp in directory.glob(".*.tmp"):
        pid = tmp.name.rsplit(".", 2)[-2]
        if pid.isdigit() and not process_alive(int(pid)):
            out.append(tmp)
    return out


def map_file(path: Path) -> Mapped:
    """Map a whole file read-only; an empty file (which mmap refuses) maps to b"".

    The caller closes the map once no array made from it is alive (closing a map that numpy
    still views raises BufferError; Windows cannot delete a mapped file).
    """
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return b""
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


def close_map(mapped: Mapped) -> None:
    if isinstance(mapped, mmap.mmap):
        mapped.close()
