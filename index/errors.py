"""Every exception index/ raises on purpose, in one flat module.

index/ imports nothing else of the project, so these are plain exceptions; the layers above
translate them into the user's terms (actors/catalog.py turns a damaged manifest into
SnapshotDamaged, with the way to repair it). OSError and msgspec errors are translated where
they enter, in the module that reads the file.
"""

from __future__ import annotations


class SnapshotError(Exception):
    """A snapshot directory that is missing, incomplete, corrupt or of an unknown format."""


class ManifestDamaged(SnapshotError):
    """A snapshot's manifest.json exists but cannot be read or decoded."""
