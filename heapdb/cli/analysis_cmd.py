"""``heapdb analyze``: dominators and retained sizes of one snapshot, in process, no database."""

from __future__ import annotations

import json
from typing import Any

import click
import numpy as np

from heapdb.cli import main
from heapdb.cli.steps import analyse_with_progress, read_with_progress
from heapdb.loader.analysis import Analysis, Semantics
from heapdb.loader.graph import HeapGraph
from heapdb.units import human_bytes, shorten



def object_row(graph: HeapGraph, result: Analysis, node: int) -> dict[str, Any]:
    """One object as the report shows it."""
    name = graph.node_name(node)
    return {
        "id": int(graph.ids[node]),
        "type": graph.type_name(node),
        "name": shorten(name),
        "self_size": int(result.self_size[node]),
        "retained_size": int(result.retained_size[node]),
        "retained_count": int(result.retained_count[node]),
        "distance": int(result.distance[node]),
    }


def root_children(graph: HeapGraph, result: Analysis) -> list[int]:
    """The objects the root holds directly and dominates (its root kinds, e.g. ``(GC roots)``)."""
    root = result.root
    children = np.unique(graph.edge_to[graph.edge_start[root] : graph.edge_start[root + 1]])
    held = children[(result.idom[children] == root) & result.reachable[children]]
    return held[np.argsort(-result.retained_size[held], kind="stable")].tolist()


def build_report(path: str, graph: HeapGraph, result: Analysis, top: int) -> dict[str, Any]:
    """Everything ``heapdb analyze`` prints, as plain data (the ``--json`` output)."""
    synthetic = np.zeros(graph.node_count, dtype=np.bool_)
    if "synthetic" in graph.node_kinds:
        # Synthetic nodes are the snapshot's root bookkeeping; they would top every list.
        synthetic = graph.kind == graph.node_kinds.index("synthetic")
    return {
        "file": path,
        "format": graph.meta.get("format"),
        "semantics": result.semantics.value,
        "objects": graph.node_count,
        "references": graph.edge_count,
        "total_self_size": int(result.self_size.sum()),
        "reachable_objects": graph.node_count - result.unreachable_count,
        "reachable_size": result.reachable_size,
        "unreachable_objects": result.unreachable_count,
        "root": object_row(graph, result, result.root),
        "roots": [object_row(graph, result, i) for i in root_children(graph, result)[:top]],
        "top_retainers": [object_row(graph, result, int(i)) for i in result.top_retainers(top, exclude=synthetic)],
    }


def print_report(report: dict[str, Any]) -> None:
    """The report as text for a person."""
    click.echo(f"{report['file']}  ({report['format']}, {report['semantics']} semantics)")
    click.echo(f"  objects      {report['objects']:>14,}    references {report['references']:,}")
    click.echo(f"  total size   {human_bytes(report['total_self_size']):>14}")
    click.echo(
        f"  reachable    {human_bytes(report['reachable_size']):>14}    "
        f"{report['reachable_objects']:,} objects"
    )
    click.echo(f"  unreachable  {report['unreachable_objects']:>14,} objects")
    click.echo(f"  root retains {human_bytes(report['root']['retained_size']):>14}")
    for title, rows in (("Roots", report["roots"]), ("Top retainers", report["top_retainers"])):
        click.echo("")
        click.echo(f"{title}:")
        click.echo(f"  {'retained':>10}  {'objects':>9}  {'dist':>4}  {'id':>12}  type / name")
        for row in rows:
            label = row["type"] if row["name"] in ("", row["type"]) else f"{row['type']} / {row['name']}"
            if len(label) > 80:
                label = label[:77] + "..."
            click.echo(
                f"  {human_bytes(row['retained_size']):>10}  {row['retained_count']:>9,}  {row['distance']:>4}  "
                f"{row['id']:>12}  {label}"
            )


@main.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--top", default=20, show_default=True, type=click.IntRange(min=0), help="How many retainers to list.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option(
    "--semantics",
    type=click.Choice(["auto", *(s.value for s in Semantics)]),
    default="auto",
    show_default=True,
    help="Retention rules: v8 follows memlab exactly; auto picks v8 for V8 snapshots.",
)
@click.option(
    "--devtools-sizes",
    is_flag=True,
    help="Move the size of hidden/array backing stores onto their owner, as Chrome DevTools shows it.",
)
def analyze(file: str, top: int, as_json: bool, semantics: str, devtools_sizes: bool) -> None:
    """Dominators, retained sizes and root distances of a snapshot FILE (any format), without Neo4j."""
    _, graph = read_with_progress(file)
    result = analyse_with_progress(graph, semantics=None if semantics == "auto" else semantics, devtools_sizes=devtools_sizes)
    report = build_report(file, graph, result, top)
    if as_json:
        click.echo(json.dumps(report, indent=2))
    else:
        print_report(report)
