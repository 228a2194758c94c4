#!/usr/bin/env bash
# One command: install judgelab with its server and test extras into ./.venv (plus Debian's
# Chromium, docker-compose and PostgreSQL for the tests when running as root) and run the whole
# test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
# uv installs the packages (pip stays as the venv made it: it is only the fallback below)
.venv/bin/python -m uv --version >/dev/null 2>&1 || .venv/bin/python -m pip install -qq uv
# uv resolves the same versions from PyPI and installs them into a fresh .venv in a third of
# pip's time (21 s against 59 s on a 2-core machine), compiled to bytecode as pip does (without it
# the suite's first processes compile Django and pandas at once, each its own copy); pip does it
# when uv cannot (no access to PyPI but through pip's own configuration, say).
if ! .venv/bin/python -m uv pip install -q --compile-bytecode --python .venv/bin/python -e '.[server,test]'; then
  echo "uv could not install the packages; installing them with pip" >&2
  .venv/bin/python -m pip install -qq -e '.[server,test]'
fi
# Debian packages the tests use when present: chromium (browser tests), docker-compose
# (validates docker-compose.yml) and postgresql (Label Studio on a throwaway PostgreSQL server).
# Installed when running as root; otherwise those tests skip.
missing=""
command -v chromium >/dev/null 2>&1 || missing="$missing chromium"
command -v docker-compose >/dev/null 2>&1 || missing="$missing docker-compose"
command -v initdb >/dev/null 2>&1 || compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null ||
  missing="$missing postgresql"
if [ -n "$missing" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "Installing Debian packages for the tests:$missing ..."
    log="$(mktemp)"  # quiet unless it fails (postgresql's maintainer scripts talk on stderr)
    if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing; } >"$log" 2>&1; then
      cat "$log" >&2
      exit 1
    fi
    rm -f "$log"
  else
    echo "not installed:$missing; the tests that need them will be skipped" >&2
  fi
fi
# Let Python cache compiled modules (a machine may set PYTHONDONTWRITEBYTECODE): the suite starts
# many processes that import judgelab (backends, CLI runs, workers).
unset PYTHONDONTWRITEBYTECODE
# Four workers (pytest-xdist), each with its own Label Studio; a test file stays on one worker.
# Much of a test's time is spent waiting (on Label Studio, a backend, a browser): with three
# workers two cores were idle a fifth of the run, with four a tenth (the suite then 384 s -> 350 s);
# six were slower than four (767 s against 634-739 s on a machine with shared cores, where four now
# take 485-597 s: docs/development.md says what made each test cheaper).
# Files go out in the order tests/conftest.py sets (long integration files early), not by count.
exec .venv/bin/python -m pytest -q -p no:cacheprovider -n "${JUDGELAB_TEST_WORKERS:-4}" --dist loadfile \
  --no-loadscope-reorder "$@"
