"""Analysis benchmark: parse + dominators + retained sizes, time and peak memory, next to memlab.

Each measurement runs in a fresh child process that reports its own wall time per phase and its
peak resident set size (``getrusage`` ``ru_maxrss`` for Python, ``process.resourceUsage().maxRSS``
for Node: the same kernel counter), so runs do not disturb each other.

- Synthetic heaps (``benchmarks/synth.py``) are written as snap.bin and analysed by heapdb.
- A real Node snapshot (``tests/js/leak.js`` grown to ``--v8-units``, ~200 MB at 170,000) is
  analysed by heapdb and by memlab's ``getFullHeapFromFile`` (parse, shortest paths, dominators,
  retained sizes), and the two results are checked to be identical.

Usage (from the repository root)::

    python -m benchmarks.analysis --synthetic 1M:4M,4M:16M --v8-units 170000 --repeat 3
    python -m benchmarks.analysis --synthetic 20M:80M --v8-units 0

Prints a Markdown table and writes the raw figures as JSON (``--json``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.synth import parse_count, synth_graph, write_snapbin

REPO = Path(__file__).resolve().parent.parent

# Node's heap must hold memlab's copy of a large snapshot.
NODE_HEAP_FLAG = "--max-old-space-size=16384"

MEMLAB_SCRIPT = r"""
const t0 = Date.now();
const { getFullHeapFromFile } = require('@memlab/heap-analysis');
const t1 = Date.now();
getFullHeapFromFile(process.argv[1]).then((heap) => {
  const t2 = Date.now();
  // As for heapdb, the peak before the results are copied out for the comparison.
  const peak = process.resourceUsage().maxRSS / 1024;
  const out = process.argv[2];
  if (out) {
    // Retained sizes and dominator ids, to check heapdb against.
    const n = heap.nodes.length;
    const sizes = new Float64Array(n), dominators = new Float64Array(n);
    heap.nodes.forEach((node) => {
      sizes[node.nodeIndex] = node.retainedSize;
      dominators[node.nodeIndex] = node.dominatorNode ? node.dominatorNode.id : -1;
    });
    const fs = require('fs');
    fs.writeFileSync(out, Buffer.concat([Buffer.from(sizes.buffer), Buffer.from(dominators.buffer)]));
  }
  console.log(JSON.stringify({
    import_s: (t1 - t0) / 1000,
    analyse_s: (t2 - t1) / 1000,
    nodes: heap.nodes.length,
    edges: heap.edges.length,
    peak_rss_mib: peak,
  }));
});
"""


def measure_heapdb(path: Path, results_out: Path | None = None) -> dict[str, Any]:
    """Read and analyse ``path`` in a child process; its timings and peak RSS."""
    args = [sys.executable, "-m", "benchmarks.analysis", "--child", str(path)]
    if results_out is not None:
        args += ["--child-out", str(results_out)]
    started = time.perf_counter()
    done = subprocess.run(args, cwd=REPO, capture_output=True, text=True, check=True)
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    figures["wall_s"] = time.perf_counter() - started
    return figures


def child(path: str, out: str | None) -> None:
    """The measured process: import, read, analyse, report."""
    import resource

    t0 = time.perf_counter()
    import numpy as np

    from heapdb.loader.analysis import analyze
    from heapdb.loader.formats import read_graph

    t1 = time.perf_counter()
    graph = read_graph(path)
    t2 = time.perf_counter()
    result = analyze(graph)
    t3 = time.perf_counter()
    # Read the peak before writing the results for the memlab comparison: that copy is the
    # benchmark's own bookkeeping, not part of reading or analysing.
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if out:
        np.save(out, np.stack([result.retained_size, graph.ids[np.maximum(result.idom, 0)]]))
    print(
        json.dumps(
            {
                "import_s": t1 - t0,
                "read_s": t2 - t1,
                "analyse_s": t3 - t2,
                "nodes": graph.node_count,
                "edges": graph.edge_count,
                "peak_rss_mib": peak,
            }
        )
    )


def measure_memlab(path: Path, results_out: Path | None = None) -> dict[str, Any]:
    """Run memlab's ``getFullHeapFromFile`` on ``path`` in a fresh Node process."""
    from tests.support.v8 import JS_DIR, ensure_node_tools, node_environment

    ensure_node_tools()
    args = ["node", NODE_HEAP_FLAG, "-e", MEMLAB_SCRIPT, str(path)]
    if results_out is not None:
        args.append(str(results_out))
    started = time.perf_counter()
    done = subprocess.run(args, cwd=JS_DIR, env=node_environment(), capture_output=True, text=True, check=True)
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    figures["wall_s"] = time.perf_counter() - started
    return figures


def same_results(heapdb_out: Path, memlab_out: Path, root: int = 0) -> bool:
    """Whether heapdb's retained sizes and dominators equal memlab's for every node."""
    import numpy as np

    ours = np.load(heapdb_out)
    raw = np.fromfile(memlab_out, dtype="<f8")
    n = ours.shape[1]
    sizes, dominator_ids = raw[:n].astype(np.int64), raw[n:].astype(np.int64)
    ours_dominators = ours[1].copy()
    ours_dominators[root] = dominator_ids[root]  # memlab makes the root its own dominator
    return bool((ours[0] == sizes).all() and (ours_dominators == dominator_ids).all())


def best_of(repeat: int, measure, *args) -> dict[str, Any]:
    """The fastest of ``repeat`` runs (each in a fresh process), with that run's peak RSS."""
    return min((measure(*args) for _ in range(max(1, repeat))), key=lambda figures: figures["wall_s"])


def synthetic_file(workdir: Path, objects: int, references: int) -> Path:
    path = workdir / f"synth-{objects}-{references}.snap.bin"
    if not path.exists():
        write_snapbin(synth_graph(objects, references, seed=0), path)
    return path


def v8_file(workdir: Path, units: int) -> Path:
    from tests.support.v8 import write_leak_snapshot

    path = workdir / f"leak-{units}" / "baseline.heapsnapshot"
    if not path.exists():
        path = write_leak_snapshot(path.parent, units)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--synthetic", default="1M:4M,4M:16M", help="comma-separated OBJECTS:REFERENCES pairs")
    parser.add_argument("--v8-units", type=int, default=170_000, help="leak.js units for the real snapshot; 0 skips it")
    parser.add_argument("--workdir", default="/tmp/heapdb-bench", help="where generated inputs are kept")
    parser.add_argument("--repeat", type=int, default=1, help="runs per tool and input; the fastest is reported")
    parser.add_argument("--json", help="also write the figures here")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--child-out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.child_out)
        return

    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    for pair in filter(None, args.synthetic.split(",")):
        objects, references = (parse_count(x) for x in pair.split(":"))
        path = synthetic_file(workdir, objects, references)
        figures = best_of(args.repeat, measure_heapdb, path)
        rows.append({"input": f"synthetic {pair}", "size_mib": os.path.getsize(path) / 2**20, "heapdb": figures})
        print(json.dumps(rows[-1]), file=sys.stderr)
    if args.v8_units:
        path = v8_file(workdir, args.v8_units)
        ours_out, theirs_out = workdir / "heapdb-results.npy", workdir / "memlab-results.bin"
        row: dict[str, Any] = {
            "input": f"Node leak.js, {args.v8_units} units",
            "size_mib": os.path.getsize(path) / 2**20,
        }
        row["heapdb"] = best_of(args.repeat, measure_heapdb, path, ours_out)
        row["memlab"] = best_of(args.repeat, measure_memlab, path, theirs_out)
        row["identical_to_memlab"] = same_results(ours_out, theirs_out)
        rows.append(row)
        print(json.dumps(row), file=sys.stderr)

    print("| input | file | nodes | edges | tool | read s | analyse s | wall s | peak RSS |")
    print("|---|---:|---:|---:|---|---:|---:|---:|---:|")
    for row in rows:
        for tool in ("heapdb", "memlab"):
            f = row.get(tool)
            if f is None:
                continue
            read = f"{f['read_s']:.1f}" if "read_s" in f else "(in analyse)"
            print(
                f"| {row['input']} | {row['size_mib']:.0f} MiB | {f['nodes']:,} | {f['edges']:,} | {tool} | {read} | "
                f"{f['analyse_s']:.1f} | {f['wall_s']:.1f} | {f['peak_rss_mib']:,.0f} MiB |"
            )
        if "memlab" in row:
            ours, theirs = row["heapdb"], row["memlab"]
            print(
                f"\n{row['input']}: heapdb/memlab wall time {ours['wall_s'] / theirs['wall_s']:.2f}x, "
                f"peak RSS {ours['peak_rss_mib'] / theirs['peak_rss_mib']:.2f}x; "
                f"identical results: {row['identical_to_memlab']}"
            )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
