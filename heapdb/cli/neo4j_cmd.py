"""``heapdb neo4j ...``: install, start, stop and inspect the Neo4j that heapdb manages."""

from __future__ import annotations

import json
from typing import Any

import click

from heapdb import config, neo4j_server
from heapdb.cli import main
from heapdb.settings import GARBAGE_COLLECTORS, MANAGED_GC
from heapdb.units import human_bytes


def _say(message: str) -> None:
    click.echo(message, err=True)


class PortType(click.ParamType):
    """A TCP port number, or ``auto`` for a free one chosen now."""

    name = "port"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, int):
            return value
        if str(value).lower() == "auto":
            return neo4j_server.free_port()
        try:
            port = int(value)
        except ValueError:
            self.fail(f"{value!r} is not a port number or 'auto'", param, ctx)
        if not 1 <= port <= 65535:
            self.fail(f"{port} is not between 1 and 65535", param, ctx)
        return port


SIZE = click.STRING


@main.group("neo4j")
def neo4j_group() -> None:
    """The Neo4j that heapdb installs and runs itself (Community 5.26 LTS from Maven Central).

    Not needed when NEO4J_URI points heapdb at a Neo4j of your own.
    """


@neo4j_group.command()
@click.option("--bolt-port", type=PortType(), help="Bolt port (default 7687; 'auto' picks a free one).")
@click.option("--http-port", type=PortType(), help="HTTP port for the Browser (default 7474; 'auto' picks a free one).")
@click.option("--heap", type=SIZE, help="JVM heap, e.g. 4g (default: a sixth of the machine's memory).")
@click.option("--pagecache", type=SIZE, help="Page cache, e.g. 6g (default: a quarter of the machine's memory).")
@click.option("--gc", type=click.Choice(list(GARBAGE_COLLECTORS)), help=MANAGED_GC.help)
def install(
    bolt_port: int | None, http_port: int | None, heap: str | None, pagecache: str | None, gc: str | None
) -> None:
    """Fetch Neo4j from Maven Central (cached in ~/.m2) and set up its database and password.

    Running it again only changes the given settings; they apply at the next start.
    """
    settings = config.managed_settings()
    given = {"bolt_port": bolt_port, "http_port": http_port, "heap": heap, "pagecache": pagecache, "gc": gc}
    for field, value in given.items():
        if value is not None:
            setattr(settings, field, value)
    settings = neo4j_server.install(settings, say=_say)
    click.echo(
        f"Neo4j {neo4j_server.NEO4J_VERSION} installed: bolt://127.0.0.1:{settings.bolt_port}, "
        f"Browser http://127.0.0.1:{settings.http_port}/browser/, heap {settings.heap}, page cache {settings.pagecache}, collector {settings.gc}. "
        f"Credentials in {config.config_file()}."
    )


@neo4j_group.command()
@click.option(
    "--timeout",
    type=float,
    default=180,
    show_default=True,
    help="Seconds to wait for Neo4j to answer; while it recovers, counted from recovery's last step.",
)
def start(timeout: float) -> None:
    """Start Neo4j in the background and wait until it answers. Harmless when it already runs.

    After an unclean shutdown (a kill -9, a crash) Neo4j first replays its transaction logs; start
    reports that recovery's progress from Neo4j's debug.log and waits as long as it advances. A
    recovering Neo4j is never stopped: when the timeout passes without progress, start says so and
    leaves it running, and the next start picks up the wait.
    """
    started = neo4j_server.start(timeout=timeout, say=_say)
    info = neo4j_server.status()
    word = "started" if started else "already running"
    click.echo(f"Neo4j {word} (pid {info['pid']}): {info['bolt_uri']}, Browser {info['browser_url']}")


@neo4j_group.command()
@click.option("--timeout", type=float, default=120, show_default=True, help="Seconds to wait before killing it.")
def stop(timeout: float) -> None:
    """Shut Neo4j down cleanly."""
    if neo4j_server.stop(timeout=timeout, say=_say):
        click.echo("Neo4j stopped.")
    else:
        click.echo("Neo4j was not running.")


@neo4j_group.command()
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
def status(as_json: bool) -> None:
    """Versions, ports, memory, and the disk taken by the managed Neo4j's store and transaction logs."""
    info = neo4j_server.status()
    if as_json:
        click.echo(json.dumps(info, indent=2))
        return
    state = f"running (pid {info['pid']})" if info["running"] else "stopped"
    lines = [
        f"state:     {state}",
        f"installed: {'yes' if info['installed'] else 'no'} (Neo4j {info['neo4j_version']}, Browser {info['browser_version']})",
        f"bolt:      {info['bolt_uri']}",
        f"browser:   {info['browser_url']}",
        f"memory:    heap {info['heap']}, page cache {info['pagecache']}, collector {info['gc']}",
        f"data:      {human_bytes(int(str(info['data_bytes'])))} in {info['home']}",
        f"store:     {human_bytes(int(str(info['store_bytes'])))}",
        f"tx logs:   {human_bytes(int(str(info['tx_log_bytes'])))}",
        f"plugin:    {'in plugins/' if info['plugin'] else 'missing (`heapdb neo4j install` builds it)'}",
    ]
    if info.get("settings_pending"):
        lines.append("settings:  changed since it started; `heapdb neo4j stop && heapdb neo4j start` applies them")
    if "server" in info:
        server = info["server"]
        lines.append(f"server:    {', '.join(server) if isinstance(server, list) else server}")
    click.echo("\n".join(lines))


@neo4j_group.command()
def plugin() -> None:
    """Build heapdb's Neo4j plugin (once per version, with Maven) and print the jar's path.

    For a Neo4j of your own: copy the jar into its plugins/ folder and restart it, and loads write
    through it (docs/operations.md). The managed Neo4j gets it from `heapdb neo4j install`.
    """
    click.echo(str(neo4j_server.build_plugin(say=_say)))
