"""The managed Neo4j's transaction-log settings, and what `heapdb neo4j status` says about disk use."""

from __future__ import annotations

import json
import os
from pathlib import Path

from click.testing import CliRunner

from heapdb import config, neo4j_server
from heapdb.cli import main
from heapdb.db import Database


def test_conf_caps_the_transaction_logs(isolated_heapdb_home: object) -> None:
    text = neo4j_server.conf_text(config.ManagedSettings(password="x"))
    lines = text.splitlines()
    for setting in neo4j_server.TX_LOG_SETTINGS:
        assert setting in lines
    # One value per setting: an older heapdb's retention line must not linger beside the new one.
    names = [line.split("=", 1)[0] for line in lines if "=" in line and not line.startswith("#")]
    assert len(names) == len(set(names))


def test_the_running_instance_took_the_settings(database: Database) -> None:
    rows = database.read(
        "SHOW SETTINGS YIELD name, value WHERE name IN $names RETURN name, value",
        {
            "names": [
                "db.checkpoint",
                "db.checkpoint.interval.volume",
                "db.tx_log.rotation.size",
                "db.tx_log.rotation.retention_policy",
            ]
        },
    )
    settings = {row["name"]: row["value"] for row in rows}
    assert settings == {
        "db.checkpoint": "VOLUME",
        "db.checkpoint.interval.volume": "256.00MiB",
        "db.tx_log.rotation.size": "128.00MiB",
        "db.tx_log.rotation.retention_policy": "keep_none",
    }
    # The shutdown waits are internal settings: Neo4j lists the values it took in debug.log.
    started = (neo4j_server.paths().logs / "debug.log").read_text()
    for setting in neo4j_server.SHUTDOWN_SETTINGS:
        assert setting in started, setting


def test_status_shows_store_and_log_sizes(database: Database) -> None:
    result = CliRunner().invoke(main, ["neo4j", "status", "--json"])
    assert result.exit_code == 0, result.stderr
    info = json.loads(result.stdout)
    assert info["running"] and info["store_bytes"] > 0 and info["tx_log_bytes"] > 0
    assert info["store_bytes"] + info["tx_log_bytes"] <= info["data_bytes"]
    assert info["settings_pending"] is False  # started by this heapdb with these settings
    text = CliRunner().invoke(main, ["neo4j", "status"]).stdout
    assert "store:" in text and "tx logs:" in text and "restart" not in text
    # Settings changed after the start (another heap size, say) are pointed out.
    settings = config.managed_settings()
    settings.heap = "2g" if settings.heap != "2g" else "3g"
    config.save_managed_settings(settings)
    try:
        assert neo4j_server.settings_pending()
        assert "heapdb neo4j stop && heapdb neo4j start" in CliRunner().invoke(main, ["neo4j", "status"]).stdout
    finally:
        settings.heap = json.loads(result.stdout)["heap"]
        config.save_managed_settings(settings)
    assert not neo4j_server.settings_pending()
    # So is another garbage collector, though it is a flag of the JVM, not a line of neo4j.conf.
    settings.gc = "g1" if settings.gc != "g1" else "serial"
    config.save_managed_settings(settings)
    try:
        assert neo4j_server.settings_pending()
    finally:
        settings.gc = json.loads(result.stdout)["gc"]
        config.save_managed_settings(settings)
    assert not neo4j_server.settings_pending()


def test_the_jvm_runs_the_collector_the_settings_name(neo4j_server_settings: config.ManagedSettings) -> None:
    java = Path(f"/proc/{neo4j_server.running_pid()}/cmdline").read_bytes().split(b"\0")
    chosen = [flag for flag in java if flag.startswith(b"-XX:+Use") and flag.endswith(b"GC")]
    flags = neo4j_server.gc_flags(neo4j_server_settings)
    assert chosen == [flags[0].encode()]
    assert all(flag.encode() in java for flag in flags)


def test_g1_runs_with_a_short_pause_goal_and_the_other_collectors_without() -> None:
    def flags(gc: str) -> list[str]:
        return neo4j_server.gc_flags(config.ManagedSettings(bolt_port=1, http_port=2, heap="1g", pagecache="1g", gc=gc))

    assert flags("g1") == ["-XX:+UseG1GC", "-XX:MaxGCPauseMillis=50"]
    assert flags("serial") == ["-XX:+UseSerialGC"] and flags("parallel") == ["-XX:+UseParallelGC"]


# debug.log as Neo4j 5.26.30 wrote it when started after a kill -9 during a load (trimmed).
RECOVERY_LOG = """\
2026-11-23 04:14:20.101+0000 INFO  [o.n.s.CommunityNeoWebServer] ======== Neo4j 5.26.30 ========
2026-11-23 04:14:39.857+0000 INFO  [o.n.k.d.Database] [neo4j/6266ece0] Recovery required from position LogPosition{logVersion=0, byteOffset=3238}
2026-11-23 04:14:40.501+0000 INFO  [o.n.k.r.Recovery] [neo4j/6266ece0] TransactionLogsRecovery
2026-11-23 04:14:44.080+0000 INFO  [o.n.k.r.Recovery] [neo4j/6266ece0]  10% completed
2026-11-23 04:14:44.157+0000 INFO  [o.n.k.r.Recovery] [neo4j/6266ece0]  20% completed
"""
RECOVERY_END = """\
2026-11-23 04:14:54.949+0000 INFO  [o.n.k.r.Recovery] [neo4j/6266ece0] 100% completed
2026-11-23 04:14:54.956+0000 INFO  [o.n.k.d.Database] [neo4j/6266ece0] Recovery in 'full' mode completed. Observed transactions range [first:4, last:75]: 72 transactions applied, 0 not completed transactions rolled back, skipped applying 0 previously rolled back transactions. Time spent: 15s 98ms.
"""


def test_recovery_is_followed_in_debug_log(tmp_path) -> None:
    log = tmp_path / "debug.log"
    log.write_text("2026-11-23 04:00:00.000+0000 INFO  [o.n.s.CommunityNeoWebServer] ======== Neo4j 5.26.30 ========\n")
    watch = neo4j_server.RecoveryWatch(log)  # from the end: the earlier run's lines are not this start's
    said: list[str] = []
    assert watch.poll(said.append) is False and not watch.recovering
    with open(log, "a") as f:
        f.write(RECOVERY_LOG + "2026-11-23 04:14:44.203+0000 INFO  [o.n.k.r.Recovery] [neo4j/6266ece0]  3")
    assert watch.poll(said.append) is True
    assert watch.recovering and watch.progress == {"neo4j": 20} and watch.describe() == "database 'neo4j' at 20%"
    assert said == [
        "Neo4j is recovering database 'neo4j' after an unclean shutdown (a kill or a crash)...",
        "Neo4j recovery of database 'neo4j': 10%",
        "Neo4j recovery of database 'neo4j': 20%",
    ]
    assert watch.poll(said.append) is False  # nothing new: no progress (the half-written line waits)
    with open(log, "a") as f:
        f.write("0% completed\n" + RECOVERY_END)
    assert watch.poll(said.append) is True
    assert not watch.recovering and watch.completed == ["neo4j"]
    assert said[-3:] == [
        "Neo4j recovery of database 'neo4j': 30%",
        "Neo4j recovery of database 'neo4j': 100%",
        "Neo4j recovered database 'neo4j' in 15s 98ms",
    ]

    # A later `start` while the server still recovers reads from the server's last start.
    log.write_text("old\n" + RECOVERY_LOG)
    again = neo4j_server.RecoveryWatch(log, from_last_start=True)
    assert again.poll() and again.progress == {"neo4j": 20}
    # Neo4j rotated the file: the new one is read from its beginning.
    log.write_text(RECOVERY_END)
    assert again.poll() and not again.recovering


def test_start_waits_while_recovery_advances_and_never_stops_a_recovering_server(tmp_path, monkeypatch) -> None:
    """start() against a stand-in for Java that writes recovery progress to debug.log and never opens
    Bolt: start waits past its timeout while the percentage moves, then gives up without stopping it."""
    import signal
    import stat
    import time

    import pytest

    from heapdb.errors import Neo4jServerError

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))  # apart from the session's instance
    settings = config.ManagedSettings(
        bolt_port=neo4j_server.free_port(),
        http_port=neo4j_server.free_port(),
        heap="64m",
        pagecache="64m",
        password="x",
    )
    monkeypatch.setattr(config, "managed_settings", lambda: settings)
    monkeypatch.setattr(neo4j_server, "is_installed", lambda: True)
    monkeypatch.setattr(neo4j_server, "classpath", lambda: [])
    log = neo4j_server.paths().logs / "debug.log"
    log.parent.mkdir(parents=True)
    log.write_text(RECOVERY_LOG + RECOVERY_END)  # an earlier start's recovery: not this one's
    fake_java = tmp_path / "java"
    line = "INFO  [o.n.k.r.Recovery] [neo4j/6266ece0]"
    fake_java.write_text(
        "#!/bin/sh\n"
        f"echo '======== Neo4j 5.26.30 ========' >> '{log}'\n"
        f"echo 'INFO  [o.n.k.d.Database] [neo4j/6266ece0] Recovery required from position X' >> '{log}'\n"
        f"for p in 10 20 30 40 50 60; do sleep 0.6; echo \"{line}  $p% completed\" >> '{log}'; done\n"
        "sleep 600\n"
    )
    fake_java.chmod(fake_java.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setattr(neo4j_server, "java_executable", lambda: str(fake_java))

    said: list[str] = []
    started = time.monotonic()
    with pytest.raises(Neo4jServerError) as raised:
        neo4j_server.start(timeout=1.5, say=said.append)
    waited = time.monotonic() - started
    pid = neo4j_server.running_pid()
    try:
        assert waited > 3.6 + 1.5 - 0.5  # past the timeout: the last step came at about 3.6 s
        assert pid is not None  # never stopped: still running, its pid file kept
        message = str(raised.value)
        assert "still recovering" in message and "database 'neo4j' at 60%" in message
        assert "--timeout" in message and "keeps running" in message
        assert "Neo4j recovery of database 'neo4j': 60%" in said
        assert "Neo4j recovered database 'neo4j' in 15s 98ms" not in said  # the earlier start's lines
    finally:
        if pid is not None:  # the stand-in and its sleep: a session of their own, as start() made it
            os.killpg(pid, signal.SIGKILL)
            neo4j_server._reap(pid)


def test_start_waits_for_a_killed_server_to_let_go_of_its_port() -> None:
    import socket
    import threading

    from heapdb import neo4j_server

    held = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    held.bind(("127.0.0.1", 0))
    held.listen()
    port = held.getsockname()[1]
    assert not neo4j_server.port_freed(port, 0.3)  # held: not free, and said so after the wait
    threading.Timer(0.5, held.close).start()
    assert neo4j_server.port_freed(port, 10)  # let go of meanwhile: start goes ahead
