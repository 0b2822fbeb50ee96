"""The questions about one snapshot on the command line: ``heapdb why``, ``dominators``,
``retains``, ``top``, ``types``, ``object`` and ``suspects``; and Cypher itself: the stored queries
(``heapdb queries``, ``heapdb query``) and one statement of your own (``heapdb cypher``).

Each command parses its arguments, calls :class:`heapdb.queries.questions.Questions` (the same
functions the REST service calls) and renders the answer with :mod:`heapdb.renderers.text`. The
questions' options come from their declarations in :mod:`heapdb.queries.params`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import click

from heapdb import db
from heapdb.cli import main
from heapdb.cli.options import (
    GRAPH_FORMATS,
    TABLE_FORMATS,
    emit,
    key_values,
    output_options,
    question_options,
    render_answer,
    timeout_option,
)
from heapdb.loader import views
from heapdb.loader.store import Snapshot
from heapdb.queries import catalog, params
from heapdb.queries.questions import Questions
from heapdb.renderers import text


def _object_options(f: Callable[..., Any]) -> Callable[..., Any]:
    f = click.option(
        "--name-contains", default="", help="With --type: pick the largest-retaining object whose name contains this."
    )(f)
    f = click.option(
        "--type", "type_name", help="Pick the largest-retaining object of this type instead of giving OBJECT."
    )(f)
    f = click.argument("object_id", metavar="[OBJECT]", required=False, type=int)(f)
    return f


def _resolve(
    questions: Questions, snapshot: Snapshot, object_id: int | None, type_name: str | None, name_contains: str
) -> int:
    if object_id is not None and type_name:
        raise click.UsageError("give either OBJECT or --type, not both")
    if object_id is not None:
        return object_id
    if not type_name:
        raise click.UsageError("give OBJECT (an object id) or --type TYPE [--name-contains TEXT]")
    return questions.resolve(snapshot, type_name, name_contains)


@main.command()
@click.argument("tag")
@_object_options
@question_options(params.Why)
@output_options(GRAPH_FORMATS)
@timeout_option
def why(
    tag: str,
    object_id: int | None,
    type_name: str | None,
    name_contains: str,
    p: params.Why,
    fmt: str,
    output: str | None,
    timeout: float,
) -> None:
    """Why is an object alive: the shortest chains of retaining references from the root.

    Weak references never count. --ignore-* leave out references or objects, as DevTools' "ignore
    this retainer" does, to see what else holds the object; --ignore takes a rule file's selector
    on one line, e.g. --ignore 'to.type = "system / Context"' (docs/rules.md). With --k, further
    paths that share nothing with the first but its dominators come first.
    """
    with db.connect() as database:
        questions = Questions(database, timeout)
        snapshot = questions.snapshot(tag)
        answer = questions.why_alive(snapshot, _resolve(questions, snapshot, object_id, type_name, name_contains), p)
    emit(render_answer(answer, fmt, text.why_text), output)


@main.command()
@click.argument("tag")
@_object_options
@output_options(GRAPH_FORMATS)
@timeout_option
def dominators(
    tag: str,
    object_id: int | None,
    type_name: str | None,
    name_contains: str,
    fmt: str,
    output: str | None,
    timeout: float,
) -> None:
    """The chain of immediate dominators from the root down to an object."""
    with db.connect() as database:
        questions = Questions(database, timeout)
        snapshot = questions.snapshot(tag)
        answer = questions.dominators(snapshot, _resolve(questions, snapshot, object_id, type_name, name_contains))
    emit(render_answer(answer, fmt, text.dominators_text), output)


@main.command()
@click.argument("tag")
@_object_options
@question_options(params.Retains)
@output_options(GRAPH_FORMATS)
@timeout_option
def retains(
    tag: str,
    object_id: int | None,
    type_name: str | None,
    name_contains: str,
    p: params.Retains,
    fmt: str,
    output: str | None,
    timeout: float,
) -> None:
    """What an object keeps alive: its dominated subtree, largest first."""
    with db.connect() as database:
        questions = Questions(database, timeout)
        snapshot = questions.snapshot(tag)
        answer = questions.retains(snapshot, _resolve(questions, snapshot, object_id, type_name, name_contains), p)
    emit(render_answer(answer, fmt, text.retains_text), output)


@main.command()
@click.argument("tag")
@question_options(params.Top)
@output_options(TABLE_FORMATS)
@timeout_option
def top(tag: str, p: params.Top, fmt: str, output: str | None, timeout: float) -> None:
    """The objects that retain most (the root and its synthetic root kinds left out)."""
    with db.connect() as database:
        rows = Questions(database, timeout).top(tag, p)
    emit(render_answer(rows, fmt, text.objects_table), output)


@main.command()
@click.argument("tag")
@question_options(params.Types)
@output_options(TABLE_FORMATS)
@timeout_option
def types(tag: str, p: params.Types, fmt: str, output: str | None, timeout: float) -> None:
    """Objects per type: count, shallow size, retained size."""
    with db.connect() as database:
        rows = Questions(database, timeout).types(tag, p)
    emit(render_answer(rows, fmt, text.types_table), output)


@main.command(name="object")
@click.argument("tag")
@_object_options
@question_options(params.ObjectDetails)
@output_options(TABLE_FORMATS)
@timeout_option
def object_(
    tag: str,
    object_id: int | None,
    type_name: str | None,
    name_contains: str,
    p: params.ObjectDetails,
    fmt: str,
    output: str | None,
    timeout: float,
) -> None:
    """One object: its details and its incoming and outgoing references."""
    with db.connect() as database:
        questions = Questions(database, timeout)
        snapshot = questions.snapshot(tag)
        answer = questions.object(snapshot, _resolve(questions, snapshot, object_id, type_name, name_contains), p)
    emit(render_answer(answer, fmt, text.object_text), output)


@main.command()
@click.argument("tag")
@question_options(params.Suspects)
@output_options(TABLE_FORMATS)
@timeout_option
def suspects(tag: str, p: params.Suspects, fmt: str, output: str | None, timeout: float) -> None:
    """Leak suspects in one snapshot, as Eclipse MAT finds them: objects and types retaining a big
    share of the heap, and for each object where inside it the memory accumulates."""
    with db.connect() as database:
        answer = Questions(database, timeout).suspects(tag, p)
    emit(render_answer(answer, fmt, text.suspects_text), output)


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


@main.command()
@click.argument("tag")
@question_options(params.Lifelines)
@output_options(TABLE_FORMATS)
@timeout_option
def lifelines(tag: str, p: params.Lifelines, fmt: str, output: str | None, timeout: float) -> None:
    """How the objects of a type are held: their first retainer paths merged from the root down,
    with how many of them each step leads to (on a file: heapdb analyze FILE --lifelines TYPE)."""
    with db.connect() as database:
        answer = Questions(database, timeout).lifelines(tag, p)
    emit(render_answer(answer, fmt, views.lifelines_text), output)


@main.command()
@click.argument("tag")
@question_options(params.HeapDomStats)
@output_options(TABLE_FORMATS)
@timeout_option
def heapdomstats(tag: str, p: params.HeapDomStats, fmt: str, output: str | None, timeout: float) -> None:
    """Per type, what floats up to the root: objects whose immediate dominator is the root or a root
    group, which no object below the root owns (on a file: heapdb analyze FILE --heapdomstats)."""
    with db.connect() as database:
        answer = Questions(database, timeout).heapdomstats(tag, p)
    emit(render_answer(answer, fmt, views.heapdomstats_text), output)
