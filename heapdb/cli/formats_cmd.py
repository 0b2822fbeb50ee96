"""``heapdb inspect`` and ``heapdb convert``: look inside a snapshot file, or rewrite it in another format.

Both detect the input's format from its content, never from its name.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click
import numpy as np

from heapdb.cli import main
from heapdb.errors import HeapdbError
from heapdb.loader.graph import HeapGraph
from heapdb.cli.steps import read_with_progress

TARGETS = ("snapbin", "heapsnapshot")
_FORMAT_KEYS = ("format", "format_version")


def summarize(path: Path, format_name: str, graph: HeapGraph, top: int) -> dict[str, Any]:
    """What ``heapdb inspect`` reports about a snapshot, as plain data."""
    strings = len(graph.strings)
    count = np.bincount(graph.type, minlength=strings)
    size = np.zeros(strings, dtype=np.int64)
    np.add.at(size, graph.type, graph.self_size)

    def ranking(values: np.ndarray) -> list[dict[str, Any]]:
        used = np.flatnonzero(count)
        best = used[np.lexsort((-count[used], -values[used]))][:top]
        return [{"type": graph.strings[t], "count": int(count[t]), "self_size": int(size[t])} for t in best]

    roots = []
    for e in graph.out_edges(graph.root):
        node = int(graph.edge_to[e])
        roots.append({"name": graph.node_name(node) or graph.edge_label(e), "type": graph.type_name(node),
                      "references": len(graph.out_edges(node))})
    return {
        "file": str(path),
        "bytes": os.path.getsize(path),
        "format": graph.meta.get("format", format_name),
        "version": graph.meta.get("format_version"),
        "metadata": {k: v for k, v in graph.meta.items() if k not in _FORMAT_KEYS},
        "counts": {
            "nodes": graph.node_count,
            "edges": graph.edge_count,
            "strings": strings,
            "types": int(np.count_nonzero(count)),
            "self_size": int(graph.self_size.sum()),
        },
        "top_types_by_count": ranking(count),
        "top_types_by_self_size": ranking(size),
        "roots": roots,
    }


def _print_summary(s: dict[str, Any]) -> None:
    echo = click.echo
    echo(f"file      {s['file']} ({s['bytes']:,} bytes)")
    echo(f"format    {s['format']}" + (f" {s['version']}" if s["version"] else ""))
    c = s["counts"]
    echo(f"counts    {c['nodes']:,} nodes, {c['edges']:,} edges, {c['strings']:,} strings, {c['types']:,} types, "
         f"{c['self_size']:,} bytes of self size")
    if s["metadata"]:
        echo("metadata")
        for key, value in s["metadata"].items():
            text = str(value)
            echo(f"  {key:<24} {text if len(text) <= 100 else text[:97] + '...'}")
    for title, key in (("top types by count", "top_types_by_count"), ("top types by self size", "top_types_by_self_size")):
        echo(f"{title}\n  {'count':>12} {'self size':>14}  type")
        for row in s[key]:
            echo(f"  {row['count']:>12,} {row['self_size']:>14,}  {row['type']}")
    echo("roots")
    for root in s["roots"]:
        echo(f"  {root['name']:<40} {root['references']:>10,} references")


@main.command()
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--top", default=10, show_default=True, help="How many types to list.")
def inspect(file: Path, as_json: bool, top: int) -> None:
    """Describe a snapshot: format, version, metadata, counts, top types and roots."""
    format_name, graph = read_with_progress(file)
    summary = summarize(file, format_name, graph, top)
    if as_json:
        click.echo(json.dumps(summary, indent=2, default=str))
    else:
        _print_summary(summary)


@main.command()
@click.argument("source", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("dest", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--to", "target", type=click.Choice(TARGETS),
              help="Output format; by default .heapsnapshot for a DEST ending so, else snapbin.")
@click.option("--compress/--no-compress", default=True, show_default=True, help="zstd-compress snap.bin chunks.")
def convert(source: Path, dest: Path, target: str | None, compress: bool) -> None:
    """Rewrite the snapshot SOURCE (any format heapdb reads) as DEST."""
    target = target or ("heapsnapshot" if dest.suffix == ".heapsnapshot" else "snapbin")
    _, graph = read_with_progress(source)
    try:
        if target == "snapbin":
            from heapdb.loader.formats.snapbin import write_graph

            write_graph(graph, dest, compress=compress)
        else:
            # Imported here: the exporter pulls in numba, which only this path needs.
            from heapdb.loader.formats.heapsnapshot_export import write_heapsnapshot

            write_heapsnapshot(graph, dest)
    except OSError as e:
        raise HeapdbError(f"cannot write {dest}: {e.strerror or e}") from None
    click.echo(f"wrote {dest} ({target}: {graph.node_count:,} nodes, {graph.edge_count:,} edges)")
