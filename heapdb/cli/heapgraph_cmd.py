"""``heapdb heapgraph``: Luau's heapgraph.py path attribution, with its flame graph."""

from __future__ import annotations

import json
from pathlib import Path

import click

from heapdb.cli import main
from heapdb.units import human_bytes


@main.command()
@click.argument("final", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("baseline", required=False, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--svg",
    "svg_out",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="Write a flame graph (width = bytes) here.",
)
@click.option("--top", default=20, show_default=True, type=click.IntRange(1), help="Paths to list.")
@click.option("--json", "as_json", is_flag=True, help="Print every path as JSON.")
def heapgraph(final: Path, baseline: Path | None, svg_out: Path | None, top: int, as_json: bool) -> None:
    """Where a Luau heap dump's objects hang, by path, exactly as Luau's tools/heapgraph.py says.

    With BASELINE, only objects whose address is absent from it count: what was allocated since
    and is still alive. Paths are labelled by string keys, __env, __meta, __proto, __stack and
    function sources, as in Luau's tool, so totals can be compared with it.
    """
    from heapdb.loader.luau_heapgraph import heapgraph_files
    from heapdb.renderers.flamegraph import build_tree, render_svg

    rows = heapgraph_files(final, baseline).rows()
    what = f"new objects in {final.name} since {baseline.name}" if baseline else f"objects in {final.name}"
    if svg_out is not None:
        tree = build_tree((r["path"], r["size"], r["count"]) for r in rows if r["count"])
        if tree.total_size == 0:
            click.echo(f"heapdb: no {what}: no flame graph written", err=True)
        else:
            svg_out.write_text(render_svg(tree, f"{what[0].upper()}{what[1:]}, by path (Luau heapgraph.py rules)"))
            click.echo(f"wrote {svg_out}", err=True)
    if as_json:
        click.echo(
            json.dumps({"final": str(final), "baseline": str(baseline) if baseline else None, "paths": rows}, indent=2)
        )
        return
    total = rows[0]
    click.echo(f"{what}: {total['total_count']:,} objects, {human_bytes(total['total_size'])}")
    click.echo(f"{'total':>11} {'objects':>9} {'here':>11}  path")
    for row in [r for r in rows if r["path"]][:top]:
        click.echo(
            f"{human_bytes(row['total_size']):>11} {row['total_count']:>9,} {human_bytes(row['size']):>11}  {' / '.join(row['path'])}"
        )
