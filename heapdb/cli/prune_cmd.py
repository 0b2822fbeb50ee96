"""``heapdb prune``: retention, old snapshots kept as their summaries (see :mod:`heapdb.loader.store.prune`)."""

from __future__ import annotations

import json

import click

from heapdb import db
from heapdb.cli import main


def _say(message: str) -> None:
    click.echo(f"heapdb: {message}", err=True)


@main.command()
@click.option(
    "--keep-last",
    type=int,
    required=True,
    metavar="N",
    help="Keep the newest N snapshots (by load order) full; at least 1.",
)
@click.option(
    "--keep-tags-matching",
    "keep_tags",
    multiple=True,
    metavar="GLOB",
    help="Also keep full every snapshot whose tag matches this glob (fnmatch: *, ?, [abc]; repeatable).",
)
@click.option("--dry-run", is_flag=True, help="List what would be pruned and change nothing.")
@click.option("--wait", is_flag=True, help="Free the objects here, with a progress bar, instead of in the background.")
@click.option("--json", "as_json", is_flag=True, help="Print what was pruned and what was kept (and why) as JSON.")
def prune(keep_last: int, keep_tags: tuple[str, ...], dry_run: bool, wait: bool, as_json: bool) -> None:
    """Prune old snapshots to their summaries (type and path groups, signatures): keep the newest N
    and tags matching globs full.

    A pruned snapshot stays listed (`heapdb snapshots` shows it as a summary) and still answers
    types, diff --by type|path, growth and leaks --by path (as baseline or target), at a fraction of
    the size; questions about its objects (why, top, object, find, ...) refuse it. Snapshots answer
    as summaries at once; their objects are freed by a background process (resumed by the next heapdb
    command if it is stopped), or here with --wait. Running it again prunes nothing more.
    """
    from heapdb.loader.store.prune import check_keep_last
    from heapdb.loader.store.prune import prune as prune_snapshots

    check_keep_last(keep_last)  # before connecting
    with db.connect() as database:
        plan = prune_snapshots(database, keep_last, keep_tags, dry_run=dry_run, wait=wait, say=_say)
    if as_json:
        click.echo(json.dumps({"dry_run": dry_run, **plan.as_dict()}, indent=2))
        return
    verb = "would prune" if dry_run else "pruned"
    if not plan.pruned:
        click.echo(f"nothing to prune ({len(plan.kept)} snapshot{'' if len(plan.kept) == 1 else 's'} kept)")
        return
    for s in plan.pruned:
        click.echo(f"{verb} {s.tag!r} (sid {s.sid}, {s.object_count or 0:,} objects)")
    for s, why in plan.kept:
        click.echo(f"kept {s.tag!r}: {why}")
    if not dry_run:
        freeing = "freed" if wait else "being freed in the background"
        click.echo(f"{len(plan.pruned)} snapshot(s) answer as summaries now; their objects are {freeing}")
