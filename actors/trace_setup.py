"""The app's trace writer as every running App opens it: where its store lives, the key values
it keeps out of traces, its [trace] settings and OTLP export. Kept apart from actors.tracing
(questions, replays, reruns) so that opening an App for `status` loads none of that.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from actors.trace_writer import TraceWriter, open_trace_writer
from engine.secrets import ENV_NAMES, get_key
from engine.trace.otlp import exporter_from_environment
from engine.trace.store import TraceStore
from engine.versions import app_version

if TYPE_CHECKING:
    from actors.app import App

TRACES_DIR = "traces"


def traces_root(app: App) -> Path:
    return app.data.root / TRACES_DIR


def open_store(app: App) -> TraceStore:
    """The app's trace store (raises TraceStoreError when it cannot be opened)."""
    return TraceStore(traces_root(app))


def key_values() -> list[str]:
    """Every API key value this process could know: to be kept out of traces and bundles."""
    values: list[str] = []
    for name, env in ENV_NAMES.items():
        try:
            stored = get_key(name)
        except Exception:  # a broken keyring backend: the environment is still checked
            stored = None
        for value in (stored, os.environ.get(env)):
            if value and value not in values:
                values.append(value)
    return values


@asynccontextmanager
async def open_app_trace_writer(app: App, **overrides: Any) -> AsyncIterator[TraceWriter]:
    """A trace writer with the app's [trace] settings and, when the standard OTEL_* variables
    ask for it, OTLP export. Leaving the block writes what is queued."""
    t = app.config.trace
    options: dict[str, Any] = {
        "mode": t.mode,
        "retention_days": t.retention_days,
        "max_bytes": t.max_megabytes * 1024 * 1024,
        "exporter": exporter_from_environment(service_version=app_version()),
        "secrets": key_values,
    }
    options.update(overrides)
    async with open_trace_writer(partial(open_store, app), **options) as writer:
        yield writer
