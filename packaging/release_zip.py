"""The zip a person downloads: the built one-folder app under one top folder
(`Citewise-<version>/`), which they unzip and run Citewise.exe in.

    python packaging/release_zip.py APP_DIR ZIP_PATH TOP_FOLDER

Written with zipfile rather than PowerShell's Compress-Archive, which leaves out hidden files,
stores `\\` separators under Windows PowerShell 5.1 and needs the folder renamed first (a
rename an antivirus scanning the new executables can refuse). Entries use `/`, sizes over 4 GB
use ZIP64, and the zip appears complete or not at all. It never changes APP_DIR.
"""

from __future__ import annotations

import os
import sys
import zipfile
from pathlib import Path


def write_zip(folder: Path, target: Path, top: str) -> int:
    """Zip every file under `folder` as `top/<its relative path>`; the number of files."""
    partial = target.with_name(target.name + ".partial")
    count = 0
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            archive.write(path, f"{top}/{path.relative_to(folder).as_posix()}")
            count += 1
    os.replace(partial, target)
    return count


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: release_zip.py APP_DIR ZIP_PATH TOP_FOLDER", file=sys.stderr)
        return 2
    folder, target, top = Path(argv[0]), Path(argv[1]), argv[2]
    if not (folder / "BUILD_ID").is_file():
        print(f"{folder} is not a finished build (no BUILD_ID)", file=sys.stderr)
        return 1
    count = write_zip(folder, target, top)
    print(f"{target}: {count} files under {top}/")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
