"""The `windows_semantics` fixture: this test's file operations behave as on Windows."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.windows.semantics import WindowsSemantics


@pytest.fixture
def windows_semantics(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> WindowsSemantics:
    """Held files cannot be deleted or renamed; set `.interference` for a random scanner."""
    if not Path("/proc/self/maps").exists() or sys.platform == "win32":
        pytest.skip("the simulation reads /proc; on Windows the real rules apply anyway")
    return WindowsSemantics(roots=(tmp_path,)).install(monkeypatch)
