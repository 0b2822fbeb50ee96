"""Analysis benchmark: ``heapdb analyze`` next to memlab, whole processes, time and peak memory.

Every measurement is a fresh process, timed from the outside: wall time from start to exit, peak
memory from the kernel's ``ru_maxrss`` for that process (``os.wait4``), the same counter for both
tools. Nothing is measured inside the processes, so start-up, imports, loading numba's cached
kernels and printing the report all count, as they do for a person running the command. (A child's
``ru_maxrss`` starts from its parent's own peak, which Linux hands on through fork and exec: this
process therefore stays small, generating inputs and comparing results in children, and refuses a
measurement it cannot tell from its own peak.)

- heapdb: ``python -m heapdb analyze FILE --json`` (read, dominators, retained sizes, distances,
  the report).
- memlab: ``node`` running ``getFullHeapFromFile`` from ``@memlab/heap-analysis`` (parse, shortest
  paths, dominators, retained sizes: everything its per-node ``retainedSize`` and
  ``dominatorNode`` need).

The two run alternately, ``--repeat`` times each; the fastest run of each is reported with its
peak memory. Then, unless ``--no-check``, one more run of each writes its per-node retained sizes
and dominators (heapdb in process, ``--child``, which also reports heapdb's time per phase), and the
two are compared node by node.

Inputs: a real Node snapshot (``--snapshot FILE``, or ``tests/js/leak.js`` grown to
``--v8-units`` leak units: ~220 MB at 139,000), and synthetic heaps written as snap.bin
(``heapgen/synth.py``), which only heapdb reads.

Usage (from the repository root)::

    python -m benchmarks.analysis --snapshot /path/to/baseline.heapsnapshot --synthetic "" --repeat 3
    python -m benchmarks.analysis --v8-units 139000 --synthetic "" --repeat 3
    python -m benchmarks.analysis --synthetic 1M:4M,4M:16M --v8-units 0

Prints a Markdown table, the ratios and the machine's load average before and after, and writes
the raw figures as JSON (``--json``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from heapdb import settings
from heapgen.synth import parse_count

REPO = Path(__file__).resolve().parent.parent

# Node's heap must hold memlab's copy of a large snapshot.
NODE_HEAP_FLAG = "--max-old-space-size=16384"

MEMLAB_SCRIPT = r"""
const { getFullHeapFromFile } = require('@memlab/heap-analysis');
getFullHeapFromFile(process.argv[1]).then((heap) => {
  const out = process.argv[2];
  if (out) {
    // Retained sizes and dominator ids, to check heapdb against.
    const n = heap.nodes.length;
    const sizes = new Float64Array(n), dominators = new Float64Array(n);
    heap.nodes.forEach((node) => {
      sizes[node.nodeIndex] = node.retainedSize;
      dominators[node.nodeIndex] = node.dominatorNode ? node.dominatorNode.id : -1;
    });
    require('fs').writeFileSync(out, Buffer.concat([Buffer.from(sizes.buffer), Buffer.from(dominators.buffer)]));
  }
  console.log(JSON.stringify({ nodes: heap.nodes.length, edges: heap.edges.length }));
});
"""


def run_process(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``args`` to completion: its wall time, its own peak RSS and its standard output."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = subprocess.Popen(args, cwd=cwd, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if process.returncode != 0:
            raise RuntimeError(f"{args[:4]} exited with {process.returncode}:\n{err.read().decode()[-3000:]}")
        # ru_maxrss is in KiB on Linux; a child's is at least this process's own peak.
        own_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        if usage.ru_maxrss <= own_peak:
            raise RuntimeError(f"{args[:4]}: its peak RSS cannot be told from the benchmark's own ({own_peak} KiB)")
        return {"wall_s": wall, "peak_rss_mib": usage.ru_maxrss / 1024, "stdout": out.read().decode()}


def heapdb_environment() -> dict[str, str]:
    """The environment heapdb is timed in, as a person's installed heapdb runs: no progress bars
    (stderr is not a terminal anyway), and Python's bytecode cache in use. An installed package has
    its modules compiled; ``PYTHONDONTWRITEBYTECODE`` in the benchmark's own environment would
    instead have every run compile heapdb's modules from source (about 60 ms)."""
    env = {**os.environ, settings.PROGRESS.name: "0"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def heapdb_analyze(path: Path) -> dict[str, Any]:
    """``heapdb analyze FILE`` as a person runs it."""
    done = run_process([sys.executable, "-m", "heapdb", "analyze", "--json", str(path)], REPO, heapdb_environment())
    report = json.loads(done.pop("stdout"))
    return {**done, "nodes": report["objects"], "edges": report["references"]}


def memlab_analyze(path: Path, results_out: Path | None = None) -> dict[str, Any]:
    """memlab's ``getFullHeapFromFile`` on ``path`` in a fresh Node process."""
    from heapgen.node import JS_DIR, ensure_node_tools, node_environment

    ensure_node_tools()
    args = ["node", NODE_HEAP_FLAG, "-e", MEMLAB_SCRIPT, str(path)]
    if results_out is not None:
        args.append(str(results_out))
    done = run_process(args, JS_DIR, node_environment())
    # memlab prints progress lines; the counts are the last line.
    counts = json.loads(done.pop("stdout").strip().splitlines()[-1].split("\x1b[K")[-1])
    return {**done, **counts}


def heapdb_phases(path: Path, results_out: Path | None = None) -> dict[str, Any]:
    """heapdb's time per phase, measured inside a child process (``--child``); optionally its results."""
    args = [sys.executable, "-m", "benchmarks.analysis", "--child", str(path)]
    if results_out is not None:
        args += ["--child-out", str(results_out)]
    done = run_process(args, REPO, heapdb_environment())
    return {**json.loads(done.pop("stdout").strip().splitlines()[-1]), **done}


def child(path: str, out: str | None) -> None:
    """The process ``heapdb_phases`` runs: import, read, analyse, each timed, then the results."""
    t0 = time.perf_counter()
    import numpy as np

    from heapdb.loader.analysis import analyze
    from heapdb.loader.formats import read_graph

    t1 = time.perf_counter()
    graph = read_graph(path)
    t2 = time.perf_counter()
    result = analyze(graph)
    t3 = time.perf_counter()
    if out:
        np.save(out, np.stack([result.retained_size, graph.ids[np.maximum(result.idom, 0)]]))
    print(json.dumps({"import_s": t1 - t0, "read_s": t2 - t1, "analyse_s": t3 - t2}))


def same_results(heapdb_out: Path, memlab_out: Path) -> bool:
    """Whether heapdb's retained sizes and dominators equal memlab's for every node (in a child)."""
    args = [sys.executable, "-m", "benchmarks.analysis", "--compare", str(heapdb_out), str(memlab_out)]
    done = subprocess.run(args, cwd=REPO, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def compare(heapdb_out: Path, memlab_out: Path, root: int = 0) -> bool:
    """The comparison ``same_results`` runs."""
    import numpy as np

    ours = np.load(heapdb_out)
    raw = np.fromfile(memlab_out, dtype="<f8")
    n = ours.shape[1]
    sizes, dominator_ids = raw[:n].astype(np.int64), raw[n:].astype(np.int64)
    ours_dominators = ours[1].copy()
    ours_dominators[root] = dominator_ids[root]  # memlab makes the root its own dominator
    return bool((ours[0] == sizes).all() and (ours_dominators == dominator_ids).all())


def synthetic_file(workdir: Path, objects: int, references: int) -> Path:
    path = workdir / f"synth-{objects}-{references}.snap.bin"
    if not path.exists():
        args = ["--objects", str(objects), "--references", str(references), "--seed", "0"]
        subprocess.run(
            [sys.executable, "-m", "heapgen.synth", str(path), *args], cwd=REPO, check=True, stdout=sys.stderr
        )
    return path


def v8_file(workdir: Path, units: int) -> Path:
    from heapgen.node import write_leak_snapshot

    path = workdir / f"leak-{units}" / "baseline.heapsnapshot"
    if not path.exists():
        path = write_leak_snapshot(path.parent, units)
    return path


def fastest(runs: list[dict[str, Any]]) -> dict[str, Any]:
    best = min(runs, key=lambda figures: figures["wall_s"])
    return {**best, "all_wall_s": [r["wall_s"] for r in runs], "all_peak_rss_mib": [r["peak_rss_mib"] for r in runs]}


def measure(label: str, path: Path, repeat: int, with_memlab: bool, check: bool, workdir: Path) -> dict[str, Any]:
    row: dict[str, Any] = {"input": label, "file": str(path), "size_mib": path.stat().st_size / 2**20}
    heapdb_analyze(path)  # numba's kernel cache and the page cache warm, as for any second run
    runs: dict[str, list[dict[str, Any]]] = {"heapdb": [], "memlab": []}
    row["load_before"] = os.getloadavg()
    for _ in range(max(1, repeat)):
        runs["heapdb"].append(heapdb_analyze(path))
        if with_memlab:
            runs["memlab"].append(memlab_analyze(path))
    row["load_after"] = os.getloadavg()
    row.update({tool: fastest(figures) for tool, figures in runs.items() if figures})
    ours_out = workdir / "heapdb-results.npy" if with_memlab and check else None
    row["heapdb_phases"] = heapdb_phases(path, ours_out)
    if ours_out is not None:
        theirs_out = workdir / "memlab-results.bin"
        memlab_analyze(path, theirs_out)
        row["identical_to_memlab"] = same_results(ours_out, theirs_out)
    print(json.dumps(row), file=sys.stderr)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--snapshot", type=Path, help="a real .heapsnapshot to use (instead of --v8-units)")
    parser.add_argument("--v8-units", type=int, default=139_000, help="leak.js units for the real snapshot; 0 skips it")
    parser.add_argument("--synthetic", default="1M:4M,4M:16M", help="comma-separated OBJECTS:REFERENCES pairs")
    parser.add_argument("--workdir", default="/tmp/heapdb-bench", help="where generated inputs are kept")
    parser.add_argument("--repeat", type=int, default=1, help="runs per tool and input; the fastest is reported")
    parser.add_argument("--no-check", action="store_true", help="skip the node-by-node comparison with memlab")
    parser.add_argument("--json", help="also write the figures here")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--child-out", help=argparse.SUPPRESS)
    parser.add_argument("--compare", nargs=2, type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.child_out)
        return
    if args.compare:
        print(json.dumps(compare(*args.compare)))
        return

    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    snapshot = args.snapshot or (v8_file(workdir, args.v8_units) if args.v8_units else None)
    if snapshot is not None:
        if args.snapshot is None:
            label = f"Node `leak.js`, {args.v8_units:,} units"
        else:
            label = f"`{snapshot.parent.name}/{snapshot.name}`"
        rows.append(measure(label, snapshot, args.repeat, True, not args.no_check, workdir))
    for pair in filter(None, args.synthetic.split(",")):
        objects, references = (parse_count(x) for x in pair.split(":"))
        path = synthetic_file(workdir, objects, references)
        rows.append(measure(f"synthetic {pair} (snap.bin)", path, args.repeat, False, False, workdir))

    print("| input | file | nodes | edges | tool | wall s | peak RSS | heapdb in process: imports / read / analyse s |")
    print("|---|---:|---:|---:|---|---:|---:|---|")
    for row in rows:
        for tool in ("heapdb", "memlab"):
            f = row.get(tool)
            if f is None:
                continue
            phases = row["heapdb_phases"] if tool == "heapdb" else None
            split = f"{phases['import_s']:.2f} / {phases['read_s']:.2f} / {phases['analyse_s']:.2f}" if phases else ""
            print(
                f"| {row['input']} | {row['size_mib']:.0f} MiB | {f['nodes']:,} | {f['edges']:,} | {tool} | "
                f"{f['wall_s']:.2f} | {f['peak_rss_mib']:,.0f} MiB | {split} |"
            )
    for row in rows:
        load = " -> ".join("/".join(f"{x:.2f}" for x in row[k]) for k in ("load_before", "load_after"))
        if "memlab" in row:
            ours, theirs = row["heapdb"], row["memlab"]
            print(
                f"\n{row['input']}: heapdb/memlab wall time {ours['wall_s'] / theirs['wall_s']:.2f}x, "
                f"peak RSS {ours['peak_rss_mib'] / theirs['peak_rss_mib']:.2f}x; "
                f"identical results: {row.get('identical_to_memlab', 'not checked')}; load average {load}"
            )
        else:
            print(f"\n{row['input']}: load average {load}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
