"""``heapdb diff`` and ``heapdb leaks``: comparing snapshots of different builds or moments."""

from __future__ import annotations

from pathlib import Path

import click

from heapdb import answers, db, render
from heapdb.cli import main
from heapdb.cli.query_cmd import TABLE_FORMATS, emit, output_options, render_answer, timeout_option


@main.command()
@click.argument("before")
@click.argument("after")
@click.option("--by", type=click.Choice(["type", "path"]), default="type", show_default=True, help="Group objects by type, or by retainer path (needs no stable ids).")
@click.option("--limit", type=click.IntRange(1, 10_000), default=30, show_default=True, help="Rows to show.")
@click.option("--svg", "svg_out", type=click.Path(dir_okay=False, writable=True, path_type=Path), help="With --by path: a flame graph of the growth (width = bytes).")
@output_options(TABLE_FORMATS)
@timeout_option
def diff(before: str, after: str, by: str, limit: int, svg_out: Path | None, fmt: str, output: str | None, timeout: float) -> None:
    """What grew between two loaded snapshots, BEFORE and AFTER (tags), per type or per retainer path."""
    with db.connect() as database:
        answer = answers.Questions(database, timeout).diff(before, after, by=by, limit=limit)
    if svg_out is not None:
        if by != "path":
            raise click.UsageError("--svg draws retainer paths: use it with --by path")
        from heapdb.flamegraph import build_tree, render_svg

        grown = [(c.hops, c.size_delta, max(c.count_delta, 0)) for c in answer.changes if c.size_delta > 0]
        if not grown:
            click.echo(f"heapdb: nothing grew from {before} to {after}: no flame graph written", err=True)
        else:
            svg_out.write_text(render_svg(build_tree(grown), f"Growth from {before} to {after}, by retainer path"))
            click.echo(f"wrote {svg_out}", err=True)
    emit(render_answer(answer, fmt, render.diff_text), output)


@main.command()
@click.argument("baseline")
@click.argument("target")
@click.argument("final")
@click.option("--limit", type=click.IntRange(1, answers.MAX_LIMIT), default=10, show_default=True, help="Clusters to show.")
@output_options(TABLE_FORMATS)
@timeout_option
def leaks(baseline: str, target: str, final: str, limit: int, fmt: str, output: str | None, timeout: float) -> None:
    """Leak candidates, as memlab finds them: objects allocated between BASELINE and TARGET that are
    still alive in FINAL (three loaded snapshots of one process), clustered by retainer path.

    Object ids must be stable across the three (V8 ids within one process are).
    """
    with db.connect() as database:
        answer = answers.Questions(database, timeout).leaks(baseline, target, final, limit=limit)
    emit(render_answer(answer, fmt, render.leaks_text), output)
