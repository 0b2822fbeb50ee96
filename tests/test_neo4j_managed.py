"""The managed Neo4j: installed from Maven Central, started and stopped by heapdb itself."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import neo4j
import pytest

from heapdb import config, neo4j_server
from tests.support.neo4j_fixtures import TEST_GC

pytestmark = pytest.mark.neo4j  # every test installs or runs Neo4j (Java, Maven), most through the CLI

HEAPDB = [sys.executable, "-m", "heapdb"]


def run_heapdb(args: list[str], env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*HEAPDB, *args], env=env, capture_output=True, text=True, timeout=timeout)


def private_env(home: Path, **extra: str) -> dict[str, str]:
    """An environment whose heapdb files live under ``home``, apart from the session's instance."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEO4J_")}
    env.update(XDG_DATA_HOME=str(home / "data"), XDG_CONFIG_HOME=str(home / "config"), **extra)
    return env


def install_private(env: dict[str, str], gc: str = TEST_GC) -> None:
    """`heapdb neo4j install` of a small private instance on free ports, with this garbage collector."""
    sizes = ["--heap", "512m", "--pagecache", "256m"]
    result = run_heapdb(["neo4j", "install", "--bolt-port", "auto", "--http-port", "auto", *sizes, "--gc", gc], env)
    assert result.returncode == 0, result.stderr


def test_return_1_with_the_stored_credentials(neo4j_server_settings: config.ManagedSettings) -> None:
    # Read the password back from the file, as any other program would, and log in with the driver.
    with open(config.config_file(), "rb") as f:
        import tomllib

        stored = tomllib.load(f)["managed"]
    uri = f"bolt://127.0.0.1:{stored['bolt_port']}"
    with neo4j.GraphDatabase.driver(uri, auth=("neo4j", stored["password"])) as driver:
        records, _, _ = driver.execute_query("RETURN 1 AS one")
        assert records[0]["one"] == 1
        components, _, _ = driver.execute_query("CALL dbms.components() YIELD versions, edition RETURN *")
    assert components[0]["versions"][0].startswith("5.26.")
    assert components[0]["edition"] == "community"


def test_config_file_is_private_and_password_generated(neo4j_server_settings: config.ManagedSettings) -> None:
    mode = stat.S_IMODE(config.config_file().stat().st_mode)
    assert mode == 0o600
    assert len(neo4j_server_settings.password) >= 24


def test_wrong_password_is_refused(neo4j_server_settings: config.ManagedSettings) -> None:
    uri = f"bolt://127.0.0.1:{neo4j_server_settings.bolt_port}"
    with (
        neo4j.GraphDatabase.driver(uri, auth=("neo4j", "not-the-password")) as driver,
        pytest.raises(neo4j.exceptions.AuthError),
    ):
        driver.verify_connectivity()


def test_generated_config_is_loopback_only_and_private(neo4j_server_settings: config.ManagedSettings) -> None:
    conf = (neo4j_server.paths().conf_dir / "neo4j.conf").read_text()
    assert "server.default_listen_address=127.0.0.1" in conf
    assert "dbms.usage_report.enabled=false" in conf
    assert "dbms.security.auth_enabled=true" in conf
    assert f"server.bolt.listen_address=127.0.0.1:{neo4j_server_settings.bolt_port}" in conf
    # And the server really listens only on loopback: the port is not open on the machine's other addresses.
    for address in _non_loopback_addresses():
        with socket.socket() as s:
            s.settimeout(1)
            assert s.connect_ex((address, neo4j_server_settings.bolt_port)) != 0


def _non_loopback_addresses() -> list[str]:
    try:
        out = subprocess.run(["hostname", "-I"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [a for a in out.split() if "." in a and not a.startswith("127.")]


def test_status_reports_the_running_server(neo4j_server_settings: config.ManagedSettings) -> None:
    info = neo4j_server.status()
    assert info["running"] is True
    assert info["bolt_uri"] == f"bolt://127.0.0.1:{neo4j_server_settings.bolt_port}"
    data_bytes, server = info["data_bytes"], info["server"]
    assert isinstance(data_bytes, int) and data_bytes > 0
    assert isinstance(server, list) and any("5.26" in line and "community" in line for line in server), server


def test_cypher_command_through_the_environment_variables(neo4j_server_settings: config.ManagedSettings) -> None:
    # NEO4J_URI and friends point heapdb at "any existing Neo4j": here, the session's server.
    env = {
        **os.environ,
        "NEO4J_URI": f"bolt://127.0.0.1:{neo4j_server_settings.bolt_port}",
        "NEO4J_USER": "neo4j",
        "NEO4J_PASSWORD": neo4j_server_settings.password,
        "XDG_CONFIG_HOME": "/nonexistent",  # proves the config file is not what made it work
    }
    ok = run_heapdb(["cypher", "--json", "RETURN 40 + 2 AS answer"], env)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout) == [{"answer": 42}]

    bad = run_heapdb(["cypher", "RETURN 1"], {**env, "NEO4J_PASSWORD": "wrong"})
    assert bad.returncode == 3
    assert "refused the credentials" in bad.stderr
    assert "Traceback" not in bad.stderr


@pytest.mark.slow  # a second Neo4j of its own, installed, started, killed and started again from the CLI
def test_lifecycle_through_the_cli_and_a_start_after_a_kill(tmp_path: Path) -> None:
    """install, a query that starts the instance on demand, status, start, then a kill (-9) while a
    load writes and a start again, stop twice: on a second, private instance (installed and started
    once: a start costs Neo4j its longest CPU of the run). The load says at once that Neo4j is gone;
    the start after the kill reports the recovery it waits for, the completed snapshot is intact, and
    the interrupted load shows as failed."""
    import time

    from heapdb.loader.formats.snapbin.from_graph import write_graph
    from heapgen.synth import synth_graph

    env = private_env(tmp_path, HEAPDB_PROGRESS="0")
    small, big = tmp_path / "small.bin", tmp_path / "big.bin"
    write_graph(synth_graph(2000, 8000, seed=1), small)
    write_graph(synth_graph(200_000, 800_000, seed=2), big)
    install_private(env, gc="parallel")
    loader = None
    try:
        query = run_heapdb(["cypher", "--json", "RETURN 7 AS seven"], env)
        assert query.returncode == 0, query.stderr
        assert json.loads(query.stdout) == [{"seven": 7}]
        assert "starting the managed Neo4j" in query.stderr

        status = run_heapdb(["neo4j", "status", "--json"], env)
        info = json.loads(status.stdout)
        assert info["running"] and info["heap"] == "512m" and info["pagecache"] == "256m" and info["gc"] == "parallel"
        java = Path(f"/proc/{info['pid']}/cmdline").read_bytes().split(b"\0")
        assert b"-XX:+UseParallelGC" in java and b"-XX:+UseG1GC" not in java

        again = run_heapdb(["neo4j", "start"], env)
        assert again.returncode == 0, again.stderr
        assert "already running" in again.stdout and f"(pid {info['pid']})" in again.stdout

        done = run_heapdb(["load", str(small), "--tag", "done"], env)
        assert done.returncode == 0, done.stderr
        count = [
            "cypher",
            "--json",
            "MATCH (s:Snapshot {tag: 'done'}) MATCH (o:Object {sid: s.sid}) "
            "RETURN count(o) AS objects, sum(COUNT { (o)-->() }) AS references",
        ]
        before = json.loads(run_heapdb(count, env).stdout)
        top_before = run_heapdb(["top", "done", "--limit", "5"], env).stdout

        loader = subprocess.Popen(
            [*HEAPDB, "load", str(big), "--tag", "big"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        written = [
            "cypher",
            "--json",
            "MATCH (s:Snapshot {tag: 'big'}) MATCH (o:Object {sid: s.sid}) RETURN count(o) AS n",
        ]
        deadline = time.monotonic() + 300
        while True:  # kill Neo4j in the middle of the load's writes
            assert time.monotonic() < deadline and loader.poll() is None, "the load ended before Neo4j was killed"
            rows = json.loads(run_heapdb(written, env).stdout or "[]")
            if rows and rows[0]["n"] > 20_000:
                break
            time.sleep(1)
        jvm = neo4j_server_pid(env)
        os.kill(jvm, 9)
        # The load says at once that the database is gone, rather than retrying (it took minutes),
        # and says nothing of the driver's own retries.
        _, said = loader.communicate(timeout=120)
        assert loader.returncode != 0
        assert "managed Neo4j" in said.decode() and "is gone: its process ended" in said.decode(), said[-3000:]
        assert "stays invisible" in said.decode() and "Traceback" not in said.decode()
        assert "will be retried" not in said.decode()
        # Started at once, as a person would: start must wait for the dead JVM to let go of its ports.

        again = run_heapdb(["neo4j", "start", "--timeout", "60"], env, timeout=900)
        assert again.returncode == 0, again.stderr
        assert "Neo4j is recovering database 'neo4j' after an unclean shutdown" in again.stderr
        assert "Neo4j recovery of database 'neo4j': 100%" in again.stderr
        assert "Neo4j recovered database 'neo4j'" in again.stderr

        assert json.loads(run_heapdb(count, env).stdout) == before
        assert run_heapdb(["top", "done", "--limit", "5"], env).stdout == top_before
        listed = run_heapdb(["snapshots", "--all", "--json"], env)
        statuses = {s["tag"]: s["status"] for s in json.loads(listed.stdout)}
        assert statuses == {"done": "ready", "big": "failed"}, listed.stderr
    finally:
        if loader is not None and loader.poll() is None:
            loader.kill()
            loader.wait()
        stop = run_heapdb(["neo4j", "stop"], env)
    assert stop.returncode == 0 and "Neo4j stopped" in stop.stdout
    again = run_heapdb(["neo4j", "stop"], env)
    assert again.returncode == 0 and "was not running" in again.stdout
    after = json.loads(run_heapdb(["neo4j", "status", "--json"], env).stdout)
    assert after["running"] is False


def test_taken_port_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        port = blocker.getsockname()[1]
        env = private_env(tmp_path)
        assert run_heapdb(["neo4j", "install", "--bolt-port", str(port), "--http-port", "auto"], env).returncode == 0
        result = run_heapdb(["neo4j", "start"], env)
    assert result.returncode == 1
    assert f"the Bolt port {port} is taken" in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_missing_java_is_a_clear_error(tmp_path: Path) -> None:
    env = private_env(tmp_path, JAVA_HOME=str(tmp_path / "no-java-here"))
    result = run_heapdb(["neo4j", "install"], env)
    assert result.returncode == 1
    assert "no `java` was found" in result.stderr
    assert "Traceback" not in result.stderr


def test_failed_download_is_a_clear_error(tmp_path: Path) -> None:
    # An empty Maven repository in offline mode: the download cannot happen, as without a network.
    m2 = tmp_path / "home" / ".m2"
    m2.mkdir(parents=True)
    (m2 / "settings.xml").write_text("<settings><offline>true</offline></settings>")
    # Maven reads ~/.m2 from Java's user.home, not from $HOME.
    env = private_env(tmp_path, MAVEN_OPTS=f"-Duser.home={tmp_path / 'home'}")
    result = run_heapdb(["neo4j", "install"], env)
    assert result.returncode == 1
    assert "could not fetch Neo4j" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "data" / "heapdb" / "neo4j" / "dist" / neo4j_server.NEO4J_VERSION / "classpath.txt").exists()


def neo4j_server_pid(env: dict[str, str]) -> int:
    info = json.loads(run_heapdb(["neo4j", "status", "--json"], env).stdout)
    return int(info["pid"])
