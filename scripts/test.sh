#!/usr/bin/env bash
# Runs heapdb's whole test suite against a real Neo4j that the tests install and start themselves.
# Extra arguments go to pytest (e.g. `bash scripts/test.sh -k why`).
#
# `bash scripts/test.sh --fast [pytest arguments]` runs only the fast tier: no test marked neo4j,
# node, chromium or slow (the markers are in pyproject.toml, set by tests/support/tiers.py). It
# needs Python and graphviz only, sets up only those, and takes well under a minute.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--fast" ]; then
  shift
  bash scripts/bootstrap.sh --fast
  fast=$(.venv/bin/python -c 'from tests.support.tiers import FAST; print(FAST)')
  exec .venv/bin/python -m pytest -m "$fast" "$@"
fi
bash scripts/bootstrap.sh
exec .venv/bin/python -m pytest "$@"
