"""When the document reader's worker processes break, the failure names the right culprit: a
file that crashes the reader is damaged; a reader that cannot start at all is not the file's
fault, and saying "damaged" for every file would send a person hunting for good copies.

The faults are injected the way a real one reaches the workers: anyio's worker processes run
the parent's main module first (as multiprocessing does), so a main module that raises there
is an install whose reader cannot start, and one that makes the reader exit on one file is a
file that crashes it."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import pytest

from actors.ingest import ImportResult
from tests.corpus import make_app, run_import

_CANNOT_START = """
if __name__ == "__mp_main__":
    raise RuntimeError("this install cannot start a document reader")
"""

_CRASHES_ON_ONE_FILE = """
if __name__ == "__mp_main__":
    import os

    import actors.parse_pool as pool

    read = pool.parse_file

    def parse_file(path, limits):
        if "crashes-the-reader" in str(path):
            os._exit(3)  # as a reader library's segmentation fault would
        return read(path, limits)

    pool.parse_file = parse_file
"""


def _import_under(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, main_source: str, *names: str
) -> ImportResult:
    """Import notes named `names` with the workers' main module `main_source`."""
    script = tmp_path / "main_module.py"
    script.write_text(main_source, encoding="utf-8")
    main = ModuleType("__main__")
    main.__file__ = str(script)
    monkeypatch.setitem(sys.modules, "__main__", main)
    folder = tmp_path / "notes"
    folder.mkdir()
    for name in names:
        (folder / name).write_text(f"# {name}\n\nA note with a sentence in it.\n", "utf-8")
    return run_import(make_app(tmp_path / "home"), [folder])


def test_a_reader_that_cannot_start_is_not_called_a_damaged_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    result = _import_under(monkeypatch, tmp_path, _CANNOT_START, "a.md", "b.md")
    failed = {f.source: f for f in result.failed_documents}
    assert len(failed) == 2
    for failure in failed.values():
        assert (failure.stage, failure.reason) == ("parse", "reader_unavailable")
        assert "damaged" not in failure.message and "restart" in failure.message


def test_a_file_that_crashes_the_reader_is_damaged_and_the_others_still_land(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    result = _import_under(
        monkeypatch, tmp_path, _CRASHES_ON_ONE_FILE, "crashes-the-reader.md", "fine.md"
    )
    [failure] = result.failed_documents
    assert failure.source.endswith("crashes-the-reader.md")
    assert (failure.stage, failure.reason) == ("parse", "corrupt")
    assert result.library_documents == 1
