"""The agent interface: heapdb's questions as Model Context Protocol tools (``heapdb mcp``).

A thin layer over :class:`heapdb.queries.questions.Questions`, like the REST service: one tool per
question, its arguments built from the question's parameter model (:mod:`heapdb.queries.params`:
the same types, defaults, bounds and help), its answer the question's frozen result as JSON.

An agent reads every character it is given, so no answer is allowed to be big
(:mod:`heapdb.service.answer_pages`): an answer that does not fit its bounds is kept under a
*handle*, and the tool returns its first page with ``page.handle`` and ``page.next``; the ``page``
tool returns the following ones. Objects an answer points at come as
``{"tag": ..., "object_id": ...}``, the arguments of the ``why`` tool, never as whole objects.

heapdb's errors (an unknown tag, a bad parameter, references still loading) come back as tool
errors carrying their message, which an agent can read and act on; so does a Neo4j that is away.
Over HTTP with ``HEAPDB_SCOPED_TOKENS`` on, a token per team sees only its own tags, as in the
service (:mod:`heapdb.service.access`): :class:`BearerToken` gives the request its scope, which
every tool's questions and stored queries are asked under. See docs/mcp.md.
"""

from __future__ import annotations

import dataclasses
import inspect
import secrets
import typing
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from typing import Annotated, Any, Literal, cast

import anyio.to_thread
import neo4j.exceptions
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from heapdb import __version__, db, settings
from heapdb.errors import HeapdbError
from heapdb.queries import catalog, params, results
from heapdb.queries.cache import AnswerCache
from heapdb.queries.compare import MIN_SERIES
from heapdb.queries.questions import Questions
from heapdb.registry import QUESTIONS, Part, Question
from heapdb.service import access, links
from heapdb.service.answer_pages import Pages, to_json
from heapdb.service.app import DatabaseHandle

INSTRUCTIONS = """\
heapdb keeps heap snapshots (V8, Luau, Java hprof, Mono .mlpd, snap.bin) in Neo4j with dominators and retained
sizes computed, and answers questions about them. Start with `snapshots` to learn the tags.
To find a leak from three snapshots of one process (before, during, after the suspect action):
`leaks`, then `why` on a cluster's `why` object to see the chain of references keeping it alive.
With two snapshots: `diff`; with many: `growth`; with one: `suspects`, `top`, `types`.
Then `retains` (what an object keeps alive) and `dominators` (what would free it).
Leaks the CI gate found across builds: `signatures`, then `signature` for one's history; what each
recorded gate run decided and why: `gate-runs`, then `gate-run` for one.
Answers are bounded: a long one returns its first page and `page.handle` / `page.next`; call
`page` with them for the rest, or ask again with a smaller `limit`. Objects are named by
{"tag", "object_id"}: pass those to `why`, `retains`, `dominators` or `object`. Answers are compact:
no null fields, and an object described once, later as its id alone; `detail="full"` gives all."""


def _link(ref: results.ObjectRef) -> dict[str, Any]:
    """An object an answer points at, as the arguments of the tools that take one."""
    return {"tag": ref.tag, "object_id": ref.id}


def _arguments(model: type[params.Params]) -> list[inspect.Parameter]:
    """A parameter model's fields as keyword arguments of a tool: type, bounds and help as declared
    there, the default too (a required field stays required)."""
    out = []
    for name, info in model.model_fields.items():
        # Annotated built at run time: the field's type with its bounds (ge, le, min_length...) and help.
        annotation = cast(Any, Annotated)[(info.annotation, *info.metadata, Field(description=info.description))]
        default = inspect.Parameter.empty if info.is_required() else info.default
        out.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default))
    return out


def _subject(name: str, annotation: Any, description: str) -> inspect.Parameter:
    """What a question is about (a tag, an object id), which the parameter models leave to the caller."""
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[annotation, Field(description=description)]
    )


Tag = Annotated[str, Field(min_length=1)]
# How each kind of subject part is typed for an agent (heapdb.registry declares the parts).
PART_TYPES: dict[str, Any] = {
    "tag": Tag,
    "object": Annotated[int, Field(ge=-(2**63), le=2**63 - 1)],
    "tags": Annotated[list[Tag], Field(min_length=MIN_SERIES)],
    "signature": int,
    "run": Annotated[int, Field(ge=1, le=2**63 - 1)],
}


def _part(part: Part) -> inspect.Parameter:
    if part.kind == "tags" and part.optional:  # none when a parameter names them (growth's builds)
        listed: Any = Annotated[list[Tag], Field(description=part.description)]
        return inspect.Parameter(part.name, inspect.Parameter.KEYWORD_ONLY, annotation=listed, default=[])
    if part.kind == "since":  # optional: all signatures without it
        annotation = Annotated[str | None, Field(description=part.description)]
        return inspect.Parameter(part.name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=None)
    return _subject(part.name, PART_TYPES[part.kind], part.description)


def _shape_retains(answer: results.Retains) -> dict[str, Any]:
    """The subtree with each object's dominator beside it, so that any page of it reads on its own."""
    data = results.to_data(answer, _link)
    dominator = {child: parent for parent, child in answer.edges}
    for item in data["objects"]:
        item["dominator"] = dominator.get(item["id"])
    del data["edges"]
    return data


# An object's details in an answer: ObjectInfo as JSON, whose fields a compact answer gives once.
OBJECT_FIELDS = frozenset(f.name for f in dataclasses.fields(results.ObjectInfo))
DETAIL = inspect.Parameter(
    "detail",
    inspect.Parameter.KEYWORD_ONLY,
    annotation=Annotated[
        Literal["compact", "full", "text"],
        Field(
            description="compact (the default): no null fields, and an object already described earlier in "
            "the answer as its id alone; full: every field of every object, as `heapdb <command> --json`; "
            "text: what `heapdb <command>` prints, a few times shorter, with sizes rounded and long names "
            "cut (objects still end in @id), in one piece of at most 20,000 characters."
        ),
    ],
    default="compact",
)


def compact(data: Any) -> Any:
    """An answer without what an agent would read twice: fields that are null, and the details of an
    object described earlier in the answer (a why-alive answer's target ends each of its paths, and
    paths share the root and their first holders), which come as their id alone (with what a tool
    added to them, such as a subtree's ``dominator``)."""
    described: set[int] = set()

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            if value.keys() >= OBJECT_FIELDS:
                if value["id"] in described:
                    value = {key: item for key, item in value.items() if key == "id" or key not in OBJECT_FIELDS}
                described.add(value["id"])
            return {key: walk(item) for key, item in value.items() if item is not None}
        if isinstance(value, list):
            return [walk(item) for item in value]
        return value

    return walk(data)


def text_answer(text: str, max_chars: int) -> str:
    """The text renderer's answer, cut at a line within ``max_chars``, saying so: text has no pages."""
    if len(text) <= max_chars:
        return text
    note = '\n... cut here: the answer goes on; ask with detail="compact" for all of it, in pages'
    kept = text[: max_chars - len(note)]
    return kept[: kept.rfind("\n") if "\n" in kept else len(kept)] + note


def _shape_growth(answer: results.GrowthReport) -> dict[str, Any]:
    """Growth over a long series (a history of builds) with each series' ends only, as its text shows
    them: a thousand builds' figures per row would not fit one page; `type-history` pages one type's."""
    data = results.to_data(answer, _link)
    head, tail = results.series_ends(answer.tags)
    if not tail:
        return data

    def ends(values: list[Any]) -> list[Any]:
        first, last = results.series_ends(values)
        return first + last

    data["tags"] = ends(data["tags"])
    for row in data["rows"]:
        for key in ("counts", "sizes", "retained"):
            row[key] = ends(row[key])
    data["series"] = (
        f"{len(answer.tags):,} snapshots: each series shows the first {len(head)} and the last {len(tail)}, "
        f"{len(answer.tags) - len(head) - len(tail):,} left out between; `type-history` lists one type's figures "
        "in every build, a page at a time"
    )
    return data


# Answers an agent reads better rearranged than as the result's fields.
SHAPES: dict[str, Callable[[Any], Any]] = {"retains": _shape_retains, "growth": _shape_growth}


class Tools:
    """The tools of one server: each runs a question on :class:`Questions` and pages its answer."""

    def __init__(self, questions: Callable[[], Questions], database: Callable[[], db.Database], pages: Pages) -> None:
        self.questions, self.database, self.pages = questions, database, pages

    def answer(self, data: Any, lists: Sequence[str]) -> str:
        return self.pages.first(data, lists)

    def register(self, server: MCPServer) -> None:
        read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True)

        def add(
            name: str,
            description: str,
            run: Callable[..., str],
            arguments: list[inspect.Parameter],
        ) -> None:
            def tool(**values: Any) -> str:
                try:
                    return run(**values)
                except HeapdbError as e:
                    raise ToolError(str(e)) from None
                except (
                    neo4j.exceptions.DriverError,
                    neo4j.exceptions.TransientError,
                    neo4j.exceptions.DatabaseError,
                ) as e:
                    raise ToolError(f"Neo4j is unavailable: {type(e).__name__}: {e}") from None

            tool.__name__ = name
            tool.__signature__ = inspect.Signature(arguments, return_annotation=str)  # type: ignore[attr-defined]
            server.add_tool(tool, name=name, description=description, annotations=read_only, structured_output=False)

        def question(q: Question) -> None:
            names = [part.name for part in q.subject.parts]
            shape = SHAPES.get(q.name)
            as_list = typing.get_origin(q.result) is list  # a bare list answer goes under its name

            def run(detail: str, **values: Any) -> str:
                subject = [values.pop(name) for name in names]
                p = None if q.model is None else q.model(**values)
                answer = q.answer(self.questions(), subject, p)
                if detail == "text":
                    return text_answer(q.render_text(answer), self.pages.max_chars)
                data = shape(answer) if shape else results.to_data(answer, _link)
                data = {q.lists[0]: data} if as_list else data
                return self.answer(data if detail == "full" else compact(data), q.lists)

            arguments = [_part(part) for part in q.subject.parts] + (_arguments(q.model) if q.model else [])
            arguments.append(DETAIL)
            add(q.tool_name, f"{q.summary} {q.agent}", run, arguments)

        add(
            "snapshots",
            "The snapshots that can be asked about, oldest first: tag, format, runtime, object count, sizes, "
            "when loaded. Call this first to learn the tags every other tool takes.",
            lambda: self.answer({"snapshots": [s.as_dict() for s in self.questions().snapshots()]}, ["snapshots"]),
            [],
        )
        for q in QUESTIONS:
            question(q)
        add(
            "queries",
            "The stored Cypher queries: name, description and parameters. Run one with `query`.",
            lambda: self.answer({"queries": [q.as_dict() for q in catalog.catalog().values()]}, ["queries"]),
            [],
        )
        add(
            "query",
            "Run a stored query by name (see `queries`) with its parameters as a JSON object, e.g. "
            '{"tag": "build1", "limit": 10}; returns its rows, paged like every answer.',
            self._query,
            [
                _subject("name", Annotated[str, Field(min_length=1)], "The stored query's name."),
                inspect.Parameter(
                    "parameters",
                    inspect.Parameter.KEYWORD_ONLY,
                    annotation=Annotated[
                        dict[str, Any] | None, Field(description="The query's parameters by name (JSON values).")
                    ],
                    default=None,
                ),
            ],
        )
        add(
            "page",
            "A later page of a long answer: pass the `page.handle` and `page.next` of the page before. "
            "Handles expire after a while; then ask the question again.",
            self.pages.page,
            [
                _subject("handle", str, "The answer's `page.handle`."),
                _subject("cursor", str, "The `page.next` of the page before."),
            ],
        )

    def _query(self, name: str, parameters: Mapping[str, Any] | None) -> str:
        stored = catalog.get(name)
        ask = self.questions()
        rows = catalog.run(self.database(), name, stored.bind(parameters or {}), timeout=ask.timeout, scope=ask.scope)
        return self.answer({"query": name, "rows": rows}, ["rows"])


def build_server(
    connect: Callable[[], db.Database] | None = None,
    *,
    timeout: float | None = None,
    pages: Pages | None = None,
) -> MCPServer:
    """The MCP server: every tool, and the snapshot list as the resource ``heapdb://snapshots``.

    ``connect`` opens the database on first use (default: :func:`heapdb.db.connect` without starting
    the managed Neo4j, retrying briefly); ``timeout`` bounds each query in seconds (default
    :func:`heapdb.queries.params.query_timeout`).
    """
    handle = DatabaseHandle(connect)
    query_timeout = params.query_timeout(timeout)
    cache = AnswerCache(wait=settings.ANSWER_WAIT.value())
    server = MCPServer("heapdb", version=__version__, instructions=INSTRUCTIONS)
    tools = Tools(
        lambda: Questions(handle.get(), query_timeout, cache, scope=access.current()), handle.get, pages or Pages()
    )
    tools.register(server)

    @server.resource(
        "heapdb://snapshots",
        name="snapshots",
        description="The snapshots that can be asked about (the `snapshots` tool's first page).",
        mime_type="application/json",
    )
    def snapshots() -> str:
        return tools.answer({"snapshots": [s.as_dict() for s in tools.questions().snapshots()]}, ["snapshots"])

    return server


class BearerToken:
    """The streamable HTTP app behind ``Authorization: Bearer <token>`` (``HEAPDB_API_TOKEN``, as for
    ``heapdb serve``, or a token per team when ``tokens`` looks them up): a request without one gets
    a 401 before the MCP layer reads it. A token per team's scope is the request's while it is
    answered: the MCP layer hands each message on with the context it was sent in."""

    def __init__(self, app: Any, token: str | None, tokens: access.Tokens | None = None) -> None:
        self.app, self.token, self.tokens = app, token, tokens

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        scheme, _, given = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
        given = given.strip() if scheme.lower() == "bearer" else ""
        if self.token and given and secrets.compare_digest(given.encode(), self.token.encode()):
            await self.app(scope, receive, send)
            return
        caller = None
        if self.tokens is not None and given:
            with suppress(HeapdbError, neo4j.exceptions.DriverError, neo4j.exceptions.Neo4jError):
                caller = await anyio.to_thread.run_sync(self.tokens.scope_of, given)  # Neo4j away: a 401
        if caller is None:
            body = to_json({"error": "missing or wrong bearer token (Authorization: Bearer <HEAPDB_API_TOKEN>)"})
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")],
                }
            )
            await send({"type": "http.response.body", "body": body.encode()})
            return
        scoped = access.using(caller)
        try:
            await self.app(scope, receive, send)
        finally:
            access.done(scoped)


def http_app(server: MCPServer, host: str, token: str | None, tokens: access.Tokens | None = None) -> Any:
    """The server as a streamable HTTP ASGI app at :data:`links.MCP`, behind the bearer token when one
    is set, or the tokens per team when ``tokens`` looks them up."""
    app = server.streamable_http_app(host=host, streamable_http_path=links.MCP)
    return BearerToken(app, token, tokens) if token or tokens is not None else app
