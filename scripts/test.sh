#!/usr/bin/env bash
# One command: install judgelab with its server and test extras into ./.venv (plus Debian's
# Chromium for the browser tests when running as root) and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -qq --upgrade pip
.venv/bin/python -m pip install -qq -e '.[server,test]'
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "Installing Debian's chromium for the browser tests ..."
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "chromium not found: the browser tests will be skipped (apt-get install chromium)" >&2
  fi
fi
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
