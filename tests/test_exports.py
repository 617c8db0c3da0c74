"""Each package's public surface is deliberate (CONVENTIONS habit 10, as trio's test_exports):
every name a package's __init__ declares exists, is public, is declared once, and actors' lazy
surface — the only one web/ and cli/ may use — says the same in its three places."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = sorted(
    ".".join(p.parent.relative_to(REPO).parts)
    for top in ("index", "engine", "actors")
    for p in (REPO / top).rglob("__init__.py")
)


@pytest.mark.parametrize("name", PACKAGES)
def test_every_declared_name_exists_once_and_is_public(name: str) -> None:
    package = importlib.import_module(name)
    declared = list(getattr(package, "__all__", []))
    assert len(declared) == len(set(declared)), f"{name}.__all__ repeats a name"
    assert not [n for n in declared if n.startswith("_")], f"{name} exports a private name"
    missing = [n for n in declared if not hasattr(package, n)]
    assert not missing, f"{name}.__all__ names what it does not have: {missing}"


def _type_checking_names(source: str) -> set[str]:
    tree = ast.parse(source)
    block = next(
        n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"
    )
    return {
        alias.asname or alias.name
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }


def test_actors_declares_its_surface_the_same_in_all_three_places() -> None:
    import actors

    exports = set(actors._EXPORTS)
    assert set(actors.__all__) == exports
    source = (REPO / "actors" / "__init__.py").read_text(encoding="utf-8")
    assert _type_checking_names(source) == exports


def test_actors_resolves_each_name_to_the_object_its_module_defines() -> None:
    import actors

    for public, (module, attribute) in actors._EXPORTS.items():
        assert getattr(actors, public) is getattr(importlib.import_module(module), attribute)
    with pytest.raises(AttributeError):
        actors.ui_service  # noqa: B018  (gone; nothing may reach past the surface)


def test_importing_actors_loads_nothing_until_a_name_is_used() -> None:
    """A parse worker imports one actors module; it must not pay for the whole app."""
    probe = "import sys, actors; print(sorted(m for m in sys.modules if m.startswith('actors.')))"
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"
