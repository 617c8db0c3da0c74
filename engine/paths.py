"""Where Citewise keeps its data: one directory, from platformdirs or CITEWISE_HOME.

Nothing is ever written outside it. Layout:

    HOME/config.toml
    HOME/writer.lock                          one writer process per data directory
    HOME/cache/embeddings.sqlite              content-addressed embeddings
    HOME/cache/documents/                     parsed + chunked documents, content-addressed
    HOME/collections/<name>/ACTIVE            the active pointer (replaced atomically)
    HOME/collections/<name>/snapshots/<id>/   immutable snapshots
    HOME/collections/<name>/journal/          import journal (resume after a crash)
"""

from __future__ import annotations

import ntpath
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import platformdirs
import platformdirs.api
import platformdirs.windows

# Still imported from here by actors/app.py.
from engine.errors import DataPathTooLong
from engine.errors import InvalidCollectionName as InvalidCollectionName

APP_NAME = "Citewise"
_COLLECTION_NAME = re.compile(r"[\w][\w .-]{0,63}")  # fullmatch: `$` would let "a\n" through


# Folder names Windows reserves for devices (also with any extension): "CON", "nul.txt", …,
# and COM or LPT with a superscript digit ("COM¹"), which Windows counts as a digit there.
_WINDOWS_DEVICES = frozenset(
    {"con", "prn", "aux", "nul"}
    | {f"{d}{i}" for d in ("com", "lpt") for i in [*range(1, 10), "¹", "²", "³"]}
)


def data_home(environ: dict[str, str] | None = None, system: str = sys.platform) -> Path:
    """CITEWISE_HOME, else the per-user data directory of this OS.

    On Windows that is the local, not the roaming, profile (%LOCALAPPDATA%\\Citewise): gigabytes
    of snapshots must not be copied to a domain server at every logon.
    """
    env = os.environ if environ is None else environ
    override = env.get("CITEWISE_HOME")
    if override:
        return Path(override).expanduser().resolve()
    if system == "win32":
        folders: platformdirs.api.PlatformDirsABC = platformdirs.windows.Windows(
            APP_NAME, appauthor=False, roaming=False
        )
    else:
        folders = platformdirs.PlatformDirs(APP_NAME, appauthor=False, roaming=False)
    return Path(folders.user_data_dir)


def long_path(path: str | os.PathLike[str], system: str = sys.platform) -> str:
    """A path Windows APIs accept beyond 260 characters (the `\\\\?\\` form); elsewhere as is."""
    text = os.fspath(path)
    if system != "win32" or text.startswith("\\\\?\\"):
        return text
    text = ntpath.abspath(text) if sys.platform == "win32" else ntpath.normpath(text)
    if text.startswith("\\\\"):  # \\server\share\… → \\?\UNC\server\share\…
        return "\\\\?\\UNC\\" + text[2:]
    return "\\\\?\\" + text


WINDOWS_MAX_PATH = 259  # MAX_PATH less its terminating NUL
_SYSTEM = sys.platform  # read at each check (tests of the Windows rules set it)


def deepest_path(root: Path, collection: str = "default") -> int:
    """The length of the longest path Citewise writes for a collection: a backup's copy of a
    snapshot file (a backup id of 35 characters, a snapshot id of 28, the longest file name)."""
    inside = f"backups/.partial-{'b' * 35}/collections/{collection}/snapshots/{'s' * 28}/"
    return len(str(root)) + 1 + len(inside) + len("section_paths.msgpack")


def windows_long_paths_enabled() -> bool:
    """Whether Windows lets programs that declare it (Python and the frozen build do) use
    paths beyond 260 characters: the LongPathsEnabled policy, off by default."""
    try:
        import winreg
    except ImportError:
        return False
    try:
        with winreg.OpenKey(  # type: ignore[attr-defined,unused-ignore]
            winreg.HKEY_LOCAL_MACHINE,  # type: ignore[attr-defined,unused-ignore]
            r"SYSTEM\CurrentControlSet\Control\FileSystem",
        ) as key:
            value, _ = winreg.QueryValueEx(key, "LongPathsEnabled")  # type: ignore[attr-defined,unused-ignore]
    except OSError:
        return False
    return bool(value == 1)


def check_path_length(
    root: Path,
    collection: str = "default",
    *,
    system: str | None = None,
    long_paths: bool | None = None,
) -> None:
    """Refuse, before anything is written, a data directory (or a collection name in it) whose
    deepest files Windows could not open: without the long-paths policy a path ends at 260
    characters, and a write that fails half-way through an import or a backup helps nobody."""
    deepest = deepest_path(root, collection)
    if (system or _SYSTEM) != "win32" or deepest <= WINDOWS_MAX_PATH:
        return
    if windows_long_paths_enabled() if long_paths is None else long_paths:
        return
    what = (
        f"the data folder {root} is too deep"
        if collection == "default"
        else f"the collection name {collection!r} is too long for the data folder {root}"
    )
    raise DataPathTooLong(
        f"{what}: Windows (with long paths off, as it is by default) ends a path at 260 "
        f"characters, and the deepest file Citewise keeps there would need {deepest}; nothing "
        "was written. Choose a shorter collection name, set CITEWISE_HOME to a shorter folder "
        '(for example C:\\Citewise), or turn on Windows\' "Enable Win32 long paths" policy '
        "(LongPathsEnabled) and start Citewise again",
        length=deepest,
    )


def check_collection_name(name: str) -> str:
    """A collection name is a folder name: letters, digits, space, '.', '-', '_' (≤ 64)."""
    if not _COLLECTION_NAME.fullmatch(name) or name.strip(" .") != name or name in {".", ".."}:
        raise InvalidCollectionName(
            f"{name!r} is not a valid collection name: use up to 64 letters, digits, spaces, "
            "'.', '-' or '_', not starting or ending with a space or dot"
        )
    if name.split(".")[0].strip().lower() in _WINDOWS_DEVICES:
        raise InvalidCollectionName(
            f"{name!r} cannot be a collection name: Windows reserves it for a device; "
            "choose another name"
        )
    return name


@dataclass(frozen=True)
class DataDir:
    root: Path

    @property
    def config_file(self) -> Path:
        return self.root / "config.toml"

    @property
    def writer_lock(self) -> Path:
        return self.root / "writer.lock"

    @property
    def cache(self) -> Path:
        return self.root / "cache"

    @property
    def embedding_cache(self) -> Path:
        return self.cache / "embeddings.sqlite"

    @property
    def ocr_cache(self) -> Path:
        return self.cache / "ocr.sqlite"

    @property
    def document_cache(self) -> Path:
        return self.cache / "documents"

    @property
    def collections(self) -> Path:
        return self.root / "collections"

    def collection(self, name: str) -> Path:
        return self.collections / check_collection_name(name)

    def snapshots(self, collection: str) -> Path:
        return self.collection(collection) / "snapshots"

    def active_pointer(self, collection: str) -> Path:
        return self.collection(collection) / "ACTIVE"

    def journal(self, collection: str) -> Path:
        return self.collection(collection) / "journal"

    def ensure(self) -> DataDir:
        for d in (self.root, self.cache, self.document_cache, self.collections):
            d.mkdir(parents=True, exist_ok=True)
        return self
