"""``python -m heapdb.mono build``: build the profiler module (as ``heapdb mono build`` does)."""

from __future__ import annotations

import sys

from heapdb.errors import HeapdbError
from heapdb.mono import build

if __name__ == "__main__":
    if sys.argv[1:] != ["build"]:
        print("usage: python -m heapdb.mono build   (builds heapdb's Mono profiler module, prints its path)")
        sys.exit(0 if sys.argv[1:] in (["--help"], ["-h"]) else 2)
    try:
        print(build(lambda message: print(message, file=sys.stderr)).library)
    except HeapdbError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(e.exit_code)
