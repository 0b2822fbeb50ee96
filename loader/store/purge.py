"""The purger: frees the records of hidden (dropped or failed) snapshots, and the objects of pruned
ones, one purger per database.

``heapdb drop`` and ``load --replace`` only hide a snapshot, in one transaction (see
:mod:`.lifecycle`), and a load that fails is only marked failed; this frees their records
afterwards (keeping a failed load's ``:Snapshot`` node, marked ``purged``, so that it stays
listed). It runs as ``python -m heapdb.loader.store.purge`` in the background, started by
:func:`~heapdb.loader.store.lifecycle.start_purge`, or in the foreground for ``heapdb drop --wait``
and ``heapdb purge``.

At most one purger works on a database: it claims the single ``(:Purger {key: 'purger'})`` node
(under a uniqueness constraint, so two claims cannot both create it) with its pid, host, a token of
its own and a heartbeat refreshed every HEARTBEAT_SECONDS. A second purger finds a live claim and
exits (or, in the foreground, waits); a claim whose purger died is taken over (see
:func:`~heapdb.loader.store.lifecycle.purger_alive`). A purger that finds its claim taken over stops
at the next chunk. It frees the hidden snapshots one after the other, releases its claim, then looks
once more, so a snapshot hidden while it was releasing is not left behind.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
import uuid
from datetime import UTC, datetime
from types import TracebackType
from typing import Any

from heapdb import db, progress
from heapdb.db import Database
from heapdb.errors import HeapdbError
from heapdb.loader.store.lifecycle import HEARTBEAT_SECONDS, Say, age, delete_objects, purger_alive

PURGER_SCHEMA = "CREATE CONSTRAINT heapdb_purger_key IF NOT EXISTS FOR (p:Purger) REQUIRE p.key IS UNIQUE"


def _quiet(_: str) -> None:
    pass


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def pending(database: Database) -> list[dict[str, Any]]:
    """The snapshots whose records wait to be freed, oldest first, with how many there are: the
    dropped ones, the failed ones not yet purged (whose node stays, see :mod:`.lifecycle`), and the
    pruned ones whose objects are not yet freed (``summary``: their groups and node stay, see :mod:`.prune`)."""
    return database.read(
        "MATCH (s:Snapshot) WHERE s.status = 'dropping' OR (s.status = 'failed' AND s.purged IS NULL) "
        "OR (s.status = 'ready' AND s.summary AND s.purged IS NULL) "
        "RETURN s.sid AS sid, s.tag AS tag, coalesce(s.object_count, 0) + coalesce(s.reference_count, 0) AS records, "
        "s.status = 'ready' AS summary ORDER BY s.sid"
    )


class Claim:
    """This process's claim on the database's purge, with the heartbeat that keeps it alive."""

    def __init__(self, database: Database) -> None:
        self.database = database
        self.token = uuid.uuid4().hex
        self.lost = threading.Event()  # set when another purger took the claim over
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="heapdb-purge-heartbeat", daemon=True)

    def take(self) -> dict[str, Any] | None:
        """Claim the purge. None when claimed; otherwise the live holder (``pid``, ``host``)."""

        def work(tx: Any) -> dict[str, Any] | None:
            # Setting a property locks the node: concurrent claims queue here and see each other's result.
            holder = tx.run(
                "MERGE (p:Purger {key: 'purger'}) SET p.asked = $now "
                f"RETURN p.token AS token, p.pid AS pid, p.host AS host, {age('p')} AS age",
                now=_now(),
            ).single()
            if holder["token"] not in (None, self.token) and purger_alive(dict(holder)):
                return dict(holder)
            tx.run(
                "MATCH (p:Purger {key: 'purger'}) SET p.token = $token, p.pid = $pid, p.host = $host, "
                "p.heartbeat = $now, p.started_at = $now",
                token=self.token,
                pid=os.getpid(),
                host=socket.gethostname(),
                now=_now(),
            ).consume()
            return None

        with db.translate_errors(self.database.connection), self.database.session() as session:
            holder: dict[str, Any] | None = session.execute_write(work)
        return holder

    def release(self) -> None:
        self.database.write("MATCH (p:Purger {key: 'purger'}) WHERE p.token = $token DELETE p", {"token": self.token})

    def __enter__(self) -> Claim:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()
        self.release()

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_SECONDS):
            try:
                held = self.database.write(
                    "MATCH (p:Purger {key: 'purger'}) WHERE p.token = $token SET p.heartbeat = $now RETURN p.token",
                    {"token": self.token, "now": _now()},
                )
            except Exception:  # a missed beat is harmless; the next one may pass
                continue
            if not held:
                self.lost.set()
                return


def purge(database: Database, *, wait: bool = False, say: Say = _quiet) -> int:
    """Free the records of every hidden snapshot; return how many snapshots were freed.

    When another purger works on the database already, return at once, or with ``wait`` wait until
    nothing is left to free (taking over if that purger dies). A progress bar shows on a terminal.
    """
    database.write(PURGER_SCHEMA)
    freed = 0
    waiting_said = False
    while pending(database):
        claim = Claim(database)
        holder = claim.take()
        if holder is not None:
            if not wait:
                say(f"another purger frees the records already (pid {holder['pid']} on {holder['host']})")
                return freed
            if not waiting_said:
                say(f"waiting for the purger at work (pid {holder['pid']} on {holder['host']})")
                waiting_said = True
            time.sleep(1.0)
            continue
        with claim:
            for snapshot in pending(database):
                started = time.monotonic()
                with progress.bar(f"free {snapshot['tag']}", total=snapshot["records"], unit="rec") as bar:
                    done = delete_objects(
                        database,
                        snapshot["sid"],
                        progress=bar.update,
                        stop=claim.lost.is_set,
                        keep_summaries=snapshot["summary"],
                    )
                if not done:
                    break
                freed += 1
                say(f"freed {snapshot['tag']!r} (sid {snapshot['sid']}) in {time.monotonic() - started:.1f} s")
        if claim.lost.is_set():
            say("another purger took over")
            return freed
    return freed


def main() -> int:
    """The background purger: free everything hidden, log to stdout, exit."""

    def log(message: str) -> None:
        print(f"{_now()} purger pid {os.getpid()}: {message}", flush=True)

    try:
        with db.connect(start_managed=False, tidy=False) as database:
            purge(database, say=log)
    except HeapdbError as e:
        log(f"stopped: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
