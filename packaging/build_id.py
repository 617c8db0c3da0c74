"""The identity of a frozen build: a hash of the sources that go into it, and the build id the
spec writes into BUILD_ID beside the executable (read by `engine.trace.manifest.app_build`).

`python packaging/build_id.py sources` prints the source hash; build.sh and the smoke test use it
to tell whether an existing build is still fresh. `... version` prints the app version from
pyproject.toml (build.ps1 names the zip with it). It never changes a file.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tomllib
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Everything whose change can change the built app: the code, the shipped prompts, the spec
# and its helpers, and the dependency list.
SOURCES = ("engine", "actors", "index", "web", "cli", "prompts", "packaging", "pyproject.toml")


def _files(root: Path) -> list[Path]:
    found: list[Path] = []
    for name in SOURCES:
        path = root / name
        if path.is_file():
            found.append(path)
        elif path.is_dir():
            found.extend(p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    return sorted(found, key=lambda p: p.relative_to(root).as_posix())


def source_hash(root: Path = ROOT) -> str:
    """sha256 over the sources' relative paths and bytes: equal hashes, equal builds."""
    digest = hashlib.sha256()
    for path in _files(root):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, timeout=30, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip()


def git_revision(root: Path = ROOT) -> str:
    """The commit the build came from, `+dirty` when its sources differ from that commit."""
    commit = _git(root, "rev-parse", "--short=12", "HEAD")
    if not commit:
        return "nogit"
    changed = _git(root, "status", "--porcelain", "--", *SOURCES)
    return f"{commit}+dirty" if changed else commit


def build_id(root: Path = ROOT, now: datetime | None = None) -> str:
    """`<commit>[+dirty]_<UTC build time>_src<first 16 of the source hash>`, one line."""
    when = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%MZ")
    return f"{git_revision(root)}_{when}_src{source_hash(root)[:16]}"


def app_version(root: Path = ROOT) -> str:
    """The version in pyproject.toml, which the build writes to citewise-version.txt."""
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return str(project["version"])


def source_hash_of(build_id_text: str) -> str:
    """The source-hash prefix recorded in a BUILD_ID ('' when it has none)."""
    _, _, tail = build_id_text.strip().rpartition("_src")
    return tail if len(tail) == 16 else ""


if __name__ == "__main__":
    if sys.argv[1:] == ["sources"]:
        print(source_hash()[:16])
    elif sys.argv[1:] == ["id"]:
        print(build_id())
    elif sys.argv[1:] == ["version"]:
        print(app_version())
    else:
        sys.exit("usage: build_id.py sources|id|version")
