"""The zip a person downloads (packaging/release_zip.py): every file of the built folder,
hidden ones included, under one `Citewise-<version>/` folder with `/` in every name, and no
half-written zip left behind."""

from __future__ import annotations

import importlib.util
import types
import zipfile
from pathlib import Path

from tests.corpus import REPO


def release_zip() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(
        "release_zip", REPO / "packaging" / "release_zip.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def built(root: Path) -> Path:
    app = root / "citewise"
    (app / "_internal" / "nicegui" / ".hidden").mkdir(parents=True)
    (app / "Citewise.exe").write_bytes(b"MZ")
    (app / "_internal" / "nicegui" / ".hidden" / "asset.js").write_text("x")
    (app / "BUILD_ID").write_text("abc_src0123456789abcdef\n")
    return app


def test_the_zip_holds_every_file_under_the_versioned_folder(tmp_path: Path) -> None:
    app = built(tmp_path)
    target = tmp_path / "Citewise-0.1.0-windows-x64.zip"
    assert release_zip().main([str(app), str(target), "Citewise-0.1.0"]) == 0
    with zipfile.ZipFile(target) as archive:
        names = sorted(archive.namelist())
    assert names == [
        "Citewise-0.1.0/BUILD_ID",
        "Citewise-0.1.0/Citewise.exe",
        "Citewise-0.1.0/_internal/nicegui/.hidden/asset.js",
    ]
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".partial"] == []
    assert (app / "Citewise.exe").is_file()  # the folder itself is left as it was


def test_an_unfinished_build_is_not_zipped(tmp_path: Path) -> None:
    app = built(tmp_path)
    (app / "BUILD_ID").unlink()
    target = tmp_path / "out.zip"
    assert release_zip().main([str(app), str(target), "Citewise-0.1.0"]) == 1
    assert not target.exists()
