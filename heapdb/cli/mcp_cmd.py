"""``heapdb mcp``: the questions as Model Context Protocol tools, for agents (see docs/mcp.md)."""

from __future__ import annotations

import click

from heapdb import settings
from heapdb.cli import main
from heapdb.cli.options import service_timeout_option
from heapdb.cli.serve_cmd import loopback_only
from heapdb.errors import ConfigError


@main.command()
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="stdio: the client starts `heapdb mcp` itself; http: streamable HTTP at http://HOST:PORT/mcp.",
)
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="With http: the address to bind; loopback unless shared."
)
@click.option("--port", default=8765, show_default=True, type=click.IntRange(1, 65535), help="With http: the port.")
@service_timeout_option
@click.option(
    "--insecure-no-token",
    is_flag=True,
    help="With http: serve on an address other machines can reach without HEAPDB_API_TOKEN.",
)
def mcp(transport: str, host: str, port: int, timeout: float | None, insecure_no_token: bool) -> None:
    """Serve heapdb's questions as Model Context Protocol tools, for agents.

    Every question (snapshots, leaks, why, dominators, retains, top, types, find, object, diff,
    growth, suspects, leak signatures, the stored queries) is a tool with typed arguments; answers are JSON of bounded
    size, and a long one comes in pages (the `page` tool). Neo4j is found as for every command
    (NEO4J_URI, NEO4J_USER, NEO4J_PASSWORD, the config file, else a managed instance already running).

    With --transport stdio (the default) an MCP client runs `heapdb mcp` itself and talks over its
    standard input and output. With --transport http it serves streamable HTTP at /mcp; with
    HEAPDB_API_TOKEN set, every request needs `Authorization: Bearer <token>`, and without it only a
    loopback address is served unless --insecure-no-token. With HEAPDB_SCOPED_TOKENS on, the tokens
    of `heapdb tokens create` are taken too, each seeing only the tags its patterns cover.
    """
    token = settings.API_TOKEN.get()
    if transport == "http" and not token and not settings.SCOPED_TOKENS.get() and not loopback_only(host):
        if not insecure_no_token:
            raise ConfigError(
                f"refusing to serve on {host!r} without HEAPDB_API_TOKEN: anyone who can reach that address "
                "could read every snapshot. Set HEAPDB_API_TOKEN, bind to 127.0.0.1, or pass --insecure-no-token"
            )
        click.echo(f"heapdb: warning: serving MCP on {host!r} with no authentication (--insecure-no-token)", err=True)

    from heapdb.service import access
    from heapdb.service.app import DatabaseHandle
    from heapdb.service.mcp import build_server, http_app

    database = DatabaseHandle()  # one connection for the tools and the tokens' lookups
    server = build_server(database.get, timeout=timeout)
    if transport == "stdio":
        server.run("stdio")  # stdout is the protocol's: everything else goes to stderr
        return
    import uvicorn

    from heapdb.service import links

    click.echo(f"heapdb MCP server on http://{host}:{port}{links.MCP}", err=True)
    tokens = access.Tokens(database.get) if access.enabled() else None
    uvicorn.run(http_app(server, host, token, tokens), host=host, port=port, log_level="warning")
