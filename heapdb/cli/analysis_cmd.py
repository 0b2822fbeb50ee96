"""``heapdb analyze``: dominators and retained sizes of one snapshot, in process, no database."""

from __future__ import annotations

import json

import click

from heapdb.cli import main
from heapdb.cli.steps import analyse_with_progress, read_with_progress
from heapdb.loader.analysis import Semantics
from heapdb.loader.report import AnalysisReport, analysis_report
from heapdb.units import human_bytes, short_name

LABEL_WIDTH = 80  # characters of "type / name" per line of the text report


def print_report(report: AnalysisReport) -> None:
    """The report as text for a person."""
    click.echo(f"{report.file}  ({report.format}, {report.semantics} semantics)")
    click.echo(f"  objects      {report.objects:>14,}    references {report.references:,}")
    click.echo(f"  total size   {human_bytes(report.total_self_size):>14}")
    click.echo(f"  reachable    {human_bytes(report.reachable_size):>14}    {report.reachable_objects:,} objects")
    click.echo(f"  unreachable  {report.unreachable_objects:>14,} objects")
    click.echo(f"  root retains {human_bytes(report.root.retained_size):>14}")
    for title, rows in (("Roots", report.roots), ("Top retainers", report.top_retainers)):
        click.echo("")
        click.echo(f"{title}:")
        click.echo(f"  {'retained':>10}  {'objects':>9}  {'dist':>4}  {'id':>12}  type / name")
        for row in rows:
            label = row.type if row.name in ("", row.type) else f"{row.type} / {row.name}"
            click.echo(
                f"  {human_bytes(row.retained_size):>10}  {row.retained_count:>9,}  {row.distance:>4}  "
                f"{row.id:>12}  {short_name(label, LABEL_WIDTH)}"
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
    result = analyse_with_progress(
        graph, semantics=None if semantics == "auto" else semantics, devtools_sizes=devtools_sizes
    )
    report = analysis_report(file, graph, result, top)
    if as_json:
        click.echo(json.dumps(report.as_dict(), indent=2))
    else:
        print_report(report)
