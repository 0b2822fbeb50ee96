"""``heapdb serve``: the REST service."""

from __future__ import annotations

import ipaddress
import socket

import click

from heapdb import settings
from heapdb.cli import main
from heapdb.cli.options import service_timeout_option
from heapdb.errors import ConfigError, HeapdbError

DEFAULT_PORT = 8000  # where `heapdb serve` listens, and where `heapdb open` looks for it


def loopback_only(host: str) -> bool:
    """Whether binding to ``host`` serves this machine alone: every address it names is a loopback one."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    if not host:
        return False  # every interface
    try:
        addresses = {str(info[4][0]) for info in socket.getaddrinfo(host, None)}
    except OSError:
        return False
    return bool(addresses) and all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addresses)


@main.command()
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="Address to bind; loopback unless you mean to share it."
)
@click.option("--port", default=DEFAULT_PORT, show_default=True, type=int, help="Port to listen on.")
@service_timeout_option
@click.option(
    "--workers",
    type=click.IntRange(1, 256),
    default=40,
    show_default=True,
    help="Requests answered at the same time (threads).",
)
@click.option(
    "--insecure-no-token",
    is_flag=True,
    help="Serve on an address other machines can reach without HEAPDB_API_TOKEN: no authentication at all.",
)
def serve(host: str, port: int, timeout: float | None, workers: int, insecure_no_token: bool) -> None:
    """Serve heapdb's questions over HTTP, with OpenAPI docs at /docs.

    Neo4j is found as for every command (NEO4J_URI, the config file, else the managed instance).
    With HEAPDB_API_TOKEN set, every /api call but /api/health needs `Authorization: Bearer <token>`;
    with HEAPDB_SCOPED_TOKENS on, the tokens of `heapdb tokens create` are taken too, each reading
    and writing only the tags its patterns cover.
    Uploads (`heapdb push`, POST /api/snapshots) need HEAPDB_API_WRITE_TOKEN, without which the
    service takes none; HEAPDB_MAX_LOADS, HEAPDB_MAX_QUEUED, HEAPDB_MAX_UPLOAD_BYTES,
    HEAPDB_MIN_FREE_BYTES and HEAPDB_SPOOL_DIR bound them.
    Without it, only a loopback address (127.0.0.1, ::1, localhost) is served: any other --host is
    refused unless --insecure-no-token says that anyone who can reach it may read every snapshot.
    """
    if not settings.API_TOKEN.get() and not settings.SCOPED_TOKENS.get() and not loopback_only(host):
        if not insecure_no_token:
            raise ConfigError(
                f"refusing to serve on {host!r} without HEAPDB_API_TOKEN: anyone who can reach that address "
                "could read every snapshot. Set HEAPDB_API_TOKEN (clients then send `Authorization: Bearer "
                "<token>`), bind to 127.0.0.1, or pass --insecure-no-token to serve without authentication anyway"
            )
        click.echo(f"heapdb: warning: serving on {host!r} with no authentication (--insecure-no-token)", err=True)
    import uvicorn

    from heapdb.service.app import create_app

    click.echo(f"heapdb serving on http://{host}:{port} (API docs at /docs)", err=True)
    import anyio.to_thread

    async def size_thread_pool() -> None:
        # The endpoints are blocking functions run in AnyIO's thread pool: its size bounds concurrency.
        anyio.to_thread.current_default_thread_limiter().total_tokens = workers

    async def update_indexes() -> None:
        await anyio.to_thread.run_sync(_update_indexes)

    app = create_app(timeout=timeout)
    app.router.on_startup.append(size_thread_pool)
    # First, before the load jobs' recovery starts: it creates the jobs' constraint, and a constraint
    # created while ensure_schema's db.awaitIndexes waits in its transaction waits for that
    # transaction, which waits for the constraint: the service hung at its start for awaitIndexes'
    # 300 s when the two met.
    app.router.on_startup.insert(0, update_indexes)
    uvicorn.run(app, host=host, port=port, log_level="info")


def _update_indexes() -> None:
    """Create the indexes a newer heapdb reads (or replaced), before the first request: a store that
    only this service reads would otherwise never get them, and its questions would scan objects."""
    from heapdb import db
    from heapdb.loader.store import ensure_schema

    try:
        with db.connect(retry_seconds=2.0) as database:
            ensure_schema(database)
    except HeapdbError as e:
        click.echo(f"heapdb: warning: could not bring Neo4j's indexes up to date, questions may be slow: {e}", err=True)
