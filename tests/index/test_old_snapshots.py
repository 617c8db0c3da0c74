"""Snapshots written by an earlier version keep verifying and opening: fields a later manifest
gained are left out of the content hash while unset, so an upgrade never marks a person's
library as damaged."""

from __future__ import annotations

import shutil
from pathlib import Path

from index.snapshot import Snapshot, verify_snapshot

FIXTURES = Path(__file__).parent / "fixtures"


def test_a_snapshot_written_before_vector_layouts_and_floors_verifies_and_opens(
    tmp_path: Path,
) -> None:
    snapshot = tmp_path / "s"
    shutil.copytree(FIXTURES / "snapshot-before-vector-layouts", snapshot)
    assert "vector_layout" not in (snapshot / "manifest.json").read_text()
    result = verify_snapshot(snapshot)
    assert result.ok, result.problems
    opened = Snapshot.open(snapshot)
    assert opened.manifest.vector_layout is None and opened.manifest.similarity_floor is None
    assert "otters" in opened.block(0).text


def test_changing_an_old_snapshot_is_still_caught(tmp_path: Path) -> None:
    snapshot = tmp_path / "s"
    shutil.copytree(FIXTURES / "snapshot-before-vector-layouts", snapshot)
    manifest = snapshot / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"ready"', '"ready_partial"'))
    assert not verify_snapshot(snapshot).ok
