"""The errors heapdb reports to people.

Every error a user can cause (bad input, a missing tool, an unreachable database) is a
:class:`HeapdbError`. The CLI prints its message and exits non-zero without a traceback; the REST
service maps it to a JSON error body. Anything else is a bug and keeps its traceback under ``--debug``.
"""

from __future__ import annotations

import os


class HeapdbError(Exception):
    """An error with a message written for the person who ran heapdb."""

    exit_code = 1


class ConfigError(HeapdbError):
    """Settings are missing or contradictory."""


class Neo4jServerError(HeapdbError):
    """The managed Neo4j could not be installed, started or stopped."""


class DatabaseUnavailable(HeapdbError):
    """No Neo4j answers at the configured address, or it refused the credentials."""

    exit_code = 3


class QueryError(HeapdbError):
    """Neo4j rejected a query (a syntax error, a bad parameter, a timeout)."""


class NotFound(HeapdbError):
    """A snapshot tag or object that does not exist."""


class OutdatedSnapshot(HeapdbError):
    """A snapshot stored by an older heapdb, without what today's questions read: load it again."""


class FormatError(HeapdbError):
    """A snapshot file that cannot be read.

    The message always names the file, where in it the problem is (a byte offset, a record or a
    JSON path), and what was expected there.
    """

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
