"""The stored queries as pages: the catalog, and one query with its Cypher, a form and its result.

``/queries`` lists every stored query (:mod:`heapdb.queries.catalog`); ``/queries/{name}`` shows one
with its parameters as a GET form. Submitting the form puts the parameters in the query string, and
the page then runs the query through the same binding and running the REST route
``/api/queries/{name}`` uses (:meth:`~heapdb.queries.catalog.StoredQuery.bind`,
:func:`~heapdb.queries.catalog.run`) and shows the rows as a table, at most :data:`ROW_LIMIT` of them.
A query without parameters runs at once: there is nothing to fill in.

A form field left empty means "not given" (the default, or a missing required parameter), since a
browser sends every field of a form, filled in or not. Bad parameters re-show the page with the
message and the form as it was sent, with the error's status (422); an unknown query is the usual
404 page. Both pages have JSON twins (``.json`` appended), as every page does (:mod:`.pages`).

With the managed Neo4j (whose HTTP port heapdb knows), a query page links to the Neo4j Browser with
the query and its parameters in its editor (:data:`BROWSER_EDIT`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from fastapi import FastAPI, Request, Response
from fastapi.encoders import jsonable_encoder

from heapdb import config
from heapdb.errors import HeapdbError
from heapdb.queries import catalog, params
from heapdb.queries.catalog import Parameter, StoredQuery
from heapdb.queries.questions import Questions
from heapdb.service import links
from heapdb.service.pages import SNAPSHOT, object_page, page_path, respond, templates, wants_json
from heapdb.units import human_bytes, short_name

# The pages' routes (declared in heapdb.service.links) by the names this module's callers know them by.
QUERIES = links.QUERIES_PAGE
QUERY = links.QUERY_PAGE
# The most rows a stored query's own `limit` may ask for (types, paths): the page never cuts a
# result the query was told to bound, only the unbounded listings (builds, snapshots, signatures).
ROW_LIMIT = params.MAX_GROUP_LIMIT
CELL_CHARS = 300  # a cell's text at most (a list of a million ids stays readable, and the page small)
# The managed Neo4j listens on the loopback address (heapdb.neo4j_server), as `heapdb neo4j install`
# prints its Browser's URL; `cmd=edit` opens the Browser with `arg` in its editor, not yet run.
BROWSER_EDIT = "http://127.0.0.1:{port}/browser/?cmd=edit&arg={text}"


def query_page(name: str) -> str:
    return page_path(QUERY, name=name)


templates.globals.update(query_page=query_page, queries_page=QUERIES)


# --- the form: what was sent, as the binding reads it


def sent_values(request: Request) -> dict[str, list[str]]:
    """The query string as the REST route reads it (a repeated key is a list), less empty fields."""
    values: dict[str, list[str]] = {}
    for key, value in request.query_params.multi_items():
        if value != "":  # an empty field of the form: not given
            values.setdefault(key, []).append(value)
    return values


def field_text(parameter: Parameter, sent: Mapping[str, list[str]]) -> str:
    """What a form field shows: what was sent, else the default as one would type it."""
    given = sent.get(parameter.name)
    if given:
        return given[0] if len(given) == 1 else json.dumps(given)
    if parameter.required or parameter.default is None:
        return ""
    if isinstance(parameter.default, str):
        return parameter.default
    return json.dumps(parameter.default)  # ints, true/false and lists, as the binding reads them


@dataclass(frozen=True)
class Field:
    """One parameter as a labelled form control."""

    parameter: Parameter
    text: str

    @property
    def choices(self) -> tuple[str, ...]:
        """The options of a select (bools and one-of strings); empty for a typed-in field."""
        if self.parameter.type == "bool":
            return ("true", "false")
        return self.parameter.choices

    @property
    def hint(self) -> str:
        """The type, the default and the description, as the catalog declares them."""
        p = self.parameter
        parts = [p.describe_type(), "required" if p.required else f"default {json.dumps(p.default)}"]
        return ", ".join(parts) + (f": {p.description}" if p.description else "")


# --- the result: rows as cells


@dataclass(frozen=True)
class Cell:
    text: str
    href: str | None = None
    numeric: bool = False
    title: str | None = None  # the exact value, where the text rounds it (sizes)


def is_size(column: str) -> bool:
    return column.endswith("size") or column.endswith("_bytes")


def is_id(column: str) -> bool:
    return column in ("id", "sid") or column.endswith("_id")


def cell(column: str, value: Any, tag: str | None) -> Cell:
    """A value as readable text; a snapshot tag and an object id of the asked snapshot as links."""
    if isinstance(value, bool) or value is None:
        return Cell("" if value is None else str(value).lower())
    if isinstance(value, int):
        if is_size(column):
            return Cell(human_bytes(value), numeric=True, title=f"{value:,} bytes")
        if is_id(column):
            # Only `id` together with the query's own `tag` names one object: other ids are not linked.
            href = object_page(tag, value) if column == "id" and tag is not None else None
            return Cell(str(value), href=href, numeric=True)
        return Cell(f"{value:,}", numeric=True)
    if isinstance(value, float):
        return Cell(f"{value:,.6g}", numeric=True)
    if isinstance(value, str):
        return Cell(short_name(value, CELL_CHARS), href=page_path(SNAPSHOT, tag=value) if column == "tag" else None)
    if isinstance(value, dict):  # a node's properties: the unset ones (null) only lengthen the cell
        value = {k: v for k, v in value.items() if v is not None}
    return Cell(short_name(json.dumps(value, separators=(", ", ": "), default=str), CELL_CHARS))


def columns(rows: list[dict[str, Any]]) -> list[str]:
    """Every column of the rows, in the order they first appear (a query returns the same in each)."""
    return list(dict.fromkeys(key for row in rows for key in row))


# --- the Neo4j Browser


def browser_link(questions: Callable[[], Questions], stored: StoredQuery, bound: Mapping[str, Any]) -> str | None:
    """The Browser with the query and its parameters in its editor; None when its address is unknown
    (a Neo4j of one's own, given by NEO4J_URI or the config file, says nothing of its HTTP port)."""
    if not questions().database.connection.managed:
        return None
    # One `:param` per parameter, each a statement (`;`), then the query: the Browser runs them in turn.
    # JSON literals are Cypher literals too (strings, numbers, true/false, null, lists).
    lines = [f":param {p.name} => {json.dumps(bound.get(p.name), ensure_ascii=False)};" for p in stored.parameters]
    text = "\n".join([*lines, stored.cypher])
    return BROWSER_EDIT.format(port=config.managed_settings().http_port, text=quote(text, safe=""))


def defaults(stored: StoredQuery) -> dict[str, Any]:
    """The parameters before the form is sent: the defaults; a required one is null, to fill in."""
    return {p.name: None if p.required else p.default for p in stored.parameters}


# --- the pages


def catalog_data() -> dict[str, Any]:
    return {"queries": [q.as_dict() for q in catalog.catalog().values()]}


def run_query(
    questions: Callable[[], Questions], stored: StoredQuery, sent: Mapping[str, list[str]]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The bound parameters and the rows, as the REST route binds, runs and encodes them."""
    bound = stored.bind(sent)
    ask = questions()
    rows = catalog.run(ask.database, stored.name, bound, timeout=ask.timeout, scope=ask.scope)
    return bound, jsonable_encoder(rows)


def query_data(stored: StoredQuery, rows: list[dict[str, Any]] | None, browser: str | None) -> dict[str, Any]:
    """What the page shows as data (its JSON twin): the query, and its rows once run."""
    return {
        "query": {**stored.as_dict(), "cypher": stored.cypher, "notes": stored.notes},
        "rows": None if rows is None else rows[:ROW_LIMIT],
        "row_count": None if rows is None else len(rows),
        "truncated": rows is not None and len(rows) > ROW_LIMIT,
        "row_limit": ROW_LIMIT,
        "neo4j_browser": browser,
    }


def view_data(
    stored: StoredQuery,
    sent: Mapping[str, list[str]],
    bound: Mapping[str, Any],
    rows: list[dict[str, Any]],
    problem: HeapdbError | None,
) -> dict[str, Any]:
    """What only the HTML page needs: the form's fields, the error, the rows as cells."""
    tag = bound.get("tag") if isinstance(bound.get("tag"), str) else None
    shown = columns(rows)
    return {
        "fields": [Field(p, field_text(p, sent)) for p in stored.parameters],
        "error": str(problem) if problem else None,
        "columns": shown,
        "cells": [[cell(c, row.get(c), tag) for c in shown] for row in rows],
    }


def add_query_pages(app: FastAPI, questions: Callable[[], Questions]) -> None:
    """The catalog and query pages' routes on ``app``, twins first (``/queries/x.json`` would also
    match ``/queries/{name}``), none in the OpenAPI description (that one is the API's)."""

    def query(request: Request, name: str, twin: bool) -> Response:
        stored = catalog.get(name)  # NotFound: the app's 404 page
        sent = sent_values(request)
        ran = bool(request.url.query) or not stored.parameters
        bound, rows, problem = defaults(stored), None, None
        if ran:
            try:
                bound, rows = run_query(questions, stored, sent)
            except HeapdbError as error:
                if wants_json(request, twin) or error.http_status >= 500:
                    raise  # JSON for the twin, as the API answers; the service's own trouble as usual
                problem = error
        data = query_data(stored, rows, browser_link(questions, stored, bound))
        if not wants_json(request, twin):
            data |= view_data(stored, sent, bound, data["rows"] or [], problem)
        response = respond(request, "query.html", data, twin)
        if problem is not None:
            response.status_code = problem.http_status  # the page with its form, as an error
        return response

    def routes(twin: bool) -> None:

        def queries_route(request: Request) -> Response:
            return respond(request, "queries.html", catalog_data(), twin)

        def query_route(request: Request, name: str) -> Response:
            return query(request, name, twin)

        app.add_api_route(links.page_route(QUERIES, twin), queries_route, include_in_schema=False)
        app.add_api_route(links.page_route(QUERY, twin), query_route, include_in_schema=False)

    routes(twin=True)
    routes(twin=False)
