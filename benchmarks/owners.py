"""Owners benchmark: what working out who owns the memory costs beside the analysis it follows, in
one process on the same file.

Each step is timed on its own: reading the file (``read_graph``), the analysis (``analyze``: the
dominator tree and retained sizes), the owners (``owners_of``: every level, each object's owner) and
their table (``owner_table``: per owner its objects, sizes, largest member and types, what a load
stores and ``heapdb analyze --owners`` prints). The input is a real Node snapshot: ``--snapshot
FILE``, or ``tests/js/leak.js`` grown to ``--v8-units`` leak units (~220 MB at 139,000), as
``benchmarks.analysis`` makes it. Every step runs once first (numba's compiled kernels load), then
``--repeat`` times; the fastest of each is reported with every run, the owners' share of the
analysis alone and of the read and analysis together, and the load average before and after.

Usage (from the repository root)::

    python -m benchmarks.owners --v8-units 139000 --repeat 3
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.analysis import v8_file


def timed(step: Callable[[], object]) -> float:
    started = time.perf_counter()
    step()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--snapshot", type=Path, help="a real .heapsnapshot to use (instead of --v8-units)")
    parser.add_argument("--v8-units", type=int, default=139_000, help="leak.js units for the snapshot")
    parser.add_argument("--workdir", default="/tmp/heapdb-bench", help="where the generated snapshot is kept")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each step; the fastest is reported")
    args = parser.parse_args()
    path = args.snapshot or v8_file(Path(args.workdir), args.v8_units)

    from heapdb.loader import analysis, formats
    from heapdb.loader.owners.attribution import owners_of
    from heapdb.loader.owners.table import owner_table

    graph = formats.read_graph(path)
    result = analysis.analyze(graph)
    owners = owners_of(graph, result)
    table = owner_table(str(path), graph, result, owners)  # numba's kernels load once
    steps: dict[str, Callable[[], object]] = {
        "read_graph": lambda: formats.read_graph(path),
        "analyze": lambda: analysis.analyze(graph),
        "owners_of": lambda: owners_of(graph, result),
        "owner_table": lambda: owner_table(str(path), graph, result, owners),
    }
    runs: dict[str, list[float]] = {name: [] for name in steps}
    load_before = os.getloadavg()
    for _ in range(max(1, args.repeat)):
        for name, step in steps.items():
            runs[name].append(timed(step))
    load_after = os.getloadavg()
    best = {name: min(seconds) for name, seconds in runs.items()}

    print(
        f"{path} ({path.stat().st_size / 2**20:,.0f} MiB, {graph.node_count:,} objects, {graph.edge_count:,} references)"
    )
    print(f"load average before {load_before}, after {load_after}")
    for name, seconds in runs.items():
        print(f"  {name}: {best[name]:.2f} s (runs {', '.join(f'{s:.2f}' for s in seconds)})")
    owners_cost = best["owners_of"] + best["owner_table"]
    print(
        f"  owners (owners_of + owner_table) {owners_cost:.2f} s: {owners_cost / best['analyze']:.0%} of analyze, "
        f"{owners_cost / (best['read_graph'] + best['analyze']):.0%} of read_graph + analyze"
    )
    for level in table.levels:
        top = ", ".join(f"{row.name} {row.retained_size / 2**20:,.1f} MiB" for row in level.rows[:4])
        print(f"  {level.level}: {level.owners} owners; largest: {top}")


if __name__ == "__main__":
    main()
