"""``heapdb reanalyze``: a stored snapshot analysed again, under other rules, without its file."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

import click

from heapdb import db
from heapdb.cli import main
from heapdb.cli.options import write_options
from heapdb.cli.steps import analyse_for_store, choose_rules, rules_options
from heapdb.processes import lower_priority


def _say(message: str) -> None:
    click.echo(f"heapdb: {message}", err=True)


@main.command()
@click.argument("tag")
@rules_options
@write_options
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def reanalyze(tag: str, rules: str, disabled: tuple[str, ...], batch_size: int, writer: str, as_json: bool) -> None:
    """Analyse a loaded snapshot TAG again (under other rules, or none) from what the database holds.

    The snapshot's objects and references are read back from Neo4j (no file is needed), analysed
    with the rules chosen as `heapdb load` chooses them (--rules FILE or NAME, then the runtime's
    default rules; without --rules the default rules alone; --rules none for the plain analysis,
    the exact engine-level answer) and written as a new load of the same tag, as `heapdb load
    --replace` would: TAG keeps answering from the old load until the new one is ready, then
    switches in one transaction. The new load keeps the
    format, runtime, source and metadata, records the rules like `heapdb load --rules`, and says in
    its metadata which load it was reanalysed from (`reanalysed_from`, `reanalysed_at`).
    """
    from heapdb.loader import store
    from heapdb.loader.store.readback import read_back

    lower_priority()
    # The rules are read and checked first: a bad rule file fails before the snapshot is read.
    choice = choose_rules(rules, disabled_groups=disabled, connect=db.connect)
    with db.connect() as database:
        started = time.monotonic()
        stored = read_back(database, tag)
        read_seconds = time.monotonic() - started
        old = stored.snapshot

        started = time.monotonic()
        data, analysed_with = analyse_for_store(stored.graph, choice, _say)
        analyse_seconds = time.monotonic() - started
        extra = {
            "reanalysed_from": str(old.sid),
            "reanalysed_from_rules": _rules_of(old.rules, old.default_rules),
            "reanalysed_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }

        def ready(report: store.LoadReport) -> None:
            _say(
                f"{tag!r} answers from the reanalysed load now (sid {report.sid}); writing its other objects and its references"
            )

        report = store.load(
            database,
            data,
            tag,
            replace=True,
            meta=extra,
            source=old.source,
            batch_size=batch_size,
            writer=writer,
            say=_say,
            on_ready=ready,
            analysed_with=analysed_with,
        )
    report.seconds = {"read back": read_seconds, "analyse": analyse_seconds, **report.seconds}
    if as_json:
        answer = {
            "tag": report.tag,
            "sid": report.sid,
            "reanalysed_from": old.sid,
            "objects": report.objects,
            "references": report.references,
            "seconds": report.seconds,
            "writer": report.writer,
            "rules": analysed_with,
        }
        click.echo(json.dumps(answer, indent=2))
        return
    phases = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in report.seconds.items())
    now = analysed_with or {}
    rules_now = _rules_of(now.get("rules"), now.get("default_rules"))
    click.echo(
        f"reanalysed {tag!r} under {rules_now}: {report.objects:,} objects and {report.references:,} references, "
        f"sid {old.sid} -> {report.sid} ({phases})"
    )


def _rules_of(rules: str | None, default_rules: str | None) -> str:
    """The rules a load was analysed under, in a few words: its rule file or set and/or the
    runtime's default rules, or "none"."""
    said = [part for part in (rules, default_rules and f"the {default_rules} default rules") if part]
    return " and ".join(said) or "none"
