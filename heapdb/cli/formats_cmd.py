"""``heapdb inspect`` and ``heapdb convert``: look inside a snapshot file, or rewrite it in another format.

Both detect the input's format from its content, never from its name.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from heapdb.cli import main
from heapdb.cli.steps import file_redaction, read_with_progress, redact_option, redact_rules_option
from heapdb.errors import HeapdbError
from heapdb.loader.graph import HeapGraph
from heapdb.loader.report import FileSummary, file_summary
from heapdb.units import NAME_LIMIT, short_name

TARGETS = ("snapbin", "heapsnapshot")
METADATA_WIDTH = 100  # characters of a metadata value in the text summary


def _print_summary(s: FileSummary) -> None:
    echo = click.echo
    echo(f"file      {s.file} ({s.bytes:,} bytes)")
    echo(f"format    {s.format}" + (f" {s.version}" if s.version else ""))
    c = s.counts
    echo(
        f"counts    {c.nodes:,} nodes, {c.edges:,} edges, {c.strings:,} strings, {c.types:,} types, "
        f"{c.self_size:,} bytes of self size"
    )
    if s.metadata:
        echo("metadata")
        for key, value in s.metadata.items():
            echo(f"  {short_name(key, 24):<24} {short_name(str(value), METADATA_WIDTH)}")
    for title, rows in (
        ("top types by count", s.top_types_by_count),
        ("top types by self size", s.top_types_by_self_size),
    ):
        echo(f"{title}\n  {'count':>12} {'self size':>14}  type")
        for row in rows:
            echo(f"  {row.count:>12,} {row.self_size:>14,}  {short_name(row.type, NAME_LIMIT)}")
    echo("roots")
    for root in s.roots:
        echo(f"  {short_name(root.name, 40):<40} {root.references:>10,} references")


@main.command()
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--top", default=10, show_default=True, help="How many types to list.")
def inspect(file: Path, as_json: bool, top: int) -> None:
    """Describe a snapshot: format, version, metadata, counts, top types and roots."""
    format_name, graph = read_with_progress(file)
    summary = file_summary(file, format_name, graph, top)
    if as_json:
        click.echo(json.dumps(summary.as_dict(), indent=2, default=str))
    else:
        _print_summary(summary)


@main.command()
@click.argument("source", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("dest", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--to",
    "target",
    type=click.Choice(TARGETS),
    help="Output format; by default .heapsnapshot for a DEST ending so, else snapbin.",
)
@click.option("--compress/--no-compress", default=True, show_default=True, help="zstd-compress snap.bin chunks.")
@redact_option
@redact_rules_option
def convert(source: Path, dest: Path, target: str | None, compress: bool, redact: bool, rules: str | None) -> None:
    """Rewrite the snapshot SOURCE (any format heapdb reads) as DEST.

    With --redact (or HEAPDB_REDACT=always, or [[redact]] rules in --rules FILE), string contents
    and primitive values are replaced by their length and a keyed hash in DEST (docs/rules.md,
    Redaction); a snap.bin DEST says it was redacted.
    """
    target = target or ("heapsnapshot" if dest.suffix == ".heapsnapshot" else "snapbin")
    redaction = file_redaction(redact, rules)
    _, graph = read_with_progress(source)
    if redaction is not None:
        from heapdb.loader.redaction import redact_graph

        graph = redact_graph(graph, redaction)
    write_snapshot(graph, dest, target, compress=compress)
    click.echo(f"wrote {dest} ({target}: {graph.node_count:,} nodes, {graph.edge_count:,} edges)")


def write_snapshot(graph: HeapGraph, dest: Path, target: str, *, compress: bool) -> None:
    """Write ``graph`` to ``dest`` as ``target`` (one of :data:`TARGETS`)."""
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
