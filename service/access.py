"""Tokens per team in the service: who is asking, and what they may do, checked once per request.

With ``HEAPDB_SCOPED_TOKENS`` on, a bearer token (or the cookie a browser got at ``/login``) that is
not one of the environment tokens is looked up by its digest (:func:`heapdb.loader.store.tokens.scope_of`)
and gives the request a :class:`~heapdb.scopes.Scope`. The environment tokens, and every request
while scoped tokens are off, see everything, as before. Where each check is made:

- **What it may read** is the scope of the request's :class:`~heapdb.queries.questions.Questions`
  (:func:`current`, set by the service's guard for the request): every question on every route, page
  and MCP tool looks its snapshots up through :meth:`~heapdb.queries.base.Asking.snapshot`, which
  refuses a tag outside the scope exactly as an unknown one (404, the same body); the lists
  (snapshots, gate runs, leak signatures) leave out what it may not read. Stored queries check the
  tags their declared parameters name (:meth:`heapdb.queries.catalog.StoredQuery.check_scope`).
- **What it may do** (:func:`refusal`, before anything is parsed): a scoped token writes only what
  :data:`SCOPED_WRITES` lists, an upload or a cancel of a tag its write patterns cover; every other
  write (rule sets) is the administrator's, 403. A load job is looked up by its id first: one of a
  tag it may not read is unknown to it (404), like a snapshot.

A token is looked up at most once every :data:`LOOKUP_SECONDS` per service (unknown ones too), so
that a request does not cost a round trip to Neo4j; a revoked token is refused at most that long
after ``heapdb tokens revoke``.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from contextvars import ContextVar, Token
from urllib.parse import unquote

from fastapi import Request
from fastapi.responses import JSONResponse, Response

from heapdb import settings
from heapdb.db import Database
from heapdb.errors import HeapdbError, NotFound
from heapdb.loader.store import tokens
from heapdb.scopes import EVERYTHING, Scope, no_snapshot
from heapdb.service import links

LOOKUP_SECONDS = 5.0  # how long a token's scope (or its absence) is trusted: a revoke takes at most this
MAX_REMEMBERED = 10_000  # tokens remembered at once; past it the memory starts afresh (a flood of wrong ones)
_SCOPE: ContextVar[Scope] = ContextVar("heapdb_scope", default=EVERYTHING)


def current() -> Scope:
    """The scope of the request being answered (everything outside a request, and for the
    environment tokens)."""
    return _SCOPE.get()


def enabled() -> bool:
    return bool(settings.SCOPED_TOKENS.get())


class Tokens:
    """Scopes of the tokens in the database, by secret, remembered for :data:`LOOKUP_SECONDS`."""

    def __init__(self, database: Callable[[], Database], seconds: float = LOOKUP_SECONDS) -> None:
        self._database = database
        self._seconds = seconds
        self._known: dict[str, tuple[float, Scope | None]] = {}
        self._lock = threading.Lock()

    def remembered(self, secret: str) -> tuple[bool, Scope | None]:
        """``(True, scope)`` when looked up lately (scope None: no such token), else ``(False, None)``."""
        with self._lock:
            found = self._known.get(tokens.digest_of(secret))
        if found is None or found[0] < time.monotonic():
            return False, None
        return True, found[1]

    def scope_of(self, secret: str) -> Scope | None:
        """The token's scope, from the database unless remembered; None for no such (or a revoked) token."""
        known, scope = self.remembered(secret)
        if known:
            return scope
        scope = tokens.scope_of(self._database(), secret)
        with self._lock:
            if len(self._known) >= MAX_REMEMBERED:
                self._known.clear()
            self._known[tokens.digest_of(secret)] = (time.monotonic() + self._seconds, scope)
        return scope


def using(scope: Scope) -> Token[Scope]:
    """Make ``scope`` the request's (the guard resets it with what this returns once it is answered)."""
    return _SCOPE.set(scope)


def done(token: Token[Scope]) -> None:
    _SCOPE.reset(token)


# The writes a scoped token may make, by method and route: each names its tag in a query parameter
# (the upload) or by the load job it acts on (the cancel). Any other write is the administrator's.
_JOB = re.compile("^" + re.escape(links.JOBS) + "/([^/]+)$")
SCOPED_WRITES = {("POST", links.SNAPSHOTS), ("DELETE", links.JOB)}


def job_id(path: str) -> str | None:
    """The load job a path names (``/api/jobs/{job_id}``), if it names one."""
    match = _JOB.match(path)
    return unquote(match[1]) if match else None


def refusal(request: Request, scope: Scope, job_tag: Callable[[str], str | None]) -> Response | None:
    """What a scoped token may not do with this request (403, or 404 for what it may not read), else
    None. ``job_tag`` reads a load job's tag (None: no such job). Runs before the request is routed:
    a route's own checks (its parameters, the snapshot's existence) come after this one, so an
    answer never depends on whether something it may not read exists."""
    path, method = request.url.path, request.method
    job = job_id(path)
    route = links.JOB if job is not None else path
    if method in ("POST", "PUT", "PATCH", "DELETE") and links.is_api(path) and (method, route) not in SCOPED_WRITES:
        return _error(
            403, "this token may not do that: rule sets and the service's other settings are the administrator's"
        )
    try:
        if job is not None:
            tag = job_tag(job)
            if tag is None or not scope.reads(tag):
                return _error(404, f"no load job {job!r}")
            if method == "DELETE" and not scope.writes(tag):
                return _error(403, f"this token only reads {tag!r}: it may not cancel its loads")
        if (method, path) == ("POST", links.SNAPSHOTS):
            tag = request.query_params.get("tag", "")  # none: the route's own 422
            if tag and not scope.reads(tag):
                raise no_snapshot(tag)
            if tag and not scope.writes(tag):
                return _error(403, f"this token only reads {tag!r}: it may not load snapshots there")
    except HeapdbError as e:
        return _error(e.http_status, str(e))
    return None


def job_tags(request: Request) -> Callable[[str], str | None]:
    """How :func:`refusal` reads a load job's tag: from the service's job store (None: no such job)."""

    def tag(job: str) -> str | None:
        try:
            found: str = request.app.state.jobs.store.get(job).tag
        except NotFound:
            return None
        return found

    return tag


def _error(status: int, message: str) -> Response:
    return JSONResponse({"error": message}, status_code=status)
