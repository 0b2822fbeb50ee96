"""The questions on the command line: ``heapdb why``, ``dominators``, ``retains``, ``top``, ``types``,
``object``, and the stored queries themselves, ``heapdb queries`` and ``heapdb query``.

Each command parses its arguments, calls :class:`heapdb.answers.Questions` (the same functions the
REST service calls) and renders the answer with :mod:`heapdb.render`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import click

from heapdb import answers, db, render
from heapdb.cli import main
from heapdb.queries import catalog

GRAPH_FORMATS = ("text", "json", "dot", "svg")
TABLE_FORMATS = ("text", "json")


def timeout_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--timeout", type=click.FloatRange(0.1, 3600), default=answers.DEFAULT_TIMEOUT, show_default=True, help="Seconds before Neo4j gives up the query."
    )(f)


def output_options(formats: tuple[str, ...]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        f = click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write to this file instead of stdout.")(f)
        f = click.option("--format", "fmt", type=click.Choice(formats), default="text", show_default=True, help="Output format.")(f)
        return f

    return decorate


def _object_options(f: Callable[..., Any]) -> Callable[..., Any]:
    f = click.option("--name-contains", default="", help="With --type: pick the largest-retaining object whose name contains this.")(f)
    f = click.option("--type", "type_name", help="Pick the largest-retaining object of this type instead of giving OBJECT.")(f)
    f = click.argument("object_id", metavar="[OBJECT]", required=False, type=int)(f)
    return f


def _resolve(questions: answers.Questions, tag: str, object_id: int | None, type_name: str | None, name_contains: str) -> int:
    if object_id is not None and type_name:
        raise click.UsageError("give either OBJECT or --type, not both")
    if object_id is not None:
        return object_id
    if not type_name:
        raise click.UsageError("give OBJECT (an object id) or --type TYPE [--name-contains TEXT]")
    return questions.resolve(tag, type_name, name_contains)


def emit(text: str, output: str | None) -> None:
    if output:
        with open(output, "w", encoding="utf-8") as f:
            f.write(text if text.endswith("\n") else text + "\n")
        click.echo(f"heapdb: wrote {output}", err=True)
    else:
        click.echo(text.rstrip("\n"))


def render_answer(answer: Any, fmt: str, text: Callable[[Any], str]) -> str:
    if fmt == "json":
        return json.dumps(answers.to_json(answer), indent=2)
    if fmt == "dot":
        return render.dot(answer)
    if fmt == "svg":
        return render.svg(answer)
    return text(answer)


@main.command()
@click.argument("tag")
@_object_options
@click.option("--k", "k", type=click.IntRange(1, answers.MAX_K), default=1, show_default=True, help="How many paths, each ending with a different retaining reference.")
@click.option("--ignore-name", multiple=True, help="A reference name the paths must not use (repeatable).")
@click.option("--ignore-type", multiple=True, help="An object type the paths must not pass through (repeatable).")
@click.option("--ignore-id", multiple=True, type=int, help="An object id the paths must not pass through (repeatable).")
@output_options(GRAPH_FORMATS)
@timeout_option
def why(tag: str, object_id: int | None, type_name: str | None, name_contains: str, k: int, ignore_name: tuple[str, ...],
        ignore_type: tuple[str, ...], ignore_id: tuple[int, ...], fmt: str, output: str | None, timeout: float) -> None:
    """Why is an object alive: the shortest chains of retaining references from the root.

    Weak references never count. --ignore-* leave out references or objects, as DevTools' "ignore
    this retainer" does, to see what else holds the object.
    """
    with db.connect() as database:
        questions = answers.Questions(database, timeout)
        target = _resolve(questions, tag, object_id, type_name, name_contains)
        answer = questions.why_alive(tag, target, k=k, ignore_names=list(ignore_name), ignore_types=list(ignore_type), ignore_ids=list(ignore_id))
    emit(render_answer(answer, fmt, render.why_text), output)


@main.command()
@click.argument("tag")
@_object_options
@output_options(GRAPH_FORMATS)
@timeout_option
def dominators(tag: str, object_id: int | None, type_name: str | None, name_contains: str, fmt: str, output: str | None, timeout: float) -> None:
    """The chain of immediate dominators from the root down to an object."""
    with db.connect() as database:
        questions = answers.Questions(database, timeout)
        answer = questions.dominators(tag, _resolve(questions, tag, object_id, type_name, name_contains))
    emit(render_answer(answer, fmt, render.dominators_text), output)


@main.command()
@click.argument("tag")
@_object_options
@click.option("--depth", type=click.IntRange(1, answers.MAX_DEPTH), default=3, show_default=True, help="Levels of the dominator tree to show.")
@click.option("--limit", type=click.IntRange(1, answers.MAX_LIMIT), default=50, show_default=True, help="Objects to show in all.")
@output_options(GRAPH_FORMATS)
@timeout_option
def retains(tag: str, object_id: int | None, type_name: str | None, name_contains: str, depth: int, limit: int, fmt: str, output: str | None, timeout: float) -> None:
    """What an object keeps alive: its dominated subtree, largest first."""
    with db.connect() as database:
        questions = answers.Questions(database, timeout)
        answer = questions.retains(tag, _resolve(questions, tag, object_id, type_name, name_contains), depth=depth, limit=limit)
    emit(render_answer(answer, fmt, render.retains_text), output)


@main.command()
@click.argument("tag")
@click.option("--type", "type_name", help="Only objects of this type.")
@click.option("--limit", type=click.IntRange(1, answers.MAX_LIMIT), default=20, show_default=True)
@output_options(TABLE_FORMATS)
@timeout_option
def top(tag: str, type_name: str | None, limit: int, fmt: str, output: str | None, timeout: float) -> None:
    """The objects that retain most (the root and its synthetic root kinds left out)."""
    with db.connect() as database:
        rows = answers.Questions(database, timeout).top(tag, type_name=type_name, limit=limit)
    emit(render_answer(rows, fmt, render.objects_table), output)


@main.command()
@click.argument("tag")
@click.option("--sort", type=click.Choice(["count", "self_size", "retained_size", "max_retained_size"]), default="self_size", show_default=True)
@click.option("--limit", type=click.IntRange(1, 10_000), default=50, show_default=True)
@output_options(TABLE_FORMATS)
@timeout_option
def types(tag: str, sort: str, limit: int, fmt: str, output: str | None, timeout: float) -> None:
    """Objects per type: count, shallow size, retained size."""
    with db.connect() as database:
        rows = answers.Questions(database, timeout).types(tag, sort=sort, limit=limit)
    emit(render_answer(rows, fmt, render.types_table), output)


@main.command(name="object")
@click.argument("tag")
@_object_options
@click.option("--limit", type=click.IntRange(0, answers.MAX_LIMIT), default=20, show_default=True, help="References to list in each direction.")
@output_options(TABLE_FORMATS)
@timeout_option
def object_(tag: str, object_id: int | None, type_name: str | None, name_contains: str, limit: int, fmt: str, output: str | None, timeout: float) -> None:
    """One object: its details and its incoming and outgoing references."""
    with db.connect() as database:
        questions = answers.Questions(database, timeout)
        answer = questions.object(tag, _resolve(questions, tag, object_id, type_name, name_contains), limit=limit)
    emit(render_answer(answer, fmt, render.object_text), output)


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
        for p in q.parameters:
            default = "" if p.required else f" = {json.dumps(p.default)}"
            click.echo(f"    {p.name}: {p.describe_type()}{default}  {p.description}")


@main.command()
@click.argument("name")
@click.option("--param", "-p", "params", multiple=True, metavar="KEY=VALUE", help="A parameter (repeat for each; repeat a key to build a list).")
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON.")
@timeout_option
def query(name: str, params: tuple[str, ...], as_json: bool, timeout: float) -> None:
    """Run a stored query by name and print its rows."""
    stored = catalog.get(name)
    values: dict[str, list[str]] = {}
    for item in params:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{item!r} is not key=value", param_hint="--param")
        values.setdefault(key, []).append(value)
    bound = stored.bind(values)  # checked before connecting: a typo should not wait for Neo4j
    with db.connect() as database:
        rows = catalog.run(database, name, bound, timeout=timeout)
    if as_json:
        click.echo(json.dumps(rows, indent=2, default=str))
        return
    click.echo(_table(rows))


def _table(rows: list[dict[str, Any]]) -> str:
    """Rows as aligned text columns; nested values as compact JSON."""
    if not rows:
        return "(no rows)"
    columns = list(rows[0])
    cells = [[c if isinstance(c, str) else json.dumps(c, default=str) for c in (row[col] for col in columns)] for row in rows]
    cells = [[render.short_name(c, 80) for c in line] for line in cells]
    widths = [max(len(col), *(len(line[i]) for line in cells)) for i, col in enumerate(columns)]
    lines = ["  ".join(col.ljust(w) for col, w in zip(columns, widths))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(line, widths)) for line in cells]
    return "\n".join(lines)

