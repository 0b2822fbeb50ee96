"""``heapdb serve``: the REST service."""

from __future__ import annotations

import click

from heapdb.cli import main


@main.command()
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="Address to bind; loopback unless you mean to share it."
)
@click.option("--port", default=8000, show_default=True, type=int, help="Port to listen on.")
@click.option(
    "--timeout",
    type=click.FloatRange(0.1, 3600),
    default=None,
    help="Seconds each query may run (default: HEAPDB_QUERY_TIMEOUT, else 30).",
)
@click.option(
    "--workers",
    type=click.IntRange(1, 256),
    default=40,
    show_default=True,
    help="Requests answered at the same time (threads).",
)
def serve(host: str, port: int, timeout: float | None, workers: int) -> None:
    """Serve heapdb's questions over HTTP, with OpenAPI docs at /docs.

    Neo4j is found as for every command (NEO4J_URI, the config file, else the managed instance).
    With HEAPDB_API_TOKEN set, every /api call but /api/health needs `Authorization: Bearer <token>`.
    """
    import uvicorn

    from heapdb.service.app import create_app

    click.echo(f"heapdb serving on http://{host}:{port} (API docs at /docs)", err=True)
    import anyio.to_thread

    async def size_thread_pool() -> None:
        # The endpoints are blocking functions run in AnyIO's thread pool: its size bounds concurrency.
        anyio.to_thread.current_default_thread_limiter().total_tokens = workers

    app = create_app(timeout=timeout)
    app.router.on_startup.append(size_thread_pool)
    uvicorn.run(app, host=host, port=port, log_level="info")
