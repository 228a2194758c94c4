#!/usr/bin/env bash
# One command: install judgelab and Label Studio into ./.venv, start Label Studio (SQLite) and the
# ML backend (offline annotator), create the five study projects with their sample tasks,
# pre-annotate them and print the URL and login. Running it again reuses what exists.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
"$PYTHON" -c 'import sys; sys.exit(sys.version_info[:2] < (3, 11))' \
  || { echo "judgelab needs Python 3.11 or newer (found $("$PYTHON" --version))" >&2; exit 1; }
if [ ! -x .venv/bin/python ]; then
  echo "Creating .venv ..."
  "$PYTHON" -m venv .venv
fi
stamp="server $(sha256sum pyproject.toml | cut -c1-16)"
if [ ! -x .venv/bin/label-studio ] || ! grep -qs "$stamp" .venv/.judgelab-installed; then
  echo "Installing judgelab and Label Studio into .venv (2-5 minutes the first time) ..."
  .venv/bin/python -m pip install -qq --upgrade pip
  .venv/bin/python -m pip install -qq -e '.[server]'
  echo "$stamp" >> .venv/.judgelab-installed
fi
exec .venv/bin/judgelab up "$@"
