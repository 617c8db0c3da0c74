"""The import journal: which job is running and which of its documents are finished.

After the process is killed, the next import reads it and resumes: finished documents are
found in the document and embedding caches, so nothing is parsed or embedded twice. Appends
are fsynced one line at a time; a torn last line is ignored. On Windows a scanner may hold
any of its files for a moment: removals retry, and a progress write that is refused is skipped
(the next one, half a second later, says the same and more).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import msgspec

from engine.crashpoints import crash_point
from engine.versions.formats import JOURNAL_FORMAT
from index.fsutil import atomic_write, remove_file, replace_with_retry


class JobTarget(msgspec.Struct, frozen=True):
    path: str  # absolute path of the file or folder the user named
    explicit: bool = True  # named by the user (not found by walking a folder)


class Job(msgspec.Struct, frozen=True, kw_only=True):
    format_version: int = JOURNAL_FORMAT
    job_id: str
    collection: str
    created_at: str
    targets: tuple[JobTarget, ...]
    # Sources `citewise remove` takes out: a killed removal resumes like a killed import.
    removals: tuple[str, ...] = ()


class DoneEntry(msgspec.Struct, frozen=True, kw_only=True):
    source: str
    content_hash: str
    status: str  # "ok" | "failed"
    blocks: int = 0
    stage: str = ""
    reason: str = ""


_done_decoder = msgspec.json.Decoder(DoneEntry)


class Journal:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.job_file = directory / "job.json"
        self.done_file = directory / "done.jsonl"
        self.progress_file = directory / "progress.json"

    def load(self) -> Job | None:
        try:
            return msgspec.json.decode(self.job_file.read_bytes(), type=Job)
        except FileNotFoundError:
            return None
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None  # a damaged journal only costs the resume, never data

    def start(self, job: Job) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        if not remove_file(self.done_file):  # held: empty it, a new job starts with no entries
            with open(self.done_file, "wb") as f:
                os.fsync(f.fileno())
        atomic_write(self.job_file, msgspec.json.encode(job), point="journal.job")

    def record(self, entry: DoneEntry) -> None:
        line = msgspec.json.encode(entry) + b"\n"
        fd = os.open(self.done_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, line)
            crash_point("journal.done:before-fsync")
            os.fsync(fd)
        finally:
            os.close(fd)
        crash_point("journal.done:after-fsync")

    def done(self) -> list[DoneEntry]:
        try:
            raw = self.done_file.read_bytes()
        except FileNotFoundError:
            return []
        out = []
        for line in raw.splitlines():
            try:
                out.append(_done_decoder.decode(line))
            except (msgspec.DecodeError, msgspec.ValidationError):
                continue  # torn by a crash mid-append
        return out

    def write_progress(self, data: bytes) -> None:
        """Progress for `citewise status` in another process: replaced, not fsynced (it is
        rewritten every half second and worthless after a crash)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = self.progress_file.with_suffix(".tmp")
        tmp.write_bytes(data)
        with contextlib.suppress(PermissionError):  # someone reads the last one: next time
            replace_with_retry(tmp, self.progress_file)

    def read_progress(self) -> bytes | None:
        try:
            return self.progress_file.read_bytes()
        except FileNotFoundError:
            return None

    def finish(self) -> None:
        # A job file that stays held makes the next import resume a job whose documents are
        # all in the caches: a merge, never lost data.
        for f in (self.job_file, self.done_file, self.progress_file):
            remove_file(f)
        # Temporary files of writes killed before their rename (journals are written only
        # under the writer lock, which the finishing import holds, so none is in use).
        if self.directory.is_dir():
            for tmp in self.directory.glob("*.tmp"):  # pathlib's * matches dot-files too
                remove_file(tmp)
