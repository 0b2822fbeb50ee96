"""V8 .heapsnapshot parse benchmark: heapdb's reader next to memlab's parser, on the same file.

A real Node snapshot is written by ``tests/js/leak.js`` (``--units`` leak units; 135,000 give a
~210 MB file), or an existing one is given with ``--snapshot``. Each measurement runs in a fresh
child process that reports its own wall time and peak resident set size (``getrusage``
``ru_maxrss`` for Python, ``process.resourceUsage().maxRSS`` for Node: the same kernel counter):

- heapdb: ``heapdb.loader.formats.v8.read_graph`` (numba kernels compiled beforehand, as they are
  cached on disk after the first run), including ``HeapGraph.validate()``; its time includes
  loading those kernels from the cache, which is also reported apart, with the read alone;
- memlab parse: ``@memlab/core``'s ``utils.getSnapshotFromFile`` (``HeapParser.parse``: JSON
  parse into typed arrays, node-id index), the step comparable to heapdb's reader;
- memlab full: ``@memlab/heap-analysis``'s ``getFullHeapFromFile`` (parse + shortest paths +
  dominators + retained sizes), for scale.

Usage (from the repository root)::

    python -m benchmarks.v8_parse --units 135000 --workdir /tmp/heapdb-bench --repeat 3

Prints a Markdown table (best of ``--repeat`` runs for time; peak RSS of that run) and writes the
raw figures as JSON (``--json``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from heapgen.node import JS_DIR, ensure_node_tools, node_environment, write_leak_snapshot  # noqa: E402

NODE_HEAP_FLAG = "--max-old-space-size=16384"

# The first read in a process also loads the numba kernels from their cache (and numba's typing
# and LLVM with them); a two-node snapshot read first tells that part apart.
HEAPDB_SCRIPT = r"""
import json, os, resource, sys, tempfile, time
from heapdb.loader.formats import v8
tiny = {"snapshot": {"meta": {"node_fields": ["type", "name", "id", "self_size", "edge_count"],
                              "node_types": [["hidden", "synthetic"]],
                              "edge_fields": ["type", "name_or_index", "to_node"],
                              "edge_types": [["element"]]}, "node_count": 2, "edge_count": 1},
        "nodes": [1, 0, 1, 0, 1, 0, 0, 3, 8, 0], "edges": [0, 1, 5], "strings": [""]}
with tempfile.NamedTemporaryFile("w", suffix=".heapsnapshot", delete=False) as f:
    json.dump(tiny, f)
t0 = time.perf_counter()
v8.read_graph(f.name)
t1 = time.perf_counter()
g = v8.read_graph(sys.argv[1])
t2 = time.perf_counter()
os.unlink(f.name)
print(json.dumps({"seconds": t2 - t0, "kernels_s": t1 - t0, "read_s": t2 - t1,
                  "nodes": g.node_count, "edges": g.edge_count,
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

MEMLAB_PARSE_SCRIPT = r"""
const { utils } = require('@memlab/core');
const t0 = Date.now();
utils.getSnapshotFromFile(process.argv[1], { buildNodeIdIndex: true, verbose: false }).then((heap) => {
  const t1 = Date.now();
  console.log(JSON.stringify({ seconds: (t1 - t0) / 1000, nodes: heap.nodes.length, edges: heap.edges.length,
                               peak_rss_mib: process.resourceUsage().maxRSS / 1024 }));
});
"""

MEMLAB_FULL_SCRIPT = r"""
const { getFullHeapFromFile } = require('@memlab/heap-analysis');
const t0 = Date.now();
getFullHeapFromFile(process.argv[1]).then((heap) => {
  const t1 = Date.now();
  console.log(JSON.stringify({ seconds: (t1 - t0) / 1000, nodes: heap.nodes.length, edges: heap.edges.length,
                               peak_rss_mib: process.resourceUsage().maxRSS / 1024 }));
});
"""


def _last_json_line(stdout: str) -> dict[str, Any]:
    # memlab prints progress lines; the measurement is the last JSON line.
    for line in reversed(stdout.splitlines()):
        line = line.strip().split("\x1b[K")[-1]
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError(f"no measurement in output:\n{stdout[-2000:]}")


def measure_heapdb(snapshot: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", HEAPDB_SCRIPT, str(snapshot)], capture_output=True, text=True, check=True, cwd=REPO
    )
    return _last_json_line(done.stdout)


def measure_memlab(snapshot: Path, script: str) -> dict[str, Any]:
    done = subprocess.run(
        ["node", NODE_HEAP_FLAG, "-e", script, str(snapshot)],
        capture_output=True,
        text=True,
        check=True,
        cwd=JS_DIR,
        env=node_environment(),
    )
    return _last_json_line(done.stdout)


def best_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    return min(runs, key=lambda r: r["seconds"])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=135_000, help="leak.js units for the generated snapshot")
    parser.add_argument("--snapshot", type=Path, help="use this .heapsnapshot instead of generating one")
    parser.add_argument("--workdir", type=Path, default=REPO / "benchmarks" / "out" / "v8_parse")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-memlab-full", action="store_true", help="only time memlab's parser")
    parser.add_argument("--json", type=Path, help="write the raw figures here")
    args = parser.parse_args(argv)

    ensure_node_tools()
    snapshot = args.snapshot
    if snapshot is None:
        snapshot = args.workdir / f"leak-{args.units}.heapsnapshot"
        if not snapshot.exists():
            generated = write_leak_snapshot(args.workdir / f"leak-{args.units}", args.units)
            generated.rename(snapshot)
    size_mb = snapshot.stat().st_size / 1e6

    # Compile (or load from numba's on-disk cache) the reader's kernels before timing.
    measure_heapdb(snapshot)
    results: dict[str, Any] = {"snapshot": str(snapshot), "size_mb": size_mb}
    results["heapdb"] = best_of([measure_heapdb(snapshot) for _ in range(args.repeat)])
    results["memlab_parse"] = best_of([measure_memlab(snapshot, MEMLAB_PARSE_SCRIPT) for _ in range(args.repeat)])
    if not args.skip_memlab_full:
        results["memlab_full"] = best_of([measure_memlab(snapshot, MEMLAB_FULL_SCRIPT) for _ in range(args.repeat)])

    counts = {(r["nodes"], r["edges"]) for k, r in results.items() if isinstance(r, dict)}
    if len(counts) != 1:
        raise SystemExit(f"the parsers disagree on node/edge counts: {counts}")
    nodes, edges = counts.pop()
    print(f"{snapshot.name}: {size_mb:.1f} MB, {nodes:,} nodes, {edges:,} edges\n")
    print("| parser | time (s) | throughput (MB/s) | peak RSS (MiB) | peak RSS / file size |")
    print("|---|---:|---:|---:|---:|")
    labels = {"heapdb": "heapdb V8 reader", "memlab_parse": "memlab parse", "memlab_full": "memlab getFullHeapFromFile"}
    for key, label in labels.items():
        if key in results:
            r = results[key]
            rss_ratio = r["peak_rss_mib"] * 1.048576 / size_mb
            print(
                f"| {label} | {r['seconds']:.2f} | {size_mb / r['seconds']:.0f} "
                f"| {r['peak_rss_mib']:.0f} | {rss_ratio:.1f}x |"
            )
    r = results["heapdb"]
    print(
        f"\nheapdb: {r['kernels_s']:.2f} s loading the numba kernels (first read in the process), then "
        f"{r['read_s']:.2f} s reading ({size_mb / r['read_s']:.0f} MB/s)"
    )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
