#!/usr/bin/env bash
# Runs heapdb's whole test suite against a real Neo4j that the tests install and start themselves.
# Extra arguments go to pytest (e.g. `bash scripts/test.sh -k why`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
exec .venv/bin/python -m pytest "$@"
