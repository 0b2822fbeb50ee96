"""Every error heapdb reports to people, in one module.

Every error a user can cause (bad input, a missing tool, an unreachable database) is a
:class:`HeapdbError`. Each class carries what it means to both front ends: ``exit_code`` for the CLI,
which prints the message and exits without a traceback, and ``http_status`` for the REST service,
which sends the message as a JSON body. Both read these attributes, so the two never disagree.
Anything else is a bug and keeps its traceback under ``--debug``.
"""

from __future__ import annotations

import os


class HeapdbError(Exception):
    """An error with a message written for the person who ran heapdb."""

    exit_code = 1
    http_status = 400


class ConfigError(HeapdbError):
    """Settings are missing or contradictory."""

    http_status = 500  # the service's own settings, not the request


class Neo4jServerError(HeapdbError):
    """The managed Neo4j could not be installed, started or stopped."""

    http_status = 503


class MonoError(HeapdbError):
    """heapdb's Mono profiler module could not be built or run (no compiler, no mono-devel, no mono)."""

    http_status = 500


class DatabaseUnavailable(HeapdbError):
    """No Neo4j answers at the configured address, or it refused the credentials."""

    exit_code = 3
    http_status = 503


class QueryError(HeapdbError):
    """Neo4j rejected a query (a syntax error, a bad parameter, a timeout)."""

    http_status = 422


class QueryTimeout(QueryError):
    """A query Neo4j stopped at the query timeout (``--timeout``, ``HEAPDB_QUERY_TIMEOUT``).

    504: the request was fine and the database did not answer in time; a longer timeout, or the
    same question once the machine is less busy, may answer it.
    """

    http_status = 504


class ParameterError(QueryError):
    """A question's or stored query's parameter that is missing, unknown, or not of its declared type or range."""


class NotFound(HeapdbError):
    """A snapshot tag, object or stored query that does not exist."""

    http_status = 404


class Forbidden(HeapdbError):
    """What the caller's token may not do: an administrator's function (rule sets, the stored
    queries that read across snapshots), or a write to a tag it may only read. What it may not read
    at all is :class:`NotFound`, exactly as an unknown tag, so that a refusal never tells it exists."""

    http_status = 403


class OutdatedSnapshot(HeapdbError):
    """A snapshot stored by an older heapdb, without what today's questions read: load it again."""

    http_status = 409


class NotComputed(HeapdbError):
    """An inspection a snapshot's load did not compute: its format does not show what it needs, or
    the snapshot was stored before the inspection existed, or reanalysed from the store (whose names
    are cut). The message says which, and what to do."""

    http_status = 409


class StillLoading(HeapdbError):
    """A question asked while a load is still writing what it reads: ask again soon."""

    http_status = 409


class InspectionsLoading(StillLoading, NotComputed):
    """An inspection asked for before its load has written it: a load works out its inspections
    once the snapshot answers, and writes them within seconds (docs/data-model.md, "When a snapshot
    answers"). Also a :class:`NotComputed`, so that a page showing what is there says so and goes on."""


class ObjectsLoading(StillLoading):
    """A question about objects a load has not written yet (a snapshot answers before its last
    object is in, docs/data-model.md "When a snapshot answers")."""


class ReferencesLoading(StillLoading):
    """A question that follows references, asked while a load is still writing them."""


class StillComputing(HeapdbError):
    """An answer that takes longer than a request may wait (``HEAPDB_ANSWER_WAIT``): it is still
    being worked out, and the same request answers from it once it is done (``Retry-After``)."""

    http_status = 503

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class SummaryOnly(HeapdbError):
    """A question that reads objects, asked of a snapshot pruned to its summaries (``heapdb prune``).

    410 Gone: the objects existed and were deliberately freed; asking again will not bring them back.
    """

    http_status = 410


class LoadError(HeapdbError):
    """A load that cannot start: the tag is taken, or another process is loading it right now."""

    http_status = 409


class RebuildError(HeapdbError):
    """``heapdb rebuild`` refused or failed (its files, its tags, a Neo4j it cannot rebuild, the
    import); a rebuild that failed once the old store was moved aside has put it back."""

    http_status = 409


class UploadError(HeapdbError):
    """A snapshot sent to the service (``POST /api/snapshots``, ``heapdb push``) that it refuses:
    not a snapshot format, a compressed stream that ends early, an empty body, a bad tag."""

    http_status = 422


class UploadTooLarge(UploadError):
    """An upload over the service's size limit (``HEAPDB_MAX_UPLOAD_BYTES``)."""

    http_status = 413


class NoSpace(UploadError):
    """An upload the spool directory's disk has no room for: it would leave less free than
    ``HEAPDB_MIN_FREE_BYTES`` (the load and Neo4j's store need the rest)."""

    http_status = 507


class IntakeFull(HeapdbError):
    """An upload while the service's load queue is full (``HEAPDB_MAX_QUEUED`` jobs queued or
    running): nothing was read; send it again later (the answer says when, ``Retry-After``)."""

    http_status = 503
    retry_after = 60  # seconds: about what a snapshot of a few hundred MB takes to load


class UnsupportedEncoding(UploadError):
    """An upload compressed with something the service cannot undo (it takes gzip and zstd)."""

    http_status = 415


class FormatError(HeapdbError):
    """A snapshot file that cannot be read.

    The message always names the file, where in it the problem is (a byte offset, a record or a
    JSON path), and what was expected there.
    """

    http_status = 422

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        problem: str,
        *,
        offset: int | None = None,
        record: str | None = None,
    ) -> None:
        self.path = os.fspath(path) if path is not None else None
        self.problem = problem
        self.offset = offset
        self.record = record
        where = []
        if offset is not None:
            where.append(f"byte {offset}")
        if record is not None:
            where.append(record)
        location = f" at {', '.join(where)}" if where else ""
        super().__init__(f"{self.path or '<input>'}{location}: {problem}")


class RuleError(HeapdbError):
    """A rule file that cannot be used: bad TOML, an unknown rule kind, a bad selector or value.

    The message names the file, the line (when one can be pointed at) and what was expected there:
    ``rules.toml:12: owns: weight must be an integer from 1 to 127, got 300``.
    """

    http_status = 422

    def __init__(self, path: str | os.PathLike[str] | None, problem: str, *, line: int | None = None) -> None:
        self.path = os.fspath(path) if path is not None else None
        self.problem = problem
        self.line = line
        location = f":{line}" if line is not None else ""
        super().__init__(f"{self.path or '<rules>'}{location}: {problem}")
