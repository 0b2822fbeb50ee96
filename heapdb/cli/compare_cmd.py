"""``heapdb diff``, ``leaks``, ``growth`` and ``suspects``: comparing snapshots of different builds or
moments, and finding what holds a single snapshot's memory."""

from __future__ import annotations

import re
from pathlib import Path

import click

from heapdb import answers, db, render
from heapdb.cli import main
from heapdb.cli.query_cmd import TABLE_FORMATS, emit, output_options, render_answer, timeout_option


def _warn(warnings: list[str]) -> None:
    """Doubts about an answer go to stderr, so the answer itself stays parseable."""
    for warning in warnings:
        click.echo(f"heapdb: warning: {warning}", err=True)


@main.command()
@click.argument("before")
@click.argument("after")
@click.option(
    "--by", type=click.Choice(["type", "path", "object"]), default="type", show_default=True,
    help="Group objects by type, or by retainer path (both need no stable ids), or match them by id and type (new / survived / freed).",
)
@click.option("--limit", type=click.IntRange(1, 10_000), default=30, show_default=True, help="Rows to show.")
@click.option("--samples", type=click.IntRange(0, 20), default=3, show_default=True, help="With --by object: the largest new objects to list per type.")
@click.option("--svg", "svg_out", type=click.Path(dir_okay=False, writable=True, path_type=Path), help="With --by path: a flame graph of the growth (width = bytes).")
@output_options(TABLE_FORMATS)
@timeout_option
def diff(before: str, after: str, by: str, limit: int, samples: int, svg_out: Path | None, fmt: str, output: str | None, timeout: float) -> None:
    """What grew between two loaded snapshots, BEFORE and AFTER (tags), per type or per retainer path,
    or object by object.

    --by object needs ids that name the same object in both snapshots (V8 snapshots of one process);
    when the formats or the data say they may not, warnings go to stderr and into the answer.
    """
    if svg_out is not None and by != "path":
        raise click.UsageError("--svg draws retainer paths: use it with --by path")
    with db.connect() as database:
        answer = answers.Questions(database, timeout).diff(before, after, by=by, limit=limit, samples=samples)
    if isinstance(answer, answers.ObjectDiff):
        _warn(answer.warnings)
    if svg_out is not None:
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
@click.option(
    "--by", type=click.Choice(["id", "path"]), default="id", show_default=True,
    help="Match objects by id (memlab's rule; ids must be stable), or compare retainer paths' totals (no stable ids needed).",
)
@click.option("--limit", type=click.IntRange(1, answers.MAX_LIMIT), default=10, show_default=True, help="Clusters to show.")
@click.option(
    "--dot", "dot_dir", type=click.Path(file_okay=False, path_type=Path),
    help="Write why-alive of each cluster's first sample, in FINAL, as a GraphViz file in this directory.",
)
@output_options(TABLE_FORMATS)
@timeout_option
def leaks(baseline: str, target: str, final: str, by: str, limit: int, dot_dir: Path | None, fmt: str, output: str | None, timeout: float) -> None:
    """Leak candidates, as memlab finds them: what was allocated between BASELINE and TARGET and is
    still alive in FINAL (three loaded snapshots of one process), clustered by retainer path.

    By id (the default), object ids must be stable across the three (V8 ids within one process are).
    By path, a retainer path is a candidate when it held more objects in TARGET than in BASELINE and
    holds at least as many in FINAL as in TARGET; that works for Luau and snap.bin too.
    """
    with db.connect() as database:
        questions = answers.Questions(database, timeout)
        answer = questions.leaks(baseline, target, final, by=by, limit=limit)
        _warn(answer.warnings)
        if dot_dir is not None:
            dot_dir.mkdir(parents=True, exist_ok=True)
            for number, cluster in enumerate(answer.clusters, 1):
                why = questions.why_alive(final, cluster.sample_ids[0])
                path = dot_dir / f"leak-{number:02d}-{_file_part(cluster.type)}-{cluster.sample_ids[0]}.dot"
                path.write_text(render.dot(why), encoding="utf-8")
            click.echo(f"heapdb: wrote {len(answer.clusters)} why-alive graphs to {dot_dir}", err=True)
    emit(render_answer(answer, fmt, render.leaks_text), output)


def _file_part(text: str) -> str:
    """A type name as a safe piece of a file name."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_.")[:40] or "object"


@main.command()
@click.argument("tags", nargs=-1, required=True)
@click.option("--by", type=click.Choice(["type", "path"]), default="type", show_default=True, help="Group objects by type or by retainer path.")
@click.option("--limit", type=click.IntRange(1, 10_000), default=30, show_default=True, help="Rows to show.")
@click.option("--json", "as_json", is_flag=True, help="Print the answer as JSON.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write to this file instead of stdout.")
@timeout_option
def growth(tags: tuple[str, ...], by: str, limit: int, as_json: bool, output: str | None, timeout: float) -> None:
    """Types or retainer paths whose size grew at every step across three or more loaded snapshots
    (TAGS, oldest first), with their per-snapshot series.

    Reads the totals stored at load only, so it answers at once at any heap size; needs no stable ids.
    """
    if len(tags) < 3:
        raise click.UsageError(f"growth needs at least three snapshots, got {len(tags)}")
    with db.connect() as database:
        answer = answers.Questions(database, timeout).growth(list(tags), by=by, limit=limit)
    emit(render_answer(answer, "json" if as_json else "text", render.growth_text), output)


@main.command()
@click.argument("tag")
@click.option("--share", type=click.FloatRange(0, 1, min_open=True), default=0.1, show_default=True, help="Report what retains at least this share of the reachable heap.")
@click.option(
    "--ratio", type=click.FloatRange(0.5, 1, min_open=True), default=0.8, show_default=True,
    help="Descend to the accumulation point through children holding at least this share of their parent.",
)
@click.option("--limit", type=click.IntRange(1, answers.MAX_LIMIT), default=20, show_default=True, help="Objects and types to show, each.")
@click.option("--json", "as_json", is_flag=True, help="Print the answer as JSON.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write to this file instead of stdout.")
@timeout_option
def suspects(tag: str, share: float, ratio: float, limit: int, as_json: bool, output: str | None, timeout: float) -> None:
    """Leak suspects in one snapshot, as Eclipse MAT finds them: objects and types retaining a big
    share of the heap, and for each object where inside it the memory accumulates."""
    with db.connect() as database:
        answer = answers.Questions(database, timeout).suspects(tag, share=share, ratio=ratio, limit=limit)
    emit(render_answer(answer, "json" if as_json else "text", render.suspects_text), output)
