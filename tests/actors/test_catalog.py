"""The catalog: atomic active pointer, rollback, pins that GC respects, lazy clean-up."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from actors.catalog import Catalog
from actors.errors import CatalogError, SnapshotDamaged
from engine.paths import DataDir
from tests.actors.test_ingest import imported, notes
from tests.corpus import make_app

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["trio", "asyncio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_activating_an_older_snapshot_is_a_rollback(tmp_path: Path) -> None:
    folder = notes(tmp_path / "n", **{"a.md": "# A\n\nversion one\n"})
    root = tmp_path / "home"
    first = await imported(make_app(root), folder)
    (folder / "a.md").write_text("# A\n\nversion two\n", encoding="utf-8")
    second = await imported(make_app(root), folder)
    catalog = Catalog(DataDir(root), "default")
    assert catalog.active_id() == second.snapshot_id  # type: ignore[attr-defined]
    catalog.activate(first.snapshot_id)  # type: ignore[attr-defined]
    assert catalog.active_id() == first.snapshot_id  # type: ignore[attr-defined]
    with catalog.pin_active() as snap:
        assert snap is not None
        assert "version one" in snap.block(0).text or any(
            "version one" in snap.block(i).text for i in range(snap.n_blocks)
        )
    assert not list(catalog.root.glob("*.tmp*")), "the pointer replacement left a temp file"
    with pytest.raises(CatalogError, match="does not exist"):
        catalog.activate("s-nope")


async def test_a_damaged_pointer_is_reported_with_the_way_out(tmp_path: Path) -> None:
    catalog = Catalog(DataDir(tmp_path), "default").ensure()
    catalog.pointer.write_bytes(b"\x00garbage")
    with pytest.raises(CatalogError, match="snapshots activate"):
        catalog.active_id()


async def test_a_damaged_active_manifest_is_reported_with_the_way_out_not_as_no_snapshot(
    tmp_path: Path,
) -> None:
    folder = notes(tmp_path / "n", **{"a.md": "# A\n\nversion one\n"})
    root = tmp_path / "home"
    first = await imported(make_app(root), folder)
    (folder / "a.md").write_text("# A\n\nversion two\n", encoding="utf-8")
    second = await imported(make_app(root), folder)
    catalog = Catalog(DataDir(root), "default")
    damaged = catalog.snapshot_path(second.snapshot_id) / "manifest.json"  # type: ignore[attr-defined]
    damaged.write_bytes(damaged.read_bytes()[:25])  # a manifest cut off mid-write
    with pytest.raises(SnapshotDamaged, match="snapshots activate") as caught:
        catalog.active_manifest()
    assert isinstance(caught.value, CatalogError)  # every front end already shows those
    assert caught.value.snapshot_id == second.snapshot_id  # type: ignore[attr-defined]
    assert "active snapshot" in str(caught.value) and "manifest.json is corrupt" in str(
        caught.value
    )
    with pytest.raises(SnapshotDamaged, match="import the documents again"), catalog.pin_active():
        pass
    app = make_app(root)
    try:
        with pytest.raises(SnapshotDamaged, match="is damaged"):
            app.status()
    finally:
        await app.aclose()
    # The way out the message names: the list still offers the earlier snapshot.
    assert [m.snapshot_id for m in catalog.list()] == [first.snapshot_id]  # type: ignore[attr-defined]
    catalog.activate(first.snapshot_id)  # type: ignore[attr-defined]
    manifest = catalog.active_manifest()
    assert manifest is not None and manifest.snapshot_id == first.snapshot_id  # type: ignore[attr-defined]


async def test_a_damaged_manifest_is_not_a_missing_snapshot(tmp_path: Path) -> None:
    folder = notes(tmp_path / "n", **{"a.md": "# A\n\nversion one\n"})
    root = tmp_path / "home"
    first = await imported(make_app(root), folder)
    sid = first.snapshot_id  # type: ignore[attr-defined]
    catalog = Catalog(DataDir(root), "default")
    (catalog.snapshot_path(sid) / "manifest.json").write_bytes(b"")
    with pytest.raises(SnapshotDamaged, match=f"snapshot {sid} of collection 'default'"):
        catalog.manifest(sid)
    with pytest.raises(SnapshotDamaged, match="is damaged"):
        catalog.activate(sid)
    assert catalog.manifest("s-never-built") is None


async def test_pinned_reader_keeps_answering_while_newer_snapshots_replace_and_gc_its_own(
    tmp_path: Path,
) -> None:
    folder = notes(tmp_path / "n", **{"a.md": "# Apples\n\nApples grow on trees in orchards.\n"})
    root = tmp_path / "home"
    first = await imported(make_app(root), folder)
    catalog = Catalog(DataDir(root), "default")
    old_id = first.snapshot_id  # type: ignore[attr-defined]
    answers: list[list[int]] = []
    with catalog.pinned(old_id) as snap:
        expected = [o for o, _ in snap.bm25_search("orchards", 5)]
        assert expected
        done = anyio.Event()

        async def reader() -> None:
            while not done.is_set():
                answers.append([o for o, _ in snap.bm25_search("orchards", 5)])
                assert "orchards" in snap.block(expected[0]).text
                await anyio.sleep(0.005)

        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            for i in range(3):  # three newer snapshots with keep_last=1 → GC wants the old one
                (folder / "a.md").write_text(f"# Apples\n\nversion {i}\n", encoding="utf-8")
                app = make_app(root, snapshots={"keep_last": 1})
                await imported(app, folder)
            done.set()
        assert catalog.active_id() != old_id
        assert catalog.manifest(old_id) is not None, "a pinned snapshot was deleted"
        report = catalog.gc(keep_last=1, keep_days=0)
        assert old_id in report.pinned
    assert answers and all(a == expected for a in answers)
    report = catalog.gc(keep_last=1, keep_days=0)
    assert old_id in report.deleted
    assert catalog.manifest(old_id) is None
    assert [m.snapshot_id for m in catalog.list()] == [catalog.active_id()]


async def test_gc_removes_unfinished_builds_but_never_the_active_snapshot(tmp_path: Path) -> None:
    folder = notes(tmp_path / "n", **{"a.md": "# A\n\ntext\n"})
    root = tmp_path / "home"
    result = await imported(make_app(root), folder)
    catalog = Catalog(DataDir(root), "default")
    dead = catalog.snapshots_dir / "s20000101-000000-000000-dead"
    dead.mkdir()
    (dead / "blocks.meta").write_bytes(b"half")
    report = catalog.gc(keep_last=1, keep_days=0)
    assert dead.name in report.deleted and not dead.exists()
    assert catalog.active_id() == result.snapshot_id  # type: ignore[attr-defined]
    assert catalog.manifest(result.snapshot_id) is not None  # type: ignore[attr-defined]


def test_gc_removes_temporary_files_of_killed_writes_in_the_collection(tmp_path: Path) -> None:
    """An import killed while it wrote origins.json leaves `.origins.json.<pid>.tmp`; a write
    of a live process (this one) is left alone."""
    catalog = Catalog(DataDir(tmp_path / "home"), "default")
    catalog.root.mkdir(parents=True)
    dead = catalog.root / ".origins.json.999999999.tmp"  # no such process
    live = catalog.root / f".origins.json.{os.getpid()}.tmp"
    dead.write_text("{")
    live.write_text("{")
    catalog.gc(keep_last=1, keep_days=0)
    assert not dead.exists() and live.exists()
