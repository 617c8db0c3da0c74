"""The zip a person downloads (packaging/release_zip.py): every file of the built folder,
hidden ones included, under one `Citewise-<version>/` folder with `/` in every name, and no
half-written zip left behind."""

from __future__ import annotations

import importlib.util
import sys
import types
import zipfile
from pathlib import Path

import pytest

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


def smoke_module() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("smoke", REPO / "packaging" / "smoke.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_the_smoke_test_accepts_the_zip_build_ps1_writes_and_refuses_a_stale_one(
    tmp_path: Path,
) -> None:
    app = built(tmp_path)
    (app / "citewise-version.txt").write_text("0.1.0\n")
    target = tmp_path / "Citewise-0.1.0-windows-x64.zip"
    release_zip().write_zip(app, target, "Citewise-0.1.0")
    smoke = smoke_module()
    checks = smoke.Smoke(app, tmp_path / "work")
    checks.check_release_zip()

    (app / "BUILD_ID").write_text("def_src0123456789abcdef\n")  # rebuilt, zip not remade
    with pytest.raises(smoke.SmokeFailure, match="another build"):
        checks.check_release_zip()
