"""File discovery: what a folder or file named for import becomes, before any file is read."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from actors.discovery import Target, discover, format_of


def test_a_folder_is_walked_in_order_with_hidden_entries_and_unsupported_types_left_out(
    tmp_path: Path,
) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / ".git").mkdir()
    (tmp_path / "b.md").write_text("# B")
    (tmp_path / "sub" / "a.txt").write_text("a")
    (tmp_path / ".hidden.md").write_text("no")
    (tmp_path / ".git" / "x.md").write_text("no")
    (tmp_path / "photo.png").write_bytes(b"\x89PNG")
    targets, skipped, failed = discover([tmp_path])
    assert [t.source for t in targets] == ["b.md", "sub/a.txt"]
    assert targets[0] == Target(tmp_path.resolve() / "b.md", "b.md", 3)
    assert [(s.source, s.reason) for s in skipped] == [("photo.png", "unsupported_type")]
    assert failed == []


def test_a_file_named_explicitly_is_known_by_its_name_and_unsupported_ones_fail(
    tmp_path: Path,
) -> None:
    (tmp_path / "deep").mkdir()
    (tmp_path / "deep" / "notes.md").write_text("# N")
    (tmp_path / "photo.png").write_bytes(b"\x89PNG")
    targets, skipped, failed = discover(
        [tmp_path / "deep" / "notes.md", tmp_path / "photo.png", tmp_path / "missing.pdf"]
    )
    assert [t.source for t in targets] == ["notes.md"]
    assert skipped == []
    assert [(f.source, f.stage, f.reason) for f in failed] == [
        ("photo.png", "read", "unsupported_type"),
        (str(tmp_path / "missing.pdf"), "read", "not_found"),
    ]


def test_the_same_source_named_twice_is_one_target(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A")
    targets, _, _ = discover([tmp_path / "a.md", tmp_path, tmp_path / "a.md"])
    assert [t.source for t in targets] == ["a.md"]


@pytest.mark.skipif(sys.platform != "linux", reason="needs a file system that stores raw bytes")
def test_a_file_name_that_is_not_utf8_fails_alone_shown_with_escapes(tmp_path: Path) -> None:
    (tmp_path / "good.md").write_text("# G")
    with open(os.path.join(os.fsencode(tmp_path), b"bad\xff.md"), "wb") as f:
        f.write(b"# B")
    targets, _, failed = discover([tmp_path])
    assert [t.source for t in targets] == ["good.md"]
    assert [(f.source, f.reason) for f in failed] == [("bad\\xff.md", "bad_name")]


def test_the_format_follows_the_suffix_and_defaults_to_text() -> None:
    assert format_of(Path("a.PDF")) == "pdf"
    assert format_of(Path("a.xhtml")) == "html"
    assert format_of(Path("a.markdown")) == "markdown"
    assert format_of(Path("notes.log")) == "text"


def test_files_of_two_folders_with_the_same_relative_names_all_land_named_by_their_folder(
    tmp_path: Path,
) -> None:
    for folder in ("a", "b", "one/docs", "two/docs"):
        (tmp_path / folder / "sub").mkdir(parents=True)
        (tmp_path / folder / "x.md").write_text(f"# {folder}")
        (tmp_path / folder / "sub" / "y.md").write_text(f"# {folder} y")
    (tmp_path / "a" / "only-a.md").write_text("# only in a")

    targets, _, _ = discover([tmp_path / "a", tmp_path / "b"])
    assert [t.source for t in targets] == [
        "a/sub/y.md",
        "a/x.md",
        "b/sub/y.md",
        "b/x.md",
        "only-a.md",
    ]
    assert {t.source: t.path for t in targets}["b/x.md"] == (tmp_path / "b" / "x.md").resolve()

    # Folders with the same name are told apart by as much of their path as it takes.
    targets, _, _ = discover([tmp_path / "one" / "docs", tmp_path / "two" / "docs"])
    assert [t.source for t in targets][:2] == ["one/docs/sub/y.md", "one/docs/x.md"]
    # A named file and a folder's file of the same name: both, the file by its folder.
    (tmp_path / "x.md").write_text("# top")
    targets, _, _ = discover([tmp_path / "a", tmp_path / "x.md"])
    assert {"a/x.md", f"{tmp_path.name}/x.md"} <= {t.source for t in targets}


def test_a_file_reached_twice_is_imported_once_under_its_first_name(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "y.md").write_text("# y")
    targets, _, _ = discover([tmp_path, tmp_path / "sub", tmp_path / "sub" / "y.md", tmp_path])
    assert [t.source for t in targets] == ["sub/y.md"]
