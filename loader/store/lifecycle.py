"""A snapshot's life in the database: claiming a tag for a load, hiding, freeing, tidying up.

A ``:Snapshot`` node gives a tag to a ``sid`` (a number allocated per load) and says where it is:

- ``loading``: its objects are being written; invisible. The loader's ``pid``, ``host`` and
  ``heartbeat`` (an ISO time it refreshes every :data:`HEARTBEAT_SECONDS`) say who writes it.
- ``ready``: visible. ``references_ready`` is false while the loader still writes the references,
  true after.
- ``failed``: a load that ended without finishing; invisible to questions, listed (``heapdb
  snapshots --all``, ``/api/snapshots?all=true``) with ``failure``, the reason, and ``failed_at``.
  The purger frees its records and marks it ``purged``; the node itself stays, so that the failure
  can be seen, until the tag is loaded again or dropped.
- ``dropping``: invisible again; its records are being freed, then the node goes.

Every query starts from a ready snapshot, so a load that fails or is interrupted is invisible once
it is marked failed: the loader marks its own snapshot when it fails (the reason is the error), and
the next heapdb command (:func:`tidy`, run by :func:`heapdb.db.connect`) marks a ``loading``
snapshot, or a ``ready`` one still without its references, whose loader is dead (killed, or its
machine gone; the reason says which process stopped sending heartbeats when). A loader is dead when
it ran on this host and its pid is gone, or on another host and its heartbeat is older than
:data:`STALE_SECONDS`. No state is ambiguous: ``loading`` always means a live loader, as far as the
last command could tell.

Hiding (:func:`hide`) is one small transaction whatever the size of the snapshot, so ``heapdb drop``
and ``load --replace`` take a moment; freeing the records is the purger's work (:mod:`.purge`), a
background process that :func:`start_purge` starts, one per database at a time, which deletes them
in bounded transactions (:func:`delete_objects`) and resumes where it stopped if it is killed.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from heapdb import config
from heapdb.db import Database, translate_errors
from heapdb.errors import HeapdbError, LoadError, NotFound
from heapdb.loader.store.groups import GROUP_KINDS
from heapdb.loader.store.listings import LISTING_PROPERTIES
from heapdb.loader.store.schema import ensure_schema
from heapdb.processes import pid_alive
from heapdb.progress import PROGRESS_FILE_VARIABLE
from heapdb.units import shorten

HEARTBEAT_SECONDS = 10  # how often a load in progress (and the purger) says it is alive
STALE_SECONDS = 60  # a loader or purger on another host silent this long is taken for dead

MAX_TAG_CHARS = 1_000  # a tag stays short enough to be a path segment of the REST service's URLs
FAILURE_CHARS = 2_000  # a failure's reason is cut to this many characters
DELETE_BATCH = 20_000  # records per transaction when freeing a snapshot
BIG_HOLDER = 50_000  # an object holding more references than this has them deleted on their own

Say = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def age(variable: str, field: str = "heartbeat") -> str:
    """Cypher for the seconds since ``variable.field`` (an ISO time), by the database's clock, or null."""
    return f"duration.inSeconds(datetime({variable}.{field}), datetime()).seconds"


# What tells whether a snapshot's loader lives; loads stored before heartbeats fall back to started_at.
_LOADER = (
    "s.sid AS sid, s.tag AS tag, s.status AS status, s.references_ready AS references_ready, "
    "s.pid AS pid, s.host AS host, "
    "duration.inSeconds(datetime(coalesce(s.heartbeat, s.started_at)), datetime()).seconds AS age"
)


def loader_alive(row: dict[str, Any]) -> bool:
    """Whether the process behind a row (``pid``, ``host``, ``age`` of its heartbeat) still runs.

    On this host the pid answers; from another host only a heartbeat younger than STALE_SECONDS does.
    """
    if row.get("host") == socket.gethostname() and row.get("pid"):
        return pid_alive(int(row["pid"]))
    return row.get("age") is not None and row["age"] < STALE_SECONDS


def unfinished(row: dict[str, Any]) -> bool:
    """A load still being written: loading, or ready while its references are still written."""
    return row["status"] == "loading" or (row["status"] == "ready" and row.get("references_ready") is False)


def hide(database: Database, sids: list[int], *, failure: BaseException | str | None = None) -> None:
    """Make these snapshots invisible, in one transaction; the purger frees their records.

    Without ``failure`` they are dropped (status ``dropping``: the purger deletes them whole). With
    it they are loads that failed (status ``failed``, the reason in ``failure``: an exception's
    text, or a sentence); the purger frees their records but keeps the node, so that the failure
    stays listed until the tag is loaded again or dropped. Only a snapshot still ``loading`` or
    ``ready`` is marked failed: one dropped meanwhile stays dropped.
    """
    if not sids:
        return
    if failure is None:
        database.write(
            "MATCH (s:Snapshot) WHERE s.sid IN $sids SET s.status = 'dropping', s.dropped_at = $now",
            {"sids": list(sids), "now": _now()},
        )
        return
    fail(database, dict.fromkeys(sids, failure_text(failure)))


def fail(database: Database, reasons: dict[int, str]) -> None:
    """Mark these snapshots failed, each with its reason, in one transaction (see :func:`hide`)."""
    if reasons:
        database.write(
            "UNWIND $failed AS f MATCH (s:Snapshot {sid: f.sid}) WHERE s.status IN ['loading', 'ready'] "
            "SET s.status = 'failed', s.failure = f.reason, s.failed_at = $now",
            {"failed": [{"sid": sid, "reason": reason} for sid, reason in reasons.items()], "now": _now()},
        )


def failure_text(failure: BaseException | str) -> str:
    """The reason a failed load records: a sentence as given, or an exception said in one line."""
    if isinstance(failure, str):
        text = failure
    elif isinstance(failure, KeyboardInterrupt):
        text = "interrupted (Ctrl-C or SIGINT)"
    elif isinstance(failure, SystemExit):
        text = f"the loader exited (status {failure.code})"
    elif isinstance(failure, HeapdbError):
        text = str(failure) or type(failure).__name__
    else:
        text = f"{type(failure).__name__}: {failure}" if str(failure) else type(failure).__name__
    # Stored as data and shown on terminals: one line, no control characters, no surrogates (which
    # Neo4j's driver cannot encode), each written as its escape.
    text = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
    return shorten(text, FAILURE_CHARS)


def dead_loader_reason(row: dict[str, Any]) -> str:
    """Why a load whose loader is gone failed, from what its node says (``pid``, ``host``, ``heartbeat``)."""
    pid, host = row.get("pid"), row.get("host")
    last = row.get("heartbeat") or row.get("started_at")
    if not pid:
        return "the load stopped before it finished (its loader left no pid or heartbeat)"
    said = f"loader process {pid} on {host} stopped sending heartbeats at {last}"
    if host == socket.gethostname():
        return said + " (the process is gone: killed or crashed)"
    return said + f" (silent for {row.get('age')} s, more than {STALE_SECONDS} s)"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def purge_log() -> Path:
    """Where the background purger writes what it did (in heapdb's data directory)."""
    return config.data_dir() / "purge.log"


def start_purge(database: Database) -> None:
    """Make sure the records of hidden snapshots get freed: start a purger in the background.

    The purger (``python -m heapdb.loader.store.purge``) is a process of its own session, so it
    outlives this one and ignores its Ctrl-C; it talks to the same Neo4j as ``database`` and exits
    at once when another purger works on it already (see :mod:`.purge`). Cheap: no query, one fork.
    """
    log = purge_log()
    log.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **database.connection.environment()}
    # It outlives the load that started it: a job following that load's bars must not see its own.
    env.pop(PROGRESS_FILE_VARIABLE, None)
    mode = "wb" if log.exists() and log.stat().st_size > 1 << 20 else "ab"  # keep the log short
    with open(log, mode) as out:
        subprocess.Popen(
            [sys.executable, "-m", "heapdb.loader.store.purge"],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # survives this process, ignores its Ctrl-C
        )


# One read for housekeeping: every snapshot not plainly ready, and the purger's claim if any.
_UNSETTLED = f"""
OPTIONAL MATCH (s:Snapshot) WHERE s.status <> 'ready' OR s.references_ready = false OR (s.summary AND s.purged IS NULL)
WITH collect(s {{.sid, .tag, .status, .references_ready, .pid, .host, .heartbeat, .started_at, .purged, .summary,
                 age: duration.inSeconds(datetime(coalesce(s.heartbeat, s.started_at)), datetime()).seconds}}) AS snapshots
OPTIONAL MATCH (p:Purger)
RETURN snapshots, collect(p {{.pid, .host, .token, age: {age("p")}}}) AS purgers
"""


# Each statement below is one transaction of its own, committed before the next starts. Not
# `CALL { } IN TRANSACTIONS`: its outer transaction holds a shared schema lock while its batches
# run, so an index created or dropped meanwhile (the service's index upgrade, ensure_schema) queued
# its exclusive lock behind it, the next batch queued behind that, and both waited forever, a
# deadlock Neo4j does not detect (docs/decisions.md).
# The id after which the next `size` objects end, read from the (sid, id) index in its own order.
_CHUNK_END = (
    "MATCH (o:Object {sid: $sid}) WHERE o.id > $after WITH o ORDER BY o.sid, o.id SKIP $skip LIMIT 1 RETURN o.id AS id"
)
_BIG_HOLDERS = "MATCH (o:Object {sid: $sid}) WHERE o.id IS NOT NULL AND COUNT { (o)-->() } > $degree RETURN o.id AS id"
_DELETE_HELD = "MATCH (:Object {sid: $sid, id: $id})-[r]->() WITH r LIMIT $batch DELETE r"
_DELETE_REFERENCES = "MATCH (o:Object {sid: $sid}) WHERE o.id > $after AND o.id <= $upto MATCH (o)-[r]->() DELETE r"
_DELETE_OBJECTS = "MATCH (o:Object {sid: $sid}) WHERE o.id > $after AND o.id <= $upto DETACH DELETE o"
_LOWEST, _HIGHEST = -(2**63), 2**63 - 1


def delete_objects(
    database: Database,
    sid: int,
    batch: int = DELETE_BATCH,
    *,
    progress: Callable[[int], object] = lambda _n: None,
    stop: Callable[[], bool] = lambda: False,
    keep_summaries: bool = False,
) -> bool:
    """Delete a snapshot's references, objects, groups and finally its ``:Snapshot`` node.

    With ``keep_summaries`` (a pruned snapshot, see :mod:`.prune`) only the references and objects
    go, and the type listings (object ids and names, for ``find``); the groups, the node and
    anything else keyed by the sid (signatures) stay.

    Every transaction stays bounded, so a snapshot of any size is freed with a heap of any size, and
    commits before the next begins (see _CHUNK_END's comment for why): the references go first, by
    the object holding them, ``batch // 4`` objects per transaction (an object holding more than
    BIG_HOLDER references has them deleted on their own, ``batch`` at a time), then the objects,
    ``batch`` per transaction, walked in id order. ``progress`` is called with the records deleted
    by each transaction, and ``stop`` is asked before each: when it says yes, this returns False and
    leaves the rest, which the next call deletes (a purger killed half-way resumes the same way).
    Returns True when done.
    """
    with translate_errors(database.connection), database.session() as session:

        def run(statement: str, **parameters: Any) -> int:
            counters = session.run(statement, sid=sid, **parameters).consume().counters
            deleted = counters.relationships_deleted + counters.nodes_deleted
            progress(deleted)
            return deleted

        def chunks(size: int) -> Iterator[tuple[int, int]]:
            after = _LOWEST
            while True:
                end = session.run(_CHUNK_END, sid=sid, after=after, skip=size - 1).single()
                upto = _HIGHEST if end is None else int(end["id"])
                yield after, upto
                if end is None:
                    return
                after = upto

        def until_none(statement: str, **parameters: Any) -> bool:
            """Run ``statement`` (one that deletes at most ``batch`` records) until it deletes none."""
            while True:
                if stop():
                    return False
                if run(statement, batch=batch, **parameters) == 0:
                    return True

        for row in session.run(_BIG_HOLDERS, sid=sid, degree=BIG_HOLDER).data():
            if not until_none(_DELETE_HELD, id=row["id"]):
                return False
        for statement, size in ((_DELETE_REFERENCES, max(1, batch // 4)), (_DELETE_OBJECTS, batch)):
            for after, upto in chunks(size):
                if stop():
                    return False
                run(statement, after=after, upto=upto)
        if keep_summaries:
            run(
                "MATCH (g:TypeGroup {sid: $sid}) WHERE g.type IS NOT NULL AND g.listing_ids IS NOT NULL "
                f"REMOVE {', '.join(f'g.{name}' for name in LISTING_PROPERTIES)}"
            )
        else:
            for kind in GROUP_KINDS:
                if not until_none(
                    f"MATCH (g:{kind.label} {{sid: $sid}}) WHERE g.{kind.key} IS NOT NULL WITH g LIMIT $batch DELETE g"
                ):
                    return False
    # A dropped snapshot goes; a failed one stays listed, marked purged (see hide), and so does a pruned
    # one (its summaries answer on). One pruned, then dropped while freed, keeps its node: still
    # `dropping`, it is listed again and freed whole.
    database.write(
        "MATCH (s:Snapshot {sid: $sid}) SET s.purged = true WITH s WHERE s.status <> 'failed' AND NOT $kept DELETE s",
        {"sid": sid, "kept": keep_summaries},
    )
    return True


def drop(database: Database, tag: str, *, wait: bool = True, say: Say = _quiet) -> int:
    """Hide every snapshot with this tag, ready or left over, in one transaction, and free its records.

    ``wait`` frees them here and returns when they are gone (with a progress bar on a terminal);
    otherwise a background purger frees them (:func:`start_purge`). Returns how many snapshots
    (loads) the tag had. A tag being loaded right now is refused.
    """
    ensure_schema(database)
    rows = database.read(f"MATCH (s:Snapshot {{tag: $tag}}) RETURN {_LOADER}", {"tag": tag})
    live = [r for r in rows if r["status"] != "dropping"]
    if not live:
        freeing = " (a dropped snapshot of that tag is still being freed)" if rows else ""
        raise NotFound(f"no snapshot tagged {tag!r}{freeing}")
    for row in live:
        if unfinished(row) and loader_alive(row):
            raise LoadError(
                f"snapshot {tag!r} is being loaded right now (pid {row['pid']} on {row['host']}); drop it when that ends"
            )
    hide(database, [r["sid"] for r in live])
    if wait:
        from heapdb.loader.store import purge  # purge builds on this module

        purge.purge(database, wait=True, say=say)
    else:
        start_purge(database)
    return len(live)


def tidy(database: Database, say: Say = _quiet) -> None:
    """Housekeeping for every heapdb command (see :func:`heapdb.db.connect`): one cheap read.

    Marks failed the snapshots whose loader died before they were complete (with the reason: which
    process stopped sending heartbeats when), and starts a purger when hidden snapshots wait to be
    freed and none works on them. Says one line when it does something.
    """
    row = database.read(_UNSETTLED)[0]
    snapshots, purgers = row["snapshots"], row["purgers"]
    if not snapshots:
        return
    dead = [s for s in snapshots if unfinished(s) and not loader_alive(s)]
    fail(database, {s["sid"]: dead_loader_reason(s) for s in dead})
    waiting = len(dead) + sum(1 for s in snapshots if waits_for_purge(s))
    if not waiting or any(purger_alive(p) for p in purgers):
        if dead:
            say(_hid(dead) + "; a purger already frees records in the background")
        return
    start_purge(database)
    if dead:
        say(_hid(dead) + "; freeing their records in the background")
    elif all(s["status"] == "ready" for s in snapshots if waits_for_purge(s)):  # pruned ones only
        say(f"freeing the objects of {_count(waiting, 'pruned snapshot')} in the background")
    else:
        say(f"freeing the records of {_count(waiting, 'dropped snapshot')} in the background")


def waits_for_purge(row: dict[str, Any]) -> bool:
    """A snapshot whose records the purger has yet to free: dropped, or failed or pruned and not yet purged."""
    return row["status"] == "dropping" or (
        (row["status"] == "failed" or bool(row.get("summary"))) and not row.get("purged")
    )


def _hid(dead: list[dict[str, Any]]) -> str:
    tags = ", ".join(sorted({repr(s["tag"]) for s in dead}))
    return f"hid {_count(len(dead), 'unfinished load')} ({tags}) whose loader is gone (listed as failed)"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def purger_alive(row: dict[str, Any]) -> bool:
    """Whether the purger behind a ``:Purger`` claim (``pid``, ``host``, ``age``) still works.

    Its heartbeat must be fresh, wherever it runs; on this host its pid must run too, so that a
    purger killed with -9 is replaced at once.
    """
    fresh = row.get("age") is not None and row["age"] < STALE_SECONDS
    if fresh and row.get("host") == socket.gethostname() and row.get("pid"):
        return pid_alive(int(row["pid"]))
    return fresh


def check_tag(tag: str) -> None:
    """Refuse the few tags no URL can carry; any character is fine otherwise (``/`` included).

    ``.`` and ``..`` (and the empty tag) would be path segments every HTTP client and browser
    removes or resolves, a lone surrogate cannot be stored, and a tag must fit in a URL.
    """
    if tag in ("", ".", ".."):
        raise LoadError(f"a tag cannot be {tag!r}: choose a name (any characters, '/' included)")
    if len(tag) > MAX_TAG_CHARS:
        raise LoadError(f"a tag is at most {MAX_TAG_CHARS:,} characters; this one has {len(tag):,}")
    try:
        tag.encode("utf-8")
    except UnicodeEncodeError as e:
        raise LoadError(f"a tag must be valid Unicode text: {tag!r} holds a lone surrogate") from e


def claim(database: Database, tag: str, replace: bool, properties: dict[str, Any]) -> tuple[int, list[int], list[int]]:
    """Create the new snapshot in state ``loading``; return its sid, the ready sids it will replace and leftovers.

    Leftovers are this tag's snapshots that never completed (their loader is dead), failed or are
    being dropped; the caller hides them. A tag whose load still runs is refused, and so is a tag
    :func:`check_tag` refuses.
    """
    check_tag(tag)
    rows = database.read(f"MATCH (s:Snapshot {{tag: $tag}}) RETURN {_LOADER}", {"tag": tag})
    ready = [r["sid"] for r in rows if r["status"] == "ready" and not unfinished(r)]
    if ready and not replace:
        raise LoadError(
            f"a snapshot tagged {tag!r} exists already; use --replace to load over it, or `heapdb drop {tag}`"
        )
    for row in rows:
        if unfinished(row) and loader_alive(row):
            raise LoadError(f"snapshot {tag!r} is being loaded right now by pid {row['pid']} on {row['host']}")
    leftovers = [r["sid"] for r in rows if r["sid"] not in ready]
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
