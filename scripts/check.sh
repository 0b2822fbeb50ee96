#!/usr/bin/env bash
# The static checks: ruff's lint rules, ruff's formatting and mypy over every module of heapdb (under
# its installed names, see scripts/typecheck.py), the tests and the benchmarks. Settings are in
# pyproject.toml. Needs only .venv (scripts/bootstrap.sh): no Neo4j, Java, Node or Chromium; takes
# seconds. All three run even when one fails, so one run shows everything; exits non-zero if any failed.
# Extra arguments go to mypy (e.g. `bash scripts/check.sh --show-traceback`).
set -uo pipefail
cd "$(dirname "$0")/.."
bin=.venv/bin
failed=()

echo "==> ruff check"
"$bin/ruff" check . || failed+=("ruff check")
echo "==> ruff format --check"
"$bin/ruff" format --check --output-format concise . || failed+=("ruff format")
echo "==> mypy"
"$bin/python" scripts/typecheck.py "$@" || failed+=("mypy")

if [ ${#failed[@]} -gt 0 ]; then
  echo "check.sh: failed: ${failed[*]}" >&2
  exit 1
fi
echo "check.sh: all checks passed"
