"""``heapdb rules ...``: rule sets kept in the database (add, list, show, remove)."""

from __future__ import annotations

import json
import sys

import click

from heapdb import db
from heapdb.cli import main
from heapdb.errors import RuleError

NAME_HELP = "The rule set's name: 1 to 100 letters, digits, '-', '_' or '.', starting with a letter or digit."


def _say(message: str) -> None:
    click.echo(f"heapdb: {message}", err=True)


@main.group("rules")
def rules_group() -> None:
    """Rule sets kept in the database: add, list, show and remove them.

    A rule set is a rule file (docs/rules.md) stored under a name. Adding a file under a name that exists makes
    its next version; earlier versions stay, so what was analysed with one can show its rules later.
    """


@rules_group.command("add")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--name", required=True, help=NAME_HELP)
@click.option("--author", help="Who adds it (default: $HEAPDB_AUTHOR, else $USER).")
@click.option("--json", "as_json", is_flag=True, help="Print the stored version as JSON.")
def add(file: str, name: str, author: str | None, as_json: bool) -> None:
    """Check the rule file FILE and store it as the next version of the rule set NAME.

    FILE is a TOML rule file (docs/rules.md); `-` reads standard input. A file with an error is
    refused with its line and nothing is stored.
    """
    from heapdb.loader.store import rulesets

    rulesets.check_name(name)  # before reading anything or connecting
    label = "<stdin>" if file == "-" else file
    try:
        data = sys.stdin.buffer.read() if file == "-" else open(file, "rb").read()  # noqa: SIM115
    except OSError as e:
        raise RuleError(label, f"cannot read the rule file: {e.strerror or e}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RuleError(label, f"not UTF-8 text (byte {e.start})") from None
    from heapdb.loader.rules import parse_rules

    parse_rules(text, label)  # a bad file fails here, before the database is started or reached
    with db.connect() as database:
        record = rulesets.add_rule_set(database, name, text, author=author, path=label)
    if as_json:
        click.echo(json.dumps(record.as_dict(), indent=2))
        return
    click.echo(f"added rule set {record.name!r} version {record.version} (sha256 {record.digest[:12]})")


@rules_group.command("list")
@click.option("--all-versions", is_flag=True, help="List every version, not only the latest of each name.")
@click.option("--json", "as_json", is_flag=True, help="Print the rule sets as JSON.")
def list_command(all_versions: bool, as_json: bool) -> None:
    """List the rule sets in the database: name, version, author, when added, digest."""
    from heapdb.loader.store import rulesets

    with db.connect() as database:
        listed = rulesets.list_rule_sets(database, all_versions=all_versions)
    if as_json:
        click.echo(json.dumps([r.as_dict() for r in listed], indent=2))
        return
    if not listed:
        click.echo("no rule sets stored (add one with `heapdb rules add FILE --name NAME`)")
        return
    width = max(24, *(len(r.name) for r in listed))
    click.echo(f"{'name':<{width}} {'version':>7} {'versions':>8}  {'author':<16} {'added at':<25} sha256")
    for r in listed:
        click.echo(
            f"{r.name:<{width}} {r.version:>7} {r.versions or 0:>8}  {r.author or '':<16} {r.added_at:<25} "
            f"{r.digest[:12]}"
        )


@rules_group.command("show")
@click.argument("name")
@click.option("--version", type=click.IntRange(1), help="This version (default: the latest).")
@click.option("--json", "as_json", is_flag=True, help="Print the version with its details as JSON.")
def show(name: str, version: int | None, as_json: bool) -> None:
    """Print the rule set NAME's text exactly as it was added (`> file.toml` gives the file back).

    With --json: its name, version, digest, author, when added, how many versions it has, and the text.
    """
    from heapdb.loader.store import rulesets

    with db.connect() as database:
        record = rulesets.get_rule_set(database, name, version)
    if as_json:
        click.echo(json.dumps(record.as_dict(), indent=2))
        return
    click.echo((record.text or "").encode("utf-8"), nl=False)  # bytes: written as stored, no newline added


@rules_group.command("remove")
@click.argument("name")
@click.option("--version", type=click.IntRange(1), help="Remove only this version (default: every version).")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def remove(name: str, version: int | None, yes: bool) -> None:
    """Delete the rule set NAME from the database: every version, or only --version.

    The numbers of the versions that stay do not change.
    """
    from heapdb.loader.store import rulesets

    rulesets.check_name(name)
    with db.connect() as database:
        record = rulesets.get_rule_set(database, name, version)  # an unknown name or version fails before asking
        if not yes:
            what = f"version {version} of" if version is not None else f"all {record.versions} version(s) of"
            click.confirm(f"remove {what} rule set {name!r}?", abort=True, err=True)
        removed = rulesets.remove_rule_set(database, name, version)
    versions = f"version {version}" if version is not None else f"{removed} version{'' if removed == 1 else 's'}"
    click.echo(f"removed {versions} of rule set {name!r}")


@rules_group.command("defaults")
@click.argument("runtime", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print each runtime's groups and rules by kind as JSON.")
def defaults(runtime: str | None, as_json: bool) -> None:
    """heapdb's default rules, which every load and analysis of a runtime's snapshots applies.

    Without RUNTIME: each runtime's groups (the names --disable-group takes) and how many rules of
    each kind they hold (internal, transient, known_leak, lifecycle...). With RUNTIME (v8, luau,
    python, java): its rule file as heapdb ships it.
    """
    from heapdb.loader.rules.defaults import RUNTIMES, default_rules, defaults_by_group

    if runtime is not None and runtime not in RUNTIMES:
        raise click.BadParameter(f"{runtime!r} (the runtimes: {', '.join(RUNTIMES)})", param_hint="RUNTIME")
    if runtime is not None and not as_json:
        click.echo(default_rules(runtime).text, nl=False)
        return
    listed = defaults_by_group((runtime,) if runtime is not None else RUNTIMES)
    if as_json:
        click.echo(json.dumps(listed, indent=2))
        return
    for name, groups in listed.items():
        for group in groups:
            kinds = ", ".join(f"{count} {kind}" for kind, count in group["rules"].items())
            click.echo(f"{name:<7} {group['name']:<22} {kinds:<28} {group['description']}")
