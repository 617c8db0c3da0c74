"""Where the shared corpus is, and how tests make apps and import into them."""

from __future__ import annotations

from pathlib import Path

import anyio

from actors.app import App
from actors.ingest import ImportResult
from engine.config import parse_config
from engine.paths import DataDir

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus"
DOCS = CORPUS / "docs"
GOLD = CORPUS / "gold.jsonl"


def make_app(root: Path, **sections: dict[str, object]) -> App:
    """An App on its own data directory with settings given per section (no environment)."""
    return App(DataDir(root), parse_config(sections, {}))


def run_import(app: App, paths: list[Path], **kw: object) -> ImportResult:
    """Import synchronously (on trio) and close the app."""

    async def go() -> ImportResult:
        try:
            return await app.import_paths(paths, **kw)  # type: ignore[arg-type]
        finally:
            await app.aclose()

    return anyio.run(go, backend="trio")
