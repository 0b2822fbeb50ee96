"""The tools the managed Neo4j needs on the machine: Java 17 or newer to run it, Maven to fetch it
and to build heapdb's plugin."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from heapdb.errors import Neo4jServerError
from heapdb.neo4j_server.layout import NEO4J_VERSION


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


def mvn() -> str:
    mvn = shutil.which("mvn")
    if not mvn:
        raise Neo4jServerError("Maven (`mvn`) is needed to fetch Neo4j from Maven Central; install the `maven` package")
    return mvn


# --- install -----------------------------------------------------------------------------------
