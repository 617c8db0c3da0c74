"""Which files an import covers: folders expanded, unsupported types skipped, bad names failed.

Only looks at the file system (walk, stat); it never reads a file's content, never writes and
never awaits, so it runs in one worker thread and is tested on a temporary folder alone.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from engine.parsing.formats import FORMAT_BY_SUFFIX, SUPPORTED_SUFFIXES
from index.records import FailedDocument, SkippedFile


@dataclass(frozen=True)
class Target:
    path: Path
    source: str  # identity inside the collection: path relative to the folder named
    size: int


def discover(paths: Sequence[Path]) -> tuple[list[Target], list[SkippedFile], list[FailedDocument]]:
    """Expand folders (recursively), keep supported types, list the rest as skipped.

    A file named explicitly with an unsupported type fails with `unsupported_type`. Files
    from different folders (or a folder and a named file) with the same relative name all
    land: each is named by enough of its folder to tell them apart (`a/x.md`, `b/x.md`),
    never dropped; a file reached twice (a folder and a folder inside it) is imported once.
    """
    found: list[tuple[Path, Target]] = []  # (the folder it was found from, the target)
    skipped: list[SkippedFile] = []
    failed: list[FailedDocument] = []
    for raw in paths:
        path = Path(raw).expanduser()
        if path.is_dir():
            root = path.resolve()
            for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
                dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
                for name in sorted(filenames):
                    if name.startswith("."):
                        continue
                    file = Path(dirpath) / name
                    source = file.relative_to(root).as_posix()
                    if (bad := _bad_name(source)) is not None:
                        failed.append(bad)
                        continue
                    if file.suffix.lower() not in SUPPORTED_SUFFIXES:
                        skipped.append(SkippedFile(source=source, reason="unsupported_type"))
                        continue
                    if not file.is_file():
                        continue
                    found.append((root, Target(file, source, _size(file))))
        elif path.is_file():
            source = path.name
            if (bad := _bad_name(source)) is not None:
                failed.append(bad)
                continue
            if path.suffix.lower() not in SUPPORTED_SUFFIXES:
                failed.append(
                    FailedDocument(
                        source=source,
                        stage="read",
                        reason="unsupported_type",
                        message=f"{path.suffix or 'files without an extension'} is not a "
                        "supported type; use PDF, EPUB, DOCX, HTML, Markdown or text",
                    )
                )
                continue
            resolved = path.resolve()
            found.append((resolved.parent, Target(resolved, source, _size(path))))
        else:
            failed.append(
                FailedDocument(
                    source=_shown(str(raw)),
                    stage="read",
                    reason="not_found",
                    message="no such file or folder; check the path and try again",
                )
            )
    return sorted(_unique_sources(found), key=lambda t: t.source), skipped, failed


def _unique_sources(found: list[tuple[Path, Target]]) -> list[Target]:
    """Each file once (the first time it was reached), named by its relative path; where
    different files share that name, each is named by the shortest tail of its folder's path
    that makes every such name distinct from each other and from every other source."""
    first: dict[Path, tuple[Path, Target]] = {}
    for root, target in found:
        first.setdefault(target.path, (root, target))
    by_source: dict[str, list[tuple[Path, Target]]] = {}
    for root, target in first.values():
        by_source.setdefault(target.source, []).append((root, target))
    taken = {source for source, group in by_source.items() if len(group) == 1}
    named = [group[0][1] for group in by_source.values() if len(group) == 1]
    for source, group in by_source.items():
        if len(group) == 1:
            continue
        depth = 1
        while True:
            names = [_tail(root, depth) + "/" + source for root, _ in group]
            deepest = all(depth >= len(root.parts) for root, _ in group)
            if (len(set(names)) == len(names) and taken.isdisjoint(names)) or deepest:
                break
            depth += 1
        taken.update(names)
        named.extend(
            Target(t.path, name, t.size) for (_, t), name in zip(group, names, strict=True)
        )
    return named


def _tail(folder: Path, depth: int) -> str:
    """The last `depth` parts of `folder`'s path (`/home/me/a`, 2 → `me/a`)."""
    parts = [p for p in folder.parts if p != folder.anchor] or [folder.anchor.strip("/\\")]
    return "/".join(parts[-depth:])


def _shown(name: str) -> str:
    """A path as text: undecodable bytes (kept by Python as lone surrogates) become \\xNN."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def _bad_name(source: str) -> FailedDocument | None:
    """A file whose name is not valid UTF-8 cannot be named in a snapshot; it fails alone."""
    try:
        source.encode("utf-8")
    except UnicodeEncodeError:
        return FailedDocument(
            source=_shown(source),
            stage="read",
            reason="bad_name",
            message="the file name is not valid text (UTF-8); rename the file and import it again",
        )
    return None


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def format_of(path: Path) -> str:
    """The parser a file goes to, by its suffix; anything unnamed is read as text."""
    return FORMAT_BY_SUFFIX.get(path.suffix.lower(), "text")
