"""The collections of a data directory as folders: listing, creating, renaming, deleting.

App keeps what sits above the folders (its catalog per collection, the current collection);
renaming and deleting hold the writer lock, so no import is writing into the folder meanwhile.
A collection's folder is named after it, so two names that differ only in case would be one
folder on Windows and macOS: such a name is refused while the other exists (refusing cannot
lose data; mapping names to other folder names would need a migration of every library).
"""

from __future__ import annotations

import secrets

from actors.app_state import DEFAULT_COLLECTION
from actors.catalog import Catalog
from actors.errors import AppError
from engine.paths import DataDir, check_collection_name, check_path_length
from engine.writer_lock import writer_lock
from index.fsutil import remove_tree, replace_with_retry, sweep


def collection_names(data: DataDir) -> list[str]:
    """Every collection, the default one always among them, sorted."""
    names = {DEFAULT_COLLECTION}
    if data.collections.is_dir():
        names |= {p.name for p in data.collections.iterdir() if p.is_dir()}
    return sorted(names)


def _same_folder_as(data: DataDir, name: str, *, besides: str = "") -> str | None:
    """The existing collection whose folder `name` would be on a case-insensitive disk."""
    key = name.casefold()
    for other in collection_names(data):
        if other != besides and other != name and other.casefold() == key:
            return other
    return None


def _refuse_case_twin(data: DataDir, name: str, *, besides: str = "") -> None:
    twin = _same_folder_as(data, name, besides=besides)
    if twin is not None:
        raise AppError(
            f"a collection named {twin!r} already exists, and {name!r} differs from it only in "
            "upper and lower case, which Windows and macOS treat as the same folder; choose "
            "another name",
            code="collection_case_twin",
            name=name,
            existing=twin,
        )


def create_collection(data: DataDir, name: str) -> None:
    catalog = Catalog(data, check_collection_name(name))
    if catalog.exists():
        raise AppError(f"collection {name!r} already exists", code="collection_exists", name=name)
    _refuse_case_twin(data, name)
    check_path_length(data.root, name)
    catalog.ensure()


def rename_collection(data: DataDir, old: str, new: str) -> None:
    src, dst = data.collection(old), data.collection(new)
    if not src.is_dir():
        raise AppError(f"there is no collection {old!r}", code="no_collection", name=old)
    case_only = old != new and old.casefold() == new.casefold()
    if not case_only and dst.exists():
        raise AppError(
            f"a collection named {new!r} already exists", code="collection_exists", name=new
        )
    _refuse_case_twin(data, new, besides=old)
    check_path_length(data.root, new)
    with writer_lock(data):
        try:
            if case_only:  # through a third name: a case-insensitive disk sees src == dst
                step = src.with_name(f".rename-{secrets.token_hex(3)}")
                replace_with_retry(src, step)
                replace_with_retry(step, dst)
            else:
                replace_with_retry(src, dst)
        except PermissionError:
            raise _in_use(old, "renamed") from None


def delete_collection(data: DataDir, name: str) -> None:
    """Move the collection out of the app at once, then remove it. What cannot be removed yet
    (a file held open) waits in the data directory's trash for the next clean-up (GC)."""
    path = data.collection(name)
    if not path.is_dir():
        raise AppError(f"there is no collection {name!r}", code="no_collection", name=name)
    with writer_lock(data):
        trash = data.root / "trash"
        trash.mkdir(exist_ok=True)
        sweep(trash)  # earlier deletions that something held
        target = trash / f"{name}.{secrets.token_hex(3)}"
        try:
            replace_with_retry(path, target)
        except PermissionError:
            raise _in_use(name, "deleted") from None
        remove_tree(target)


def _in_use(name: str, done: str) -> AppError:
    return AppError(
        f"collection {name!r} cannot be {done} now: one of its files is open (a question or "
        "an export is reading it, or another program such as a virus scanner or a backup tool "
        "holds it); nothing was changed. Wait for it to finish or close that program, then try "
        "again",
        code="collection_in_use",
        name=name,
    )
