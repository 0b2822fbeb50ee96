"""Adversarial hprof dumps for the reader's bounds (docs/reliability.md), written with heapgen's hprof
writer: ``deep``, a chain of ``--classes`` classes each the super class of the next with one
instance of each (only the first declares a reference field); ``segments``, a small dump with
``--segments`` empty HEAP_DUMP_SEGMENT records before its end.

Time them beside VisualVM with ``benchmarks/hprof.py``::

    python -m benchmarks.hprof_adversarial deep /tmp/deep.hprof
    python -m benchmarks.hprof --dump /tmp/deep.hprof --repeat 2
"""

from __future__ import annotations

import argparse
from pathlib import Path

from heapgen.seeds import deep_class_chain, small, with_empty_segments


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shape", choices=("deep", "segments"))
    parser.add_argument("out", type=Path)
    parser.add_argument("--classes", type=int, default=20_000, help="the deep chain's length")
    parser.add_argument("--segments", type=int, default=1_000_000, help="empty segments")
    args = parser.parse_args()
    if args.shape == "deep":
        data = deep_class_chain(args.classes)
    else:
        data = with_empty_segments(small()[0].to_bytes(segment_records=1), args.segments)
    args.out.write_bytes(data)
    print(f"{args.out}: {len(data):,} bytes")


if __name__ == "__main__":
    main()
