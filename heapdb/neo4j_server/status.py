"""Whether the managed Neo4j runs, and what a person wants to know about it (``heapdb neo4j
status``)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from heapdb import config
from heapdb.neo4j_server.conf import settings_pending
from heapdb.neo4j_server.dist import is_installed
from heapdb.neo4j_server.layout import BROWSER_VERSION, ENTRY_POINT, NEO4J_VERSION, paths
from heapdb.neo4j_server.plugin import PLUGIN_JAR


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


def dir_size(path: Path) -> int:
    """Bytes the files under ``path`` take on disk (allocated blocks, as ``du`` counts), 0 if absent."""
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):  # removed while we walk: Neo4j keeps writing
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
    return total


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
        "gc": settings.gc,
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
