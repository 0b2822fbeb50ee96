"""Capturing a .NET heap on Mono: heapdb's profiler module beside Mono's log profiler heapshot.

``benchmarks/dotnet/BigHeap.cs`` builds a managed heap of ``--mib`` MiB (a linked list: a node and
a 200-byte array per 256 bytes), then, in one process each:

- ``heapdb``: ``mono --profile=heapdb`` and ``Heapdb.Capture(path)``, timed in the program;
- ``log``: ``mono --profile=log:heapshot`` (a heapshot at every major collection) and one
  ``GC.Collect()``, timed in the program: the collection plus its heapshot (the log profiler's
  writer thread may still be writing when it returns; the process's wall time shows all of it);
- ``none``: the same ``GC.Collect()`` without a profiler, the collection's own cost.

For each: the timed seconds, the process's peak resident memory before and after (``VmHWM``: the
profiler's extra memory), the process's wall time and the output's size. Then ``heapdb analyze``
reads and analyses the snap.bin file and the .mlpd file's last heapshot, and ``mprof-report``
reads the .mlpd file (wall and peak each). The log profiler writes a heapshot at every
major collection while the heap grows too, so its file holds several. Numbers are noisy on a shared
machine; the load average is printed.

Usage (from the repository root)::

    python -m benchmarks.mono_capture --mib 1024
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.analysis import heapdb_environment, run_process
from heapdb import mono

PROGRAM = Path(__file__).parent / "dotnet" / "BigHeap.cs"


def measure(argv: list[str], env: dict[str, str], cwd: Path, output: Path | None) -> dict[str, Any]:
    run = run_process(argv, cwd, env)
    inside = json.loads(run["stdout"].strip().splitlines()[-1])
    return {
        "timed_s": inside["seconds"],
        "extra_peak_mib": round((inside["peak_after_kib"] - inside["peak_before_kib"]) / 1024, 1),
        "process_wall_s": round(run["wall_s"], 1),
        "process_peak_mib": round(run["peak_rss_mib"]),
        "objects": inside["objects"],
        "heap_mib": round(inside["heap_bytes"] / 2**20),
        "output_mib": round(output.stat().st_size / 2**20) if output and output.exists() else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=int, default=1024, help="size of the managed heap to capture")
    parser.add_argument("--work", type=Path, help="where the captures go (default: a temporary directory)")
    args = parser.parse_args()
    built = mono.build()
    with tempfile.TemporaryDirectory() as scratch:
        work = args.work or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        exe = work / "BigHeap.exe"
        subprocess.run(["mcs", "-nologo", f"-r:{built.api}", f"-out:{exe}", str(PROGRAM)], check=True)
        env = mono.environment(built)
        snap, mlpd = work / "big.snapbin", work / "big.mlpd"
        print(f"load average before: {os.getloadavg()}")
        rows = {
            "none": measure(["mono", str(exe), "collect", str(args.mib)], env, work, None),
            "heapdb": measure(mono.mono_command(str(exe), ["capture", str(args.mib), str(snap)]), env, work, snap),
            "log": measure(
                ["mono", f"--profile=log:heapshot,nocalls,output={mlpd}", str(exe), "collect", str(args.mib)],
                env,
                work,
                mlpd,
            ),
        }
        # Reading what each wrote: heapdb analyses the snap.bin and the .mlpd's last heapshot (the
        # same heap); mprof-report sums the .mlpd's heapshots per class, no graph.
        readers = {
            "heapdb analyze snap.bin": [sys.executable, "-m", "heapdb", "analyze", str(snap), "--top", "1"],
            "heapdb analyze .mlpd": [sys.executable, "-m", "heapdb", "analyze", str(mlpd), "--top", "1"],
        }
        for name, argv in readers.items():
            read = run_process(argv, work, heapdb_environment())
            rows[name] = {"wall_s": round(read["wall_s"], 1), "peak_mib": round(read["peak_rss_mib"])}
        # mprof-report's peak is below what a child forked from this process starts with: wall only.
        started = time.perf_counter()
        subprocess.run(["mprof-report", "--reports=heapshot", str(mlpd)], check=True, capture_output=True)
        rows["mprof-report heapshot"] = {"wall_s": round(time.perf_counter() - started, 1)}
        for name, row in rows.items():
            print(f"{name:15} {json.dumps(row)}")
        print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
