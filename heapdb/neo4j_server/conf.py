"""The ``neo4j.conf`` heapdb writes from its settings at every start, and whether the running
instance started with other settings."""

from __future__ import annotations

from heapdb import config
from heapdb.neo4j_server.layout import paths
from heapdb.settings import GARBAGE_COLLECTORS

# Transaction logs. Snapshots can be loaded again from their files, so the logs serve only crash
# recovery: nothing is kept beyond what recovery needs, a checkpoint follows every 256 MiB of log
# (Community's VOLUME policy; the default waits 15 minutes or 100,000 transactions, several GB into a
# load) and files rotate every 128 MiB, so that the files before a checkpoint can go. A load then
# keeps well under 1 GB of logs on disk (docs/operations.md has the figures).
TX_LOG_SETTINGS = (
    "db.checkpoint=VOLUME",
    "db.checkpoint.interval.volume=256m",
    "db.tx_log.rotation.size=128m",
    "db.tx_log.rotation.retention_policy=keep_none",
    "db.tx_log.preallocate=false",
)

# Shutdown. Neo4j stops Bolt after its databases, whose transactions have ended by then, and then
# waits 5 s for the connections and 5 s more for Netty's quiet period: ten seconds of every stop, of
# every `heapdb neo4j stop` and restart, spent waiting for nothing. Both waits are Neo4j's internal
# settings (docs/decisions.md).
SHUTDOWN_SETTINGS = (
    "internal.server.bolt.connection_shutdown_wait_time=0s",
    "internal.dbms.bolt.netty_server_shutdown_quiet_period=0",
)


# G1's pause-time goal, in ms (the JVM's default is 200). Its young collections copied what the
# loads' open transactions held, and paused Neo4j for 150 to 430 ms, often twice in a row, every few
# seconds while a load wrote: every answer under way waited them out. With a goal of 50 ms G1 keeps
# its young generation smaller; in the mixed-load drill the answers' p99 fell from 526 to 433 ms
# (docs/benchmarks.md, "Requests that take turns"). The collector works more often, for about the
# same CPU.
G1_PAUSE_GOAL_MS = 50


def gc_flags(settings: config.ManagedSettings) -> list[str]:
    """The JVM flags of the garbage collector the settings name (heapdb.settings.GARBAGE_COLLECTORS)."""
    flags = [f"-XX:+Use{GARBAGE_COLLECTORS[settings.gc]}GC"]
    if settings.gc == "g1":
        flags.append(f"-XX:MaxGCPauseMillis={G1_PAUSE_GOAL_MS}")
    return flags


def conf_text(settings: config.ManagedSettings) -> str:
    """neo4j.conf: loopback only, auth on, usage reporting off, memory from the settings, short logs."""
    p = paths()
    lines = [
        "# Written by heapdb at every start from its config file; edit that instead.",
        # heapdb starts Java itself, so the JVM's flags are not settings of this file; this line
        # says which collector runs, and makes a change of it a pending setting (settings_pending).
        f"# The JVM runs with {' '.join(gc_flags(settings))}.",
        "server.default_listen_address=127.0.0.1",
        "server.default_advertised_address=127.0.0.1",
        f"server.bolt.listen_address=127.0.0.1:{settings.bolt_port}",
        f"server.bolt.advertised_address=127.0.0.1:{settings.bolt_port}",
        f"server.http.listen_address=127.0.0.1:{settings.http_port}",
        f"server.http.advertised_address=127.0.0.1:{settings.http_port}",
        "server.https.enabled=false",
        "dbms.security.auth_enabled=true",
        "dbms.usage_report.enabled=false",
        f"server.memory.heap.initial_size={settings.heap}",
        f"server.memory.heap.max_size={settings.heap}",
        f"server.memory.pagecache.size={settings.pagecache}",
        *TX_LOG_SETTINGS,
        *SHUTDOWN_SETTINGS,
        f"server.directories.data={p.data}",
        f"server.directories.logs={p.logs}",
        f"server.directories.import={p.import_dir}",
        f"server.directories.plugins={p.plugins}",
        f"server.directories.run={p.pid_file.parent}",
    ]
    return "\n".join(lines) + "\n"


def write_conf(settings: config.ManagedSettings) -> None:
    """Write neo4j.conf (see :func:`conf_text`); it applies at the next start."""
    p = paths()
    p.conf_dir.mkdir(parents=True, exist_ok=True)
    (p.conf_dir / "neo4j.conf").write_text(conf_text(settings))


def settings_pending() -> bool:
    """Whether the running instance started with other settings than a start now would write."""
    p = paths()
    try:
        started = p.started_conf.read_text()
    except FileNotFoundError:
        return True  # started by a heapdb from before this file was written
    return started != conf_text(config.managed_settings())
