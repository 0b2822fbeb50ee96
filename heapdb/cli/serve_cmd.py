"""``heapdb serve``: the REST service."""

from __future__ import annotations

import click

from heapdb.cli import main


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind; loopback unless you mean to share it.")
@click.option("--port", default=8000, show_default=True, type=int, help="Port to listen on.")
def serve(host: str, port: int) -> None:
    """Serve heapdb's questions over HTTP, with OpenAPI docs at /docs.

    Neo4j is found as for every command (NEO4J_URI, the config file, else the managed instance).
    """
    import uvicorn

    from heapdb.service.app import create_app

    click.echo(f"heapdb serving on http://{host}:{port} (API docs at /docs)", err=True)
    uvicorn.run(create_app(), host=host, port=port, log_level="info")
