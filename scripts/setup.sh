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
# Byte-compile the project's own modules (pip compiles only what it installs). Every `citewise`
# command and parse worker imports a few hundred of them; with PYTHONDONTWRITEBYTECODE set, as on
# this CI machine, each process would otherwise compile them from source again (0.15 s of a CLI
# import's start). Quick when nothing changed: compileall skips modules whose cache is current.
.venv/bin/python -m compileall -q -j 0 actors bench cli engine index packaging scripts tests web >/dev/null
