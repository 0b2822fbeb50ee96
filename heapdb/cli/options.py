"""Options that many commands share, and the options of each question, built from its declaration.

:func:`question_options` turns a :class:`heapdb.queries.params.Params` class into click options
(``limit`` becomes ``--limit`` with the declared default, range and help) and hands the command one
built, checked parameters object. The REST service takes the same classes as query-string models,
so both front ends share every default and bound.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import annotated_types
import click
from pydantic.fields import FieldInfo

from heapdb.config import TIMEOUT_VARIABLE
from heapdb.queries.params import DEFAULT_TIMEOUT, TIMEOUT_RANGE, Params, field_shape
from heapdb.queries.results import to_data

F = TypeVar("F", bound=Callable[..., Any])

GRAPH_FORMATS = ("text", "json", "dot", "svg")
TABLE_FORMATS = ("text", "json")


def question_options(model: type[Params], *, argument: str = "p") -> Callable[[F], F]:
    """Add an option per field of ``model``; the command receives them as one ``model`` instance,
    passed as the keyword ``argument``."""

    def decorate(command: F) -> F:
        @functools.wraps(command)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            # Only what the command line gave, so that the model knows which values were chosen
            # (``model_fields_set``): the gate takes the others from a rule set's [gate] table.
            context = click.get_current_context()
            values = {}
            for name in model.model_fields:
                value = kwargs.pop(name)
                if context.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT:
                    values[name] = value
            return command(*args, **{argument: model(**values)}, **kwargs)

        for name, info in reversed(model.model_fields.items()):
            wrapper = _option(name, info)(wrapper)
        return wrapper  # type: ignore[return-value]

    return decorate


def _option(name: str, info: FieldInfo) -> Callable[[F], F]:
    flag = "--" + name.replace("_", "-")
    annotation, choices, multiple = field_shape(info)
    kind: Any
    if choices is not None:
        kind = click.Choice(list(choices))
    elif annotation in (int, float):
        low: Any = None
        high: Any = None
        low_open = False
        for rule in info.metadata:
            if isinstance(rule, annotated_types.Ge):
                low = rule.ge
            elif isinstance(rule, annotated_types.Gt):
                low, low_open = rule.gt, True
            elif isinstance(rule, annotated_types.Le):
                high = rule.le
        if low is None and high is None:
            kind = annotation
        elif annotation is int:
            kind = click.IntRange(low, high)
        else:
            kind = click.FloatRange(low, high, min_open=low_open)
    else:
        kind = annotation
    required = info.is_required()
    default = None if required else info.get_default(call_default_factory=True)
    return click.option(
        flag,
        name,
        type=kind,
        multiple=multiple,
        required=required,
        default=default,
        show_default=not multiple and default is not None,
        help=info.description,
    )


def write_options(command: F) -> F:
    """``--batch-size`` and ``--writer``, how a command that stores a snapshot writes it (the
    command receives ``batch_size`` and ``writer``)."""

    def check_writer(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
        from heapdb.loader.store import WRITERS  # the database side, only once a command runs

        if value not in WRITERS:
            raise click.BadParameter(f"choose one of {', '.join(WRITERS)}")
        return value

    command = click.option(
        "--writer",
        default="auto",
        show_default=True,
        callback=check_writer,
        help="How to write: through heapdb's Neo4j plugin ('plugin'), through Cypher ('cypher'), or the plugin "
        "when the database has it ('auto').",
    )(command)
    return click.option(
        "--batch-size",
        default=20_000,
        show_default=True,
        type=click.IntRange(100, 1_000_000),
        help="Rows per write transaction.",
    )(command)


def timeout_option(f: F) -> F:
    return click.option(
        "--timeout",
        type=click.FloatRange(*TIMEOUT_RANGE),
        default=DEFAULT_TIMEOUT,
        show_default=True,
        help="Seconds before Neo4j gives up the query.",
    )(f)


def service_timeout_option(f: F) -> F:
    """``--timeout`` of a long-running server: each query's bound, defaulting to the environment."""
    return click.option(
        "--timeout",
        type=click.FloatRange(*TIMEOUT_RANGE),
        default=None,
        help=f"Seconds each query may run (default: {TIMEOUT_VARIABLE}, else {DEFAULT_TIMEOUT:g}).",
    )(f)


def output_options(formats: Sequence[str]) -> Callable[[F], F]:
    """``--format`` among ``formats`` (text first, the default), ``--json`` for short, and
    ``-o/--output FILE``; the command receives ``fmt`` and ``output``."""

    def decorate(command: F) -> F:
        @functools.wraps(command)
        def wrapper(*args: Any, as_json: bool, **kwargs: Any) -> Any:
            if as_json:
                kwargs["fmt"] = "json"
            return command(*args, **kwargs)

        decorated: Any = wrapper
        decorated = click.option(
            "-o",
            "--output",
            type=click.Path(dir_okay=False, writable=True),
            help="Write to this file instead of stdout.",
        )(decorated)
        decorated = click.option("--json", "as_json", is_flag=True, help="The same as --format json.")(decorated)
        decorated = click.option(
            "--format", "fmt", type=click.Choice(formats), default="text", show_default=True, help="Output format."
        )(decorated)
        return decorated

    return decorate


def key_values(items: Sequence[str], option: str) -> dict[str, list[str]]:
    """``KEY=VALUE`` texts as a mapping of each key to its values, in order (a key may repeat)."""
    values: dict[str, list[str]] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{item!r} is not key=value", param_hint=option)
        values.setdefault(key, []).append(value)
    return values


def emit(text: str, output: str | None) -> None:
    """The answer on stdout, or in ``output`` with a note on stderr."""
    if output:
        with open(output, "w", encoding="utf-8") as f:
            f.write(text if text.endswith("\n") else text + "\n")
        click.echo(f"heapdb: wrote {output}", err=True)
    else:
        click.echo(text.rstrip("\n"))


def json_text(answer: Any) -> str:
    """An answer as the JSON the REST service sends for it (object references as its permalinks)."""
    # The service's link module is tiny and imports no web framework.
    from heapdb.service.links import why_path

    return json.dumps(to_data(answer, why_path), indent=2)


def render_answer(answer: Any, fmt: str, text: Callable[[Any], str]) -> str:
    if fmt == "json":
        return json_text(answer)
    if fmt in ("dot", "svg"):
        from heapdb.renderers import drawing

        return drawing.dot(answer) if fmt == "dot" else drawing.svg(answer)
    return text(answer)


def warn(warnings: Sequence[str]) -> None:
    """Doubts about an answer go to stderr, so the answer itself stays parseable."""
    for warning in warnings:
        click.echo(f"heapdb: warning: {warning}", err=True)
