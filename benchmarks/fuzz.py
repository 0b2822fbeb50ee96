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
    python -m benchmarks.fuzz --bounds                      # time and memory per MB of input

Prints per format: cases, FormatErrors, accepted, internal errors, hangs, over-memory, corrupt cases
accepted, the largest traced peak and the slowest case (and which it was); then each distinct
problem with a case to replay. Exits 1 when any case broke the oracle.

``--bounds`` reads a few MB of each format shaped like a program's heap, and the adversarial shapes
the readers' bounds were found on (deep class chains, a million empty segments, decompression bombs,
deep nesting, records naming one huge string): for each, the best of two untraced reads and the
traced peak of a third, per MB of input (docs/reliability.md states them).
"""

from __future__ import annotations

import argparse
import json
import random
import struct
import sys
import tempfile
import time
import tracemalloc
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

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
    parser.add_argument("--bounds", action="store_true", help="measure time and memory per MB of input instead")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="heapdb-fuzz-") as tmp:
        directory = Path(tmp)
        if args.bounds:
            rows = bounds(directory)
            if args.json:
                args.json.write_text(json.dumps(rows, indent=2) + "\n")
            return 0
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
            peak, slowest, slowest_case = 0, 0.0, ""
            started = time.perf_counter()
            for i in range(args.cases):
                case = make_case(fmt, case_rng(args.seed, fmt, i))
                outcome = run_case(case, directory)
                counts[outcome.result] += 1
                peak = max(peak, outcome.peak)
                if outcome.seconds > slowest:
                    slowest, slowest_case = (
                        outcome.seconds,
                        f"{fmt}:{i} ({case.mutation[:60]}, {len(case.data):,} bytes)",
                    )
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
                "slowest_case": slowest_case,
                "seconds": round(elapsed, 1),
            }
            f = figures[fmt]
            print(
                f"{fmt:<8} {args.cases:>7,} {f['format_errors']:>11,} {f['accepted']:>8,} {f['internal_errors']:>8,} "
                f"{f['hangs']:>5,} {f['over_memory']:>8,} {f['corrupt_accepted']:>16,} "
                f"{peak / (1 << 20):>7.1f} MiB {slowest:>7.2f}s {elapsed:>6.0f}s",
                flush=True,
            )
        for fmt, f in figures.items():
            print(f"slowest {fmt} case: {f['slowest_case']}")
        for (fmt, result, detail), replay in sorted(problems.items()):
            print(f"{fmt} {result}: {detail} -- {replay}")
        if args.json:
            args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 1 if problems else 0


# -- bounds: time and traced memory per MB of input --------------------------------------------------


def typical_inputs() -> dict[str, tuple[str, bytes]]:
    """A few MB of each format, shaped like a program's heap: name -> (format, bytes)."""
    from heapgen.seeds import SAMPLE_ROOTS, dump_text, sample_objects, snapshot_dict
    from heapgen.synth import synth_graph

    n = 100_000
    rows: list[Any] = [("synthetic", 0, 1, 0, [("element", 1, 1)])]
    for i in range(1, n):
        edges = [("property", "next", i + 1)] if i + 1 < n else []
        rows.append(("object", 2, 2 * i + 1, 32, [*edges, ("property", "value", (i * 7919) % (n - 1) + 1)]))
    v8 = json.dumps(snapshot_dict(rows, ["", "(GC roots)", "Node"])).encode()

    objects = sample_objects()
    for i in range(n):
        following = [f"0x{0x100000 + 0x40 * (i + 1):x}"] if i + 1 < n else [None]
        objects[f"0x{0x100000 + 0x40 * i:x}"] = {"type": "table", "cat": 0, "size": 64, "pairs": ["0x1100", *following]}
    objects["0x1160"]["pairs"] = ["0x1100", "0x100000"]
    luau = dump_text(objects, SAMPLE_ROOTS).encode()

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "typical.snapbin")
        from heapgen.synth import write_snapbin

        write_snapbin(synth_graph(300_000, 1_200_000, seed=1), path)
        snapbin = path.read_bytes()
    return {
        "V8, 100,000 objects": ("v8", v8),
        "Luau, 100,000 tables": ("luau", luau),
        "snap.bin, 300,000 objects": ("snapbin", snapbin),
        "hprof, 100,000 objects": ("hprof", typical_hprof(n)),
    }


def typical_hprof(n: int) -> bytes:
    """A dump of ``n`` objects: a linked list of nodes, with an int array and an object array every tenth."""
    from heapgen.hprof_writer import INT, OBJECT, HprofWriter, standard_classes

    w = HprofWriter(8)
    c = standard_classes(w)
    node = w.add_class("com/example/Node", c["java.lang.Object"], [("next", OBJECT), ("value", INT)])
    first = 0x100000
    for i in range(n):
        oid = first + 0x40 * i
        if i % 10 == 9:
            w.prim_array(oid, INT, 16)
        elif i % 10 == 8:
            w.obj_array(oid, c["java.lang.Object[]"], [first + 0x40 * (i - k) for k in range(1, 9)])
        else:
            w.instance(oid, node, {"next": oid - 0x40 if i else 0, "value": i})
    w.root(0x01, first + 0x40 * (n - 1))
    return w.to_bytes(segment_records=10_000)


def adversarial_inputs() -> dict[str, tuple[str, bytes]]:
    """The shapes the readers' bounds were found on (docs/reliability.md): name -> (format, bytes)."""
    from heapdb.loader.formats.snapbin.layout import CHUNK_FIELDS, FILE_HEADER
    from heapgen.fuzz import _bomb_frame, seeds
    from heapgen.hprof_writer import OBJECT
    from heapgen.seeds import deep_class_chain, field_chain, shared_name, small, with_empty_segments

    seed = seeds("snapbin")[0]
    frame = _bomb_frame(700 << 20)
    fields = CHUNK_FIELDS.pack(2, 1, 0, 0, len(frame), 700 << 20, zlib.crc32(frame))
    bomb = (fields + struct.pack("<I", zlib.crc32(fields)) + frame) * 30
    text = json.dumps(json.loads(seeds("v8")[0]))
    return {
        "V8, trace_tree nested 1,000,000 deep": (
            "v8",
            (text[:-1] + ', "trace_tree": ' + "[" * 10**6 + "]" * 10**6 + "}").encode(),
        ),
        "Luau, a 4 MB string": ("luau", seeds("luau")[0].replace(b'"first"', b'"' + b"a" * (4 << 20) + b'"')),
        "snap.bin, 30 frames declaring 700 MiB": (
            "snapbin",
            seed[: FILE_HEADER.size] + bomb + seed[FILE_HEADER.size :],
        ),
        "hprof, 20,000 classes in one chain": ("hprof", deep_class_chain(20_000)),
        "hprof, 1,000,000 empty segments": (
            "hprof",
            with_empty_segments(small()[0].to_bytes(segment_records=1), 10**6),
        ),
        "hprof, 1,400 chained classes of an object field": ("hprof", field_chain(1400, OBJECT)),
        "hprof, 1,400 chained classes of a boolean field": ("hprof", field_chain(1400, 4)),
        "hprof, 2,000 frames of classes named by one 1 MB string": ("hprof", shared_name("frames", 2000, 1 << 20)),
    }


def measure_bounds(name: str, fmt: str, data: bytes, directory: Path) -> dict[str, Any]:
    """The best of two untraced reads of ``data``, and the traced peak of a third."""
    from heapdb.errors import FormatError
    from heapgen.fuzz import _warm, readers

    _warm(fmt, directory)
    path = directory / f"bounds.{fmt}"
    path.write_bytes(data)
    read = readers(fmt)[0]
    times, result = [], "read"
    for traced in (False, False, True):
        if traced:
            tracemalloc.start()
        started = time.perf_counter()
        try:
            read(path)
        except FormatError:
            result = "FormatError"
        if traced:
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        else:
            times.append(time.perf_counter() - started)
    mb = len(data) / 1e6
    return {"input": name, "format": fmt, "mb": round(mb, 2), "result": result, "seconds": round(min(times), 3),
            "seconds_per_mb": round(min(times) / mb, 3), "peak_mib": round(peak / 2**20, 1),
            "peak_per_byte": round(peak / len(data), 1)}  # fmt: skip


def bounds(directory: Path) -> list[dict[str, Any]]:
    """Measure every typical and adversarial input, printing a row each."""
    print(f"{'input':<58} {'MB':>6} {'result':>11} {'time':>7} {'s/MB':>6} {'peak MiB':>8} {'peak/size':>9}")
    rows = []
    for name, (fmt, data) in {**typical_inputs(), **adversarial_inputs()}.items():
        row = measure_bounds(name, fmt, data, directory)
        rows.append(row)
        print(
            f"{name:<58} {row['mb']:>6.2f} {row['result']:>11} {row['seconds']:>6.2f}s {row['seconds_per_mb']:>6.3f} "
            f"{row['peak_mib']:>8.1f} {row['peak_per_byte']:>8.1f}x",
            flush=True,
        )
    return rows


if __name__ == "__main__":
    sys.exit(main())
