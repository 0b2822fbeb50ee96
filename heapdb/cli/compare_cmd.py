"""``heapdb diff``, ``leaks`` and ``growth``: comparing snapshots of different builds or moments."""

from __future__ import annotations

import re
from pathlib import Path

import click

from heapdb import db
from heapdb.cli import main
from heapdb.cli.options import (
    TABLE_FORMATS,
    emit,
    output_options,
    question_options,
    render_answer,
    timeout_option,
    warn,
)
from heapdb.queries import params
from heapdb.queries.questions import Questions
from heapdb.queries.results import Diff, ObjectDiff
from heapdb.renderers import drawing, text


@main.command()
@click.argument("before")
@click.argument("after")
@question_options(params.Diff)
@click.option(
    "--svg",
    "svg_out",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="With --by path: a flame graph of the growth (width = bytes).",
)
@output_options(TABLE_FORMATS)
@timeout_option
def diff(
    before: str, after: str, p: params.Diff, svg_out: Path | None, fmt: str, output: str | None, timeout: float
) -> None:
    """What grew between two loaded snapshots, BEFORE and AFTER (tags), per type or per retainer path,
    or object by object.

    --by object needs ids that name the same object in both snapshots (V8 snapshots of one process);
    when the formats or the data say they may not, warnings go to stderr and into the answer.
    """
    if svg_out is not None and p.by != "path":
        raise click.UsageError("--svg draws retainer paths: use it with --by path")
    with db.connect() as database:
        answer = Questions(database, timeout).diff(before, after, p)
    if isinstance(answer, ObjectDiff):
        warn(answer.warnings)
    if svg_out is not None:
        assert isinstance(answer, Diff)
        flame = text.growth_flamegraph(answer)
        if flame is None:
            click.echo(f"heapdb: nothing grew from {before} to {after}: no flame graph written", err=True)
        else:
            svg_out.write_text(flame)
            click.echo(f"wrote {svg_out}", err=True)
    emit(render_answer(answer, fmt, text.diff_text), output)


@main.command()
@click.argument("baseline")
@click.argument("target")
@click.argument("final")
@question_options(params.Leaks)
@click.option(
    "--dot",
    "dot_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write why-alive of each cluster's first sample, in FINAL, as a GraphViz file in this directory.",
)
@output_options(TABLE_FORMATS)
@timeout_option
def leaks(
    baseline: str,
    target: str,
    final: str,
    p: params.Leaks,
    dot_dir: Path | None,
    fmt: str,
    output: str | None,
    timeout: float,
) -> None:
    """Leak candidates, as memlab finds them: what was allocated between BASELINE and TARGET and is
    still alive in FINAL (three loaded snapshots of one process), clustered by retainer path.

    By id (the default), object ids must be stable across the three (V8 ids within one process are).
    By path, a retainer path is a candidate when it held more objects in TARGET than in BASELINE and
    holds at least as many in FINAL as in TARGET; that works for Luau and snap.bin too. Each
    cluster's why-alive graph is also served by `heapdb serve` at the cluster's `why` link.
    """
    with db.connect() as database:
        questions = Questions(database, timeout)
        answer = questions.leaks(baseline, target, final, p)
        warn(answer.warnings)
        if dot_dir is not None:
            dot_dir.mkdir(parents=True, exist_ok=True)
            for number, cluster in enumerate(answer.clusters, 1):
                why = questions.why_alive(cluster.why.tag, cluster.why.id)
                path = dot_dir / f"leak-{number:02d}-{_file_part(cluster.type)}-{cluster.why.id}.dot"
                path.write_text(drawing.dot(why), encoding="utf-8")
            click.echo(f"heapdb: wrote {len(answer.clusters)} why-alive graphs to {dot_dir}", err=True)
    emit(render_answer(answer, fmt, text.leaks_text), output)


def _file_part(text: str) -> str:
    """A type name as a safe piece of a file name."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_.")[:40] or "object"


@main.command()
@click.argument("tags", nargs=-1, required=True)
@question_options(params.Growth)
@output_options(TABLE_FORMATS)
@timeout_option
def growth(tags: tuple[str, ...], p: params.Growth, fmt: str, output: str | None, timeout: float) -> None:
    """Types or retainer paths whose size grew at every step across three or more loaded snapshots
    (TAGS, oldest first), with their per-snapshot series.

    Reads the totals stored at load only, so it answers at once at any heap size; needs no stable ids.
    """
    if len(tags) < 3:
        raise click.UsageError(f"growth needs at least three snapshots, got {len(tags)}")
    with db.connect() as database:
        answer = Questions(database, timeout).growth(list(tags), p)
    emit(render_answer(answer, fmt, text.growth_text), output)
