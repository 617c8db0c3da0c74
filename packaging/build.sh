#!/usr/bin/env bash
# Build the Linux one-folder app: .build/dist/citewise/citewise (plus BUILD_ID beside it).
#
#   packaging/build.sh           build, or say the existing build is fresh and stop
#   packaging/build.sh --force   build even when the sources have not changed
#
# A clean build venv (.build/venv) holds Citewise's dependencies WITHOUT the Qt extra (a web
# bundle is ~4x smaller) and PyInstaller; it is reinstalled only when pyproject.toml changes.
# A build is fresh when its BUILD_ID names the current source hash (packaging/build_id.py).
# CITEWISE_BUILD_DIR moves .build elsewhere; PYTHON picks the interpreter (3.11+, built with
# --enable-shared, which PyInstaller needs).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
cache=${CITEWISE_BUILD_DIR:-$root/.build}
venv=$cache/venv
dist=$cache/dist
app=$dist/citewise
PY=${PYTHON:-python3}
force=0
for arg in "$@"; do
  case $arg in
    --force) force=1 ;;
    *) echo "usage: packaging/build.sh [--force]" >&2; exit 2 ;;
  esac
done

# PyInstaller reads shared-library dependencies with objdump (binutils).
if ! command -v objdump >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq binutils >/dev/null
  else
    echo "building needs objdump: sudo apt-get install -y binutils" >&2
    exit 1
  fi
fi

mkdir -p "$cache"
# One build at a time per cache (parallel test runs share it); the lock goes with the process.
exec 9>"$cache/.lock"
flock 9
if [ ! -x "$venv/bin/python" ]; then
  "$PY" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
fi
wanted=$(sha256sum pyproject.toml | cut -d' ' -f1)
stamp=$venv/.citewise-build-deps
if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
  # Editable: the metadata (app version) is installed, the code is read from this checkout.
  "$venv/bin/python" -m pip install --quiet -e '.[build]'
  echo "$wanted" >"$stamp"
fi

sources=$("$venv/bin/python" packaging/build_id.py sources)
if [ "$force" = 0 ] && [ -f "$app/BUILD_ID" ] && grep -q "_src${sources}\$" "$app/BUILD_ID"; then
  echo "up to date: $app ($(cat "$app/BUILD_ID"))" >&2
  exit 0
fi

started=$(date +%s)
"$venv/bin/python" -m PyInstaller packaging/citewise.spec --noconfirm --log-level WARN \
  --distpath "$dist" --workpath "$cache/work"
echo "built $app in $(($(date +%s) - started)) s, $(du -sh "$app" | cut -f1): $(cat "$app/BUILD_ID")" >&2
