"""``heapdb tokens ...``: the service's tokens per team (create, list, revoke), kept in the database."""

from __future__ import annotations

import json

import click

from heapdb import db, settings
from heapdb.cli import main

PATTERN_HELP = "fnmatch patterns on tags (*, ?, [abc]; `*` crosses `/`), repeatable"


@main.group("tokens")
def tokens_group() -> None:
    """The service's tokens per team: create, list and revoke them.

    Each token reads the snapshots whose tags its --read or --write patterns cover and writes (uploads,
    replaces, cancels loads of) those its --write patterns cover, on every route, page and MCP tool;
    anything else answers as unknown. The service takes them with HEAPDB_SCOPED_TOKENS on; the
    environment tokens (HEAPDB_API_TOKEN, HEAPDB_API_WRITE_TOKEN) stay the administrator's.
    """


@tokens_group.command("create")
@click.option("--name", required=True, help="Whose token it is (a team, a CI job): shown by `heapdb tokens list`.")
@click.option("--read", "read", multiple=True, metavar="PATTERN", help=f"Tags it may read: {PATTERN_HELP}.")
@click.option("--write", "write", multiple=True, metavar="PATTERN", help=f"Tags it may load and read: {PATTERN_HELP}.")
@click.option("--json", "as_json", is_flag=True, help="Print the token (its secret too) as JSON.")
def create(name: str, read: tuple[str, ...], write: tuple[str, ...], as_json: bool) -> None:
    """Make a token and print its secret, once: only its digest is stored, so keep it now.

    Example: heapdb tokens create --name team-a --read 'team-a/*' --write 'team-a/*'
    """
    from heapdb.loader.store import tokens

    with db.connect() as database:
        record, secret = tokens.create_token(database, name, read, write)
    if as_json:
        click.echo(json.dumps({**record.as_dict(), "secret": secret}, indent=2))
        return
    click.echo(f"created token {record.id} for {record.name!r}; its secret (shown only now):")
    click.echo(secret)
    if not settings.SCOPED_TOKENS.get():
        click.echo(f"heapdb: the service takes it once {settings.SCOPED_TOKENS.name}=1 where it runs", err=True)


@tokens_group.command("list")
@click.option("--all", "include_revoked", is_flag=True, help="Also list the revoked tokens.")
@click.option("--json", "as_json", is_flag=True, help="Print the tokens as JSON (never their secrets).")
def list_command(include_revoked: bool, as_json: bool) -> None:
    """List the tokens: id, name, read and write patterns, when created (and revoked)."""
    from heapdb.loader.store import tokens

    with db.connect() as database:
        listed = tokens.list_tokens(database, include_revoked=include_revoked)
    if as_json:
        click.echo(json.dumps([t.as_dict() for t in listed], indent=2))
        return
    if not listed:
        click.echo("no tokens (make one with `heapdb tokens create --name NAME --read PATTERN`)")
        return
    click.echo(f"{'id':<9} {'name':<20} {'created at':<26} read / write")
    for t in listed:
        revoked = f" (revoked {t.revoked_at})" if t.revoked else ""
        click.echo(
            f"{t.id:<9} {t.name:<20} {t.created_at:<26} {','.join(t.read) or '-'} / {','.join(t.write) or '-'}{revoked}"
        )


@tokens_group.command("revoke")
@click.argument("token_id", metavar="ID")
def revoke(token_id: str) -> None:
    """Revoke the token ID (`heapdb tokens list` shows the ids): the service refuses it within seconds."""
    from heapdb.loader.store import tokens

    with db.connect() as database:
        record = tokens.revoke_token(database, token_id)
    click.echo(f"revoked token {record.id} of {record.name!r}")
