"""The house keeps its shape: imports point down only (SPEC §1).

cli/ and web/ are front ends side by side: each uses only `from actors import …` (the package's
declared surface), never engine/ or index/, and never the other — with one exception:
cli/serve.py, the `citewise serve` command, starts the web UI. actors/ uses engine/ and index/;
engine/ uses index/; index/ imports nothing else of the project; only cli/ imports bench/.
Every import counts, also one inside a function.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PROJECT = ("index", "engine", "actors", "cli", "web", "bench")
ALLOWED: dict[str, set[str]] = {
    "index": {"index"},
    "engine": {"engine", "index"},
    "actors": {"actors", "engine", "index"},
    "cli": {"cli", "actors", "bench"},
    "web": {"web", "actors"},
}
FRONT_ENDS = ("cli", "web")
SERVE = REPO / "cli" / "serve.py"  # `citewise serve`: the one place the CLI starts the web UI


def imports_of(path: Path) -> list[tuple[int, str]]:
    package = ".".join(path.relative_to(REPO).with_suffix("").parts[:-1])
    return imports_in(path.read_text(encoding="utf-8"), package)


def imports_in(source: str, package: str) -> list[tuple[int, str]]:
    """(line, dotted module) of every import in `source`, a module of `package`; relative
    imports are made absolute."""
    tree = ast.parse(source)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            found.append((node.lineno, module))
            # `from engine import redaction` imports the module engine.redaction too
            found += [
                (node.lineno, f"{module}.{alias.name}")
                for alias in node.names
                if _is_module(f"{module}.{alias.name}")
            ]
    return found


def _is_module(dotted: str) -> bool:
    path = REPO.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def sources(package: str) -> list[Path]:
    return sorted((REPO / package).rglob("*.py"))


@pytest.mark.parametrize("package", list(ALLOWED))
def test_imports_point_down_only(package: str) -> None:
    wrong = []
    for path in sources(package):
        for line, module in imports_of(path):
            top = module.split(".")[0]
            if top == "web" and path == SERVE:
                continue
            if top in PROJECT and top not in ALLOWED[package]:
                wrong.append(f"{path.relative_to(REPO)}:{line} imports {module}")
    assert not wrong, "imports that point the wrong way:\n" + "\n".join(wrong)


@pytest.mark.parametrize("package", FRONT_ENDS)
def test_front_ends_use_only_the_declared_surface_of_actors(package: str) -> None:
    wrong = []
    for path in sources(package):
        for line, module in imports_of(path):
            if module.startswith("actors."):
                wrong.append(f"{path.relative_to(REPO)}:{line} imports {module}")
    assert not wrong, "use `from actors import …`:\n" + "\n".join(wrong)


def test_nothing_but_the_command_line_imports_the_benchmarks() -> None:
    users = {
        package
        for package in ALLOWED
        for path in sources(package)
        for _, module in imports_of(path)
        if module.split(".")[0] == "bench" and package != "cli"
    }
    assert not users


def test_the_checker_sees_imports_inside_functions_and_relative_ones() -> None:
    source = "def f():\n    from engine import config\n    from . import bm25\nimport web.pages\n"
    modules = [m for _, m in imports_in(source, "index")]
    assert sorted(modules) == ["engine", "engine.config", "index", "index.bm25", "web.pages"]
