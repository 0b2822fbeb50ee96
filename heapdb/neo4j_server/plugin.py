"""heapdb's own Neo4j plugin (the bulk-write procedures of loader/store/plugin): built with Maven once
per source and Neo4j version, and copied into the instance's ``plugins/``."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from heapdb import config
from heapdb.errors import Neo4jServerError
from heapdb.neo4j_server.layout import NEO4J_VERSION, Say, paths, quiet
from heapdb.neo4j_server.tools import mvn

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


def build_plugin(say: Say = quiet) -> Path:
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
            [mvn(), "-B", "-q", "package", f"-Dneo4j.version={NEO4J_VERSION}"],
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


def install_plugin(say: Say = quiet) -> bool:
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
