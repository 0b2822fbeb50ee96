#!/usr/bin/env bash
# Runs heapdb's whole test suite against a real Neo4j that the tests install and start themselves.
# Extra arguments go to pytest (e.g. `bash scripts/test.sh -k why`).
#
# The test files are shared out among pytest-xdist workers (HEAPDB_TEST_WORKERS, default 2: the
# machine's cores are the limit), a whole file to one worker, so that its module fixtures load
# their snapshots once. Files start in collection order, the longest first
# (tests/support/schedule.py), not in xdist's own order by number of tests, which left the few long
# tests of a rebuild or a Neo4j restart to the end. Each worker that needs Neo4j starts a private
# one of its own, and what takes a real runtime long to make (Node's leak snapshots, memlab's
# answers) is made once per run for all of them (tests/support/once.py). `-n 0` runs everything in
# one process. CONTRIBUTING.md has the measured times.
#
# `bash scripts/test.sh --fast [pytest arguments]` runs only the fast tier: no test marked neo4j,
# node, chromium or slow (the markers are in pyproject.toml, set by tests/support/tiers.py). It
# needs Python and graphviz only, sets up only those, and takes under a minute (its tests are
# shared out test by test: none loads anything worth keeping on one worker).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--fast" ]; then
  shift
  bash scripts/bootstrap.sh --fast
  fast=$(.venv/bin/python -c 'from tests.support.tiers import FAST; print(FAST)')
  exec .venv/bin/python -m pytest -n "${HEAPDB_TEST_WORKERS:-2}" -m "$fast" "$@"
fi
bash scripts/bootstrap.sh
exec .venv/bin/python -m pytest -n "${HEAPDB_TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder "$@"
