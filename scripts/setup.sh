#!/usr/bin/env bash
# Idempotent set-up on a fresh machine: a virtualenv in .venv with Citewise, its native window
# (the `native` extra: pywebview with PyQt6 WebEngine) and its dev tools.
# Re-runs are cheap: pip is only called when pyproject.toml or the extras changed since the
# last install.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
extras="dev,native"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
  .venv/bin/python -m pip install --quiet --upgrade pip
fi
stamp=.venv/.citewise-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ "$(cat "$stamp")" != "$extras" ]; then
  .venv/bin/python -m pip install --quiet -e ".[$extras]"
  echo "$extras" > "$stamp"
fi
