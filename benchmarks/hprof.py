"""Java heap dump (hprof) benchmark: heapdb's reader and analysis next to VisualVM's heap library.

The dump: ``benchmarks/java/BigHeap.java`` (a shop's customers in a map, their orders, line items,
strings and arrays, and a leaking session registry) run with ``--customers`` customers (480,000
give a 1.1 GB dump of 19.3 million objects), dumped with ``jcmd PID GC.heap_dump`` (live objects).
It is kept in ``--work`` and reused when present (``--dump FILE`` takes any other dump).

Every measurement is a fresh process, timed from outside: wall time from start to exit, peak
memory from the kernel's ``ru_maxrss`` for that process (``os.wait4``), the same counter for both
tools (this process stays small, so a child's peak is its own):

- heapdb: ``python -m heapdb analyze DUMP --json --top 5`` (read, dominators, retained sizes,
  distances, the report), after one unmeasured run (numba's kernel cache and the page cache warm).
  Then one child (``--child``) times the phases inside the process: imports, ``read_graph``
  (``heapdb.loader.formats``) and ``heapdb.loader.analysis.analyze``, with the process's ``VmHWM``
  after each (the file is memory-mapped, so its pages in memory count too).
- VisualVM: ``benchmarks/java/VisualVMBench.java`` on the JAR Debian's visualvm package installs
  (``HeapFactory.createHeap``; a walk of every instance; ``getRetainedSize`` of every instance,
  whose first call computes them all), under ``-Xmx`` ``--visualvm-xmx``, with its cache directory
  (``DUMP.hwcache``) removed before each run so that each one starts cold. It reports its steps'
  times and the JVM's peak heap; a run past ``--visualvm-timeout`` is killed and reported with
  the last step it finished.

Both answers are then compared on cheap figures: VisualVM's instance count and shallow bytes
against heapdb's instances and arrays (VisualVM lists no class objects), and VisualVM's biggest
objects by retained size against heapdb's retained sizes of the same objects, under heapdb's own
graph and under VisualVM's view of it (no class-structure edges: ``visualvm_view`` from
``heapgen/oracles.py``; ``tests/test_hprof_oracle.py`` explains the known differences).

Usage (from the repository root)::

    python -m benchmarks.hprof --customers 480000 --repeat 2 --work /tmp/heapdb-hprof-bench

Prints Markdown tables, the ratios and the machine's load average around every measurement, and
writes the raw figures as JSON (``--json``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.analysis import heapdb_environment

REPO = Path(__file__).resolve().parent.parent
JAVA_DIR = Path(__file__).resolve().parent / "java"
VISUALVM_HEAP_JAR = Path("/usr/share/visualvm/visualvm/modules/org-graalvm-visualvm-lib-jfluid-heap.jar")
TOP = 5


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def run_process(
    args: list[str], env: dict[str, str] | None = None, timeout: float | None = None, check: bool = True
) -> dict[str, Any]:
    """Run ``args`` to completion (or kill it after ``timeout`` s): wall time, own peak RSS, output;
    ``check``: a failure is an error (else it is reported in ``returncode``)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = subprocess.Popen(args, cwd=REPO, env=env, stdout=out, stderr=err)
        timer = threading.Timer(timeout, process.send_signal, (signal.SIGKILL,)) if timeout else None
        if timer:
            timer.start()
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        # Timed out: the timer fired and the process died of it (not one that ended just in time).
        timed_out = timer is not None and not timer.is_alive() and os.WIFSIGNALED(status)
        if timer:
            timer.cancel()
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
        if process.returncode != 0 and check and not timed_out:
            raise RuntimeError(f"{args[:4]} exited with {process.returncode}:\n{stderr[-3000:]}")
        # ru_maxrss is in KiB on Linux; a child's is at least this process's own peak.
        own_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        if usage.ru_maxrss <= own_peak:
            raise RuntimeError(f"{args[:4]}: its peak RSS cannot be told from the benchmark's own ({own_peak} KiB)")
        return {
            "wall_s": wall,
            "cpu_s": usage.ru_utime + usage.ru_stime,
            "peak_rss_mib": usage.ru_maxrss / 1024,
            "timed_out": timed_out,
            "returncode": process.returncode,
            "stdout": stdout,
            "stderr": stderr,
        }


# -- the dump ------------------------------------------------------------------------------------


def compile_java(work: Path) -> Path:
    classes = work / "classes"
    classes.mkdir(parents=True, exist_ok=True)
    sources = [str(JAVA_DIR / "BigHeap.java"), str(JAVA_DIR / "VisualVMBench.java")]
    subprocess.run(["javac", "-cp", str(VISUALVM_HEAP_JAR), "-d", str(classes), *sources], check=True, timeout=300)
    return classes


def make_dump(work: Path, classes: Path, customers: int, xmx_gb: int | None = None) -> Path:
    """``BigHeap`` with ``customers`` customers, dumped live by ``jcmd``; reused when present."""
    dump = work / f"bigheap-{customers}.hprof"
    if dump.exists():
        return dump
    # Compressed oops stay on below 32 GB; the heap needs about 1.8 KB per customer (a 10 GB dump,
    # 4.4 million customers, wants --xmx 14: the default's headroom would leave compressed oops).
    xmx = f"-Xmx{xmx_gb or max(1, customers * 8 // 1_000_000 + 1)}g"
    proc = subprocess.Popen(
        ["java", xmx, "-cp", str(classes), "BigHeap", str(customers)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("ready "):
            raise RuntimeError(f"BigHeap did not start: {line!r}")
        _, pid, made = line.split()
        part = dump.with_suffix(".part")
        print(f"BigHeap made {int(made):,} objects; dumping to {dump}", file=sys.stderr)
        subprocess.run(["jcmd", pid, "GC.heap_dump", str(part)], check=True, timeout=1800, stdout=sys.stderr)
        part.rename(dump)
    finally:
        proc.kill()
        proc.wait()
    return dump


# -- heapdb --------------------------------------------------------------------------------------


def heapdb_analyze(dump: Path) -> dict[str, Any]:
    """``heapdb analyze DUMP --json`` as a person runs it."""
    env = heapdb_environment()
    before = load()
    done = run_process([sys.executable, "-m", "heapdb", "analyze", str(dump), "--json", "--top", str(TOP)], env)
    report = json.loads(done.pop("stdout"))
    done.pop("stderr")
    return {**done, "load": [before, load()], "objects": report["objects"], "references": report["references"]}


def heapdb_phases(dump: Path, ids: list[int]) -> dict[str, Any]:
    """heapdb's phases timed inside a child (``--child``), and its retained sizes of ``ids``."""
    before = load()
    args = [sys.executable, "-m", "benchmarks.hprof", "--child", str(dump), "--child-ids", ",".join(map(str, ids))]
    done = run_process(args)
    return {**json.loads(done["stdout"].strip().splitlines()[-1]), "load": [before, load()]}


def high_water_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def child(path: str, ids: list[int]) -> None:
    """The process ``heapdb_phases`` runs: imports, read, analysis, each timed; then the checks."""
    t0 = time.perf_counter()
    import numpy as np

    from heapdb.loader.analysis import analyze
    from heapdb.loader.formats import read_graph

    t1 = time.perf_counter()
    hwm_imports = high_water_mib()
    graph = read_graph(path)
    t2 = time.perf_counter()
    hwm_read = high_water_mib()
    result = analyze(graph)
    t3 = time.perf_counter()
    hwm_analyse = high_water_mib()
    graph_bytes = sum(
        a.nbytes
        for a in (graph.ids, graph.kind, graph.type, graph.name, graph.self_size)
        + (graph.edge_start, graph.edge_to, graph.edge_kind, graph.edge_name)
    )
    figures: dict[str, Any] = {
        "import_s": t1 - t0,
        "read_s": t2 - t1,
        "analyse_s": t3 - t2,
        "hwm_imports_mib": hwm_imports,
        "hwm_read_mib": hwm_read,
        "hwm_analyse_mib": hwm_analyse,
        "graph_arrays_mib": graph_bytes / 2**20,
        "nodes": graph.node_count,
        "edges": graph.edge_count,
        "meta": {k: v for k, v in graph.meta.items() if isinstance(v, int | str)},
    }
    # What VisualVM lists: instances and arrays, not class objects nor heapdb's synthetic roots.
    listed = np.isin(graph.kind, [graph.node_kinds.index(k) for k in ("instance", "object array", "primitive array")])
    figures["instances"] = int(listed.sum())
    figures["shallow_bytes"] = int(graph.self_size[listed].sum())
    figures["retained_sum"] = int(result.retained_size[listed].sum())
    figures["reachable_size"] = int(graph.self_size[result.reachable].sum())
    order = np.argsort(graph.ids)
    found = np.searchsorted(graph.ids[order], np.asarray(ids, dtype=np.int64))
    nodes = [
        int(order[i]) if i < len(order) and graph.ids[order[i]] == x else -1 for i, x in zip(found, ids, strict=True)
    ]
    figures["retained"] = [int(result.retained_size[v]) if v >= 0 else None for v in nodes]
    top = np.argsort(np.where(listed, result.retained_size, -1))[::-1][:TOP]
    figures["top"] = [
        {"id": int(graph.ids[v]), "class": graph.type_name(int(v)), "retained": int(result.retained_size[v])}
        for v in top
    ]
    del result
    from heapgen.oracles import visualvm_view

    view = analyze(visualvm_view(graph))
    figures["retained_visualvm_view"] = [int(view.retained_size[v]) if v >= 0 else None for v in nodes]
    figures["retained_sum_visualvm_view"] = int(view.retained_size[listed].sum())
    print(json.dumps(figures))


# -- VisualVM ------------------------------------------------------------------------------------


def visualvm(dump: Path, classes: Path, work: Path, xmx: str, timeout: float) -> dict[str, Any]:
    """VisualVMBench on ``dump``, cold: its cache directory and temporary files removed first."""
    shutil.rmtree(dump.parent / (dump.name + ".hwcache"), ignore_errors=True)
    tmp = work / "visualvm-tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    args = [
        "java", f"-Xmx{xmx}", f"-Djava.io.tmpdir={tmp}", "-cp", f"{VISUALVM_HEAP_JAR}:{classes}",
        "VisualVMBench", str(dump), str(TOP),
    ]  # fmt: skip
    before = load()
    done = run_process(args, timeout=timeout, check=False)
    figures: dict[str, Any] = {**done, "load": [before, load()], "xmx": xmx}
    lines = done["stdout"].strip().splitlines()
    figures["finished"] = done["returncode"] == 0 and not done["timed_out"] and bool(lines)
    if figures["finished"]:
        figures.update(json.loads(lines[-1]))
    figures["steps"] = done["stderr"].strip().splitlines()[-3:]
    figures.pop("stdout")
    figures.pop("stderr")
    shutil.rmtree(dump.parent / (dump.name + ".hwcache"), ignore_errors=True)
    shutil.rmtree(tmp, ignore_errors=True)
    return figures


# -- the report ----------------------------------------------------------------------------------


def report(dump: Path, runs: dict[str, Any]) -> None:
    heapdb, vv, phases = runs["heapdb"], runs["visualvm"], runs["phases"]
    best = min(heapdb, key=lambda r: r["wall_s"])
    size = dump.stat().st_size
    print(
        f"\nDump: `{dump.name}`, {size:,} bytes ({size / 2**20:,.0f} MiB); heapdb: {best['objects']:,} objects "
        f"(of them {phases['instances']:,} instances and arrays), {best['references']:,} references"
    )
    print("\n| tool | step | wall s (best; all runs) | CPU s | peak RSS MiB | load average before -> after |")
    print("|---|---|---:|---:|---:|---|")
    walls = "; ".join(f"{r['wall_s']:.1f}" for r in heapdb)
    loads = " / ".join(f"{r['load'][0]} -> {r['load'][1]}" for r in heapdb)
    print(
        f"| heapdb | `heapdb analyze --json` (whole command) | {best['wall_s']:.1f} ({walls}) | {best['cpu_s']:.1f} | "
        f"{best['peak_rss_mib']:,.0f} ({best['peak_rss_mib'] * 2**20 / size:.2f}x the dump) | {loads} |"
    )
    lp = f"{phases['load'][0]} -> {phases['load'][1]}"
    print(
        f"| heapdb | in process: imports | {phases['import_s']:.1f} | | {phases['hwm_imports_mib']:,.0f} (VmHWM) | {lp} |"
    )
    read_peak = f"{phases['hwm_read_mib']:,.0f} (VmHWM; {phases['hwm_read_mib'] * 2**20 / size:.2f}x the dump)"
    print(f"| heapdb | in process: `read_graph` | {phases['read_s']:.1f} | | {read_peak} | |")
    print(
        f"| heapdb | in process: `analyze` | {phases['analyse_s']:.1f} | | {phases['hwm_analyse_mib']:,.0f} (VmHWM) | |"
    )
    for r in vv:
        lv = f"{r['load'][0]} -> {r['load'][1]}"
        if not r["finished"]:
            end = f"killed after {r['wall_s']:.0f} s" if r["timed_out"] else f"exit code {r['returncode']}"
            steps = "; ".join(r["steps"]) or "none"
            print(
                f"| VisualVM | {end}; its last steps: {steps} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | "
                f"{r['peak_rss_mib']:,.0f} | {lv} |"
            )
            continue
        peak = f"{r['peak_rss_mib']:,.0f} (Java heap pools' peaks {r['peak_heap'] / 2**20:,.0f} MiB, -Xmx{r['xmx']})"
        print(f"| VisualVM | whole process | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | {peak} | {lv} |")
        print(f"| VisualVM | `createHeap` + walk of all instances | {r['open_s']:.1f} + {r['walk_s']:.1f} | | | |")
        print(f"| VisualVM | `getRetainedSize` of all instances | {r['retained_s']:.1f} | | | |")
    finished = [r for r in vv if r["finished"]]
    if finished:
        theirs = min(finished, key=lambda r: r["wall_s"])
        print(
            f"\nheapdb / VisualVM: whole process {best['wall_s'] / theirs['wall_s']:.3f}x wall, "
            f"{best['peak_rss_mib'] / theirs['peak_rss_mib']:.2f}x peak RSS; "
            f"analysis {phases['analyse_s']:.1f} s against VisualVM's retained sizes {theirs['retained_s']:.1f} s "
            f"(VisualVM {theirs['retained_s'] / phases['analyse_s']:.0f}x heapdb); read + analysis "
            f"{phases['read_s'] + phases['analyse_s']:.1f} s against open + walk + retained sizes "
            f"{theirs['open_s'] + theirs['walk_s'] + theirs['retained_s']:.1f} s (VisualVM opens lazily: its "
            f"indexes are built inside the first getRetainedSize)"
        )
        print("\n| check | heapdb | VisualVM |\n|---|---:|---:|")
        print(f"| instances and arrays | {phases['instances']:,} | {theirs['instances']:,} |")
        print(f"| their shallow bytes | {phases['shallow_bytes']:,} | {theirs['shallow_bytes']:,} |")
        print(
            f"| sum of their retained sizes (heapdb's graph; VisualVM's view) | {phases['retained_sum']:,}; "
            f"{phases['retained_sum_visualvm_view']:,} | {theirs['retained_sum']:,} |"
        )
        for t, ours, view in zip(theirs["top"], phases["retained"], phases["retained_visualvm_view"], strict=True):
            label = f"retained size of {t['class']} 0x{t['id']:x} (heapdb's graph; VisualVM's view)"
            print(f"| {label} | {ours:,}; {view:,} | {t['retained']:,} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/heapdb-hprof-bench"), help="dump and classes cache")
    parser.add_argument("--customers", type=int, default=480_000, help="BigHeap's size: 480,000 give ~1.1 GB")
    parser.add_argument("--xmx", type=int, help="BigHeap's -Xmx in GB (default: 8 KB per customer)")
    parser.add_argument("--dump", type=Path, help="an existing .hprof to use instead of generating one")
    parser.add_argument("--repeat", type=int, default=2, help="heapdb runs (the fastest is reported)")
    parser.add_argument("--visualvm-repeat", type=int, default=1, help="VisualVM runs; 0 skips VisualVM")
    parser.add_argument("--visualvm-xmx", default="16g", help="VisualVM's JVM heap limit")
    parser.add_argument("--visualvm-timeout", type=float, default=1800, help="seconds before a VisualVM run is killed")
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--child-ids", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, [int(x) for x in args.child_ids.split(",") if x])
        return
    if args.visualvm_repeat and not VISUALVM_HEAP_JAR.is_file():
        parser.error(f"needs VisualVM's heap library ({VISUALVM_HEAP_JAR}): scripts/bootstrap.sh installs visualvm")

    args.work.mkdir(parents=True, exist_ok=True)
    classes = compile_java(args.work)
    dump = args.dump or make_dump(args.work, classes, args.customers, args.xmx)
    print(f"load average at start: {load()}", file=sys.stderr)
    runs: dict[str, Any] = {"dump": str(dump), "size": dump.stat().st_size, "heapdb": [], "visualvm": []}
    heapdb_analyze(dump)  # numba's kernel cache and the page cache warm, as for any second run
    for _ in range(max(1, args.repeat)):
        runs["heapdb"].append(heapdb_analyze(dump))
        print(json.dumps(runs["heapdb"][-1]), file=sys.stderr)
    for _ in range(args.visualvm_repeat):
        runs["visualvm"].append(visualvm(dump, classes, args.work, args.visualvm_xmx, args.visualvm_timeout))
        print(json.dumps(runs["visualvm"][-1]), file=sys.stderr)
    finished = [r for r in runs["visualvm"] if r["finished"]]
    ids = [t["id"] for t in finished[0]["top"]] if finished else []
    runs["phases"] = heapdb_phases(dump, ids)
    print(json.dumps(runs["phases"]), file=sys.stderr)
    report(dump, runs)
    print(f"\nload average at the end: {load()}")
    if args.json:
        args.json.write_text(json.dumps(runs, indent=2))


if __name__ == "__main__":
    main()
