"""Under Windows file rules (a held file cannot be deleted or renamed; a scanner holds files at
random), activation, GC, retention, deleting collections, upgrade, backup/restore, trace
retention and the document cache keep every byte of data and retry what they could not remove.
"""

from __future__ import annotations

import mmap
import os
import shutil
import time
from pathlib import Path

import anyio
import msgspec
import numpy as np
import pytest

from actors.backup import backups, create_backup, finish_restore, restore_backup
from actors.catalog import ActivePointer, Catalog
from actors.collections import delete_collection, rename_collection
from actors.errors import AppError
from actors.ingest import ImportResult
from engine.document_cache import DocumentCache
from engine.errors import UpgradeError, UpgradeUnfinished
from engine.paths import DataDir
from engine.trace import TraceStore
from engine.trace.model import sha256_hex
from engine.trace.store import ORPHAN_GRACE_S
from engine.versions.upgrade import read_stamp, recover
from index.records import DocumentRecord
from index.snapshot import Snapshot, verify_snapshot
from tests.corpus import make_app
from tests.engine.trace.test_store import DAY, tid, trace_ops
from tests.upgrade.formats_v2 import TRACES, make_v1_home, tree, upgrade_v2
from tests.upgrade.test_upgrade import assert_new_data_complete, assert_old_data_intact
from tests.windows.semantics import SHARING_VIOLATION, WindowsSemantics

pytestmark = pytest.mark.windows_semantics


@pytest.fixture(scope="module")
def v1_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory as this build writes it: a snapshot, traces, settings (format set v1)."""
    base = tmp_path_factory.mktemp("v1-windows-semantics")
    return make_v1_home(base / "home", base / "docs")


@pytest.fixture(scope="module")
def library(v1_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same with a second snapshot of the default collection (the second active)."""
    base = tmp_path_factory.mktemp("two-snapshots")
    shutil.copytree(v1_template, base / "home")
    (base / "notes").mkdir()
    (base / "notes" / "rivers.md").write_text("# Rivers\n\nThe Rhine flows north.\n")
    app = make_app(base / "home")

    async def go() -> None:
        try:
            result = await app.import_paths([base / "notes"])
            assert result.status == "ready", result
        finally:
            await app.aclose()

    anyio.run(go, backend="trio")
    return base / "home"


@pytest.fixture
def home(library: Path, tmp_path: Path) -> Path:
    target = tmp_path / "home"
    shutil.copytree(library, target)
    return target


def _snapshots(home: Path) -> tuple[Catalog, str, str]:
    catalog = Catalog(DataDir(home), "default")
    old, new = (m.snapshot_id for m in catalog.list())
    assert catalog.active_id() == new
    return catalog, old, new


def _whole(catalog: Catalog, snapshot_id: str) -> bool:
    return verify_snapshot(catalog.snapshot_path(snapshot_id)).ok


# -- the simulation itself ---------------------------------------------------------------------
def test_the_simulation_refuses_what_windows_refuses_and_nothing_after_release(
    tmp_path: Path, windows_semantics: WindowsSemantics
) -> None:
    folder = tmp_path / "f"
    folder.mkdir()
    data = folder / "data.bin"
    data.write_bytes(b"x" * 4096)
    with open(data, "rb"):
        with pytest.raises(PermissionError) as refused:
            data.unlink()
        assert refused.value.winerror == SHARING_VIOLATION  # type: ignore[attr-defined]
        with pytest.raises(PermissionError):
            folder.rename(tmp_path / "g")  # a folder holding an open file
    fd = os.open(data, os.O_RDONLY)
    view = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    os.close(fd)
    with pytest.raises(PermissionError):
        os.replace(tmp_path / "f" / "data.bin", tmp_path / "moved.bin")  # mapped, handle closed
    view.close()
    array = np.memmap(data, dtype=np.uint8, mode="r")
    with pytest.raises(PermissionError):
        shutil.rmtree(folder)
    assert data.exists()
    del array
    (tmp_path / "other").write_bytes(b"o")
    with pytest.raises(FileExistsError):
        os.rename(tmp_path / "other", data)  # os.rename never overwrites on Windows
    with pytest.raises(PermissionError):
        os.replace(tmp_path / "other", folder)  # nor can anything replace a folder
    shutil.rmtree(folder)  # released: everything goes
    assert not folder.exists()
    assert {r.why for r in windows_semantics.refusals} == {"held", "folder"}


# -- activation, GC and retention --------------------------------------------------------------
def test_gc_keeps_a_snapshot_another_program_maps_and_removes_it_once_released(
    home: Path, windows_semantics: WindowsSemantics
) -> None:
    catalog, old, new = _snapshots(home)
    # A reader that holds no pin here (on Windows: another process) maps the old snapshot.
    reader = Snapshot.open(catalog.snapshot_path(old))
    held_in_trash = catalog.trash / "s-left-by-an-earlier-gc.ab12" / "vectors.bin"
    held_in_trash.parent.mkdir(parents=True)
    held_in_trash.write_bytes(b"v" * 64)
    trash_handle = open(held_in_trash, "rb")  # noqa: SIM115
    try:
        report = catalog.gc(keep_last=1, keep_days=0)
        assert old in report.retry_later and held_in_trash.parent.name in report.retry_later
        assert windows_semantics.held_refusals()
        assert _whole(catalog, old) and _whole(catalog, new)  # nothing half-removed
        assert reader.block(0).text  # the reader is still served
    finally:
        reader.close()
        trash_handle.close()
    report = catalog.gc(keep_last=1, keep_days=0)
    assert report.deleted == [old] and report.retry_later == []
    assert [m.snapshot_id for m in catalog.list()] == [new] and _whole(catalog, new)
    assert not any(catalog.trash.iterdir())


def test_activation_while_a_request_reads_the_old_snapshot_and_a_scanner_interferes(
    home: Path, windows_semantics: WindowsSemantics
) -> None:
    catalog, old, new = _snapshots(home)
    windows_semantics.interference = 0.85  # about one activation in three gives up
    done = refused = 0
    with catalog.pinned(old) as request:
        for i in range(16):
            before = catalog.active_id()
            wanted = (old, new)[i % 2]
            try:
                catalog.activate(wanted)
                done += 1
                assert catalog.active_id() == wanted
            except PermissionError:
                refused += 1
                assert catalog.active_id() == before  # the old pointer, whole
            assert request.block(0).text  # the pinned request reads on throughout
            msgspec.json.decode(catalog.pointer.read_bytes(), type=ActivePointer)
    assert done and refused, (done, refused)  # both outcomes were met
    windows_semantics.interference = 0.0
    catalog.gc(keep_last=2, keep_days=0)
    assert not list(catalog.root.glob(".ACTIVE.*.tmp"))  # no pointer write left behind
    assert _whole(catalog, old) and _whole(catalog, new)


def test_retention_under_a_random_scanner_never_touches_the_active_snapshot(
    home: Path, windows_semantics: WindowsSemantics
) -> None:
    catalog, old, new = _snapshots(home)
    windows_semantics.interference = 0.6
    for _ in range(20):
        report = catalog.gc(keep_last=1, keep_days=0)
        assert catalog.active_id() == new
        assert _whole(catalog, new)
        left = catalog.snapshot_path(old)
        assert not left.exists() or _whole(catalog, old)  # in place and whole, or in trash
        if not report.retry_later and not any(catalog.trash.iterdir()):
            break
    else:
        pytest.fail("GC never finished under the scanner")
    assert windows_semantics.scanner_refusals()
    assert [m.snapshot_id for m in catalog.list()] == [new]


# -- collections -------------------------------------------------------------------------------
def test_a_collection_in_use_is_neither_renamed_nor_deleted_and_a_held_deletion_is_swept(
    home: Path, windows_semantics: WindowsSemantics
) -> None:
    data = DataDir(home)
    catalog, _, new = _snapshots(home)
    reader = Snapshot.open(catalog.snapshot_path(new))
    try:
        for attempt in (
            lambda: rename_collection(data, "default", "archive"),
            lambda: delete_collection(data, "default"),
        ):
            with pytest.raises(AppError) as refused:
                attempt()
            assert refused.value.code == "collection_in_use"
            assert "nothing was changed" in str(refused.value)
        assert _whole(catalog, new) and catalog.active_id() == new
    finally:
        reader.close()
    # A deletion whose files were held after the move waits in the trash until the next GC.
    left = home / "trash" / "physics.a1b2c3" / "snapshots" / "s1" / "text.bin"
    left.parent.mkdir(parents=True)
    left.write_bytes(b"t")
    with open(left, "rb"):
        assert "physics.a1b2c3" in catalog.gc(keep_last=5, keep_days=0).retry_later
    assert catalog.gc(keep_last=5, keep_days=0).retry_later == []
    assert not (home / "trash" / "physics.a1b2c3").exists()
    delete_collection(data, "default")  # released: it goes
    assert not data.collection("default").exists()


# -- upgrade, backup and restore ---------------------------------------------------------------
def test_an_upgrade_whose_switch_meets_an_open_trace_database_finishes_at_the_next_start(
    v1_template: Path, tmp_path: Path, windows_semantics: WindowsSemantics
) -> None:
    home = tmp_path / "home"
    shutil.copytree(v1_template, home)
    before = tree(home)
    running_app = open(home / TRACES, "rb")  # noqa: SIM115  # e.g. a backup tool reading it
    with pytest.raises(UpgradeUnfinished, match="start Citewise again"):
        upgrade_v2(home)
    stamp = read_stamp(home)
    assert stamp is not None and stamp.switching is not None  # committed, waiting to finish
    running_app.close()
    assert_new_data_complete(home, before)  # recover() (the next start) finished the move


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_an_upgrade_under_a_random_scanner_ends_old_and_intact_or_new_and_complete(
    v1_template: Path, tmp_path: Path, windows_semantics: WindowsSemantics, seed: int
) -> None:
    home = tmp_path / "home"
    shutil.copytree(v1_template, home)
    before = tree(home)
    windows_semantics.seed, windows_semantics.interference = seed, 0.35
    windows_semantics.__post_init__()
    try:
        upgrade_v2(home)
        outcome = "done"
    except UpgradeUnfinished:
        outcome = "committed"
    except UpgradeError:
        outcome = "refused"
    windows_semantics.interference = 0.0
    if outcome == "refused":
        assert_old_data_intact(home, before)
    else:
        assert_new_data_complete(home, before)
    assert windows_semantics.scanner_refusals()


def test_a_restore_that_meets_an_open_file_loses_nothing_and_finishes_at_the_next_start(
    v1_template: Path, tmp_path: Path, windows_semantics: WindowsSemantics
) -> None:
    home = tmp_path / "home"
    shutil.copytree(v1_template, home)
    backup = create_backup(home, reason="before an experiment")
    saved = {k: v for k, v in tree(home / "backups" / backup.backup_id).items()}
    saved.pop("backup.json")
    (home / "config.toml").write_text('[ui]\nlanguage = "en"\n', encoding="utf-8")
    running_app = open(home / TRACES, "rb")  # noqa: SIM115
    with pytest.raises(UpgradeUnfinished, match="start Citewise again"):
        restore_backup(home, backup.backup_id)
    assert (home / "restore.json").exists()  # committed: the next start finishes it
    running_app.close()
    finish_restore(home)  # what the next start does (actors.upgrade.open_data)
    now = {k: v for k, v in tree(home).items() if not k.startswith(("backups/", "pins/"))}
    assert {k: v for k, v in now.items() if "/pins/" not in k} == {
        k: v for k, v in saved.items() if "/pins/" not in k
    }
    assert not (home / "restore.json").exists() and not any((home / ".restore").iterdir())
    safety = [b for b in backups(home) if b.backup_id.endswith("before-restore")]
    assert len(safety) == 1  # the data it replaced, kept
    recover(home)


# -- trace retention and the document cache ----------------------------------------------------
def test_trace_retention_leaves_a_held_artifact_and_sweeps_it_at_a_later_prune(
    tmp_path: Path, windows_semantics: WindowsSemantics
) -> None:
    now = time.time()
    old_only, new_only = b"only the old trace", b"only the new trace"
    with TraceStore(tmp_path / "traces") as store:
        store.apply(trace_ops(1, started=now - 40 * DAY, artifacts=(old_only,)))  # type: ignore[arg-type]
        store.apply(trace_ops(2, started=now - DAY, artifacts=(new_only,)))  # type: ignore[arg-type]
        path = store.artifact_path(sha256_hex(old_only))
        with open(path, "rb"):  # a diagnostic bundle being written, or a scanner
            store.prune(retention_days=30, max_bytes=10**9, now=now)
            assert path.exists()
        assert [s.trace_id for s in store.list_traces()] == [tid(2)]  # retention did its part
        store.prune(retention_days=30, max_bytes=10**9, now=now + ORPHAN_GRACE_S + 60)
        assert not path.exists()
        assert store.read_artifact(sha256_hex(new_only)) == new_only
    assert windows_semantics.held_refusals()


def test_the_document_cache_treats_a_refused_write_as_a_miss_and_sweeps_dead_writes(
    library: Path, tmp_path: Path, windows_semantics: WindowsSemantics
) -> None:
    some_entry = next((library / "cache" / "documents").rglob("*.msgpack"))
    record = msgspec.msgpack.decode(some_entry.read_bytes(), type=DocumentRecord)
    cache = DocumentCache(tmp_path / "documents")
    windows_semantics.interference = 1.0  # every rename and removal refused
    cache.put("ab" + "0" * 38, record)  # no exception: the import goes on without caching
    assert cache.get("ab" + "0" * 38) is None
    windows_semantics.interference = 0.0
    cache.put("ab" + "0" * 38, record)
    assert cache.get("ab" + "0" * 38) == record
    folder = tmp_path / "documents" / "ab"
    for stray in folder.glob(".*.tmp"):  # the refused write's own (this live process's)
        stray.unlink()
    dead = folder / f".cd{'0' * 38}.msgpack.{2**22 + 7}.tmp"  # a pid no process has
    dead.write_bytes(b"half")
    with open(dead, "rb"):
        assert cache.sweep() == [dead]
    assert cache.sweep() == [] and not dead.exists()
    assert cache.get("ab" + "0" * 38) == record


# -- an import ---------------------------------------------------------------------------------
def test_imports_under_a_random_scanner_land_and_keep_the_earlier_snapshots_whole(
    home: Path, tmp_path: Path, windows_semantics: WindowsSemantics
) -> None:
    catalog, old, _ = _snapshots(home)
    folder = tmp_path / "more"
    folder.mkdir()
    # One operation in five refused: every rename and removal of an import must retry or
    # tolerate it (a single unretried one fails an import about half the time at this rate;
    # six refusals in a row, which the retries give up on, happen once in 15,000 operations).
    windows_semantics.interference = 0.2

    async def go() -> ImportResult:
        app = make_app(home)
        try:
            return await app.import_paths([folder])
        finally:
            await app.aclose()

    for name, text in (("lakes.md", "Baikal is the deepest lake."), ("seas.md", "Seas.")):
        (folder / name).write_text(f"# {name}\n\n{text}\n", "utf-8")
        result = anyio.run(go, backend="trio")
        assert result.status == "ready", result
        manifest = catalog.active_manifest()
        assert manifest is not None and name in {d.source for d in manifest.documents}
    windows_semantics.interference = 0.0
    assert windows_semantics.scanner_refusals()
    assert _whole(catalog, old) and _whole(catalog, catalog.active_id() or "")
