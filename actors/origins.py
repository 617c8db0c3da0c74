"""Where each imported document's file came from: source → absolute path, per collection.

Recorded for every import (CLI and UI alike) in collections/<name>/origins.json, so the source
viewer can draw a PDF's pages and a failed document can be retried. It is a hint, never a
truth: whoever reads a path checks the file's hash against the snapshot before trusting it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import msgspec

from actors.discovery import discover
from engine.paths import DataDir
from index.fsutil import atomic_write

ORIGINS_FILE = "origins.json"
# Before every import recorded its origins, only the UI did, here (HOME/ui/origins/<name>.json).
_LEGACY_DIR = ("ui", "origins")

_decoder = msgspec.json.Decoder(dict[str, str])


def origins_of(paths: Sequence[Path]) -> dict[str, str]:
    """source → absolute file path, named exactly as the import of `paths` will name them."""
    targets, _, _ = discover(paths)
    return {t.source: str(t.path) for t in targets}


class Origins:
    """The origins of one collection. Small quick file operations; call from a thread."""

    def __init__(self, data: DataDir, collection: str) -> None:
        self.path = data.collection(collection) / ORIGINS_FILE
        self._legacy = data.root.joinpath(*_LEGACY_DIR, f"{collection}.json")

    def load(self) -> dict[str, str]:
        self._migrate()
        return _read(self.path)

    def get(self, source: str) -> str | None:
        return self.load().get(source)

    def remember(self, found: Mapping[str, str]) -> None:
        """Add or update the origins of `found` (the newest import of a source wins)."""
        if not found:
            return
        current = self.load()
        merged = {**current, **found}
        if merged != current:
            self._write(merged)

    def _write(self, origins: Mapping[str, str]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(self.path, msgspec.json.encode(dict(sorted(origins.items()))))

    def _migrate(self) -> None:
        """Fold the UI's old per-collection file into this one (once), then remove it."""
        if not self._legacy.is_file():
            return
        legacy = _read(self._legacy)
        current = _read(self.path)
        if legacy:
            self._write({**legacy, **current})
        self._legacy.unlink(missing_ok=True)


def _read(path: Path) -> dict[str, str]:
    try:
        return _decoder.decode(path.read_bytes())
    except (FileNotFoundError, NotADirectoryError, msgspec.DecodeError, msgspec.ValidationError):
        return {}
