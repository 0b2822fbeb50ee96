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

Why this module is long: it is the whole life of one server (fetch, configure, start, stop, report),
and every step reads the same paths and settings; split, the parts would only import each other.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from heapdb import config
from heapdb.errors import Neo4jServerError

NEO4J_VERSION = "5.26.30"
BROWSER_VERSION = "5.24.0"
ENTRY_POINT = "org.neo4j.server.CommunityEntryPoint"
ADMIN_TOOL = "org.neo4j.cli.AdminTool"

# The JVM flags of Neo4j's own default neo4j.conf (server.jvm.additional): without the add-opens the
# page cache falls back to a slower mode, and without native access Netty warns at every start.
JVM_FLAGS = [
    "-XX:+UseG1GC",
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

POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <!-- Written by heapdb: resolves Neo4j Community from Maven Central into ~/.m2. -->
  <groupId>heapdb.local</groupId>
  <artifactId>managed-neo4j</artifactId>
  <version>{neo4j}</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.neo4j</groupId><artifactId>neo4j</artifactId><version>{neo4j}</version></dependency>
    <dependency><groupId>org.neo4j.app</groupId><artifactId>neo4j-server</artifactId><version>{neo4j}</version></dependency>
    <dependency><groupId>org.neo4j.client</groupId><artifactId>neo4j-browser</artifactId><version>{browser}</version></dependency>
  </dependencies>
</project>
"""

Say = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


@dataclass(frozen=True)
class Paths:
    root: Path

    @property
    def dist(self) -> Path:
        return self.root / "dist" / NEO4J_VERSION

    @property
    def classpath_file(self) -> Path:
        return self.dist / "classpath.txt"

    @property
    def instance(self) -> Path:
        return self.root / "instance"

    @property
    def conf_dir(self) -> Path:
        return self.instance / "conf"

    @property
    def data(self) -> Path:
        return self.instance / "data"

    @property
    def logs(self) -> Path:
        return self.instance / "logs"

    @property
    def import_dir(self) -> Path:
        return self.instance / "import"

    @property
    def plugins(self) -> Path:
        return self.instance / "plugins"

    @property
    def pid_file(self) -> Path:
        return self.instance / "run" / "neo4j.pid"

    @property
    def started_conf(self) -> Path:
        """The neo4j.conf the running instance started with."""
        return self.instance / "run" / "started.conf"

    @property
    def store(self) -> Path:
        """The databases' store files."""
        return self.data / "databases"

    @property
    def tx_logs(self) -> Path:
        """The databases' transaction logs."""
        return self.data / "transactions"


def paths() -> Paths:
    return Paths(config.data_dir() / "neo4j")


# --- tools -------------------------------------------------------------------------------------


def java_executable() -> str:
    """The java to run Neo4j with: ``$JAVA_HOME/bin/java``, else the one on PATH; it must be 17+."""
    java_home = os.environ.get("JAVA_HOME")
    java = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java")
    if not java or not os.access(java, os.X_OK):
        raise Neo4jServerError(
            "Java 17 is needed to run Neo4j, but no `java` was found (install openjdk-17-jre-headless or set JAVA_HOME)"
        )
    major = java_major_version(java)
    if major < 17:
        raise Neo4jServerError(f"Neo4j {NEO4J_VERSION} needs Java 17 or newer; {java} is Java {major}")
    return java


def java_major_version(java: str) -> int:
    out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not match:
        raise Neo4jServerError(f"cannot tell the version of {java}: {out.stderr.strip()[:200]}")
    major = int(match.group(1))
    return int(match.group(2)) if major == 1 else major  # "1.8" style


def _mvn() -> str:
    mvn = shutil.which("mvn")
    if not mvn:
        raise Neo4jServerError("Maven (`mvn`) is needed to fetch Neo4j from Maven Central; install the `maven` package")
    return mvn


# --- install -----------------------------------------------------------------------------------


def is_installed() -> bool:
    cp = paths().classpath_file
    return cp.exists() and all(Path(j).exists() for j in classpath())


def classpath() -> list[str]:
    text = paths().classpath_file.read_text().strip()
    return [entry for entry in text.split(os.pathsep) if entry]


def resolve(say: Say = _quiet) -> None:
    """Have Maven fetch Neo4j's jars into ~/.m2 and record the classpath. Idempotent."""
    if is_installed():
        return
    java_executable()
    mvn = _mvn()
    p = paths()
    p.dist.mkdir(parents=True, exist_ok=True)
    (p.dist / "pom.xml").write_text(POM.format(neo4j=NEO4J_VERSION, browser=BROWSER_VERSION))
    say(f"Resolving Neo4j {NEO4J_VERSION} from Maven Central (about 140 MB the first time, cached in ~/.m2)...")
    started = time.monotonic()
    result = subprocess.run(
        [mvn, "-B", "-q", "dependency:build-classpath", f"-Dmdep.outputFile={p.classpath_file}"],
        cwd=p.dist,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0 or not p.classpath_file.exists():
        tail = (result.stdout + result.stderr).strip().splitlines()[-5:]
        p.classpath_file.unlink(missing_ok=True)
        raise Neo4jServerError(
            f"could not fetch Neo4j {NEO4J_VERSION} from Maven Central (mvn exit {result.returncode}): "
            + " | ".join(line.strip() for line in tail)
        )
    say(f"Resolved {len(classpath())} jars in {time.monotonic() - started:.0f} s.")


def install(settings: config.ManagedSettings | None = None, say: Say = _quiet) -> config.ManagedSettings:
    """Resolve Neo4j (see :func:`resolve`) and prepare the instance. Idempotent.

    Stores ``settings`` (ports, memory) in the config file, generating the password on first install,
    and sets that password on the fresh database before its first start.
    """
    resolve(say)
    p = paths()
    settings = settings or config.managed_settings()
    config.save_managed_settings(settings)
    for d in (p.conf_dir, p.data, p.logs, p.import_dir, p.plugins, p.pid_file.parent):
        d.mkdir(parents=True, exist_ok=True)
    write_conf(settings)
    install_plugin(say)
    if not (p.data / "dbms").exists():
        _set_initial_password(settings.password)
    return settings


# --- plugin ------------------------------------------------------------------------------------

PLUGIN_JAR = "heapdb-neo4j-plugin.jar"  # the pom's finalName


def plugin_source() -> Path:
    """The plugin's Maven project; it ships beside the loader that calls it (heapdb.loader.store.bulk)."""
    from heapdb.loader.store import bulk

    return bulk.PLUGIN_SOURCE


def _plugin_digest(source: Path) -> str:
    """Names one build: the plugin's source files and the Neo4j it is compiled against."""
    digest = hashlib.sha256(NEO4J_VERSION.encode())
    for path in sorted(p for p in source.rglob("*") if p.is_file() and "target" not in p.parts):
        digest.update(str(path.relative_to(source)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def build_plugin(say: Say = _quiet) -> Path:
    """Build heapdb's Neo4j plugin with Maven, once per source and Neo4j version (kept in the cache
    directory, so every instance on the machine shares the build); the jar's path."""
    source = plugin_source()
    built = config.cache_dir() / "neo4j-plugin" / _plugin_digest(source) / PLUGIN_JAR
    if built.exists():
        return built
    say("Building heapdb's Neo4j plugin with Maven (once per version; the first build fetches Maven's plugins)...")
    built.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=built.parent) as work:
        project = Path(work) / "plugin"
        shutil.copytree(source, project, ignore=shutil.ignore_patterns("target"))
        result = subprocess.run(
            [_mvn(), "-B", "-q", "package", f"-Dneo4j.version={NEO4J_VERSION}"],
            cwd=project,
            capture_output=True,
            text=True,
        )
        jar = project / "target" / PLUGIN_JAR
        if result.returncode != 0 or not jar.exists():
            tail = (result.stdout + result.stderr).strip().splitlines()[-5:]
            raise Neo4jServerError(
                f"could not build heapdb's Neo4j plugin (mvn exit {result.returncode}): "
                + " | ".join(line.strip() for line in tail)
            )
        os.replace(jar, built)  # atomic: a concurrent build finds the whole jar or none
    return built


def install_plugin(say: Say = _quiet) -> bool:
    """Put heapdb's plugin into the managed instance's plugins folder (it loads at the next start).

    The plugin only makes loads faster, so a failed build is said in one line, not raised: loads
    then write through Cypher. True when the plugin is in place.
    """
    try:
        built = build_plugin(say)
    except (Neo4jServerError, OSError) as e:
        say(f"{e}; loads will write through Cypher, several times slower")
        return False
    target = paths().plugins / PLUGIN_JAR
    if not target.exists() or target.read_bytes() != built.read_bytes():
        target.parent.mkdir(parents=True, exist_ok=True)
        staged = target.with_suffix(".partial")
        shutil.copyfile(built, staged)
        os.replace(staged, target)  # a new file, never one a running Neo4j has open rewritten in place
    return True


def _neo4j_env() -> dict[str, str]:
    p = paths()
    return {**os.environ, "NEO4J_HOME": str(p.instance), "NEO4J_CONF": str(p.conf_dir)}


def _set_initial_password(password: str) -> None:
    result = subprocess.run(
        [java_executable(), "-cp", os.pathsep.join(classpath()), ADMIN_TOOL, "dbms", "set-initial-password", password],
        env=_neo4j_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    if result.returncode != 0:
        raise Neo4jServerError(f"could not set the initial password: {(result.stderr or result.stdout).strip()[-300:]}")


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


def conf_text(settings: config.ManagedSettings) -> str:
    """neo4j.conf: loopback only, auth on, usage reporting off, memory from the settings, short logs."""
    p = paths()
    lines = [
        "# Written by heapdb at every start from its config file; edit that instead.",
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


# --- run ---------------------------------------------------------------------------------------


def running_pid() -> int | None:
    """The pid of this instance's Neo4j if it runs (checked against the process's command line)."""
    pid_file = paths().pid_file
    try:
        pid = int(pid_file.read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except (FileNotFoundError, ValueError, ProcessLookupError):
        return None
    if ENTRY_POINT in cmdline and str(paths().instance) in cmdline:
        return pid
    return None  # a stale pid file whose number was reused


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


# A Neo4j just killed holds its ports until the kernel has torn down its process, which for a JVM
# with a heap of gigabytes takes a moment after it stopped answering; a start right after waits.
PORT_RELEASE_SECONDS = 15.0


def _port_freed(port: int, seconds: float) -> bool:
    """Whether ``port`` is free now or within ``seconds``."""
    deadline = time.monotonic() + seconds
    while not _port_free(port):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.25)
    return True


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _bolt_answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def log_tail(lines: int = 15) -> str:
    """The last lines of Neo4j's logs, for error messages (with debug.log's last recovery lines, if any)."""
    out = []
    for name in ("neo4j.log", "console.log"):
        path = paths().logs / name
        if path.exists():
            text = path.read_text(errors="replace").strip().splitlines()[-lines:]
            if text:
                out.append(f"--- {path} ---\n" + "\n".join(text))
    watch = RecoveryWatch(paths().logs / "debug.log", from_last_start=True)
    watch.poll()
    if watch.lines:
        out.append(f"--- {watch.path} (recovery) ---\n" + "\n".join(watch.lines[-5:]))
    return "\n".join(out) or "(no log written)"


# What Neo4j 5.26 writes to debug.log when a database must replay its transaction logs after an
# unclean shutdown (a kill -9, a crash, a machine gone), per database ("[neo4j/6266ece0]"):
#   [o.n.k.d.Database] [neo4j/6266ece0] Recovery required from position LogPosition{...}
#   [o.n.k.r.Recovery] [neo4j/6266ece0]  10% completed      ... up to 100% completed
#   [o.n.k.d.Database] [neo4j/6266ece0] Recovery in 'full' mode completed. ... Time spent: 15s 98ms.
# and, at every start of the server, "======== Neo4j 5.26.30 ========".
_SERVER_STARTS = "======== Neo4j "
_RECOVERY_REQUIRED = re.compile(r"\[(?P<db>[^/\]]+)/\w+\] Recovery required from position")
_RECOVERY_PERCENT = re.compile(r"\[o\.n\.k\.r\.Recovery\] \[(?P<db>[^/\]]+)/\w+\]\s+(?P<percent>\d+)% completed")
_RECOVERY_DONE = re.compile(r"\[(?P<db>[^/\]]+)/\w+\] Recovery (?:in '\w+' mode )?completed")


class RecoveryWatch:
    """Follows Neo4j's debug.log for recovery after an unclean shutdown: which database, how far.

    Reads only what was appended since the last :meth:`poll` (from the file's end at creation, or
    with ``from_last_start`` from the server's last start marker), and starts over when Neo4j
    rotates the file.
    """

    def __init__(self, path: Path, *, from_last_start: bool = False) -> None:
        self.path = path
        self.progress: dict[str, int] = {}  # database -> percent, for recoveries not yet completed
        self.completed: list[str] = []
        self.lines: list[str] = []  # the recovery lines seen, as written
        self._partial = ""
        try:
            size = path.stat().st_size
        except OSError:
            size = 0
        self._offset = size
        if from_last_start and size:
            begin = max(0, size - (32 << 20))  # a rotated debug.log is at most 20 MiB by default
            with open(path, "rb") as f:
                f.seek(begin)
                marker = f.read().rfind(_SERVER_STARTS.encode())
            if marker >= 0:
                self._offset = begin + marker

    @property
    def recovering(self) -> bool:
        """Whether a recovery has begun and not completed."""
        return bool(self.progress)

    def describe(self) -> str:
        return ", ".join(f"database {db!r} at {percent}%" for db, percent in sorted(self.progress.items()))

    def poll(self, say: Callable[[str], None] = lambda _m: None) -> bool:
        """Read what Neo4j appended; say each step of a recovery. True when a recovery advanced."""
        try:
            size = self.path.stat().st_size
            if size < self._offset:  # rotated: the new file holds what followed
                self._offset, self._partial = 0, ""
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                data = f.read()
        except OSError:
            return False
        self._offset += len(data)
        text = self._partial + data.decode("utf-8", "replace")
        *complete, self._partial = text.split("\n")
        advanced = False
        for line in complete:
            if _SERVER_STARTS in line:
                self.progress.clear()
            elif m := _RECOVERY_REQUIRED.search(line):
                self.progress[m["db"]] = 0
                say(f"Neo4j is recovering database {m['db']!r} after an unclean shutdown (a kill or a crash)...")
            elif m := _RECOVERY_PERCENT.search(line):
                self.progress[m["db"]] = int(m["percent"])
                say(f"Neo4j recovery of database {m['db']!r}: {m['percent']}%")
            elif m := _RECOVERY_DONE.search(line):
                self.progress.pop(m["db"], None)
                self.completed.append(m["db"])
                spent = line.split("Time spent: ")[-1].rstrip(". ") if "Time spent: " in line else ""
                say(f"Neo4j recovered database {m['db']!r}" + (f" in {spent}" if spent else ""))
            else:
                continue
            self.lines.append(line)
            advanced = True
        return advanced


def _still_recovering(watch: RecoveryWatch, pid: int | None, timeout: float) -> Neo4jServerError:
    return Neo4jServerError(
        f"Neo4j (pid {pid}) is still recovering after an unclean shutdown ({watch.describe()}), with no progress "
        f"in the last {timeout:.0f} s. It keeps running: stopping it now would only make the next start "
        f"recover again. Wait for it with `heapdb neo4j start --timeout SECONDS` (a larger timeout), and "
        f"watch {watch.path}"
    )


def start(timeout: float = 180, say: Say = _quiet) -> bool:
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
    for label, port in (("Bolt", settings.bolt_port), ("HTTP", settings.http_port)):
        if not _port_freed(port, PORT_RELEASE_SECONDS):
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
            env=_neo4j_env(),
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
        if _bolt_answers(settings.bolt_port) and _driver_ready(settings):
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
    say: Callable[[str], None] = _quiet,
) -> bool:
    """Wait for a running Neo4j to answer; the timeout counts from the last step of a recovery."""
    deadline = time.monotonic() + timeout
    while True:
        if _bolt_answers(settings.bolt_port) and _driver_ready(settings):
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
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        _reap(pid)
        time.sleep(0.2)
    os.kill(pid, signal.SIGKILL)


def _reap(pid: int) -> None:
    # When this process started Neo4j (tests do), its zombie must be collected for kill(pid, 0) to fail.
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def stop(timeout: float = 120, say: Say = _quiet) -> bool:
    """Shut Neo4j down cleanly (SIGTERM, then SIGKILL after ``timeout``). False if it was not running."""
    pid = running_pid()
    if pid is None:
        paths().pid_file.unlink(missing_ok=True)
        return False
    say(f"Stopping Neo4j (pid {pid})...")
    _terminate(pid, timeout)
    paths().pid_file.unlink(missing_ok=True)
    return True


def dir_size(path: Path) -> int:
    """Bytes the files under ``path`` take on disk (allocated blocks, as ``du`` counts), 0 if absent."""
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):  # removed while we walk: Neo4j keeps writing
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
    return total


def settings_pending() -> bool:
    """Whether the running instance started with other settings than a start now would write."""
    p = paths()
    try:
        started = p.started_conf.read_text()
    except FileNotFoundError:
        return True  # started by a heapdb from before this file was written
    return started != conf_text(config.managed_settings())


def status() -> dict[str, object]:
    """What a person wants to know about the managed instance, as data."""
    p = paths()
    settings = config.managed_settings()
    pid = running_pid()
    bolt_uri = f"bolt://127.0.0.1:{settings.bolt_port}"
    info: dict[str, object] = {
        "installed": is_installed(),
        "neo4j_version": NEO4J_VERSION,
        "plugin": (p.plugins / PLUGIN_JAR).exists(),
        "browser_version": BROWSER_VERSION,
        "running": pid is not None,
        "pid": pid,
        "bolt_uri": bolt_uri,
        "browser_url": f"http://127.0.0.1:{settings.http_port}/browser/",
        "heap": settings.heap,
        "pagecache": settings.pagecache,
        "home": str(p.instance),
        "data_bytes": dir_size(p.data),
        "store_bytes": dir_size(p.store),
        "tx_log_bytes": dir_size(p.tx_logs),
    }
    if pid is not None:
        info["settings_pending"] = settings_pending()
        import neo4j

        try:
            with neo4j.GraphDatabase.driver(bolt_uri, auth=("neo4j", settings.password)) as driver:
                records, _, _ = driver.execute_query("CALL dbms.components() YIELD name, versions, edition RETURN *")
            info["server"] = [f"{r['name']} {r['versions'][0]} {r['edition']}" for r in records]
        except Exception as e:  # status must report, not fail
            info["server"] = f"not answering: {e}"
    return info


if __name__ == "__main__":  # `python -m heapdb.neo4j_server resolve`, used by scripts/bootstrap.sh
    import sys

    from heapdb.errors import HeapdbError

    if sys.argv[1:] != ["resolve"]:
        sys.exit("usage: python -m heapdb.neo4j_server resolve")
    try:
        resolve(say=lambda message: print(message, file=sys.stderr))
    except HeapdbError as e:
        sys.exit(f"heapdb: error: {e}")


@contextlib.contextmanager
def running_on_free_ports(heap: str, pagecache: str, timeout: float = 240) -> Iterator[config.ManagedSettings]:
    """The managed Neo4j installed on free ports with this memory, started, and stopped on the way
    out: for the test suite and the benchmarks, each with a Neo4j of its own (point ``XDG_DATA_HOME``
    and ``XDG_CONFIG_HOME`` at a directory of its own first)."""
    settings = install(
        config.ManagedSettings(bolt_port=free_port(), http_port=free_port(), heap=heap, pagecache=pagecache)
    )
    start(timeout=timeout)
    try:
        yield settings
    finally:
        stop()
