"""Names and paths as a Windows user's files bring them: a Chinese user name in the profile
path, folders deeper than 260 characters, document names that differ only in case or look like
devices, CRLF text, a file another program holds while importing; collection names that
Windows would fold into one folder. Each works, or is refused in words, and nothing is lost."""

from __future__ import annotations

import builtins
import errno
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

import index.fsutil
from actors.catalog import Catalog
from actors.collections import collection_names, create_collection, rename_collection
from actors.errors import AppError
from actors.ingest import ImportResult
from actors.upgrade import open_data
from engine.errors import DataPathTooLong, InvalidCollectionName
from engine.file_access import read_failure
from engine.paths import DataDir, check_collection_name, check_path_length, data_home
from index.snapshot import verify_snapshot
from tests.corpus import make_app
from tests.windows.semantics import SHARING_VIOLATION, windows_error
from web.error_view import error_sentence
from web.i18n import Texts

LONG = "Documents and Settings of a rather long user name"  # 49 characters a folder


@dataclass
class Library:
    root: Path
    docs: Path
    locked: ImportResult  # while locked.md was held by another program
    released: ImportResult  # after it was closed
    documents: dict[str, str]  # source → doc_id
    search: dict[str, list[dict[str, Any]]]  # query → blocks found
    block_texts: dict[str, list[str]]  # source → every block's text


FILES = {
    "Notes.md": "# Upper\n\nThe capital Notes talk about basalt columns.\n",
    "notes.md": "# Lower\n\nThe small notes talk about granite tors.\n",
    "CON.md": "# Console\n\nA device name holding text about lighthouses.\n",
    "nul.txt": "Null device name, text about tide pools.\n",
    "aux/readme.md": "# Aux\n\nA folder named like a device, text about sand dunes.\n",
    "reports. /summary.md": "# Summary\n\nA folder ending in a dot and a space, about estuaries.\n",
    "notes.md.": "a trailing dot: no type Citewise reads\n",
    "locked.md": "# Locked\n\nThe held file talks about volcanic ash.\n",
}
CRLF = {
    "crlf.txt": b"Line one about glaciers.\r\nLine two about moraines.\r\n\r\n"
    b"Second paragraph about fjords.\r\n",
    "crlf.md": b"# Ice\r\n\r\nIce sheets move slowly.\r\n\r\n"
    b"## Melt\r\n\r\nMeltwater cuts valleys.\r\n",
}
QUERIES = ["basalt columns", "granite tors", "moraines", "fjords", "volcanic ash", "estuaries"]


def _held_by_another_program(name: str) -> Callable[..., Any]:
    """open() as Windows answers while another program holds `name` with no read sharing."""

    def fake_open(file: Any, *args: Any, **kw: Any) -> Any:
        if Path(str(file)).name == name:
            raise windows_error(SHARING_VIOLATION, str(file), "being used by another process")
        return builtins.open(file, *args, **kw)

    return fake_open


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Library:
    base = tmp_path_factory.mktemp("profile")
    root = base.joinpath("Users", "用户", "张三", "AppData", "Local", *[LONG] * 4, "Citewise")
    docs = base.joinpath("Users", "用户", "张三", "文档", *[LONG] * 5)
    for rel, text in FILES.items():
        (docs / rel).parent.mkdir(parents=True, exist_ok=True)
        (docs / rel).write_text(text, encoding="utf-8")
    for rel, raw in CRLF.items():
        (docs / rel).write_bytes(raw)

    async def go() -> Library:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(index.fsutil, "open", _held_by_another_program("locked.md"), raising=False)
            app = make_app(root)
            try:
                locked = await app.import_paths([docs])
            finally:
                await app.aclose()
        app = make_app(root)
        try:
            released = await app.import_paths([docs])
            listed = json.loads((await app.run_tool("list_documents", {})).json)
            search = {}
            for q in QUERIES:
                found = json.loads((await app.run_tool("search_blocks", {"query": q})).json)
                search[q] = list(found["blocks"])
        finally:
            await app.aclose()
        documents = {d["source_label"]: d["doc_id"] for d in listed["documents"]}
        catalog = Catalog(DataDir(root), "default")
        texts: dict[str, list[str]] = {}
        with catalog.pin_active() as snap:
            assert snap is not None
            for i in range(snap.n_blocks):
                block = snap.block(i)
                source = next(s for s, d in documents.items() if d == block.doc_id)
                texts.setdefault(source, []).append(block.text)
        return Library(root, docs, locked, released, documents, search, texts)

    return anyio.run(go, backend="trio")


def _found(library: Library, query: str) -> set[str]:
    return {b["source_label"] for b in library.search[query][:3]}


def test_a_chinese_user_profile_deeper_than_260_characters_holds_a_working_library(
    library: Library,
) -> None:
    assert "用户/张三" in library.root.as_posix() and len(str(library.root)) > 260
    assert len(str(library.docs / "reports. " / "summary.md")) > 300
    assert data_home(environ={"CITEWISE_HOME": str(library.root)}) == library.root
    assert library.released.status == "ready", library.released
    manifest = Catalog(DataDir(library.root), "default").active_manifest()
    assert manifest is not None
    snapshot = DataDir(library.root).snapshots("default") / manifest.snapshot_id
    assert verify_snapshot(snapshot).ok
    assert "summary.md" in "".join(_found(library, "estuaries"))  # imported and found


def test_documents_whose_names_differ_only_in_case_stay_two_documents(library: Library) -> None:
    assert library.documents["Notes.md"] != library.documents["notes.md"]
    assert "Notes.md" in _found(library, "basalt columns")
    assert "notes.md" in _found(library, "granite tors")


def test_documents_named_like_devices_or_with_trailing_dots_are_imported(
    library: Library,
) -> None:
    assert {"CON.md", "nul.txt", "aux/readme.md", "reports. /summary.md"} <= set(library.documents)
    assert [s.source for s in library.released.skipped] == ["notes.md."]  # a type, not a failure
    assert not library.released.failed_documents


def test_crlf_text_files_become_blocks_without_carriage_returns(library: Library) -> None:
    for source in CRLF:
        assert library.block_texts[source], source
        assert not any("\r" in text for text in library.block_texts[source]), source
    assert "crlf.txt" in _found(library, "moraines")
    txt = " ".join(library.block_texts["crlf.txt"])
    assert "Line two about moraines." in txt and "Second paragraph about fjords." in txt
    md = library.block_texts["crlf.md"]
    assert any("Meltwater cuts valleys." in t for t in md) and not any("##" in t for t in md)


def test_a_file_another_program_holds_fails_alone_in_words_and_comes_in_once_closed(
    library: Library,
) -> None:
    assert library.locked.status == "ready_partial"
    (failed,) = library.locked.failed_documents
    assert (failed.source, failed.stage, failed.reason) == ("locked.md", "read", "in_use")
    assert "open in another program" in failed.message and "close it" in failed.message
    assert "Close it there" in Texts("en")("fail.in_use")
    assert "关闭" in Texts("zh")("fail.in_use")
    assert library.released.status == "ready"
    assert "locked.md" in library.documents and "locked.md" in _found(library, "volcanic ash")
    assert {"Notes.md", "notes.md", "crlf.txt"} <= set(library.documents)  # nothing lost


def test_why_a_file_cannot_be_read_is_told_apart() -> None:
    lock = OSError(errno.EACCES, "locked a portion")
    lock.winerror = 33  # type: ignore[attr-defined]  # ERROR_LOCK_VIOLATION (Excel)
    assert read_failure(lock)[0] == "in_use"
    assert read_failure(OSError(errno.EBUSY, "busy"))[0] == "in_use"
    gone = read_failure(FileNotFoundError(errno.ENOENT, "no such file"))
    assert gone[0] == "unreadable" and "moved or deleted" in gone[1]
    denied = read_failure(PermissionError(errno.EACCES, "denied"))
    assert denied[0] == "unreadable" and "not allowed" in denied[1]


# -- collection names --------------------------------------------------------------------------
def test_collection_names_that_windows_folds_into_one_folder_are_refused_in_words(
    tmp_path: Path,
) -> None:
    data = DataDir(tmp_path / "home").ensure()
    create_collection(data, "Physics")
    (data.collection("Physics") / "keep.txt").write_text("mine", encoding="utf-8")
    for name in ("physics", "PHYSICS", "Default"):
        with pytest.raises(AppError) as refused:
            create_collection(data, name)
        assert refused.value.code == "collection_case_twin"
        for lang, word in (("en", "upper and lower case"), ("zh", "大小写")):
            sentence = error_sentence(Texts(lang), refused.value)
            assert word in sentence and name in sentence, sentence
    create_collection(data, "chemistry")
    with pytest.raises(AppError, match="only in upper and lower case"):
        rename_collection(data, "chemistry", "PHYSICS")
    assert sorted(collection_names(data)) == ["Physics", "chemistry", "default"]


def test_a_collection_renamed_only_in_case_keeps_its_files(tmp_path: Path) -> None:
    data = DataDir(tmp_path / "home").ensure()
    create_collection(data, "physics")
    (data.collection("physics") / "keep.txt").write_text("mine", encoding="utf-8")
    rename_collection(data, "physics", "Physics")
    assert collection_names(data) == ["Physics", "default"]
    assert (data.collection("Physics") / "keep.txt").read_text(encoding="utf-8") == "mine"
    assert not list(data.collections.glob(".rename-*"))


@pytest.mark.parametrize(
    "name", ["CON", "prn.txt", "Aux.notes", "NUL", "com1", "LPT9.x", "COM¹", "lpt³", "notes.", "a "]
)
def test_device_names_and_trailing_dots_or_spaces_are_refused_as_collection_names_in_words(
    name: str,
) -> None:
    with pytest.raises(InvalidCollectionName) as refused:
        check_collection_name(name)
    assert Texts("en")(refused.value.message_key).startswith("That name cannot be used")
    assert "文件夹名" in Texts("zh")(refused.value.message_key)


# -- paths beyond 260 characters on Windows ----------------------------------------------------
PROFILE = r"C:\Users\Christopher.Vanderbilt-Smith\AppData\Local\Citewise"


def test_an_ordinary_windows_profile_fits_even_the_longest_collection_name() -> None:
    for name in ("default", "x" * 64):
        check_path_length(Path(PROFILE), name, system="win32", long_paths=False)
    deep = Path(PROFILE + "\\" + "\\".join([LONG] * 2))
    with pytest.raises(DataPathTooLong, match="260 characters"):
        check_path_length(deep, system="win32", long_paths=False)
    check_path_length(deep, system="win32", long_paths=True)  # the policy is on: it fits
    check_path_length(deep, system="linux")


def test_on_windows_a_data_folder_too_deep_is_refused_at_start_before_anything_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("engine.paths._SYSTEM", "win32")
    monkeypatch.setattr("engine.paths.windows_long_paths_enabled", lambda: False)
    root = tmp_path.joinpath(*[LONG] * 3, "Citewise")
    with pytest.raises(DataPathTooLong) as refused:
        open_data(root, "import")
    assert "nothing was written" in str(refused.value) and not root.exists()
    for lang, words in (("en", "260 characters"), ("zh", "260 个字符")):
        assert words in error_sentence(Texts(lang), refused.value)
    assert open_data(root, "version").state == "new"  # --version still answers


def test_on_windows_a_collection_name_too_long_for_its_folder_is_refused_in_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("engine.paths._SYSTEM", "win32")
    monkeypatch.setattr("engine.paths.windows_long_paths_enabled", lambda: False)
    data = DataDir(tmp_path / ("d" * max(1, 100 - len(str(tmp_path))))).ensure()
    assert len(str(data.root)) >= 100  # the default collection fits, a 64-character name not
    create_collection(data, "short")
    with pytest.raises(DataPathTooLong, match="collection name"):
        create_collection(data, "n" * 64)
    with pytest.raises(DataPathTooLong):
        rename_collection(data, "short", "n" * 64)
    assert collection_names(data) == ["default", "short"]


def test_a_document_path_windows_cannot_open_is_named_as_such() -> None:
    deep = "C:\\" + "\\".join([LONG] * 6) + "\\notes.md"
    missing = FileNotFoundError(errno.ENOENT, "The system cannot find the path specified", deep)
    reason, message = read_failure(missing, system="win32")
    assert reason == "path_too_long" and "260" in message
    assert read_failure(missing, system="linux")[0] == "unreadable"
    assert "260" in Texts("en")("fail.path_too_long") and "260" in Texts("zh")("fail.path_too_long")
