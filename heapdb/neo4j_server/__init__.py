"""The Neo4j that heapdb installs and runs itself: no Docker, no tarball, nothing installed by hand.

Neo4j Community 5.26 (LTS) is published on Maven Central. ``install`` asks Maven to resolve the
``org.neo4j:neo4j`` aggregate, the server (``org.neo4j.app:neo4j-server``) and the Browser into the
user's ``~/.m2`` cache and records the resulting classpath; nothing is copied. ``start`` runs
``org.neo4j.server.CommunityEntryPoint`` on the machine's Java 17 with a config heapdb writes.
``install`` also builds heapdb's own plugin (the bulk-write procedures of loader/store/plugin) with
Maven, once per version, into ``$XDG_CACHE_HOME/heapdb/neo4j-plugin``, and copies it to ``plugins/``.

Layout under ``$XDG_DATA_HOME/heapdb/neo4j``::

    dist/<version>/pom.xml, classpath.txt   what Maven resolved
    instance/conf/neo4j.conf                written at every start from the settings
    instance/run/started.conf               the neo4j.conf the running server started with
    instance/data/databases, transactions   the store files and the transaction logs
    instance/plugins/heapdb-neo4j-plugin.jar   heapdb's plugin, loaded at start
    instance/logs, import, run/neo4j.pid

The package, one module per job: this module starts and stops the server (and re-exports the
rest, so ``heapdb.neo4j_server.X`` names every part); :mod:`.layout` holds the versions and paths,
:mod:`.tools` finds Java and Maven, :mod:`.dist` resolves Neo4j from Maven Central and prepares the
instance, :mod:`.plugin` builds heapdb's plugin, :mod:`.conf` writes ``neo4j.conf``, :mod:`.ports`
picks and checks ports, :mod:`.logs` reads Neo4j's logs (recovery included), :mod:`.status` reports.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator

from heapdb import config
from heapdb.errors import Neo4jServerError
from heapdb.neo4j_server.conf import (
    SHUTDOWN_SETTINGS,
    TX_LOG_SETTINGS,
    conf_text,
    gc_flags,
    settings_pending,
    write_conf,
)
from heapdb.neo4j_server.dist import classpath, install, is_installed, neo4j_env, resolve
from heapdb.neo4j_server.layout import (
    ADMIN_TOOL,
    BROWSER_VERSION,
    ENTRY_POINT,
    NEO4J_VERSION,
    Paths,
    Say,
    paths,
    quiet,
)
from heapdb.neo4j_server.logs import RecoveryWatch, log_tail
from heapdb.neo4j_server.plugin import PLUGIN_JAR, build_plugin, install_plugin, plugin_source
from heapdb.neo4j_server.ports import PORT_RELEASE_SECONDS, bolt_answers, free_port, port_freed
from heapdb.neo4j_server.status import dir_size, running_pid, status
from heapdb.neo4j_server.tools import java_executable, java_major_version
from heapdb.processes import pid_alive
from heapdb.settings import MANAGED_GC

__all__ = [
    "ADMIN_TOOL",
    "BROWSER_VERSION",
    "ENTRY_POINT",
    "JVM_FLAGS",
    "NEO4J_VERSION",
    "PLUGIN_JAR",
    "PORT_RELEASE_SECONDS",
    "SHUTDOWN_SETTINGS",
    "TX_LOG_SETTINGS",
    "Paths",
    "RecoveryWatch",
    "Say",
    "build_plugin",
    "classpath",
    "conf_text",
    "dir_size",
    "free_port",
    "gc_flags",
    "install",
    "install_plugin",
    "is_installed",
    "java_executable",
    "java_major_version",
    "log_tail",
    "paths",
    "plugin_source",
    "port_freed",
    "resolve",
    "running_on_free_ports",
    "running_pid",
    "settings_pending",
    "start",
    "status",
    "stop",
    "write_conf",
]

# The JVM flags of Neo4j's own default neo4j.conf (server.jvm.additional): without the add-opens the
# page cache falls back to a slower mode, and without native access Netty warns at every start.
JVM_FLAGS = [
    "-XX:-OmitStackTraceInFastThrow",
    "-XX:+UnlockExperimentalVMOptions",
    "-XX:+TrustFinalNonStaticFields",
    "-XX:+DisableExplicitGC",
    "-Djdk.nio.maxCachedBufferSize=1024",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-Djdk.tls.ephemeralDHKeySize=2048",
    "-Djdk.tls.rejectClientInitiatedRenegotiation=true",
    "-XX:FlightRecorderOptions=stackdepth=256",
    "-XX:+UnlockDiagnosticVMOptions",
    "-XX:+DebugNonSafepoints",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--enable-native-access=ALL-UNNAMED",
    "-Dlog4j2.disable.jmx=true",
    "-Dlog4j.layout.jsonTemplate.maxStringLength=32768",
]


def _still_recovering(watch: RecoveryWatch, pid: int | None, timeout: float) -> Neo4jServerError:
    return Neo4jServerError(
        f"Neo4j (pid {pid}) is still recovering after an unclean shutdown ({watch.describe()}), with no progress "
        f"in the last {timeout:.0f} s. It keeps running: stopping it now would only make the next start "
        f"recover again. Wait for it with `heapdb neo4j start --timeout SECONDS` (a larger timeout), and "
        f"watch {watch.path}"
    )


def start(timeout: float = 180, say: Say = quiet) -> bool:
    """Start the managed Neo4j in the background and wait until Bolt answers.

    Returns False when it was already running (starting twice is harmless), True when started.
    Installs first if needed. After an unclean shutdown Neo4j recovers before it answers: its
    progress is said as Neo4j logs it (:class:`RecoveryWatch`), ``timeout`` counts from the last
    step, and a server still recovering when it runs out is left running, never stopped.
    """
    settings = config.managed_settings()
    if not is_installed() or not settings.password:
        settings = install(settings, say=say)
    if running_pid() is not None:
        # Perhaps still recovering from an earlier start that gave up waiting: follow it from there.
        watch = RecoveryWatch(paths().logs / "debug.log", from_last_start=True)
        if _wait_for_bolt(settings, timeout, watch, say):
            return False
        if watch.recovering and running_pid() is not None:
            raise _still_recovering(watch, running_pid(), timeout)
        raise Neo4jServerError(
            f"Neo4j runs (pid {running_pid()}) but Bolt does not answer on port {settings.bolt_port} within "
            f"{timeout:.0f} s (wait longer with `heapdb neo4j start --timeout SECONDS`)\n{log_tail()}"
        )
    # A pid file left behind means this instance's own JVM died without a stop (killed, crashed) a
    # moment ago, perhaps: its ports come free as the kernel tears it down, so wait for them. Any
    # other holder of a port is another program, and the start fails at once.
    release = PORT_RELEASE_SECONDS if paths().pid_file.exists() else 0.0
    for label, port in (("Bolt", settings.bolt_port), ("HTTP", settings.http_port)):
        if not port_freed(port, release):
            raise Neo4jServerError(
                f"the {label} port {port} is taken by another process; pick another with "
                f"`heapdb neo4j install --{label.lower()}-port N` (or `auto`)"
            )
    java = java_executable()
    write_conf(settings)
    p = paths()
    p.started_conf.parent.mkdir(parents=True, exist_ok=True)
    p.started_conf.write_text(conf_text(settings))
    p.logs.mkdir(parents=True, exist_ok=True)
    p.pid_file.parent.mkdir(parents=True, exist_ok=True)
    # An argument file keeps the 200-jar classpath out of `ps` and off the command-line length limit.
    argfile = p.pid_file.parent / "java.args"
    argfile.write_text('-cp\n"' + os.pathsep.join(classpath()) + '"\n')
    command = [
        java,
        f"-Xms{settings.heap}",
        f"-Xmx{settings.heap}",
        *gc_flags(settings),
        *JVM_FLAGS,
        f"@{argfile}",
        ENTRY_POINT,
        f"--home-dir={p.instance}",
        f"--config-dir={p.conf_dir}",
    ]
    say(
        f"Starting Neo4j {NEO4J_VERSION} on bolt://127.0.0.1:{settings.bolt_port} (heap {settings.heap}, page cache {settings.pagecache})..."
    )
    started = time.monotonic()
    watch = RecoveryWatch(p.logs / "debug.log")  # from here on: what this start writes
    with open(p.logs / "console.log", "ab") as console:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=console,
            stderr=subprocess.STDOUT,
            env=neo4j_env(),
            cwd=p.instance,
            start_new_session=True,  # survives the heapdb process, ignores its Ctrl-C
        )
    p.pid_file.write_text(f"{process.pid}\n")
    # The timeout counts from the start, or from the last step of a recovery: while recovery
    # advances, start waits for it, however long it takes.
    deadline = started + timeout
    while True:
        if process.poll() is not None:
            p.pid_file.unlink(missing_ok=True)
            raise Neo4jServerError(f"Neo4j exited with code {process.returncode} while starting\n{log_tail()}")
        if bolt_answers(settings.bolt_port) and _driver_ready(settings):
            say(f"Neo4j is up after {time.monotonic() - started:.1f} s.")
            return True
        if watch.poll(say):
            deadline = max(deadline, time.monotonic() + timeout)
        if time.monotonic() >= deadline:
            break
        time.sleep(0.5)
    if watch.recovering:  # never stop a recovering server: the next start would recover again
        raise _still_recovering(watch, process.pid, timeout)
    _terminate(process.pid, 30)
    p.pid_file.unlink(missing_ok=True)
    raise Neo4jServerError(
        f"Neo4j did not answer on Bolt port {settings.bolt_port} within {timeout:.0f} s, and stopped; give it "
        f"longer with `heapdb neo4j start --timeout SECONDS`\n{log_tail()}"
    )


def _driver_ready(settings: config.ManagedSettings) -> bool:
    """Bolt accepting a socket is not enough: the database may still be starting."""
    import neo4j

    try:
        with neo4j.GraphDatabase.driver(
            f"bolt://127.0.0.1:{settings.bolt_port}", auth=("neo4j", settings.password)
        ) as driver:
            driver.execute_query("RETURN 1")
        return True
    except neo4j.exceptions.AuthError as e:
        raise Neo4jServerError(f"the managed Neo4j refused heapdb's stored password: {e.message}") from None
    except Exception:
        return False


def _wait_for_bolt(
    settings: config.ManagedSettings,
    timeout: float,
    watch: RecoveryWatch | None = None,
    say: Callable[[str], None] = quiet,
) -> bool:
    """Wait for a running Neo4j to answer; the timeout counts from the last step of a recovery."""
    deadline = time.monotonic() + timeout
    while True:
        if bolt_answers(settings.bolt_port) and _driver_ready(settings):
            return True
        if running_pid() is None:
            return False
        if watch is not None and watch.poll(say):
            deadline = max(deadline, time.monotonic() + timeout)
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.5)


def _terminate(pid: int, timeout: float) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _reap(pid)
        if not pid_alive(pid):
            return
        time.sleep(0.2)
    os.kill(pid, signal.SIGKILL)


def _reap(pid: int) -> None:
    # When this process started Neo4j (tests do), its zombie is collected here; one started by another
    # process that has exited is its init's to collect, and pid_alive() counts it as gone meanwhile.
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def stop(timeout: float = 120, say: Say = quiet) -> bool:
    """Shut Neo4j down cleanly (SIGTERM, then SIGKILL after ``timeout``). False if it was not running."""
    pid = running_pid()
    if pid is None:
        paths().pid_file.unlink(missing_ok=True)
        return False
    say(f"Stopping Neo4j (pid {pid})...")
    _terminate(pid, timeout)
    paths().pid_file.unlink(missing_ok=True)
    return True


@contextlib.contextmanager
def running_on_free_ports(
    heap: str, pagecache: str, timeout: float = 240, gc: str = MANAGED_GC.fallback
) -> Iterator[config.ManagedSettings]:
    """The managed Neo4j installed on free ports with this memory, started, and stopped on the way
    out: for the test suite and the benchmarks, each with a Neo4j of its own (point ``XDG_DATA_HOME``
    and ``XDG_CONFIG_HOME`` at a directory of its own first)."""
    settings = install(
        config.ManagedSettings(bolt_port=free_port(), http_port=free_port(), heap=heap, pagecache=pagecache, gc=gc)
    )
    start(timeout=timeout)
    try:
        yield settings
    finally:
        stop()
