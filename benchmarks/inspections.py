"""Inspections benchmark: what the inspections add to ``heapdb analyze``, beside memlab's own analyses
on the same file.

Whole processes, alternating, ``--repeat`` times each, timed from outside with their peak memory
(``benchmarks.analysis.run_process``):

- ``python -m heapdb analyze FILE --json``: read, analysis, report;
- the same with ``--strings`` (duplicate strings), and with ``--strings --dom --react`` (every
  inspection a load computes: duplicate strings, detached DOM, unmounted React components);
- ``memlab analyze string``, ``detached-DOM`` and ``unmounted-fiber-node`` ``--snapshot FILE``
  (memlab's own commands, from ``tests/js/node_modules``).

The fastest run of each is reported with its peak, the share the inspections add, and the load
average before and after. The input is a real Node snapshot: ``--snapshot FILE``, or
``tests/js/leak.js`` grown to ``--v8-units`` leak units (~220 MB at 139,000), as
``benchmarks.analysis`` makes it.

With ``--hprof DUMP`` (a Java heap dump: ``benchmarks.hprof`` makes them), the same is measured on
that dump instead: ``heapdb analyze`` without and with ``--strings`` (a Java string's characters are
read from its value array), and each inspection in process; memlab has no Java analysis.

Usage (from the repository root)::

    python -m benchmarks.inspections --v8-units 139000 --repeat 3
    python -m benchmarks.inspections --hprof /tmp/heapdb-hprof-bench/bigheap-120000.hprof
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks.analysis import NODE_HEAP_FLAG, REPO, fastest, heapdb_environment, run_process, v8_file


def heapdb(path: Path, *extra: str) -> dict[str, Any]:
    done = run_process(
        [sys.executable, "-m", "heapdb", "analyze", "--json", *extra, str(path)], REPO, heapdb_environment()
    )
    report = json.loads(done.pop("stdout"))
    return {**done, "strings": report.get("strings", {}).get("strings")}


def memlab(path: Path, analysis: str) -> dict[str, Any]:
    from heapgen.node import JS_DIR, ensure_node_tools, node_environment

    ensure_node_tools()
    command = ["node", NODE_HEAP_FLAG, str(JS_DIR / "node_modules" / ".bin" / "memlab"), "analyze", analysis]
    done = run_process([*command, "--snapshot", str(path)], JS_DIR, node_environment())
    done.pop("stdout")
    return done


EVERY_INSPECTION = (
    "--strings",
    "--dom",
    "--react",
    "--stale",
    "--fill",
    "--dup-objects",
    "--held",
    "--react-hooks",
)  # what a load computes
# memlab's react-hooks is left out: it stops with an error on a snapshot without React.
MEMLAB_ANALYSES = ("string", "detached-DOM", "unmounted-fiber-node", "collections-with-stale", "object-shallow")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--snapshot", type=Path, help="a real .heapsnapshot to use (instead of --v8-units)")
    parser.add_argument("--v8-units", type=int, default=139_000, help="leak.js units for the snapshot")
    parser.add_argument("--workdir", default="/tmp/heapdb-bench", help="where the generated snapshot is kept")
    parser.add_argument("--repeat", type=int, default=3, help="runs per command; the fastest is reported")
    parser.add_argument("--hprof", type=Path, help="a Java heap dump to measure instead of a V8 snapshot")
    args = parser.parse_args()
    if args.hprof is not None:
        java(args.hprof, args.repeat)
        return
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    path = args.snapshot or v8_file(workdir, args.v8_units)

    heapdb(path, *EVERY_INSPECTION)  # numba's kernel cache and the page cache warm, as for any second run
    commands: dict[str, Callable[[], dict[str, Any]]] = {
        "analyze": partial(heapdb, path),
        "analyze --strings": partial(heapdb, path, "--strings"),
        "analyze " + " ".join(EVERY_INSPECTION): partial(heapdb, path, *EVERY_INSPECTION),
        **{f"memlab analyze {name}": partial(memlab, path, name) for name in MEMLAB_ANALYSES},
    }
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in commands}
    load_before = os.getloadavg()
    for _ in range(max(1, args.repeat)):
        for name, command in commands.items():
            runs[name].append(command())
    load_after = os.getloadavg()
    best = {name: fastest(figures) for name, figures in runs.items()}

    size = path.stat().st_size / 2**20
    print(f"{path} ({size:,.0f} MiB); load average before {load_before}, after {load_after}")
    print("| command | wall s (fastest) | all runs s | peak RSS MiB |")
    print("|---|---:|---|---:|")
    for name, row in best.items():
        walls = ", ".join(f"{w:.2f}" for w in row["all_wall_s"])
        print(f"| {name} | {row['wall_s']:.2f} | {walls} | {row['peak_rss_mib']:,.0f} |")
    base = best["analyze"]["wall_s"]
    for name in ("analyze --strings", "analyze " + " ".join(EVERY_INSPECTION)):
        print(f"{name} adds {best[name]['wall_s'] / base - 1:.1%} to analyze")
    print(f"{best['analyze --strings']['strings']:,} strings counted")
    print("in process, what a load computes (seconds, the fastest of --repeat):")
    for name, seconds in in_process(path, args.repeat).items():
        print(f"  {name}: {seconds:.2f}")


def java(path: Path, repeat: int) -> None:
    """The measurements on a Java heap dump: whole processes, then each inspection in process."""
    heapdb(path, "--strings")  # numba's kernel cache and the page cache warm
    commands = {"analyze": partial(heapdb, path), "analyze --strings": partial(heapdb, path, "--strings")}
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in commands}
    load_before = os.getloadavg()
    for _ in range(max(1, repeat)):
        for name, command in commands.items():
            runs[name].append(command())
    load_after = os.getloadavg()
    best = {name: fastest(figures) for name, figures in runs.items()}
    print(f"{path} ({path.stat().st_size / 2**20:,.0f} MiB); load average before {load_before}, after {load_after}")
    for name, row in best.items():
        walls = ", ".join(f"{w:.2f}" for w in row["all_wall_s"])
        print(f"  {name}: {row['wall_s']:.2f} s (runs {walls}), peak {row['peak_rss_mib']:,.0f} MiB")
    added = best["analyze --strings"]["wall_s"] / best["analyze"]["wall_s"] - 1
    print(f"  --strings adds {added:.1%}; {best['analyze --strings']['strings']:,} strings counted")
    print("in process, what a load computes (seconds, the fastest of --repeat):")
    for name, seconds in in_process(path, repeat).items():
        print(f"  {name}: {seconds:.2f}")


def in_process(path: Path, repeat: int) -> dict[str, float]:
    """Each inspection a load computes, timed in this process on the same file and analysis, then
    what a load computes before its first answer (``LoadInput.from_analysis``: the first paths, no
    inspection) and the inspections it works out after it (``LoadInput.inspections``)."""
    import time

    from heapdb.loader import analysis, formats
    from heapdb.loader.inspections import collections, dom, fill, held, lifecycles, objects, react, strings, unbound
    from heapdb.loader.inspections.react_hooks import component_hooks
    from heapdb.loader.paths import first_paths
    from heapdb.loader.store import LoadInput
    from heapdb.loader.store.inspected import Inspections

    graph = formats.read_graph(path)
    result = analysis.analyze(graph)
    paths = first_paths(graph, result.retaining, result.transient)

    def stale() -> object:
        marked = collections.stale_objects(graph, result)
        if marked is None:  # a format without a DOM (a Java dump)
            return None
        return collections.stale_collections(graph, result, paths, marked, source="")

    steps: dict[str, Callable[[], object]] = {
        "first paths (a load computes them anyway)": lambda: first_paths(graph, result.retaining, result.transient),
        "duplicate strings": lambda: strings.stored_strings(graph, result),
        "detached DOM": lambda: dom.detached_dom(graph, result, paths, source=""),
        "unmounted React components": lambda: react.unmounted_fibers(graph, result, paths, source=""),
        "memory by React component and hook": lambda: component_hooks(graph, result, source=""),
        "collections holding stale objects": stale,
        "collections by fill": lambda: fill.collection_fill(graph, result, paths, source=""),
        "duplicate objects": lambda: objects.stored_objects(graph, result),
        "held by listeners, the console and closures; added globals": lambda: held.held(
            graph, result, paths, source=""
        ),
        # Nothing on a V8 file (the format shows no Java classes); see benchmarks.lifecycles for hprof.
        "objects past their lifecycle": lambda: lifecycles.lifecycle_leaks(graph, result, paths, source=""),
        # The default rules' known_leak catalogue (Node's and Chrome's, Android's), compiled and
        # reported as `heapdb analyze` lists it: what a load and analyze pay for it.
        "known leaks (the default rules' known_leak groups)": partial(known_leaks, graph, result),
        # A V8 load stores its shapes for `heapdb unbound` (another format has none).
        "shapes (unbound growth)": lambda: unbound.shapes_of(graph, result),
        # What a load computes before its first answer, and the inspections it works out after.
        "LoadInput.from_analysis (before the first answer)": lambda: LoadInput.from_analysis(graph, result),
        "every inspection together (after the first answer)": lambda: Inspections.compute(graph, result, paths),
    }
    timings: dict[str, float] = {}
    for name, step in steps.items():
        step()  # numba's compiled kernels load once
        runs = []
        for _ in range(max(1, repeat)):
            started = time.perf_counter()
            step()
            runs.append(time.perf_counter() - started)
        timings[name] = min(runs)
    return timings


def known_leaks(graph: Any, result: Any) -> object:
    """The known_leak rules of ``graph``'s default rules alone, compiled over it, and what each covers."""
    from heapdb.loader.rules import KnownLeakRule, compile_rules
    from heapdb.loader.rules.defaults import default_rules, runtime_of
    from heapdb.loader.rules.summary import known_leak_rows

    runtime = runtime_of(graph)
    if runtime is None:
        return None
    rules = default_rules(runtime)
    others = {r.group for r in rules.rules if not isinstance(r, KnownLeakRule)}
    return known_leak_rows(result, compile_rules(rules.with_groups(disable=sorted(others)), graph))


if __name__ == "__main__":
    main()
