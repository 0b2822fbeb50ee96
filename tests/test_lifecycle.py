"""Dropping at once and freeing in the background; failed and dead loads listed as failed, with why,
and freed by the next command.

Against the session's real Neo4j, with small synthetic heaps (no Node needed).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from click.testing import CliRunner

from heapdb import config, db
from heapdb.cli import main
from heapdb.db import Database
from heapdb.errors import NotFound
from heapdb.loader import analysis, store
from heapdb.loader.store import lifecycle, purge
from heapgen.synth import synth_graph
from tests.support.purging import (
    kill_the_purger,
    no_purger_at_work,
    purge_log_tail,
    purgers_running,
    purging_held_off,
    wait_until,
)


def unique_tag(label: str) -> str:
    return f"test-{label}-{uuid.uuid4().hex[:8]}"


def load_synthetic(database: Database, tag: str, objects: int = 3000, references: int = 12000) -> int:
    graph = synth_graph(objects, references, seed=objects)
    store.load(database, store.LoadInput.from_analysis(graph, analysis.analyze(graph)), tag)
    return store.get_snapshot(database, tag).sid


def records(database: Database, sid: int) -> dict[str, int]:
    return database.read(
        "OPTIONAL MATCH (o:Object {sid: $sid}) WHERE o.id IS NOT NULL "
        "WITH count(o) AS objects OPTIONAL MATCH (o:Object {sid: $sid})-[r]->() WHERE o.id IS NOT NULL "
        "WITH objects, count(r) AS references "
        "OPTIONAL MATCH (s:Snapshot {sid: $sid}) RETURN objects, references, count(s) AS snapshots",
        {"sid": sid},
    )[0]


def dead_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def fake_load(database: Database, tag: str, **properties: Any) -> int:
    """A snapshot as a loader leaves it half-way: a few objects and references, under a real sid."""
    sid, _, _ = lifecycle.claim(database, tag, False, properties)
    database.write(
        "UNWIND range(1, 50) AS i CREATE (:Object {sid: $sid, id: i, type: 'T', self_size: i})", {"sid": sid}
    )
    database.write(
        "MATCH (a:Object {sid: $sid}), (b:Object {sid: $sid}) WHERE a.id IS NOT NULL AND b.id = a.id % 7 + 1 "
        "CREATE (a)-[:REF {kind: 'property', name: 'x'}]->(b)",
        {"sid": sid},
    )
    return sid


def status_of(database: Database, sid: int) -> str | None:
    rows = database.read("MATCH (s:Snapshot {sid: $sid}) RETURN s.status AS status", {"sid": sid})
    return rows[0]["status"] if rows else None


def iso(seconds_ago: float) -> str:
    return (datetime.now(UTC) - timedelta(seconds=seconds_ago)).isoformat(timespec="seconds")


def test_drop_hides_at_once_and_a_background_purger_frees_the_records(database: Database) -> None:
    tag = unique_tag("drop")
    sid = load_synthetic(database, tag)
    before = records(database, sid)
    assert before["objects"] >= 3000 and before["references"] > 0

    result = CliRunner().invoke(main, ["drop", tag])
    assert result.exit_code == 0, result.stderr
    assert "freed in the background" in result.stdout
    # Invisible at once, whatever the purger has done so far.
    with pytest.raises(NotFound):
        store.get_snapshot(database, tag)
    assert tag not in {s.tag for s in store.list_snapshots(database)}
    # A second drop finds nothing to drop, even while the records are being freed.
    again = CliRunner().invoke(main, ["drop", tag])
    assert again.exit_code == 1 and "no snapshot tagged" in again.stderr

    wait_until(lambda: records(database, sid) == {"objects": 0, "references": 0, "snapshots": 0})
    # The purger releases its claim after its last delete, in a transaction of its own: wait for it
    # rather than read it at once (a read between the two found the claim still held).
    wait_until(lambda: database.read("MATCH (p:Purger) RETURN count(p) AS n")[0]["n"] == 0)
    assert f"freed {tag!r}" in purge_log_tail()


def test_drop_wait_frees_in_the_foreground(database: Database) -> None:
    tag = unique_tag("drop-wait")
    sid = load_synthetic(database, tag)
    result = CliRunner().invoke(main, ["drop", tag, "--wait"])
    assert result.exit_code == 0, result.stderr
    assert "its records are freed" in result.stdout
    assert records(database, sid) == {"objects": 0, "references": 0, "snapshots": 0}


def failed_purged(database: Database, sid: int) -> bool:
    """A failed load's records are freed and its node kept, marked purged."""
    row = database.read("MATCH (s:Snapshot {sid: $sid}) RETURN s.status AS status, s.purged AS purged", {"sid": sid})
    return bool(row) and row[0]["status"] == "failed" and row[0]["purged"] is True


def test_a_dead_loaders_snapshots_are_failed_and_freed_by_the_next_connect(database: Database) -> None:
    here, elsewhere = socket.gethostname(), "another-host.invalid"
    tags = {name: unique_tag(name) for name in ("killed", "killed-refs", "stale", "alive", "alive-here")}
    killed_pid = dead_pid()
    killed = fake_load(database, tags["killed"], pid=killed_pid, host=here, heartbeat=iso(0))
    # Ready, but its loader died while writing the references: it must not stay visible half-done.
    killed_refs = fake_load(database, tags["killed-refs"], pid=dead_pid(), host=here, heartbeat=iso(0))
    database.write(
        "MATCH (s:Snapshot {sid: $sid}) SET s.status = 'ready', s.references_ready = false", {"sid": killed_refs}
    )
    stale = fake_load(database, tags["stale"], pid=1, host=elsewhere, heartbeat=iso(lifecycle.STALE_SECONDS + 30))
    alive = fake_load(database, tags["alive"], pid=1, host=elsewhere, heartbeat=iso(1))
    alive_here = fake_load(database, tags["alive-here"], pid=os.getpid(), host=here, heartbeat=iso(600))
    try:
        said: list[str] = []
        with db.connect(say=said.append, start_managed=False):
            pass
        assert len(said) == 1 and "hid 3 unfinished loads" in said[0] and "background" in said[0]
        for name in ("killed", "killed-refs", "stale"):
            assert repr(tags[name]) in said[0]
        # Failed by the time connect() returned, each with why; kept: a live loader, here or elsewhere.
        for sid in (killed, killed_refs, stale):
            assert status_of(database, sid) == "failed"
        assert status_of(database, alive) == "loading" and status_of(database, alive_here) == "loading"
        with pytest.raises(NotFound):
            store.get_snapshot(database, tags["killed-refs"])
        listed = {s.tag: s for s in store.list_snapshots(database, include_incomplete=True)}
        assert tags["killed"] not in {s.tag for s in store.list_snapshots(database)}  # never queryable
        killed_failure = listed[tags["killed"]].failure or ""
        assert killed_failure.startswith(f"loader process {killed_pid} on {here} stopped sending heartbeats at ")
        assert "gone" in killed_failure
        stale_failure = listed[tags["stale"]].failure or ""
        assert stale_failure.startswith(f"loader process 1 on {elsewhere} stopped sending heartbeats at ")
        assert f"more than {lifecycle.STALE_SECONDS} s" in stale_failure

        # The purger frees the records; the failed marker stays, until the tag is loaded again or dropped.
        wait_until(lambda: all(failed_purged(database, sid) for sid in (killed, killed_refs, stale)))
        for sid in (killed, killed_refs, stale):
            assert records(database, sid) == {"objects": 0, "references": 0, "snapshots": 1}
        assert records(database, alive)["objects"] == 50

        # Nothing left to do: the next connect says nothing.
        said.clear()
        with db.connect(say=said.append, start_managed=False):
            pass
        assert said == []
    finally:
        lifecycle.hide(database, [alive, alive_here, killed, killed_refs, stale])
        purge.purge(database, wait=True)
    for sid in (killed, killed_refs, stale):
        assert records(database, sid)["snapshots"] == 0


def test_a_failed_load_is_listed_with_its_error_until_loaded_again_or_dropped(database: Database) -> None:
    from fastapi.testclient import TestClient

    from heapdb.service.app import create_app

    tag = unique_tag("failed")
    graph = synth_graph(3000, 12000, seed=5)
    data = store.LoadInput.from_analysis(graph, analysis.analyze(graph))

    def boom(_report: object) -> None:
        raise RuntimeError("the disk caught fire\nreally")

    with pytest.raises(RuntimeError):
        store.load(database, data, tag, on_ready=boom)  # fails while the references are written
    with pytest.raises(NotFound):
        store.get_snapshot(database, tag)
    (failed,) = [s for s in store.list_snapshots(database, include_incomplete=True) if s.tag == tag]
    assert failed.status == "failed" and failed.failure == "RuntimeError: the disk caught fire\\nreally"
    assert failed.failed_at

    # Listed as failed, with why, by the CLI and over REST; never among the queryable snapshots.
    shown = CliRunner().invoke(main, ["snapshots", "--all"])
    assert shown.exit_code == 0, shown.stderr
    line = next(line for line in shown.stdout.splitlines() if line.startswith(tag))
    assert " failed " in line
    assert "RuntimeError: the disk caught fire" in shown.stdout
    ready_only = CliRunner().invoke(main, ["snapshots"])
    assert tag not in ready_only.stdout
    assert "not listed" in ready_only.stderr and "heapdb snapshots --all" in ready_only.stderr  # but not hidden
    client = TestClient(create_app(lambda: db.connect(start_managed=False)))
    listed = {s["tag"]: s for s in client.get("/api/snapshots", params={"all": "true"}).json()}
    assert listed[tag]["status"] == "failed" and "disk caught fire" in listed[tag]["failure"]
    assert tag not in {s["tag"] for s in client.get("/api/snapshots").json()}
    assert client.get(f"/api/snapshots/{tag}").status_code == 404

    # Freed in the background, the marker kept; the next load of the tag needs no --replace and clears it.
    wait_until(lambda: failed_purged(database, failed.sid))
    assert records(database, failed.sid)["objects"] == 0
    store.load(database, data, tag)
    wait_until(lambda: records(database, failed.sid)["snapshots"] == 0)
    assert [s.status for s in store.list_snapshots(database, include_incomplete=True) if s.tag == tag] == ["ready"]

    # Failed again, then dropped: the marker goes with the tag.
    with pytest.raises(RuntimeError):
        store.load(database, data, tag, replace=True, on_ready=boom)
    statuses = [s.status for s in store.list_snapshots(database, include_incomplete=True) if s.tag == tag]
    assert "failed" in statuses and "ready" not in statuses  # the replaced one went when the new one was ready
    dropped = CliRunner().invoke(main, ["drop", tag, "--wait"])
    assert dropped.exit_code == 0, dropped.stderr
    assert [s for s in store.list_snapshots(database, include_incomplete=True) if s.tag == tag] == []


def test_a_load_killed_with_sigkill_shows_as_failed_at_the_next_command(database: Database, tmp_path) -> None:
    """A real `heapdb load` killed with -9 half-way: the next command lists it failed, naming the process."""
    from heapdb.loader.formats.snapbin.from_graph import write_graph

    tag = unique_tag("sigkill")
    path = tmp_path / "big.bin"
    write_graph(synth_graph(60_000, 240_000, seed=7), path)
    loader = subprocess.Popen(
        [sys.executable, "-m", "heapdb", "load", str(path), "--tag", tag, "--batch-size", "1000"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "HEAPDB_PROGRESS": "0"},
    )
    try:
        query = "MATCH (s:Snapshot {tag: $tag}) RETURN s.status AS status"
        wait_until(lambda: bool(database.read(query, {"tag": tag})) or loader.poll() is not None, timeout=120)
        assert loader.poll() is None, "the load ended before it could be killed"
        os.kill(loader.pid, 9)
    finally:
        loader.kill()
        loader.wait()
    # Until a command looks, the node still says what the loader left: a load in progress.
    assert [s.status for s in store.list_snapshots(database, include_incomplete=True) if s.tag == tag] in (
        ["loading"],
        ["ready"],
    )
    shown = CliRunner().invoke(main, ["snapshots", "--all"])
    assert shown.exit_code == 0, shown.stderr
    assert "unfinished load" in shown.stderr and repr(tag) in shown.stderr
    line = next(line for line in shown.stdout.splitlines() if line.startswith(tag))
    assert " failed " in line
    assert f"loader process {loader.pid} on {socket.gethostname()} stopped sending heartbeats at" in shown.stdout
    with pytest.raises(NotFound):
        store.get_snapshot(database, tag)
    assert CliRunner().invoke(main, ["drop", tag, "--wait"]).exit_code == 0


def test_one_purger_per_database_and_a_dead_ones_claim_is_taken_over(database: Database) -> None:
    database.write(purge.PURGER_SCHEMA)
    first, second = purge.Claim(database), purge.Claim(database)
    wait_until(lambda: first.take() is None)  # once background purgers from earlier tests are done
    # Purgers that earlier tests' commands started and that are still starting up find this claim
    # and leave; one left running could take over the dead claim below before ``third`` does.
    wait_until(lambda: not purgers_running())
    try:
        holder = second.take()
        assert holder is not None and holder["pid"] == os.getpid()
        # A purger started now finds the live claim and leaves at once, freeing nothing.
        tag = unique_tag("second")
        sid = fake_load(database, tag, pid=dead_pid(), host=socket.gethostname())
        lifecycle.hide(database, [sid])
        said: list[str] = []
        assert purge.purge(database, say=said.append) == 0
        assert "another purger" in said[0] and records(database, sid)["objects"] == 50
    finally:
        first.release()
    # The holder was killed: its pid is gone, so the claim is taken over at once.
    assert second.take() is None
    database.write("MATCH (p:Purger) SET p.pid = $pid", {"pid": dead_pid()})
    third = purge.Claim(database)
    assert third.take() is None
    third.release()
    assert purge.purge(database) >= 1
    assert records(database, sid)["snapshots"] == 0


def test_delete_objects_stops_between_chunks_and_resumes(database: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lifecycle, "BIG_HOLDER", 20)  # the hubs of the synthetic heap have theirs deleted alone
    tag = unique_tag("resume")
    sid = load_synthetic(database, tag)
    before = records(database, sid)
    deleted: list[int] = []
    asked = 0

    def stop() -> bool:
        nonlocal asked
        asked += 1
        return asked > 3

    # A purger started by an earlier test's command would free the hidden snapshot alongside this one.
    with purging_held_off(database):
        lifecycle.hide(database, [sid])
        assert lifecycle.delete_objects(database, sid, batch=400, progress=deleted.append, stop=stop) is False
        part = records(database, sid)
        assert part["snapshots"] == 1 and 0 < part["references"] < before["references"]
        assert lifecycle.delete_objects(database, sid, batch=400, progress=deleted.append) is True
    assert records(database, sid) == {"objects": 0, "references": 0, "snapshots": 0}
    # Every record deleted was counted once (the groups too, hence at least).
    assert sum(deleted) >= before["objects"] + before["references"]


def test_purge_command(database: Database) -> None:
    tag = unique_tag("purge-cmd")
    sid = fake_load(database, tag, pid=dead_pid(), host=socket.gethostname())
    lifecycle.hide(database, [sid])
    result = CliRunner().invoke(main, ["purge"])
    assert result.exit_code == 0, result.stderr
    assert records(database, sid)["snapshots"] == 0
    assert "freed" in result.stdout or "nothing left" in result.stdout  # a background purger may have won


def test_purge_log_lives_in_the_data_dir() -> None:
    assert lifecycle.purge_log().parent == config.data_dir()


def test_a_purger_killed_half_way_is_replaced_by_the_next_command(database: Database) -> None:
    no_purger_at_work(database)
    tag = unique_tag("kill-purger")
    sid = load_synthetic(database, tag, objects=20_000, references=80_000)
    lifecycle.hide(database, [sid])
    lifecycle.start_purge(database)
    kill_the_purger(database)
    left = records(database, sid)
    assert left["snapshots"] == 1, "the purger finished before it could be killed"
    assert tag not in {s.tag for s in store.list_snapshots(database)}  # still invisible

    said: list[str] = []
    with db.connect(say=said.append, start_managed=False):
        pass
    assert said == ["freeing the records of 1 dropped snapshot in the background"]
    wait_until(lambda: records(database, sid) == {"objects": 0, "references": 0, "snapshots": 0})
