"""snap.bin write and read throughput on a synthetic graph, uncompressed and zstd.

    .venv/bin/python benchmarks/snapbin_throughput.py [--objects 1000000] [--refs-per-object 4]

Each measurement runs in a fresh subprocess; its peak resident memory is Linux's ``VmHWM``, reset
just before the measured step, so the table shows the peak during the step and, in brackets, the
process's size when the step began (the interpreter, numpy and, for writes, the generated graph).
Files go to ``benchmarks/out/``.

Phases:

- ``write_graph``: a whole :class:`HeapGraph` written through the columnar path;
- ``read_graph``: the file loaded into a CSR ``HeapGraph`` (ids resolved, root layout built, validated),
  after numba and the id-index kernels are loaded (their one-off cost is shown apart);
- ``iter_records``: a streaming pass over every chunk (checksums, decompression, column checks);
- ``add_object``: the per-object writer API a Python producer (``heapdb.capture``) uses, on a
  smaller graph since it runs a Python loop per object.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent / "out"


def synthetic_graph(objects: int, refs_per_object: int, sparse_ids: bool, seed: int = 1):
    """A random heap: ``objects`` nodes plus a root, ``objects * refs_per_object`` edges of mixed kinds."""
    from heapdb.loader.graph import HeapGraph, csr_from_coo

    rng = np.random.default_rng(seed)
    n, m = objects + 1, objects * refs_per_object
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    kind = rng.choice([1, 2, 2, 2, 3, 6, 7], m).astype(np.uint8)
    strings = ["", *(f"field{i}" for i in range(2000)), *(f"Type{i}" for i in range(500))]
    name = np.where(np.isin(kind, [1, 4]), rng.integers(0, 64, m), rng.integers(1, 2001, m))
    edge_start, edge_to, edge_kind, edge_name = csr_from_coo(n, src, dst, kind, name)
    if sparse_ids:  # heap addresses: increasing, 16-byte aligned, irregular gaps
        ids = np.cumsum(rng.integers(1, 512, n)) * 16 + 0x7F0000000000
    else:  # V8-like odd counters
        ids = np.arange(n, dtype=np.int64) * 2 + 1
    graph = HeapGraph(
        ids=ids.astype(np.int64),
        kind=rng.integers(0, 4, n).astype(np.uint8),
        type=rng.integers(2001, 2501, n).astype(np.int32),
        name=np.zeros(n, np.int32),
        self_size=rng.integers(16, 256, n).astype(np.int64),
        edge_start=edge_start,
        edge_to=edge_to,
        edge_kind=edge_kind,
        edge_name=edge_name,
        strings=strings,
        node_kinds=["object", "array", "string", "closure"],
        root=n - 1,
    )
    graph.validate()
    return graph


def peak_mb() -> float:
    """Peak resident memory since the start or the last :func:`reset_peak` (Linux's VmHWM)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def reset_peak() -> float:
    """Restart peak tracking at the current size (Linux: write 5 to /proc/self/clear_refs); return it.

    Memory freed earlier (the graph generator's temporaries) is first handed back to the system, so
    the step cannot hide its own allocations in it.
    """
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
    return peak_mb()


def phase(args: argparse.Namespace) -> dict[str, float]:
    """One measurement, run inside the subprocess."""
    from heapdb.loader.formats.snapbin import EdgeKind, Objects, SnapbinWriter, iter_records, read_graph, write_graph

    path = Path(args.path)
    if args.phase == "write_graph":
        graph = synthetic_graph(args.objects, args.refs_per_object, args.sparse_ids)
        before = reset_peak()
        start = time.perf_counter()
        write_graph(graph, path, compress=args.compress)
        seconds = time.perf_counter() - start
        return {
            "seconds": seconds,
            "objects": graph.node_count,
            "refs": graph.edge_count,
            "bytes": path.stat().st_size,
            "before_mb": before,
            "peak_mb": peak_mb(),
        }
    if args.phase == "read_graph":
        # Import numba and load the id-index kernels first (formats.detect imports them anyway for
        # the V8 reader), so the figure is the reading itself.
        start = time.perf_counter()
        from heapdb.loader.formats.snapbin.ids import IdIndex

        IdIndex(np.arange(3)).lookup(np.arange(3), np.empty(3, np.int32))
        warmup = time.perf_counter() - start
        before = reset_peak()
        start = time.perf_counter()
        graph = read_graph(path)
        seconds = time.perf_counter() - start
        peak = peak_mb()
        start = time.perf_counter()
        graph.validate()  # read_graph ends with it; timed again alone to show its share
        return {
            "seconds": seconds,
            "objects": graph.node_count,
            "refs": graph.edge_count,
            "bytes": path.stat().st_size,
            "before_mb": before,
            "peak_mb": peak,
            "validate_seconds": time.perf_counter() - start,
            "warmup_seconds": warmup,
        }
    if args.phase == "iter_records":
        before = reset_peak()
        start = time.perf_counter()
        objects = refs = 0
        for record in iter_records(path):
            if isinstance(record, Objects):
                objects += record.id.shape[0]
                refs += record.ref_target.shape[0]
        seconds = time.perf_counter() - start
        return {
            "seconds": seconds,
            "objects": objects,
            "refs": refs,
            "bytes": path.stat().st_size,
            "before_mb": before,
            "peak_mb": peak_mb(),
        }
    # add_object: the per-object API, refs to random earlier or later ids.
    rng = np.random.default_rng(2)
    n = args.api_objects
    targets = (rng.integers(0, n, (n, args.refs_per_object)) * 2 + 1).tolist()
    before = reset_peak()
    start = time.perf_counter()
    with SnapbinWriter(path, compress=args.compress) as w:
        types = [w.add_type(f"Type{i}") for i in range(500)]
        prop = EdgeKind.PROPERTY
        for i in range(n):
            w.add_object(2 * i + 1, types[i % 500], 64, [(t, prop, "field") for t in targets[i]])
        w.add_root("stack", "main", 1)
    seconds = time.perf_counter() - start
    return {
        "seconds": seconds,
        "objects": n,
        "refs": n * args.refs_per_object,
        "bytes": path.stat().st_size,
        "before_mb": before,
        "peak_mb": peak_mb(),
    }


def measure(name: str, args: argparse.Namespace, path: Path, compress: bool) -> dict[str, float]:
    cmd = [
        sys.executable,
        __file__,
        "--phase",
        name,
        "--path",
        str(path),
        "--objects",
        str(args.objects),
        "--refs-per-object",
        str(args.refs_per_object),
        "--api-objects",
        str(args.api_objects),
    ]
    cmd += ["--compress"] if compress else []
    cmd += ["--sparse-ids"] if args.sparse_ids else []
    runs = []
    for _ in range(args.repeat):
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        runs.append(json.loads(out.strip().splitlines()[-1]))
    return min(runs, key=lambda r: r["seconds"])  # the machine is shared: the fastest run is the least disturbed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--objects", type=int, default=1_000_000)
    parser.add_argument("--refs-per-object", type=int, default=4)
    parser.add_argument("--api-objects", type=int, default=200_000)
    parser.add_argument("--sparse-ids", action="store_true", help="address-like ids instead of dense counters")
    parser.add_argument("--repeat", type=int, default=3, help="runs per step; the fastest is reported")
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    parser.add_argument("--compress", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        print(json.dumps(phase(args)))
        return

    OUT.mkdir(exist_ok=True)
    print(
        f"{args.objects:,} objects, {args.objects * args.refs_per_object:,} refs, "
        f"{'sparse' if args.sparse_ids else 'dense'} ids; Python {sys.version.split()[0]}, {os.cpu_count()} cores; "
        f"best of {args.repeat} runs"
    )
    print("| step | codec | file MB | seconds | MB/s (file) | objects/s | refs/s | peak RSS MB (before) | note |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    for compress in (False, True):
        codec = "zstd" if compress else "none"
        path = OUT / f"throughput-{codec}.snapbin"
        for name in ("write_graph", "read_graph", "iter_records"):
            r = measure(name, args, path, compress)
            note = (
                f"of which HeapGraph.validate() {r['validate_seconds']:.2f} s; numba import and kernel load "
                f"before it {r['warmup_seconds']:.2f} s"
                if "validate_seconds" in r
                else ""
            )
            print(row(name, codec, r, note), flush=True)
        r = measure("add_object", args, OUT / f"api-{codec}.snapbin", compress)
        print(row(f"add_object ({r['objects']:,.0f} objects)", codec, r), flush=True)


def row(step: str, codec: str, r: dict[str, float], note: str = "") -> str:
    mb = r["bytes"] / 1e6
    return (
        f"| {step} | {codec} | {mb:.1f} | {r['seconds']:.2f} | {mb / r['seconds']:.0f} "
        f"| {r['objects'] / r['seconds'] / 1e6:.2f} M | {r['refs'] / r['seconds'] / 1e6:.2f} M "
        f"| {r['peak_mb']:.0f} ({r['before_mb']:.0f}) | {note} |"
    )


if __name__ == "__main__":
    main()
