"""Java and Android leak status benchmark: what the lifecycle inspection adds to an hprof analysis.

Two real dumps, each read and analysed once in this process, then the inspection timed (the
fastest of ``--repeat``) beside the read and the analysis it follows:

- ``benchmarks/java/BigHeap.java`` with ``--customers`` customers (``benchmarks.hprof`` makes and
  keeps it): a large heap without Android classes, so the cost is finding that none of its classes
  is a lifecycle class (a walk over the class objects and one pass over every instance's class);
- ``tests/java/LifecycleLeak.java`` with ``--activities`` destroyed and as many live activities and
  ``--activities`` detached views: every one of them is a candidate whose fields the rules read in
  Python, and the destroyed ones have traces to label.

Usage (from the repository root)::

    python -m benchmarks.lifecycles --customers 100000 --activities 5000 --repeat 3
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path


def timed(path: Path, repeat: int) -> dict[str, float]:
    from heapdb.loader import analysis, formats
    from heapdb.loader.inspections import lifecycles
    from heapdb.loader.paths import first_paths

    started = time.perf_counter()
    graph = formats.read_graph(path)
    read = time.perf_counter() - started
    started = time.perf_counter()
    result = analysis.analyze(graph)
    analysed = time.perf_counter() - started
    paths = first_paths(graph, result.retaining, result.transient)
    runs, cpu = [], []
    found = None
    for _ in range(max(1, repeat) + 1):  # the first run loads numba's compiled kernels
        started, started_cpu = time.perf_counter(), time.process_time()
        found = lifecycles.lifecycle_leaks(graph, result, paths, source="")
        runs.append(time.perf_counter() - started)
        cpu.append(time.process_time() - started_cpu)
    assert found is not None
    return {
        "objects": graph.node_count,
        "read_s": read,
        "analysis_s": analysed,
        "lifecycles_s": min(runs[1:]),
        # CPU time too: on a shared machine the wall time of a Python loop swings with the load.
        "lifecycles_cpu_s": min(cpu[1:]),
        "leaking": found.leaking,
        "groups": found.signatures,
    }


def main() -> None:
    from benchmarks.hprof import compile_java as compile_bigheap
    from benchmarks.hprof import make_dump
    from heapgen.java import LIFECYCLE_SOURCES, compile_java, dump_program

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--customers", type=int, default=100_000)
    parser.add_argument("--activities", type=int, default=5_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work", type=Path, default=Path("/tmp/heapdb-lifecycles-bench"))
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    big = make_dump(args.work, compile_bigheap(args.work), args.customers)
    android = args.work / f"lifecycle-{args.activities}.hprof"
    if not android.exists():
        classes = compile_java(args.work / "lifecycle-classes", *LIFECYCLE_SOURCES)
        n = str(args.activities)
        dump_program(classes, "LifecycleLeak", android, n, n, n)
    print(f"load average before {os.getloadavg()}")
    print(
        "| dump | objects | read s | analysis s | lifecycles s (CPU s) | share of read + analysis | leaking | groups |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for path in (big, android):
        t = timed(path, args.repeat)
        share = t["lifecycles_s"] / (t["read_s"] + t["analysis_s"])
        print(
            f"| {path.name} ({path.stat().st_size / 2**20:,.0f} MiB) | {t['objects']:,} | {t['read_s']:.2f} | "
            f"{t['analysis_s']:.2f} | {t['lifecycles_s']:.3f} ({t['lifecycles_cpu_s']:.3f}) | {share:.1%} | {t['leaking']:,} | {t['groups']:,} |"
        )
    print(f"load average after {os.getloadavg()}")


if __name__ == "__main__":
    main()
