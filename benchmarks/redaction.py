"""Redaction benchmark: what ``--redact`` adds to writing a snapshot, beside the same command without it.

Whole processes, alternating, ``--repeat`` times each, timed from outside with their peak memory
(``benchmarks.analysis.run_process``):

- ``python -m heapdb convert FILE OUT.bin``: read, write snap.bin (the reference);
- the same with ``--redact``: read, redact every string's contents and the references named by data,
  write.

Then, in this process, the parts a redacting load adds (``loader.redaction``): the graph redacted,
and the stored duplicate strings given their placeholders, beside the analysis they follow.

The input is a real Node snapshot: ``--snapshot FILE``, or ``tests/js/leak.js`` grown to
``--v8-units`` leak units (~220 MB at 139,000), as ``benchmarks.analysis`` makes it. The fastest run
of each is reported, with the load average before and after.

Usage (from the repository root)::

    python -m benchmarks.redaction --v8-units 139000 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.analysis import REPO, fastest, heapdb_environment, run_process, v8_file
from heapdb import settings


def convert(path: Path, out: Path, *extra: str) -> dict[str, Any]:
    return run_process(
        [sys.executable, "-m", "heapdb", "convert", *extra, str(path), str(out)], REPO, heapdb_environment()
    )


def parts(path: Path) -> dict[str, float]:
    """Seconds of each part of a redacting load, in this process."""
    from heapdb.loader import analysis, formats
    from heapdb.loader.inspections.strings import stored_strings
    from heapdb.loader.redaction import chosen, redact_graph, redacted_strings

    graph = formats.read_graph(path)
    redaction = chosen(True, None)
    assert redaction is not None
    redact_graph(graph, redaction)  # numba's kernels compiled and cached
    timed: dict[str, float] = {"objects": graph.node_count, "references": graph.edge_count}
    started = time.perf_counter()
    result = analysis.analyze(graph)
    timed["analysis_s"] = time.perf_counter() - started
    started = time.perf_counter()
    report = stored_strings(graph, result)
    timed["duplicate_strings_s"] = time.perf_counter() - started
    started = time.perf_counter()
    redacted = redact_graph(graph, redaction)
    timed["redact_graph_s"] = time.perf_counter() - started
    started = time.perf_counter()
    if report is not None:
        redacted_strings(report, graph, redaction)
    timed["redact_strings_s"] = time.perf_counter() - started
    timed["placeholders"] = len(redacted.strings) - len(graph.strings)
    return timed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--snapshot", type=Path, help="a V8 .heapsnapshot (default: leak.js at --v8-units)")
    parser.add_argument("--v8-units", type=int, default=139_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "heapdb-bench")
    args = parser.parse_args(argv)
    os.environ.setdefault(settings.REDACT_KEY.name, "benchmark key")  # never the person's own key file
    path = args.snapshot or v8_file(args.workdir, args.v8_units)
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "out.bin"
        convert(path, out, "--redact")  # page cache and numba's cache warm
        row: dict[str, Any] = {"file": str(path), "size_mib": path.stat().st_size / 2**20}
        row["load_before"] = os.getloadavg()
        runs: dict[str, list[dict[str, Any]]] = {"convert": [], "convert --redact": []}
        for _ in range(max(1, args.repeat)):
            runs["convert"].append(convert(path, out))
            runs["convert --redact"].append(convert(path, out, "--redact"))
        row.update({name: fastest(figures) for name, figures in runs.items()})
    row["parts"] = parts(path)
    row["load_after"] = os.getloadavg()
    for name in runs:
        row[name].pop("stdout", None)
    json.dump(row, sys.stdout, indent=2, default=str)
    print()


if __name__ == "__main__":
    main()
