"""Real Mono log-profiler heapshots (.mlpd) for the tests and the fuzzer: tests/dotnet/MlpdLeak.cs,
compiled with ``mcs`` and run under ``mono --profile=log:heapshot=ondemand``, which asks for a
heapshot after it makes its requests and again after its cache entries."""

from __future__ import annotations

import subprocess
from pathlib import Path

PROGRAM = Path(__file__).resolve().parent.parent / "tests" / "dotnet" / "MlpdLeak.cs"
NAMESPACE = "MlpdLeak"  # the program's classes: MlpdLeak.Request, MlpdLeak.CacheEntry, MlpdLeak.Registry


def compile_program(exe: Path, *references: str, defines: tuple[str, ...] = ()) -> Path:
    """Compile the program into ``exe`` (with Mono.Profiler.Log and ``references``); returns ``exe``."""
    argv = ["mcs", "-nologo", "-r:Mono.Profiler.Log", *(f"-r:{r}" for r in references)]
    argv += [f"-d:{d}" for d in defines]
    subprocess.run([*argv, f"-out:{exe}", str(PROGRAM)], check=True, capture_output=True, timeout=120)
    return exe


def log_profile(out: Path) -> str:
    """The ``--profile`` option that writes on-demand heapshots to ``out``."""
    return f"--profile=log:heapshot=ondemand,output={out}"


def heapshots(work: Path, requests: int, entries: int) -> Path:
    """Run the program with ``requests`` and ``entries`` under the log profiler; the .mlpd file it wrote."""
    exe = compile_program(work / "MlpdLeak.exe")
    out = work / "leak.mlpd"
    done = subprocess.run(
        ["mono", log_profile(out), str(exe), str(requests), str(entries)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"mono exited {done.returncode}: {done.stderr[-2000:]}")
    return out
