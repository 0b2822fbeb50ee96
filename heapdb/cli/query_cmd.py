"""Cypher itself on the command line: the stored queries (``heapdb queries``, ``heapdb query``) and
one statement of your own (``heapdb cypher``). The questions' commands are generated from their
declarations (:mod:`heapdb.cli.question_cmd`).
"""

from __future__ import annotations

import json
from typing import Any

import click

from heapdb import db
from heapdb.cli import main
from heapdb.cli.options import key_values, timeout_option
from heapdb.queries import catalog
from heapdb.renderers import text


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print the catalog as JSON.")
def queries(as_json: bool) -> None:
    """List the stored queries and their parameters (run one with `heapdb query NAME`)."""
    stored = catalog.catalog().values()
    if as_json:
        click.echo(json.dumps([q.as_dict() for q in stored], indent=2))
        return
    for q in stored:
        click.echo(f"{q.name}: {q.description}")
        for parameter in q.parameters:
            default = "" if parameter.required else f" = {json.dumps(parameter.default)}"
            click.echo(f"    {parameter.name}: {parameter.describe_type()}{default}  {parameter.description}")


@main.command()
@click.argument("name")
@click.option(
    "--param",
    "-p",
    "pairs",
    multiple=True,
    metavar="KEY=VALUE",
    help="A parameter (repeat for each; repeat a key to build a list).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON.")
@timeout_option
def query(name: str, pairs: tuple[str, ...], as_json: bool, timeout: float) -> None:
    """Run a stored query by name and print its rows."""
    stored = catalog.get(name)
    bound = stored.bind(key_values(pairs, "--param"))  # checked before connecting: a typo should not wait for Neo4j
    with db.connect() as database:
        rows = catalog.run(database, name, bound, timeout=timeout)
    click.echo(json.dumps(rows, indent=2, default=str) if as_json else _table(rows))


@main.command()
@click.argument("cypher")
@click.option("--json", "as_json", is_flag=True, help="Print rows as JSON.")
@timeout_option
def cypher(cypher: str, as_json: bool, timeout: float) -> None:
    """Run one read-only Cypher statement against heapdb's Neo4j and print the rows.

    Example: heapdb cypher 'RETURN 1 AS one'
    """
    with db.connect() as database:
        rows = database.read(cypher, timeout=timeout)
    if as_json:
        click.echo(json.dumps(rows, indent=2, default=str))
        return
    for row in rows:
        click.echo("  ".join(f"{key}={value}" for key, value in row.items()))


def _table(rows: list[dict[str, Any]]) -> str:
    """Rows as aligned text columns; nested values as compact JSON."""
    if not rows:
        return "(no rows)"
    columns = list(rows[0])
    cells = [
        [c if isinstance(c, str) else json.dumps(c, default=str) for c in (row[col] for col in columns)] for row in rows
    ]
    cells = [[text.short_name(c, 80) for c in line] for line in cells]
    widths = [max(len(col), *(len(line[i]) for line in cells)) for i, col in enumerate(columns)]
    lines = ["  ".join(col.ljust(w) for col, w in zip(columns, widths, strict=True))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) for line in cells]
    return "\n".join(lines)
