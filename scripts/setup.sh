#!/usr/bin/env bash
# Idempotent set-up on a fresh machine: a virtualenv in .venv with Citewise and its dev tools.
# Re-runs are cheap: pip is only called when pyproject.toml changed since the last install.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
  .venv/bin/python -m pip install --quiet --upgrade pip
fi
stamp=.venv/.citewise-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install --quiet -e '.[dev]'
  touch "$stamp"
fi
