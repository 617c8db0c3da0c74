"""The app's two small state files: which collection is current (state.json) and whether the
first-run wizard was finished (ui/state.json). A missing or unreadable file reads as the
default; both are replaced atomically, never edited in place."""

from __future__ import annotations

from pathlib import Path

import msgspec

from engine.versions.formats import APP_STATE_FORMAT
from index.fsutil import atomic_write

DEFAULT_COLLECTION = "default"


class _State(msgspec.Struct):
    current_collection: str = DEFAULT_COLLECTION
    format_version: int = APP_STATE_FORMAT


class _UiState(msgspec.Struct):  # ui/state.json (engine.versions.formats.UI_STATE_FORMAT)
    first_run_done: bool = False


class AppState:
    def __init__(self, root: Path) -> None:
        self._state = root / "state.json"
        self._ui_state = root / "ui" / "state.json"

    def current_collection(self) -> str:
        try:
            return msgspec.json.decode(self._state.read_bytes(), type=_State).current_collection
        except (FileNotFoundError, msgspec.DecodeError, msgspec.ValidationError):
            return DEFAULT_COLLECTION

    def set_current_collection(self, name: str) -> None:
        atomic_write(self._state, msgspec.json.encode(_State(name)))

    def forget_current_collection(self) -> None:
        self._state.unlink(missing_ok=True)

    def first_run_done(self) -> bool:
        try:
            raw = self._ui_state.read_bytes()
            return msgspec.json.decode(raw, type=_UiState).first_run_done
        except (FileNotFoundError, msgspec.DecodeError, msgspec.ValidationError):
            return False

    def mark_first_run_done(self) -> None:
        self._ui_state.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(self._ui_state, msgspec.json.encode(_UiState(first_run_done=True)))
