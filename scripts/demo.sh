#!/usr/bin/env bash
# Sets everything up and runs heapdb end to end on real heap snapshots: installs the tools, starts
# the managed Neo4j, has Node write three snapshots of a leaking program, loads them, and asks the
# questions: what holds the memory, why is this alive, what grew, what leaked.
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
node tests/js/leak.js "$work" 200 1200 2200 >/dev/null

echo "==> heapdb inspect / analyze (no database needed)"
heapdb inspect "$work/target.heapsnapshot" --top 5
heapdb analyze "$work/target.heapsnapshot" --top 5

echo "==> heapdb load: three moments of the same process, tagged"
for moment in baseline target final; do
  heapdb load "$work/$moment.heapsnapshot" --tag "demo-$moment" --replace --meta program=leak.js
done
heapdb snapshots

echo "==> what holds the most memory"
heapdb top demo-final --limit 5

echo "==> why is a leaked item still alive (text; also --format dot|svg for bug reports)"
heapdb why demo-final --type LeakedItem
heapdb why demo-final --type LeakedItem --format svg -o "$work/why.svg"

echo "==> what grew between the first and the last snapshot, by type and by retainer path"
heapdb diff demo-baseline demo-final --by type --limit 5
heapdb diff demo-baseline demo-final --by path --limit 5 --svg "$work/growth.svg"

echo "==> the same growth object by object (V8 ids are stable within one process)"
heapdb diff demo-baseline demo-final --by object --limit 5 --samples 1

echo "==> leak candidates: allocated between baseline and target, still alive in final"
heapdb leaks demo-baseline demo-target demo-final --limit 3 --dot "$work/leaks"

echo "==> what grew at every step, and what holds a big share of the last snapshot"
heapdb growth demo-baseline demo-target demo-final --by path --limit 3
heapdb suspects demo-final --share 0.05

echo "(pictures for a bug report: $work/why.svg, $work/growth.svg, $work/leaks/*.dot)"
echo
echo "Neo4j keeps running for you: the Browser is at $(heapdb neo4j status --json | .venv/bin/python -c 'import json,sys; print(json.load(sys.stdin)["browser_url"])')"
echo "Stop it with: .venv/bin/heapdb neo4j stop"
