"""Neo4j ingestion: heapdb's loader against the other ways in, side by side in one run.

For one heap (a synthetic one, default 1M objects / 4M references, ``heapgen/synth.py``, or a
snapshot file with ``--file``) it measures:

- ``plugin``: heapdb's loader (``heapdb.loader.store.load``) through heapdb's Neo4j plugin: packed
  batches over Bolt into procedures writing with the embedded API, relationship ends by the
  internal ids of the nodes just written, two writers;
- ``cypher``: the same loader without the plugin, as on a Neo4j that cannot take one: UNWIND
  batches over Bolt (with neo4j-rust-ext), relationship ends found through the ``(sid, id)`` index;
- ``load-csv``: CSV files in Neo4j's import directory, ``LOAD CSV`` with ``CALL {} IN TRANSACTIONS``;
- ``load-csv-concurrent``: the same with ``IN 2 CONCURRENT TRANSACTIONS``;
- ``neo4j-admin``: ``neo4j-admin database import full`` of the same graph into a scratch database,
  offline: the ceiling for getting data into Neo4j on this machine.

It needs the managed Neo4j (``heapdb neo4j start``), since LOAD CSV reads from its import directory,
and prints a Markdown table; ``--private`` runs it against a Neo4j of its own instead (a temporary
home, as ``benchmarks/ingest.py`` does). Run from the repository root:

    .venv/bin/python -m benchmarks.load_neo4j --objects 1M --references 4M --private
    .venv/bin/python -m benchmarks.load_neo4j --file snapshot.heapsnapshot --private
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.ingest import private_neo4j
from heapdb import db, neo4j_server
from heapdb.loader import analysis, formats, store
from heapdb.loader.graph import EDGE_KIND_NAMES, HeapGraph
from heapdb.loader.store import admin_import
from heapgen.synth import parse_count, synth_graph


def write_csvs(graph: HeapGraph, result: analysis.Analysis, directory: Path, admin_headers: bool) -> tuple[Path, Path]:
    """Objects and references as CSV; neo4j-admin wants typed headers, LOAD CSV plain ones."""
    nodes, refs = directory / "objects.csv", directory / "references.csv"
    ids = graph.ids.tolist()
    types = [graph.strings[t] for t in graph.type.tolist()]
    with open(nodes, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            [":ID", "sid:long", "id:long", "type", "self_size:long", "retained_size:long", "distance:long"]
            if admin_headers
            else ["id", "type", "self_size", "retained_size", "distance"]
        )
        for i, t, s, r, d in zip(
            ids, types, graph.self_size.tolist(), result.retained_size.tolist(), result.distance.tolist()
        ):
            w.writerow([i, 1, i, t, s, r, d] if admin_headers else [i, t, s, r, d])
    sources = graph.ids[graph.edge_sources()].tolist()
    targets = graph.ids[graph.edge_to].tolist()
    kinds = [EDGE_KIND_NAMES[k] for k in graph.edge_kind.tolist()]
    rel_type = np.where(result.retaining, "REF", "WEAK_REF").tolist()
    with open(refs, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow([":START_ID", ":END_ID", ":TYPE", "kind"] if admin_headers else ["from", "to", "type", "kind"])
        for a, b, t, k in zip(sources, targets, rel_type, kinds):
            w.writerow([a, b, t, k])
    return nodes, refs


def bench_loader(database: db.Database, data: store.LoadInput, writer: str) -> tuple[float, str]:
    """heapdb's load with ``writer``: (seconds for objects and references, a note)."""
    tag = f"bench-{writer}-{int(time.time())}"
    report = store.load(database, data, tag, writer=writer)
    store.drop(database, tag, wait=False)  # hidden at once; freed by the background purger
    # Only objects and references, as for the others; the group totals come on top.
    objects = report.seconds["first objects"] + report.seconds["objects"]
    references = report.seconds["references"]
    seconds = objects + references
    note = (
        f"objects {objects:.1f} s ({report.objects / objects:,.0f}/s), references {references:.1f} s "
        f"({report.references / references:,.0f}/s); groups {report.seconds['groups']:.1f} s more; "
        f"answered after {report.ready_seconds:.1f} s"
    )
    return seconds, note


def warm_up(database: db.Database, writers: list[str]) -> None:
    """Load a small heap once through each writer first, so that no method is timed while Neo4j's
    JIT compiles its code path and its store files grow their first chunks."""
    graph = synth_graph(200_000, 800_000, seed=1)
    data = store.LoadInput.from_analysis(graph, analysis.analyze(graph))
    for writer in writers:
        bench_loader(database, data, writer)


def bench_load_csv(database: db.Database, graph: HeapGraph, result: analysis.Analysis, concurrent: bool) -> float:
    import_dir = neo4j_server.paths().import_dir
    nodes, refs = write_csvs(graph, result, import_dir, admin_headers=False)
    mode = "IN 2 CONCURRENT TRANSACTIONS OF 20000 ROWS" if concurrent else "IN TRANSACTIONS OF 20000 ROWS"
    sid = -int(time.time())  # a sid no real snapshot uses, deleted afterwards
    started = time.monotonic()
    with database.session() as session:
        session.run(
            f"LOAD CSV WITH HEADERS FROM 'file:///{nodes.name}' AS r CALL (r) {{ "
            "CREATE (:Object {sid: $sid, id: toInteger(r.id), type: r.type, self_size: toInteger(r.self_size), "
            f"retained_size: toInteger(r.retained_size), distance: toInteger(r.distance)}}) }} {mode}",
            sid=sid,
        ).consume()
        for rel in ("REF", "WEAK_REF"):
            session.run(
                f"LOAD CSV WITH HEADERS FROM 'file:///{refs.name}' AS r WITH r WHERE r.type = '{rel}' CALL (r) {{ "
                "MATCH (a:Object {sid: $sid, id: toInteger(r.from)}), (b:Object {sid: $sid, id: toInteger(r.to)}) "
                f"CREATE (a)-[:{rel} {{kind: r.kind}}]->(b) }} {mode}",
                sid=sid,
            ).consume()
    elapsed = time.monotonic() - started
    store.delete_objects(database, sid)
    nodes.unlink()
    refs.unlink()
    return elapsed


def bench_admin_import(graph: HeapGraph, result: analysis.Analysis, workdir: Path) -> tuple[float, float]:
    """(seconds to write the CSVs, seconds neo4j-admin takes to import them)."""
    started = time.monotonic()
    nodes, refs = write_csvs(graph, result, workdir, admin_headers=True)
    csv_seconds = time.monotonic() - started
    seconds = admin_import.run_import(
        admin_import.scratch_home(workdir),
        "bench",
        [f"--nodes=Object={nodes}", f"--relationships={refs}"],
        workdir / "import.report",
        heap="4g",
        overwrite=True,
    )
    return csv_seconds, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--objects", type=parse_count, default=1_000_000)
    parser.add_argument("--references", type=parse_count, default=4_000_000)
    parser.add_argument(
        "--only", nargs="*", default=["plugin", "cypher", "load-csv", "load-csv-concurrent", "neo4j-admin"]
    )
    parser.add_argument("--file", type=Path, help="a snapshot to load instead of a synthetic heap")
    parser.add_argument(
        "--no-warm-up",
        dest="warm_up",
        action="store_false",
        help="time the first load of a fresh Neo4j too (by default a small heap goes through each writer first)",
    )
    parser.add_argument(
        "--private",
        action="store_true",
        help="run against a Neo4j of this run's own in a temporary directory, not the managed one",
    )
    parser.add_argument("--heap", default="", help="with --private: its heap (default: heapdb's default)")
    parser.add_argument("--pagecache", default="", help="with --private: its page cache (default: heapdb's default)")
    args = parser.parse_args()
    if not args.private:
        run(args)
        return
    with (
        tempfile.TemporaryDirectory(prefix="heapdb-bench-neo4j-") as home,
        private_neo4j(Path(home), args.heap, args.pagecache) as settings,
    ):
        print(f"a private Neo4j: heap {settings.heap}, page cache {settings.pagecache}")
        run(args)


def run(args: argparse.Namespace) -> None:
    graph = formats.read_graph(args.file) if args.file else synth_graph(args.objects, args.references, seed=0)
    result = analysis.analyze(graph)
    data = store.LoadInput.from_analysis(graph, result)
    rows = graph.node_count + graph.edge_count
    print(
        f"heap: {graph.node_count:,} objects, {graph.edge_count:,} references; Neo4j {neo4j_server.NEO4J_VERSION}, {os.cpu_count()} cores"
    )

    figures: list[tuple[str, float, str]] = []
    with db.connect() as database, tempfile.TemporaryDirectory(prefix="heapdb-bench-") as tmp:
        store.ensure_schema(database)
        if args.warm_up:
            warm_up(database, [name for name in args.only if name in store.WRITERS])
        for name in args.only:
            if name in store.WRITERS:
                seconds, note = bench_loader(database, data, name)
                figures.append((name, seconds, note))
            elif name in ("load-csv", "load-csv-concurrent"):
                seconds = bench_load_csv(database, graph, result, concurrent=name.endswith("concurrent"))
                figures.append((name, seconds, "objects and references (CSV written beforehand, not counted)"))
            elif name == "neo4j-admin":
                csv_seconds, seconds = bench_admin_import(graph, result, Path(tmp))
                figures.append(
                    (name, seconds, f"offline, into a scratch database; writing its CSVs took {csv_seconds:.1f} s more")
                )
            print(f"  {name}: {seconds:.1f} s", flush=True)
        shutil.rmtree(Path(tmp) / "admin-home", ignore_errors=True)

    print()
    transactional = [seconds for name, seconds, _ in figures if name != "neo4j-admin"]
    admin = [seconds for name, seconds, _ in figures if name == "neo4j-admin"]
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end")
    print("| method | seconds | objects + references per second | of the best transactional | of neo4j-admin | note |")
    print("|---|---:|---:|---:|---:|---|")
    for name, seconds, note in figures:
        best = f"{min(transactional) / seconds:.2f}x" if transactional and name != "neo4j-admin" else ""
        of_admin = f"{admin[0] / seconds:.2f}x" if admin else ""
        print(f"| {name} | {seconds:.1f} | {rows / seconds:,.0f} | {best} | {of_admin} | {note} |")


if __name__ == "__main__":
    main()
