"""The collections of a data directory as folders: listing, creating, renaming, deleting.

App keeps what sits above the folders (its catalog per collection, the current collection);
renaming and deleting hold the writer lock, so no import is writing into the folder meanwhile.
"""

from __future__ import annotations

import secrets
import shutil

from actors.app_state import DEFAULT_COLLECTION
from actors.catalog import Catalog
from actors.errors import AppError
from engine.paths import DataDir, check_collection_name
from engine.writer_lock import writer_lock


def collection_names(data: DataDir) -> list[str]:
    """Every collection, the default one always among them, sorted."""
    names = {DEFAULT_COLLECTION}
    if data.collections.is_dir():
        names |= {p.name for p in data.collections.iterdir() if p.is_dir()}
    return sorted(names)


def create_collection(data: DataDir, name: str) -> None:
    catalog = Catalog(data, check_collection_name(name))
    if catalog.exists():
        raise AppError(f"collection {name!r} already exists", code="collection_exists", name=name)
    catalog.ensure()


def rename_collection(data: DataDir, old: str, new: str) -> None:
    src, dst = data.collection(old), data.collection(new)
    if not src.is_dir():
        raise AppError(f"there is no collection {old!r}", code="no_collection", name=old)
    if dst.exists():
        raise AppError(
            f"a collection named {new!r} already exists", code="collection_exists", name=new
        )
    with writer_lock(data):
        src.rename(dst)


def delete_collection(data: DataDir, name: str) -> None:
    """Move the collection out of the app at once, then remove it (a removal that fails is
    retried by nobody, but the collection is gone from the app either way)."""
    path = data.collection(name)
    if not path.is_dir():
        raise AppError(f"there is no collection {name!r}", code="no_collection", name=name)
    with writer_lock(data):
        trash = data.root / "trash"
        trash.mkdir(exist_ok=True)
        target = trash / f"{name}.{secrets.token_hex(3)}"
        path.rename(target)
        shutil.rmtree(target, ignore_errors=True)
