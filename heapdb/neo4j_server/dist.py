"""Neo4j from Maven Central: the jars resolved into ``~/.m2`` and the classpath recorded, then the
instance prepared (its folders, its config, heapdb's plugin, the initial password)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from heapdb import config
from heapdb.errors import Neo4jServerError
from heapdb.neo4j_server.conf import write_conf
from heapdb.neo4j_server.layout import ADMIN_TOOL, BROWSER_VERSION, NEO4J_VERSION, Say, paths, quiet
from heapdb.neo4j_server.plugin import install_plugin
from heapdb.neo4j_server.tools import java_executable, mvn

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


def is_installed() -> bool:
    cp = paths().classpath_file
    return cp.exists() and all(Path(j).exists() for j in classpath())


def classpath() -> list[str]:
    text = paths().classpath_file.read_text().strip()
    return [entry for entry in text.split(os.pathsep) if entry]


def resolve(say: Say = quiet) -> None:
    """Have Maven fetch Neo4j's jars into ~/.m2 and record the classpath. Idempotent."""
    if is_installed():
        return
    java_executable()
    maven = mvn()
    p = paths()
    p.dist.mkdir(parents=True, exist_ok=True)
    (p.dist / "pom.xml").write_text(POM.format(neo4j=NEO4J_VERSION, browser=BROWSER_VERSION))
    say(f"Resolving Neo4j {NEO4J_VERSION} from Maven Central (about 140 MB the first time, cached in ~/.m2)...")
    started = time.monotonic()
    result = subprocess.run(
        [maven, "-B", "-q", "dependency:build-classpath", f"-Dmdep.outputFile={p.classpath_file}"],
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


def install(settings: config.ManagedSettings | None = None, say: Say = quiet) -> config.ManagedSettings:
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


def neo4j_env() -> dict[str, str]:
    p = paths()
    return {**os.environ, "NEO4J_HOME": str(p.instance), "NEO4J_CONF": str(p.conf_dir)}


def _set_initial_password(password: str) -> None:
    result = subprocess.run(
        [java_executable(), "-cp", os.pathsep.join(classpath()), ADMIN_TOOL, "dbms", "set-initial-password", password],
        env=neo4j_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    if result.returncode != 0:
        raise Neo4jServerError(f"could not set the initial password: {(result.stderr or result.stdout).strip()[-300:]}")
