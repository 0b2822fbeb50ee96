"""The long fuzz run of heapdb's readers: many structure-aware mutations of real seeds per format.

The mutations and the oracle are those of the test suite's bounded run (:mod:`heapgen.fuzz`):
every case is read by every reader of its format and must give a valid graph or a
:class:`~heapdb.errors.FormatError` naming the file and an offset or record; a definitely-corrupt
case must be rejected; traced memory (``tracemalloc``) must stay within the stated multiple of the
file size plus a floor; a case must finish within the hang limit. Case ``i`` of a format uses
``random.Random(f"{seed}:{format}:{i}")``, so any case can be replayed with ``--replay FORMAT:I``.

Usage (from the repository root)::

    nice python -m benchmarks.fuzz --cases 10000            # every format
    python -m benchmarks.fuzz --cases 500 --formats luau
    python -m benchmarks.fuzz --replay v8:1234              # show one case and its outcome

Prints per format: cases, FormatErrors, accepted, internal errors, hangs, over-memory, corrupt cases
accepted, the largest traced peak and the slowest case; then each distinct problem with a case to
replay. Exits 1 when any case broke the oracle.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from heapgen.fuzz import (  # noqa: E402
    FORMATS,
    HANG_SECONDS,
    MEMORY_FLOOR,
    MEMORY_MULTIPLE,
    make_case,
    run_case,
)

PROBLEMS = ("internal", "hang", "over_memory", "missed_corrupt")


def case_rng(seed: int, fmt: str, i: int) -> random.Random:
    return random.Random(f"{seed}:{fmt}:{i}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=10_000, help="cases per format (default 10,000)")
    parser.add_argument("--formats", nargs="+", choices=FORMATS, default=list(FORMATS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--replay", metavar="FORMAT:I", help="run one case and print it")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="heapdb-fuzz-") as tmp:
        directory = Path(tmp)
        if args.replay:
            fmt, _, index = args.replay.partition(":")
            case = make_case(fmt, case_rng(args.seed, fmt, int(index)))
            outcome = run_case(case, directory)
            print(f"{fmt} case {index}: {case.mutation} ({len(case.data)} bytes, corrupt={case.corrupt})")
            print(f"  -> {outcome.result}: {outcome.detail} (peak {outcome.peak:,} B, {outcome.seconds:.3f} s)")
            return 0 if outcome.result not in PROBLEMS else 1

        print(
            f"{args.cases:,} cases per format; memory bound {MEMORY_MULTIPLE} x file size + "
            f"{MEMORY_FLOOR >> 20} MiB (tracemalloc peak); hang limit {HANG_SECONDS:.0f} s",
            flush=True,
        )
        header = (
            f"{'format':<8} {'cases':>7} {'FormatError':>11} {'accepted':>8} {'internal':>8} {'hangs':>5} "
            f"{'over-mem':>8} {'corrupt accepted':>16} {'max peak':>10} {'slowest':>8} {'time':>7}"
        )
        figures = {}
        problems: dict[tuple[str, str, str], str] = {}
        print(header, flush=True)
        for fmt in args.formats:
            counts: Counter[str] = Counter()
            peak, slowest = 0, 0.0
            started = time.perf_counter()
            for i in range(args.cases):
                case = make_case(fmt, case_rng(args.seed, fmt, i))
                outcome = run_case(case, directory)
                counts[outcome.result] += 1
                peak, slowest = max(peak, outcome.peak), max(slowest, outcome.seconds)
                if outcome.result in PROBLEMS:
                    key = (fmt, outcome.result, outcome.detail[:80])
                    problems.setdefault(key, f"--replay {fmt}:{i} ({case.mutation})")
            elapsed = time.perf_counter() - started
            figures[fmt] = {
                "cases": args.cases,
                "format_errors": counts["format_error"],
                "accepted": counts["accepted"],
                "internal_errors": counts["internal"],
                "hangs": counts["hang"],
                "over_memory": counts["over_memory"],
                "corrupt_accepted": counts["missed_corrupt"],
                "max_peak_bytes": peak,
                "slowest_seconds": round(slowest, 3),
                "seconds": round(elapsed, 1),
            }
            f = figures[fmt]
            print(
                f"{fmt:<8} {args.cases:>7,} {f['format_errors']:>11,} {f['accepted']:>8,} {f['internal_errors']:>8,} "
                f"{f['hangs']:>5,} {f['over_memory']:>8,} {f['corrupt_accepted']:>16,} "
                f"{peak / (1 << 20):>7.1f} MiB {slowest:>7.2f}s {elapsed:>6.0f}s",
                flush=True,
            )
        for (fmt, result, detail), replay in sorted(problems.items()):
            print(f"{fmt} {result}: {detail} -- {replay}")
        if args.json:
            args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
