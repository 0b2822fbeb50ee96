"""Connections to Neo4j through the official driver.

:func:`connect` is the one way heapdb opens a database: it resolves the settings (see
:mod:`heapdb.config`), starts the managed Neo4j on demand (saying so on stderr), and turns the
driver's connection failures into :class:`~heapdb.errors.DatabaseUnavailable` with a message a person
can act on.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import neo4j
import neo4j.graph
from neo4j.exceptions import AuthError, ClientError, ConfigurationError, ServiceUnavailable, SessionExpired

from heapdb import config, neo4j_server
from heapdb.errors import DatabaseUnavailable, HeapdbError, QueryError, QueryTimeout

# The driver logs each retry and each dead connection at WARNING and ERROR, which Python would print
# as they come; whether Neo4j is away is heapdb's to say, once (Database.answering).
logging.getLogger("neo4j").addHandler(logging.NullHandler())

# How long the driver itself retries a transaction that failed for a passing reason (a deadlock, a
# lost connection): enough for a hiccup. A longer wait for a database that went away is
# Database.answering's, which can tell a managed Neo4j whose process is gone, and says what it does.
DRIVER_RETRY_SECONDS = 5.0

T = TypeVar("T")

# One query of a transaction: its Cypher and parameters in, its rows as dicts out (Database.reading).
Reader = Callable[[str, Mapping[str, Any]], list[dict[str, Any]]]

# Neo4j's status codes for a transaction stopped at its timeout (the client's or the server's setting).
TIMEOUT_CODES = frozenset(
    {
        "Neo.ClientError.Transaction.TransactionTimedOut",
        "Neo.ClientError.Transaction.TransactionTimedOutClientConfiguration",
    }
)


def _to_stderr(message: str) -> None:
    print(f"heapdb: {message}", file=sys.stderr)


@contextmanager
def translate_errors(conn: config.Connection) -> Iterator[None]:
    """Turn the driver's exceptions into heapdb's, so callers report them without a traceback."""
    try:
        yield
    except AuthError as e:
        raise DatabaseUnavailable(f"{conn.describe()} refused the credentials: {e.message}") from None
    except (ServiceUnavailable, SessionExpired) as e:
        raise DatabaseUnavailable(f"cannot reach {conn.describe()}: {e}") from None
    except ClientError as e:
        if e.code in TIMEOUT_CODES:
            raise QueryTimeout(
                f"Neo4j stopped the query at the query timeout; allow more time with --timeout "
                f"or {config.TIMEOUT_VARIABLE} (seconds)"
            ) from None
        raise QueryError(f"Neo4j rejected the query: {e.message}") from None


@dataclass
class Database:
    """A driver bound to one database name.

    ``wait_seconds``: how long a query or write waits, beyond the driver's own retries, for a
    database that stopped answering, saying so once on ``say``; never for a managed Neo4j whose
    process is gone, which is said at once (:meth:`gone`)."""

    driver: neo4j.Driver
    connection: config.Connection
    wait_seconds: float = 0.0
    say: Callable[[str], None] = field(default=_to_stderr, repr=False)
    _waiting: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def name(self) -> str:
        return self.connection.database

    def session(self, *, read_only: bool = False) -> neo4j.Session:
        access = neo4j.READ_ACCESS if read_only else neo4j.WRITE_ACCESS
        return self.driver.session(database=self.name, default_access_mode=access)

    def read(
        self, cypher: str, parameters: Mapping[str, Any] | None = None, timeout: float | None = None
    ) -> list[dict[str, Any]]:
        """Run a read-only query in its own transaction and return its rows as dicts."""
        return self.reading(lambda run: run(cypher, parameters or {}), timeout)

    def reading(self, work: Callable[[Reader], T], timeout: float | None = None) -> T:
        """``work(run)`` in one read-only transaction, where ``run(cypher, parameters)`` returns a
        query's rows as dicts. A question that needs several queries asks them this way: each
        transaction costs its own round trips to begin and commit, which under load cost as much
        as a small query (``work`` may run again when the driver retries, so it only reads)."""

        @neo4j.unit_of_work(timeout=timeout)
        def transaction(tx: neo4j.ManagedTransaction) -> T:
            return work(lambda cypher, parameters: [_row(r) for r in tx.run(cypher, dict(parameters))])

        def run() -> T:
            with translate_errors(self.connection), self.session(read_only=True) as session:
                return session.execute_read(transaction)

        return self.answering(run)

    def write(self, cypher: str, parameters: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run a write query in its own transaction and return its rows as dicts."""

        def run() -> list[dict[str, Any]]:
            with translate_errors(self.connection), self.session() as session:
                return session.execute_write(lambda tx: [_row(r) for r in tx.run(cypher, parameters or {})])

        return self.answering(run)

    def answering(self, call: Callable[[], T]) -> T:
        """``call()``, which raises DatabaseUnavailable while Neo4j does not answer: again until it
        does or ``wait_seconds`` pass; at once an error when the managed Neo4j's process is gone."""
        deadline: float | None = None
        while True:
            try:
                return call()
            except DatabaseUnavailable:
                gone = self.gone()
                if gone is not None:
                    raise DatabaseUnavailable(gone) from None
                now = time.monotonic()
                deadline = now + self.wait_seconds if deadline is None else deadline
                if now >= deadline:
                    raise
                if not self._waiting.is_set():
                    self._waiting.set()
                    self.say(
                        f"{self.connection.describe()} stopped answering: waiting up to "
                        f"{self.wait_seconds:.0f} s for it to come back"
                    )
                time.sleep(min(1.0, deadline - now))

    def gone(self) -> str | None:
        """Why waiting for the database is pointless (the managed Neo4j's process ended), or None."""
        if self.connection.managed and neo4j_server.running_pid() is None:
            return (
                f"the {self.connection.describe()} is gone: its process ended (killed or crashed); "
                "start it again with `heapdb neo4j start`"
            )
        return None

    def close(self) -> None:
        self.driver.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_GRAPH_VALUES = (neo4j.graph.Node, neo4j.graph.Relationship, neo4j.graph.Path)


def _row(record: neo4j.Record) -> dict[str, Any]:
    """A record as a dict. Stored queries return maps, lists and scalars, which need no conversion;
    ``Record.data()`` walks every nested value in Python, which for a list of a million ids costs
    seconds, so it is kept for rows holding nodes, relationships or paths."""
    if any(isinstance(value, _GRAPH_VALUES) for value in record.values()):
        return record.data()
    return dict(record.items())


def connect(
    say: Callable[[str], None] = _to_stderr,
    start_managed: bool = True,
    retry_seconds: float = 30.0,
    tidy: bool = True,
) -> Database:
    """Open the configured Neo4j, starting the managed one if that is what is configured.

    ``retry_seconds`` is how long a transaction that failed for a passing reason (a lost connection,
    a leader switch, a restarting database) is tried again: long for a load, short for a service
    that should answer 503 while Neo4j is away rather than hang. A managed Neo4j whose process is
    gone is an error at once (:meth:`Database.gone`).

    ``tidy`` runs the store's housekeeping first (one cheap read, see
    :func:`heapdb.loader.store.lifecycle.tidy`): loads whose process died are marked failed and the records
    of dropped snapshots are freed in the background, saying so in one line when there is any.
    """
    conn = config.connection()
    if conn.managed and start_managed and neo4j_server.running_pid() is None:
        say(f"no NEO4J_URI set: starting the managed Neo4j at {conn.uri} (stop it with `heapdb neo4j stop`)")
        neo4j_server.start(say=say)
        conn = config.connection()  # the first start generates the password
    # A Neo4j that accepts connections but does not answer yet (starting, recovering) holds a caller
    # this long per connection: the driver's 30 s for a load, 5 s for a service that should answer 503.
    connect_seconds = min(30.0, max(5.0, 2 * retry_seconds))
    try:
        # Notifications (deprecations, unknown property names on an empty database) are for people
        # writing queries in the Browser; heapdb's own queries are tested, so they would be noise.
        driver = neo4j.GraphDatabase.driver(
            conn.uri,
            auth=(conn.user, conn.password),
            notifications_min_severity="OFF",
            max_transaction_retry_time=min(retry_seconds, DRIVER_RETRY_SECONDS),
            connection_timeout=connect_seconds,
            connection_acquisition_timeout=2 * connect_seconds,
        )
    except (ValueError, ConfigurationError) as e:  # a malformed URI
        raise DatabaseUnavailable(f"cannot use {conn.uri!r} as a Neo4j address: {e}") from None
    try:
        with translate_errors(conn):
            driver.verify_connectivity()
    except DatabaseUnavailable as e:
        driver.close()
        hint = " (start it with `heapdb neo4j start`)" if conn.managed and "refused" not in str(e) else ""
        raise DatabaseUnavailable(f"{e}{hint}") from None
    except OSError as e:
        driver.close()
        raise DatabaseUnavailable(f"cannot reach {conn.describe()}: {e}") from None
    database = Database(driver, conn, wait_seconds=max(0.0, retry_seconds - DRIVER_RETRY_SECONDS), say=say)
    if tidy:
        from heapdb.loader.store.lifecycle import tidy as tidy_store  # the store builds on this module

        try:
            tidy_store(database, say)
        except HeapdbError as e:  # housekeeping must not stop the command it runs before
            say(f"could not tidy up dropped or unfinished snapshots: {e}")
    return database
