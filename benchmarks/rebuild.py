"""``heapdb rebuild`` against bare neo4j-admin on the same CSV files, in one run.

On a Neo4j of its own (a temporary home, as ``benchmarks/ingest.py`` does), it rebuilds the store from
a few V8 snapshots of ``tests/js/leak.js`` (or ``--files``) and, from the same CSV files the rebuild
wrote, runs bare ``neo4j-admin database import full`` into a scratch database. It prints a Markdown
table: neo4j-admin's own rate, the rebuild's import step and its whole offline part (stop, import,
start, indexes and small writes, verification) as a fraction of it, and the whole command's rate
(reading and analysing the files included). Run from the repository root:

    .venv/bin/python -m benchmarks.rebuild                     # leak.js at 10000, 20000, 30000 units
    .venv/bin/python -m benchmarks.rebuild --files a.heapsnapshot b.heapsnapshot
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.ingest import private_neo4j
from heapdb.cli.steps import analyse_for_store, read_with_progress
from heapdb.loader.store import admin_import, rebuild
from heapgen.node import ensure_node_tools, write_leak_snapshots


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", nargs="*", type=Path, help="snapshots to rebuild from (default: leak.js's)")
    parser.add_argument("--sizes", default="10000,10000,10000", help="leak.js's growth steps, in units")
    parser.add_argument("--heap", default="1g", help="the private Neo4j's heap")
    parser.add_argument("--pagecache", default="1g", help="the private Neo4j's page cache")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="heapdb-bench-rebuild-") as tmp:
        work = Path(tmp)
        files = args.files
        if not files:
            ensure_node_tools()
            snapshots = write_leak_snapshots(work / "snapshots", [int(s) for s in args.sizes.split(",")])
            files = list(snapshots.values())
        with private_neo4j(work / "home", args.heap, args.pagecache):
            print(markdown(run([str(f) for f in files], work)))


def run(files: list[str], work: Path) -> dict[str, Any]:
    bare: dict[str, float] = {}

    def bare_import(staged: admin_import.ImportFiles) -> None:
        # The same files, before the rebuild imports them: neo4j-admin alone, into a scratch database.
        bare["seconds"] = admin_import.run_import(
            admin_import.scratch_home(work), "bench", staged.arguments(), work / "bare.report", overwrite=True
        )

    def analyse(path: str) -> Any:
        return analyse_for_store(read_with_progress(path)[1], None, lambda _m: None)

    load_before = os.getloadavg()
    started = time.monotonic()
    report = rebuild.rebuild(files, analyse, lambda path, _g: Path(path).stem, after_staging=bare_import)
    total = time.monotonic() - started - bare["seconds"]  # the bare import ran inside, untimed by the rebuild
    return {
        "report": report,
        "bare": bare["seconds"],
        "total": total,
        "load_average": (load_before, os.getloadavg()),
    }


def markdown(figures: dict[str, Any]) -> str:
    report: rebuild.RebuildReport = figures["report"]
    n = report.elements
    bare = figures["bare"]
    before, after = figures["load_average"]
    snapshots = ", ".join(f"{tag} {objects:,} objects / {refs:,} references" for tag, objects, refs in report.snapshots)
    rows = [
        ("neo4j-admin alone, same CSV files", bare),
        ("rebuild: its neo4j-admin import step", report.seconds["import"]),
        ("rebuild: offline part (stop, import, start, indexes, groups, verify)", report.import_seconds),
        ("rebuild: whole command (read, analyse, CSV, offline part)", figures["total"]),
    ]
    lines = [
        f"{len(report.snapshots)} snapshots ({snapshots}): {n:,} objects and references; "
        f"load average {' '.join(f'{x:.2f}' for x in before)} before, {' '.join(f'{x:.2f}' for x in after)} after",
        "",
        "| step | seconds | elements per second | of neo4j-admin's rate |",
        "|---|---:|---:|---:|",
    ]
    for name, seconds in rows:
        lines.append(f"| {name} | {seconds:.1f} | {n / seconds:,.0f} | {bare / seconds:.2f}x |")
    lines.append("")
    lines.append("rebuild steps: " + ", ".join(f"{k} {v:.1f} s" for k, v in report.seconds.items()))
    return "\n".join(lines)


if __name__ == "__main__":
    main()
