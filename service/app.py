"""The REST service: a thin FastAPI layer over the same functions the CLI calls.

Errors come back as JSON bodies ``{"error": "..."}`` with the status each error class declares in
:mod:`heapdb.errors` (404 for an unknown snapshot, object or stored query, 422 for bad parameters
and for queries Neo4j rejects, 504 for a query Neo4j stopped at the query timeout, 409 for a snapshot stored by an older heapdb,
410 for a question that reads objects asked of a snapshot pruned to its summaries, 503 when Neo4j
cannot be reached), and 401 without the bearer token when ``HEAPDB_API_TOKEN`` is set. Writes
(uploads, :mod:`heapdb.service.intake`) need ``HEAPDB_API_WRITE_TOKEN`` (403 when it is unset).
With ``HEAPDB_SCOPED_TOKENS`` on, the tokens per team of ``heapdb tokens`` are taken too, each
reading and writing only its own tags (:mod:`heapdb.service.access`).

Every answer comes from :class:`heapdb.queries.questions.Questions`, the functions the CLI calls,
with the parameters declared once in :mod:`heapdb.queries.params`; the URLs are stable
(:mod:`heapdb.service.links`), so ``/api/snapshots/build123/objects/4711/why?format=svg`` works as
a link in a bug report. A tag is one percent-encoded path segment whatever it holds (``/`` too):
routes are matched on the path as sent, and the segment decoded afterwards (:class:`Segment`).

Every request is bounded before any parameter is parsed (:func:`request_problem`): the length of the
URL, the number of parameters, the length of each value and how deeply brackets nest in it; a
request over a bound gets a 422 naming it. Anything unexpected still gets a JSON 500, on a
connection that stays open.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import quote_from_bytes, unquote, unquote_to_bytes

import anyio.to_thread
import neo4j.exceptions
from fastapi import FastAPI, Query, Request, Response
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.convertors import Convertor, register_url_convertor
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Receive, Send
from starlette.types import Scope as ASGIScope

from heapdb import __version__, config, db, settings
from heapdb.errors import HeapdbError
from heapdb.queries import catalog, params
from heapdb.queries.base import TAG_LOOKUP_SECONDS
from heapdb.queries.cache import AnswerCache
from heapdb.queries.questions import Questions
from heapdb.scopes import Scope
from heapdb.service import (
    access,
    browse_pages,
    compare_pages,
    gate_run_pages,
    intake,
    links,
    pages,
    query_pages,
    question_pages,
    rule_pages,
    rule_routes,
    schemas,
    warmup,
)
from heapdb.service.pressure import IN_FLIGHT, busy, request_turns
from heapdb.service.question_routes import add_question_routes
from heapdb.service.turns import TurnCounts, Turns


class DatabaseHandle:
    """Opens the database on first use, and keeps trying on later requests while Neo4j is away.

    Once open, the driver is kept for the service's life: its connection pool replaces connections
    a Neo4j restart broke by itself. Closing it on an error instead would pull the pool from under
    the other requests running on it.
    """

    def __init__(self, connect: Callable[[], db.Database] | None = None) -> None:
        # By default a short retry window: while Neo4j is away, requests should fail quickly, not hang.
        self._connect = connect or (lambda: db.connect(start_managed=False, retry_seconds=2.0))
        self._database: db.Database | None = None
        self._lock = threading.Lock()

    def get(self) -> db.Database:
        with self._lock:
            if self._database is None:
                self._database = self._connect()
            return self._database


def takes_turns(method: str, path: str) -> bool:
    """Whether a request waits its turn (service.turns): every question and page, read with GET or
    HEAD. Not the health check, which should say at once how busy the service is, nor the pages'
    static files, nor a write: an upload holds its request for as long as its body takes to come."""
    return method in ("GET", "HEAD") and path != links.HEALTH and not path.startswith(links.STATIC + "/")


@dataclass(frozen=True)
class Health:
    """What ``/api/health`` answers: ``requests`` says how many requests are being answered now and
    how many wait their turn (HEAPDB_REQUESTS_AT_ONCE); null when their number is not limited."""

    status: str
    heapdb: str
    neo4j: tuple[str, ...]
    requests: TurnCounts | None


# While the service is busy (pressure.busy), the listing of the snapshots is answered from one read
# at most this long ago, as long as a tag's load is remembered (queries.base.TAG_LOOKUP_SECONDS):
# clients refreshing their lists every second or two made a tenth of the mixed-load drill's
# requests, each costing Neo4j and the service about what a why-alive costs. Otherwise it is read afresh.
LISTING_SECONDS = TAG_LOOKUP_SECONDS

# Bounds on every request, checked before anything parses it (see request_problem).
MAX_URL_CHARS = 16_384  # path and query string, as sent (percent-encoded)
MAX_PARAMETERS = 256  # key=value pairs in the query string
MAX_VALUE_CHARS = 4_096  # one value, decoded (a type name, a text, a JSON list)
MAX_NESTING = 16  # brackets ([ and {) open at once in a value: lists of lists are never needed


def nesting(text: str) -> int:
    """How deeply ``[`` and ``{`` nest in a text (counted as written; unbalanced closers ignored)."""
    depth = deepest = 0
    for c in text:
        if c in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "]}" and depth:
            depth -= 1
    return deepest


def request_problem(request: Request) -> str | None:
    """What makes a request too big to answer, or None: checked on the raw request, before any parsing."""
    raw_path = request.scope.get("raw_path") or request.url.path.encode()
    query = request.scope.get("query_string") or b""
    if len(raw_path) + len(query) > MAX_URL_CHARS:
        return f"the URL is longer than {MAX_URL_CHARS:,} characters"
    try:
        unquote_to_bytes(raw_path).decode("utf-8")
    except UnicodeDecodeError:
        return "the path is not UTF-8 once percent-decoded"
    items = request.query_params.multi_items()
    if len(items) > MAX_PARAMETERS:
        return f"more than {MAX_PARAMETERS} query parameters"
    for key, value in items:
        if len(key) > 100:
            return "a parameter name longer than 100 characters"
        if len(value) > MAX_VALUE_CHARS:
            return f"parameter {key!r} is longer than {MAX_VALUE_CHARS:,} characters"
        if nesting(value) > MAX_NESTING:
            return f"parameter {key!r} nests brackets deeper than {MAX_NESTING}"
    return None


class Segment(Convertor[str]):
    """One path segment, percent-decoded after routing: a tag holding ``/`` stays one segment."""

    regex = "[^/]+"

    def convert(self, value: str) -> str:
        return unquote(value, errors="strict")

    def to_string(self, value: str) -> str:
        return links.encode_segment(value)


register_url_convertor(links.SEGMENT_CONVERTER, Segment())


class RouteOnRawPath:
    """Route on the path as the client sent it, before percent-decoding.

    Starlette routes on the decoded path, where ``/api/snapshots/a%2Fb`` becomes ``/api/snapshots/a/b``
    and matches nothing; on the raw path the tag is one segment, decoded by :class:`Segment`.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: ASGIScope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("raw_path"):
            # Keep the client's escapes, encode bytes it sent unescaped (UTF-8 straight in the URL).
            raw = quote_from_bytes(scope["raw_path"], safe="/%!$&'()*+,;=:@-._~")
            scope = {**scope, "path": raw}
        await self.app(scope, receive, send)


class Guard:
    """Before any parsing: the bearer token when one is set (every ``/api`` call but ``/api/health``),
    then the request's size bounds (:func:`request_problem`); and a bug answers a JSON 500 on a
    keep-alive connection that stays usable.

    A plain ASGI middleware: Starlette's ``@app.middleware("http")`` runs each request through extra
    tasks and streams, which cost about a tenth of the service's CPU under 50 clients.

    A token per team (``tokens``, with ``HEAPDB_SCOPED_TOKENS`` on) gives the request its scope
    (:func:`heapdb.service.access.current`) and what it may do is checked here (:func:`access.refusal`).
    """

    def __init__(
        self,
        app: ASGIApp,
        token: str | None,
        write_token: str | None = None,
        tokens: access.Tokens | None = None,
        turns: Turns | None = None,
    ) -> None:
        self.app = app
        self.token = token
        self.write_token = write_token  # uploads, cancels and rule sets (see intake.is_write); it reads too
        self.tokens = tokens
        self.turns = turns  # how many requests are answered at once (pressure.request_turns)

    async def __call__(self, scope: ASGIScope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        try:
            caller = await self.caller(request)
        except (HeapdbError, neo4j.exceptions.DriverError, neo4j.exceptions.Neo4jError) as e:
            trouble = f"cannot check the token, Neo4j is unavailable: {type(e).__name__}: {e}"
            await JSONResponse({"error": trouble}, status_code=503)(scope, receive, send)
            return
        if caller is None:
            refusal = self.refusal(request)
        else:
            refusal = await anyio.to_thread.run_sync(self.scoped_refusal, request, caller)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        started = False

        async def send_tracked(message: Any) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        scoped = access.using(caller) if caller is not None else None
        IN_FLIGHT.count += 1  # how busy the service is, for the loads it runs (pressure.py)
        try:
            if self.turns is None or not takes_turns(scope["method"], scope["path"]):
                await self.app(scope, receive, send_tracked)
            else:
                async with self.turns.turn():
                    await self.app(scope, receive, send_tracked)
        except Exception as e:
            if started:  # too late for an answer of our own
                raise
            await JSONResponse({"error": f"internal error: {type(e).__name__}"}, status_code=500)(scope, receive, send)
        finally:
            IN_FLIGHT.count -= 1
            if scoped is not None:
                access.done(scoped)

    async def caller(self, request: Request) -> Scope | None:
        """The scope of the token per team the request comes with; None for any other token, none at
        all, or with scoped tokens off (the checks of the environment tokens then apply)."""
        if self.tokens is None:
            return None
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        secret = given.strip() if scheme.lower() == "bearer" else request.cookies.get(pages.TOKEN_COOKIE, "")
        if not secret or intake.token_is(secret, self.token) or intake.token_is(secret, self.write_token):
            return None
        known, found = self.tokens.remembered(secret)
        return found if known else await anyio.to_thread.run_sync(self.tokens.scope_of, secret)

    def scoped_refusal(self, request: Request, caller: Scope) -> Response | None:
        refused = access.refusal(request, caller, access.job_tags(request))
        problem = None if refused is not None else request_problem(request)
        return refused or (JSONResponse({"error": f"bad request: {problem}"}, status_code=422) if problem else None)

    def refusal(self, request: Request) -> Response | None:
        path = request.url.path
        if intake.is_write(request.method, path):
            refused = intake.write_refusal(request.headers.get("authorization", ""), self.token, self.write_token)
            if refused is not None:
                return refused
        elif (self.token or self.tokens is not None) and path != links.HEALTH and not pages.open_to_all(path):
            scheme, _, given = request.headers.get("authorization", "").partition(" ")
            if scheme.lower() == "bearer":
                allowed = intake.token_is(given.strip(), self.token) or intake.token_is(given.strip(), self.write_token)
            else:  # a browser: the token it was given at /login, in a cookie
                allowed = bool(self.token) and pages.signed_in(request, self.token or "")
            if not allowed:
                return pages.sign_in_first(request) or JSONResponse(
                    {"error": "missing or wrong bearer token (Authorization: Bearer <HEAPDB_API_TOKEN>)"},
                    status_code=401,
                    headers={"WWW-Authenticate": "Bearer"},
                )
        problem = request_problem(request)
        if problem is not None:
            return JSONResponse({"error": f"bad request: {problem}"}, status_code=422)
        return None


def _schedule_pruning(app: FastAPI, handle: DatabaseHandle) -> None:
    """With HEAPDB_PRUNE_KEEP_LAST set, prune on that schedule while the service runs (docs/operations.md)."""
    schedule = config.prune_schedule()
    if schedule is None:
        return
    from heapdb.loader.store.prune import Scheduler

    def say(message: str) -> None:
        print(f"heapdb: {message}", file=sys.stderr, flush=True)

    scheduler = Scheduler(schedule, handle.get, say)
    app.router.on_startup.append(scheduler.start)
    app.router.on_shutdown.append(scheduler.stop)


def create_app(
    connect: Callable[[], db.Database] | None = None,
    *,
    timeout: float | None = None,
    token: str | None = None,
) -> FastAPI:
    """Build the app.

    ``connect`` opens the database (default: :func:`heapdb.db.connect`); ``timeout`` bounds each
    query in seconds (default: :func:`~heapdb.queries.params.query_timeout`); ``token``, when set (default
    ``HEAPDB_API_TOKEN``), must come as ``Authorization: Bearer <token>`` on every ``/api`` call but
    ``/api/health``.
    """
    app = FastAPI(
        title="heapdb",
        version=__version__,
        description="Heap snapshots from many builds in Neo4j: why is this object alive, what leaked, what holds the heap.",
    )
    handle = DatabaseHandle(connect)
    turns = request_turns()
    app.state.database = handle
    query_timeout = params.query_timeout(timeout)
    api_token = token if token is not None else settings.API_TOKEN.get()
    write_token = settings.API_WRITE_TOKEN.get()
    tokens = access.Tokens(handle.get) if access.enabled() else None
    cache = AnswerCache(wait=settings.ANSWER_WAIT.value())
    _schedule_pruning(app, handle)
    warmup.schedule(app, handle.get, cache, query_timeout)

    def questions() -> Questions:
        return Questions(handle.get(), query_timeout, cache, scope=access.current())

    @app.exception_handler(HeapdbError)
    async def heapdb_error(request: Request, error: HeapdbError) -> Response:
        retry = getattr(error, "retry_after", None)
        page = pages.error_page(request, error.http_status, str(error), retry)
        headers = {"Retry-After": str(retry)} if retry is not None else None
        return page or JSONResponse({"error": str(error)}, status_code=error.http_status, headers=headers)

    @app.exception_handler(neo4j.exceptions.DriverError)
    @app.exception_handler(neo4j.exceptions.TransientError)
    @app.exception_handler(neo4j.exceptions.DatabaseError)
    async def neo4j_trouble(request: Request, error: Exception) -> JSONResponse:
        # What the driver raises while Neo4j shuts down or restarts (a closed connection, "database
        # unavailable", a retry that ran out of time): the service is fine, the database is not.
        return JSONResponse({"error": f"Neo4j is unavailable: {type(error).__name__}: {error}"}, status_code=503)

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, error: RequestValidationError) -> JSONResponse:
        problems = "; ".join(
            f"{'.'.join(str(x) for x in e['loc'][1:]) or e['loc'][0]}: {e['msg']}" for e in error.errors()
        )
        return JSONResponse({"error": f"bad parameters: {problems}"}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: StarletteHTTPException) -> Response:
        page = pages.error_page(request, error.status_code, str(error.detail))
        if page is not None:
            return page
        return JSONResponse(
            {"error": str(error.detail)}, status_code=error.status_code, headers=getattr(error, "headers", None)
        )

    @app.get(
        links.HEALTH,
        summary="Whether the service can reach Neo4j, and how many requests it answers and how many wait",
        response_model=schemas.json_type(Health),
    )
    def health() -> dict[str, object]:
        rows = handle.get().read("CALL dbms.components() YIELD name, versions, edition RETURN *", timeout=10)
        neo4j = tuple(f"{r['name']} {r['versions'][0]} {r['edition']}" for r in rows)
        return links.to_json(Health("ok", __version__, neo4j, turns.counts() if turns is not None else None))

    @app.get(
        links.SNAPSHOTS,
        summary="The snapshots that can be queried (status ready); with all=true also loads in progress, "
        "failed loads (with their failure) and dropped ones",
    )
    def snapshots(
        include_all: Annotated[
            bool, Query(alias="all", description="also list loads in progress, failed and dropped")
        ] = False,
    ) -> list[dict[str, Any]]:
        if include_all:
            from heapdb.loader.store import list_snapshots

            listed = list_snapshots(handle.get(), include_incomplete=True)
            return [s.as_dict() for s in listed if access.current().reads(s.tag)]
        if busy():
            scope = access.current()
            return cache.recent(
                ("listing", scope), LISTING_SECONDS, lambda: [s.as_dict() for s in questions().snapshots()]
            )
        return [s.as_dict() for s in questions().snapshots()]

    @app.get(links.SNAPSHOT, summary="One snapshot")
    def snapshot(tag: str) -> dict[str, Any]:
        return questions().snapshot(tag).as_dict()

    add_question_routes(app, questions)

    @app.get(links.QUERIES, summary="The stored queries and their parameters")
    def stored_queries() -> list[dict[str, Any]]:
        return [q.as_dict() for q in catalog.catalog().values()]

    @app.get(
        links.QUERY,
        summary="Run a stored query; its parameters come as query string keys (repeat a key for a list)",
    )
    def run_query(name: str, request: Request) -> dict[str, Any]:
        stored = catalog.get(name)
        values: dict[str, list[str]] = {}
        for key, value in request.query_params.multi_items():
            values.setdefault(key, []).append(value)
        rows = catalog.run(handle.get(), name, stored.bind(values), timeout=query_timeout, scope=access.current())
        return {"query": name, "rows": jsonable_encoder(rows)}

    rule_routes.add_rule_routes(app, handle.get)
    pages.add_pages(
        app, questions, api_token, None if tokens is None else lambda given: tokens.scope_of(given) is not None
    )
    compare_pages.add_compare_pages(app, questions)
    browse_pages.add_browse_pages(app, questions)
    question_pages.add_question_pages(app, questions)
    rule_pages.add_rule_pages(app, handle.get)
    gate_run_pages.add_gate_run_pages(app, questions)
    query_pages.add_query_pages(app, questions)
    intake.add_intake(app, handle.get)
    app.add_middleware(Guard, token=api_token, write_token=write_token, tokens=tokens, turns=turns)
    app.add_middleware(RouteOnRawPath)  # outermost: before the other middleware and the routing
    return app
