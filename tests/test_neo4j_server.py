"""The managed Neo4j's transaction-log settings, and what `heapdb neo4j status` says about disk use."""

from __future__ import annotations

import json

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
