"""A snapshot's life in the database: claiming a tag for a load, dropping, deleting.

Loads are atomic as far as readers can tell: a snapshot's objects belong to its ``sid`` (a number
allocated per load), and the ``:Snapshot`` node that gives the tag to that ``sid`` says ``status:
'loading'`` until the last batch is written. Every query starts from a ``ready`` snapshot, so a load
that fails, is interrupted or is killed leaves nothing visible; the next load of the tag, or
``heapdb drop``, deletes the leftovers. ``--replace`` switches the tag to the new ``sid`` in one
transaction and deletes the old objects afterwards.
"""

from __future__ import annotations

import os
import socket
from typing import Any

from heapdb.db import Database, translate_errors
from heapdb.errors import HeapdbError, LoadError, NotFound
from heapdb.loader.store.schema import ensure_schema

DELETE_BATCH = 20_000  # rows per transaction when deleting a snapshot


def delete_objects(database: Database, sid: int, batch: int = DELETE_BATCH) -> None:
    """Delete a snapshot's objects and references, committing every ``batch`` rows.

    Relationships go first, by themselves: a hub object can have millions of them, and DETACH DELETE
    would take them all in one transaction. Every reference of a snapshot starts at one of its objects.
    """
    with translate_errors(database.connection), database.session() as session:
        session.run(
            "MATCH (o:Object {sid: $sid})-[r]->() WHERE o.id IS NOT NULL "
            "CALL (r) { DELETE r } IN TRANSACTIONS OF $batch ROWS",
            sid=sid,
            batch=batch,
        ).consume()
        session.run(
            "MATCH (o:Object {sid: $sid}) WHERE o.id IS NOT NULL CALL (o) { DELETE o } IN TRANSACTIONS OF $batch ROWS",
            sid=sid,
            batch=batch,
        ).consume()
        for label, key in (("PathGroup", "sig"), ("TypeGroup", "type")):
            session.run(
                f"MATCH (g:{label} {{sid: $sid}}) WHERE g.{key} IS NOT NULL CALL (g) {{ DELETE g }} IN TRANSACTIONS OF $batch ROWS",
                sid=sid,
                batch=batch,
            ).consume()
    database.write("MATCH (s:Snapshot {sid: $sid}) DELETE s", {"sid": sid})


def drop(database: Database, tag: str) -> int:
    """Delete every snapshot with this tag, ready or left over. Returns how many were deleted."""
    ensure_schema(database)
    rows = database.read(
        "MATCH (s:Snapshot {tag: $tag}) RETURN s.sid AS sid, s.status AS status, s.pid AS pid, s.host AS host",
        {"tag": tag},
    )
    if not rows:
        raise NotFound(f"no snapshot tagged {tag!r}")
    for row in rows:
        if row["status"] == "loading" and load_alive(row):
            raise LoadError(
                f"snapshot {tag!r} is being loaded right now (pid {row['pid']} on {row['host']}); drop it when that ends"
            )
    for row in rows:
        database.write("MATCH (s:Snapshot {sid: $sid}) SET s.status = 'dropping'", {"sid": row["sid"]})
        delete_objects(database, row["sid"])
    return len(rows)


def load_alive(row: dict[str, Any]) -> bool:
    """Whether the process that started a load still runs (only knowable on the same host)."""
    if row.get("host") != socket.gethostname() or not row.get("pid"):
        return False
    try:
        os.kill(int(row["pid"]), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return int(row["pid"]) != os.getpid()


def claim(database: Database, tag: str, replace: bool, properties: dict[str, Any]) -> tuple[int, list[int], list[int]]:
    """Create the new snapshot in state ``loading``; return its sid, the ready sids it will replace and leftovers."""
    rows = database.read(
        "MATCH (s:Snapshot {tag: $tag}) RETURN s.sid AS sid, s.status AS status, s.pid AS pid, s.host AS host",
        {"tag": tag},
    )
    ready = [r["sid"] for r in rows if r["status"] == "ready"]
    if ready and not replace:
        raise LoadError(
            f"a snapshot tagged {tag!r} exists already; use --replace to load over it, or `heapdb drop {tag}`"
        )
    for row in rows:
        if row["status"] == "loading" and load_alive(row):
            raise LoadError(f"snapshot {tag!r} is being loaded right now by pid {row['pid']}")
    leftovers = [r["sid"] for r in rows if r["status"] != "ready"]
    for attempt in range(5):
        try:
            created = database.write(
                "OPTIONAL MATCH (s:Snapshot) WITH coalesce(max(s.sid), 0) + 1 AS sid "
                "CREATE (n:Snapshot {sid: sid, tag: $tag, status: 'loading'}) SET n += $props RETURN sid",
                {"tag": tag, "props": properties},
            )
            return int(created[0]["sid"]), ready, leftovers
        except HeapdbError:
            if attempt == 4:  # two loads raced for the same sid five times: give up loudly
                raise
    raise AssertionError("unreachable")
