#!/usr/bin/env bash
# Sets everything up and runs heapdb end to end on a real heap snapshot: installs the tools, starts
# the managed Neo4j, has Node write snapshots of a leaking program, then inspects, analyses and
# loads them, and asks Neo4j what holds the most memory.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
heapdb() { .venv/bin/heapdb "$@"; }

echo "==> the managed Neo4j"
heapdb neo4j install
heapdb neo4j start
heapdb neo4j status

work=$(mktemp -d)
echo "==> real V8 heap snapshots of a leaking Node program, in $work"
node tests/js/leak.js "$work" 200 2000 >/dev/null
baseline="$work/baseline.heapsnapshot"
target="$work/target.heapsnapshot"

echo "==> heapdb inspect $target"
heapdb inspect "$target" --top 8
echo "==> heapdb analyze $target --top 8"
heapdb analyze "$target" --top 8

echo "==> heapdb load (two builds of the same program)"
heapdb load "$baseline" --tag demo-build-1 --replace --meta program=leak.js
heapdb load "$target" --tag demo-build-2 --replace --meta program=leak.js
heapdb snapshots

echo "==> what holds the most memory in demo-build-2 (stored in Neo4j, asked in Cypher)"
heapdb cypher "MATCH (s:Snapshot {tag: 'demo-build-2', status: 'ready'})
  MATCH (o:Object {sid: s.sid}) WHERE o.id IS NOT NULL AND o.distance > 1
  RETURN o.type AS type, o.name AS name, o.retained_size AS retained_bytes, o.retained_count AS objects
  ORDER BY retained_bytes DESC LIMIT 5"

echo "==> which types grew between the two builds"
heapdb cypher "MATCH (a:Snapshot {tag: 'demo-build-1', status: 'ready'}), (b:Snapshot {tag: 'demo-build-2', status: 'ready'})
  CALL (a) { MATCH (o:Object {sid: a.sid}) WHERE o.id IS NOT NULL RETURN o.type AS type, count(*) AS before }
  CALL (b, type) { MATCH (o:Object {sid: b.sid, type: type}) WHERE o.id IS NOT NULL RETURN count(*) AS after }
  WITH type, before, after WHERE after > before
  RETURN type, before, after, after - before AS growth ORDER BY growth DESC LIMIT 5"

rm -rf "$work"
echo
echo "Neo4j keeps running for you: the Browser is at $(heapdb neo4j status --json | .venv/bin/python -c 'import json,sys; print(json.load(sys.stdin)["browser_url"])')"
echo "Stop it with: .venv/bin/heapdb neo4j stop"
