#!/usr/bin/env bash
# Sets everything up and runs heapdb end to end on a real heap snapshot:
# installs the tools, starts the managed Neo4j and runs a smoke query.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
heapdb() { .venv/bin/heapdb "$@"; }

echo "==> the managed Neo4j"
heapdb neo4j install
heapdb neo4j start
heapdb neo4j status
heapdb cypher 'CALL dbms.components() YIELD name, versions RETURN name, versions[0] AS version'

echo
echo "Neo4j keeps running for you: the Browser is at $(heapdb neo4j status --json | .venv/bin/python -c 'import json,sys; print(json.load(sys.stdin)["browser_url"])')"
echo "Stop it with: .venv/bin/heapdb neo4j stop"
