"""A next version of two formats, for the upgrade tests: no format has changed yet, so the
tests register real migrations of real files (config.toml v1 → v2 renames a key; the trace
store v1 → v2 adds a column) and the self-checks that read the v2 files.

`python -m tests.upgrade.formats_v2 HOME` runs the upgrade with them (the kill -9 tests).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import sys
import tomllib
from pathlib import Path

from actors.upgrade import production_checks, run_upgrade
from engine.config import dump_config, parse_config
from engine.trace.store import DB_NAME, TraceStore
from engine.versions.formats import current_versions
from engine.versions.upgrade import Check, DataView, Migration, MigrationContext
from tests.corpus import make_app, run_import

CURRENT_V2 = {**current_versions(), "config": 2, "trace_store": 2}
TRACES = f"traces/{DB_NAME}"
DOC = "# Emitters\n\nAn EventEmitter calls every listener synchronously, in order.\n"


def _config_v1_to_v2(ctx: MigrationContext) -> None:
    source = ctx.source("config.toml")
    data = tomllib.loads(source.read_text(encoding="utf-8")) if source.exists() else {}
    retrieval = dict(data.get("retrieval", {}))
    results = retrieval.pop("top_k", 5)
    lines = ["format_version = 2", "", "[retrieval]", f"results = {results}"]
    lines += [f"{k} = {_toml(v)}" for k, v in retrieval.items()]
    for section, values in data.items():
        if section in ("format_version", "retrieval") or not isinstance(values, dict):
            continue
        lines += ["", f"[{section}]"] + [f"{k} = {_toml(v)}" for k, v in values.items()]
    ctx.target("config.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _toml(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_toml(x)}" for k, x in v.items()) + " }"
    return json.dumps(str(v))


def _traces_v1_to_v2(ctx: MigrationContext) -> None:
    source = ctx.source(TRACES)
    if not source.exists():
        return
    target = ctx.target(TRACES)
    shutil.copyfile(source, target)
    wal = Path(f"{source}-wal")
    if wal.exists():
        shutil.copyfile(wal, Path(f"{target}-wal"))
    conn = sqlite3.connect(target, isolation_level=None)
    try:
        conn.execute("ALTER TABLE traces ADD COLUMN tags TEXT NOT NULL DEFAULT ''")
        conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA journal_mode = DELETE")
    finally:
        conn.close()


MIGRATIONS_V2 = (
    Migration("config", 1, "config.toml: [retrieval] top_k is now `results`", _config_v1_to_v2),
    Migration("trace_store", 1, "trace store: every trace gets a tags column", _traces_v1_to_v2),
)


def read_config_v2(path: Path) -> dict[str, object]:
    """The v2 reader: v2 text → validated settings (through this build's own validation)."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    if data.get("format_version") != 2 or "top_k" in data.get("retrieval", {}):
        raise ValueError(f"{path} is not config format 2")
    retrieval = dict(data["retrieval"])
    retrieval["top_k"] = retrieval.pop("results")
    v1 = {**data, "format_version": 1, "retrieval": retrieval}
    parse_config(v1, {})
    return data


def trace_schema(path: Path) -> tuple[str, list[str], int]:
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        version = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0]
        columns = [r[1] for r in conn.execute("PRAGMA table_info(traces)")]
        rows = conn.execute("SELECT count(*) FROM traces").fetchone()[0]
    finally:
        conn.close()
    return str(version), columns, int(rows)


def _check_config_v2(view: DataView) -> None:
    read_config_v2(view.resolve("config.toml"))


def _check_traces_v2(view: DataView) -> None:
    path = view.resolve(TRACES)
    if path.exists():
        version, columns, _ = trace_schema(path)
        if version != "2" or "tags" not in columns:
            raise ValueError(f"trace store is schema {version}, not 2")


def checks_v2() -> list[Check]:
    replaced = {"config decodes", "trace store opens"}
    return [c for c in production_checks() if c.name not in replaced] + [
        Check("config v2 decodes", _check_config_v2),
        Check("trace store v2 opens", _check_traces_v2),
    ]


def upgrade_v2(root: Path, **kw: object) -> object:
    return run_upgrade(
        root,
        migrations=MIGRATIONS_V2,
        checks=checks_v2(),
        current=CURRENT_V2,
        **kw,  # type: ignore[arg-type]
    )


def make_v1_home(root: Path, docs: Path) -> Path:
    """A data directory written by this build (format set v1): a snapshot, traces, settings."""
    docs.mkdir(parents=True, exist_ok=True)
    (docs / "events.md").write_text(DOC, encoding="utf-8")
    app = make_app(root, retrieval={"top_k": 7}, ui={"language": "zh"})
    assert run_import(app, [docs]).status == "ready"
    (root / "config.toml").write_text(
        dump_config(parse_config({"retrieval": {"top_k": 7}, "ui": {"language": "zh"}}, {})),
        encoding="utf-8",
    )
    TraceStore(root / "traces").close()
    conn = sqlite3.connect(root / TRACES, isolation_level=None)
    conn.execute(
        "INSERT INTO traces (trace_id, created, started, question) VALUES ('t1', 1, 1, 'q?')"
    )
    conn.close()
    from actors.upgrade import open_data

    open_data(root, "import")  # stamps formats.json as this build does on start
    return root


def tree(root: Path) -> dict[str, str]:
    """sha256 of every file, by relative path (the lock file left out)."""
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.name != "writer.lock":
            out[path.relative_to(root).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


if __name__ == "__main__":
    upgrade_v2(Path(sys.argv[1]))
