"""``heapdb rebuild``: a fresh store of many snapshots, imported offline (:mod:`heapdb.loader.store.rebuild`)."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from heapdb import db
from heapdb.cli import main
from heapdb.cli.options import key_values
from heapdb.cli.steps import (
    analyse_for_store,
    choose_rules,
    read_with_progress,
    redact_option,
    refuse_groups_without_rules,
    rules_options,
)
from heapdb.errors import RebuildError

if TYPE_CHECKING:
    from heapdb.loader.graph import HeapGraph
    from heapdb.loader.store import LoadInput

TAG_SOURCES = ("name", "stem")  # and meta:KEY
DEFAULT_TAG_FROM = "stem"


def _say(message: str) -> None:
    click.echo(f"heapdb: {message}", err=True)


def _tag_namer(tag_from: str, tags: Sequence[str] | None, files: Sequence[str]) -> Any:
    """A function (path, graph) -> tag, after checking what can be checked before reading a file."""
    if tags is not None:
        if len(tags) != len(files):
            raise click.BadParameter(f"{len(tags)} tags for {len(files)} files", param_hint="--tags")
        by_file = dict(zip(files, tags))
        return lambda path, _graph: by_file[path]
    if tag_from in TAG_SOURCES:
        return lambda path, _graph: Path(path).name if tag_from == "name" else Path(path).stem
    key = tag_from.removeprefix("meta:")
    if not tag_from.startswith("meta:") or not key:
        raise click.BadParameter(f"{tag_from!r}: use name, stem or meta:KEY", param_hint="--tag-from")

    def from_meta(path: str, graph: HeapGraph) -> str:
        value = graph.meta.get(key)
        if value is None or value == "":
            raise RebuildError(f"{path} has no {key!r} in its metadata to tag it with (--tag-from {tag_from})")
        return str(value)

    return from_meta


@main.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--tag-from",
    default=DEFAULT_TAG_FROM,
    show_default=True,
    metavar="name|stem|meta:KEY",
    help="Tag each snapshot with its file's name, its name without the extension, or the value of KEY in "
    "the snapshot's own metadata.",
)
@click.option(
    "--tags", default=None, metavar="T1,T2,...", help="The tags, one per file, in order (instead of --tag-from)."
)
@click.option(
    "--meta", multiple=True, metavar="KEY=VALUE", help="Extra metadata to store with every snapshot (repeatable)."
)
@rules_options
@redact_option
@click.option("--yes", is_flag=True, help="Replace the database without asking (needed when not on a terminal).")
@click.option("--json", "as_json", is_flag=True, help="Print the rebuild report as JSON.")
def rebuild(
    files: tuple[str, ...],
    tag_from: str,
    tags: str | None,
    meta: tuple[str, ...],
    rules: str | None,
    disabled: tuple[str, ...],
    redact: bool,
    yes: bool,
    as_json: bool,
) -> None:
    """Replace the managed Neo4j's database with a fresh store of the snapshot FILES, imported offline
    with neo4j-admin (a backlog of builds, a nightly rebuild).

    Each file is read and analysed as `heapdb load` does (the same rules options), written as CSV files
    for neo4j-admin, and the snapshots are imported at once by neo4j-admin, whose import writes several
    times faster than transactions do. Neo4j is stopped for the import and started again; the database then holds exactly these
    snapshots (every snapshot stored before is gone) and what belongs to no snapshot, such as the rule
    sets, carried over. The old store is kept aside until the new one is verified; if anything fails,
    or on Ctrl-C, it is put back and answers as before.

    Only for the managed Neo4j (the import writes its store files); with a Neo4j of your own, load the
    snapshots with `heapdb load` (docs/operations.md).
    """
    from heapdb.loader.store import list_snapshots
    from heapdb.loader.store import rebuild as rebuilder
    from heapdb.loader.store.lifecycle import check_tag

    refuse_groups_without_rules(rules, disabled)
    tag_list = [t.strip() for t in tags.split(",")] if tags is not None else None
    tag_of = _tag_namer(tag_from, tag_list, files)
    if not tag_from.startswith("meta:") or tag_list is not None:  # the tags are known now: check them now
        known = [tag_of(path, None) for path in files]
        for tag in known:
            check_tag(tag)
        repeated = sorted({t for t in known if known.count(t) > 1})
        if repeated:
            raise RebuildError(f"two files would get the same tag: {', '.join(map(repr, repeated))} (see --tags)")
    extra = {key: values[-1] for key, values in key_values(meta, "--meta").items()}
    rebuilder.check_managed()
    choice = choose_rules(rules, disabled_groups=disabled, connect=db.connect)
    with db.connect(say=_say) as database:
        stored = [s.tag for s in list_snapshots(database)]
    if not yes:
        if not sys.stdin.isatty():
            raise click.UsageError("a rebuild replaces the whole database: pass --yes to confirm")
        gone = ", ".join(map(repr, stored[:10])) + (", ..." if len(stored) > 10 else "") or "none"
        click.confirm(
            f"Replace the database's {len(stored)} snapshot(s) ({gone}) with the {len(files)} given?", abort=True
        )

    def analyse(path: str) -> tuple[LoadInput, dict[str, Any] | None]:
        _, graph = read_with_progress(path)
        return analyse_for_store(graph, choice, _say, redact=redact)

    started = time.monotonic()
    report = rebuilder.rebuild(list(files), analyse, tag_of, meta=extra, say=_say)
    total = time.monotonic() - started
    if as_json:
        click.echo(json.dumps({**report.as_dict(), "total_seconds": total}, indent=2))
        return
    phases = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in report.seconds.items())
    click.echo(
        f"rebuilt the database with {len(report.snapshots)} snapshots, {report.elements:,} objects and references "
        f"({report.elements / total:,.0f}/s overall; {phases}); carried over {report.carried} other nodes"
    )
    for tag, objects, references in report.snapshots:
        click.echo(f"  {tag}: {objects:,} objects, {references:,} references")
