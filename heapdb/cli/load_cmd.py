"""``heapdb load``, ``heapdb snapshots`` and ``heapdb drop``: snapshots in the database."""

from __future__ import annotations

import json
import os
import time
from typing import TYPE_CHECKING

import click

from heapdb import db
from heapdb.cli import main
from heapdb.cli.options import key_values, write_options
from heapdb.cli.steps import (
    analyse_for_store,
    choose_rules,
    read_with_progress,
    redact_option,
    refuse_groups_without_rules,
    rules_options,
)
from heapdb.errors import LoadError
from heapdb.processes import lower_priority
from heapdb.units import human_bytes

if TYPE_CHECKING:
    from heapdb.cli.steps import RulesChoice
    from heapdb.loader.store import Snapshot


def _say(message: str) -> None:
    click.echo(f"heapdb: {message}", err=True)


@main.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--tag", required=True, help="Name of this snapshot in the database, e.g. build123.")
@click.option("--replace", is_flag=True, help="Load over an existing snapshot with the same tag.")
@click.option(
    "--meta", multiple=True, metavar="KEY=VALUE", help="Extra metadata to store with the snapshot (repeatable)."
)
@click.option(
    "--source",
    metavar="NAME",
    help="What the snapshot's source is shown as (default: FILE's absolute path). The service gives "
    "an upload the file name its sender gave, never the path of its own copy.",
)
@write_options
@rules_options
@redact_option
@click.option(
    "--only-redacted",
    is_flag=True,
    hidden=True,  # the service's load jobs under HEAPDB_REDACT=always
    help="Refuse a FILE that does not say it was redacted (heapdb push --redact).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the load report as JSON.")
def load(
    file: str,
    tag: str,
    replace: bool,
    meta: tuple[str, ...],
    source: str | None,
    batch_size: int,
    writer: str,
    rules: str,
    disabled: tuple[str, ...],
    redact: bool,
    only_redacted: bool,
    as_json: bool,
) -> None:
    """Read a snapshot, compute dominators, retained sizes and distances, and store it in Neo4j.

    FILE is a V8 .heapsnapshot, a Luau heap dump, a Java hprof heap dump (HotSpot or Android), a
    Mono log-profiler .mlpd file or a snap.bin (detected from its content). Until the load completes, queries do not see the snapshot;
    an interrupted load leaves nothing visible: it is listed as failed (`heapdb snapshots --all`,
    with why) and cleaned up in the background; the next load of the tag or `heapdb drop` removes
    the marker.

    The snapshot answers as soon as its objects are written (why, dominators, retains, top, types,
    suspects, diff, leaks, growth); the references follow, and the questions that walk them (object
    details, why with --k or ignore lists, the retainers and why-alive-avoiding queries) answer once
    they are in. `heapdb snapshots` shows how far a load is.

    The runtime's default rules (docs/rules.md) apply unless --rules none: they change no size, and
    let leak clusters and top retainers name the program's objects rather than the engine's. With
    --rules the analysis also follows the team's rules (dominators, retained sizes, ranks, distances,
    first paths, groups; each object's bucket, known leak and verdict), and the snapshot records the
    rule set; the stored references (:REF and :WEAK_REF) stay what the runtime's own rules say.

    With --redact (or [[redact]] rules, or HEAPDB_REDACT=always), string contents and primitive
    values are replaced by their length and a keyed hash before anything is written; duplicate
    strings still answer (docs/rules.md, Redaction).
    """
    from heapdb.loader.store.lifecycle import check_tag

    command_started = time.monotonic()
    lower_priority()
    check_tag(tag)  # at once, not after reading and analysing the file
    refuse_groups_without_rules(rules, disabled)
    extra = {key: values[-1] for key, values in key_values(meta, "--meta").items()}
    # The rules are read and checked first: a bad rule file fails before a long read of the snapshot.
    choice = choose_rules(rules, disabled_groups=disabled, connect=db.connect)
    store_file(
        file,
        tag,
        choice=choice,
        replace=replace,
        meta=extra,
        source=os.path.abspath(file) if source is None else source,
        batch_size=batch_size,
        writer=writer,
        redact=redact,
        only_redacted=only_redacted,
        as_json=as_json,
        command_started=command_started,
    )


def store_file(
    file: str,
    tag: str,
    *,
    choice: RulesChoice | None,
    replace: bool,
    meta: dict[str, str],
    source: str,
    batch_size: int,
    writer: str,
    redact: bool,
    only_redacted: bool,
    as_json: bool,
    command_started: float,
    before: dict[str, float] | None = None,
) -> None:
    """What `heapdb load` does once its options are checked (and `heapdb receive` with each stream it
    spooled): read ``file``, analyse it under ``choice``'s rules, store it as ``tag`` and print the
    report. ``source`` is what the snapshot shows as its source; ``command_started``
    (``time.monotonic()``) when the command began, for the time to the first answer; ``before``, the
    seconds of the command's phases before the read, which the report lists first."""
    from heapdb.loader import store

    started = time.monotonic()
    _, graph = read_with_progress(file)
    read_seconds = time.monotonic() - started
    if only_redacted:
        from heapdb.loader.redaction import is_redacted

        if not is_redacted(graph):
            raise LoadError(f"{source or file} was not redacted by its sender: send it with `heapdb push --redact`")

    started = time.monotonic()
    data, analysed_with = analyse_for_store(graph, choice, _say, redact=redact)
    analyse_seconds = time.monotonic() - started

    ready_after = 0.0

    def ready(report: store.LoadReport) -> None:
        nonlocal ready_after
        ready_after = time.monotonic() - command_started
        _say(
            f"{tag!r} answers questions now ({ready_after:.1f} s since the start); writing its other objects and its references"
        )

    with db.connect() as database:
        report = store.load(
            database,
            data,
            tag,
            replace=replace,
            meta=meta,
            source=source,
            batch_size=batch_size,
            writer=writer,
            say=_say,
            on_ready=ready,
            analysed_with=analysed_with,
        )
    report.seconds = {**(before or {}), "read": read_seconds, "analyse": analyse_seconds, **report.seconds}
    if as_json:
        click.echo(
            json.dumps(
                {
                    "tag": report.tag,
                    "sid": report.sid,
                    "objects": report.objects,
                    "references": report.references,
                    "seconds": report.seconds,
                    "writer": report.writer,
                    # From the start of the command until the snapshot answered questions.
                    "ready_after": ready_after,
                    **({"rules": analysed_with} if analysed_with is not None else {}),
                },
                indent=2,
            )
        )
        return
    phases = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in report.seconds.items())
    click.echo(f"loaded {report.objects:,} objects and {report.references:,} references as {tag!r} ({phases})")


@main.command()
@click.option(
    "--all", "show_all", is_flag=True, help="Also list loads in progress, failed loads (with why) and dropped ones."
)
@click.option("--json", "as_json", is_flag=True, help="Print the snapshots as JSON.")
def snapshots(show_all: bool, as_json: bool) -> None:
    """List the snapshots in the database: tag, status, format, counts, sizes, load time.

    The graph column says which hold their objects (full) and which only their summaries (pruned
    by `heapdb prune`: they answer types, diff --by type|path, growth and leaks --by path); in JSON,
    `summary` and `pruned_at`.
    """
    from heapdb.loader import store

    with db.connect() as database:
        store.ensure_schema(database)
        listed = store.list_snapshots(database, include_incomplete=True)
    failed = [s for s in listed if s.status == "failed"]
    if not show_all:
        listed = [s for s in listed if s.status == "ready"]
        if failed:  # a load that ended is never silently missing
            tags = ", ".join(repr(s.tag) for s in failed[:5]) + (", ..." if len(failed) > 5 else "")
            loads = "load" if len(failed) == 1 else "loads"
            _say(f"{len(failed)} failed {loads} not listed ({tags}): see `heapdb snapshots --all`")
    if as_json:
        click.echo(json.dumps([s.as_dict() for s in listed], indent=2, default=str))
        return
    if not listed:
        click.echo("no snapshots loaded (load one with `heapdb load FILE --tag TAG`)")
        return
    header = (
        f"{'tag':<24} {'status':<17} {'graph':<8} {'format':<8} {'objects':>11} {'references':>12} "
        f"{'total size':>11}  loaded at"
    )
    click.echo(header)
    for s in listed:
        click.echo(
            f"{s.tag:<24} {_status(s):<17} {_graph(s):<8} {s.format or '':<8} {s.object_count or 0:>11,} "
            f"{s.reference_count or 0:>12,} {human_bytes(s.total_size or 0):>11}  {s.loaded_at or s.started_at or ''}"
        )
        if s.status == "failed":  # why, so that no ended load is ambiguous
            click.echo(f"  failed at {s.failed_at or '?'}: {s.failure or 'reason unknown'}")


def _graph(snapshot: Snapshot) -> str:
    """Whether the snapshot holds its objects (full) or only its summaries (pruned: `heapdb prune`)."""
    return "summary" if snapshot.summary else "full"


def _status(snapshot: Snapshot) -> str:
    from heapdb.loader.store import OLDEST_ANSWERED_VERSION

    if snapshot.status == "ready" and snapshot.store_version < OLDEST_ANSWERED_VERSION:
        return "outdated"  # stored by an older heapdb: questions refuse it until it is loaded again
    if snapshot.status == "ready" and not snapshot.objects_ready:
        written, total = snapshot.objects_written or 0, snapshot.object_count or 0
        return f"ready, objects {written / total:.0%}" if total else "ready, objects 0%"
    if snapshot.status == "ready" and not snapshot.references_ready:
        written, total = snapshot.references_written or 0, snapshot.reference_count or 0
        return f"ready, refs {written / total:.0%}" if total else "ready, refs 0%"
    return snapshot.status


@main.command()
@click.argument("tag")
@click.option("--wait", is_flag=True, help="Free the records here, with a progress bar, instead of in the background.")
def drop(tag: str, wait: bool) -> None:
    """Delete a snapshot (and any leftovers of interrupted loads of it) from the database.

    The snapshot disappears at once (one transaction); its records are freed by a background
    process, whose space the next load reuses. With --wait the command frees them itself and
    returns when they are gone. `heapdb snapshots --all` lists a dropped snapshot until then.
    """
    from heapdb.loader import store

    with db.connect() as database:
        count = store.drop(database, tag, wait=wait, say=_say)
    loads = f" ({count} loads)" if count > 1 else ""
    if wait:
        click.echo(f"dropped {tag!r}{loads}; its records are freed")
    else:
        click.echo(f"dropped {tag!r}{loads}; its records are freed in the background")


@main.command()
def purge() -> None:
    """Free the records of dropped snapshots now, in the foreground, with a progress bar.

    Not needed as a rule: `heapdb drop`, `load --replace` and every other command start a background
    process for that (it logs to purge.log in heapdb's data directory). When one is at work already,
    this waits for it.
    """
    from heapdb.loader.store import purge as purger

    with db.connect(tidy=False) as database:
        freed = purger.purge(database, wait=True, say=_say)
    click.echo(f"freed {freed} dropped snapshot{'' if freed == 1 else 's'}" if freed else "nothing left to free")
