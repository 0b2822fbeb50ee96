"""Every URL of the service, declared once: the API's routes, the pages and their JSON twins, and
how a link is built from ids.

The routes are declared with these templates (``@app.get(links.TOP)``), links are built from the
same templates (:func:`path`, :func:`page_path`), and ``heapdb push`` posts to :data:`SNAPSHOTS`
through them too, so a URL and the route that answers it cannot drift apart.

Answers name objects by :class:`~heapdb.queries.results.ObjectRef`; JSON answers, from the service
and from the CLI's ``--format json`` alike, carry them as paths of the why-alive route
(:func:`why_path`), so a link pasted from either works against ``heapdb serve``.

A tag may hold any character, ``/`` included (``release/1.2``): in a path it is one segment,
percent-encoded (:func:`path`), and the service matches routes on the path as sent, before
decoding, and decodes the tag afterwards (the ``segment`` converter in :mod:`heapdb.service.app`). So
``/api/snapshots/release%2F1.2/top`` is the snapshot ``release/1.2``, never a route below
``release``.

Every page is a permalink with a JSON twin: the same path with ``.json`` appended (:func:`twin_of`).
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

from heapdb.queries.results import ObjectRef, to_data

SEGMENT_CONVERTER = "segment"  # the route converter of a percent-encoded segment (a tag)

# --- the REST API (heapdb.service.app, .intake, .rule_routes)
API = "/api"
HEALTH = API + "/health"
SNAPSHOTS = API + "/snapshots"  # GET: the snapshots; POST: an upload (heapdb push)
SNAPSHOT = SNAPSHOTS + "/{tag:segment}"
FIND = SNAPSHOT + "/find"
INSTANCES = SNAPSHOT + "/instances"
SEARCH = SNAPSHOT + "/search"
TOP = SNAPSHOT + "/top"
TYPES = SNAPSHOT + "/types"
LIFELINES = SNAPSHOT + "/lifelines"
HEAPDOMSTATS = SNAPSHOT + "/heapdomstats"
STRINGS = SNAPSHOT + "/strings"
DOM = SNAPSHOT + "/dom"
REACT = SNAPSHOT + "/react"
REACT_HOOKS = SNAPSHOT + "/react-hooks"
HELD = SNAPSHOT + "/held"
STALE = SNAPSHOT + "/stale"
DUP_OBJECTS = SNAPSHOT + "/dup-objects"
FILL = SNAPSHOT + "/fill"
OWNERS = SNAPSHOT + "/owners"
LIFECYCLES = SNAPSHOT + "/lifecycles"
SUSPECTS = SNAPSHOT + "/suspects"
OBJECT = SNAPSHOT + "/objects/{object_id}"
WHY = OBJECT + "/why"
DOMINATORS = OBJECT + "/dominators"
RETAINS = OBJECT + "/retains"
REFERENCES = OBJECT + "/references"
DIFF = API + "/diff/{before:segment}/{after:segment}"
LEAKS = API + "/leaks"
GROWTH = API + "/growth"
TYPE_HISTORY = API + "/type-history"  # one type's totals per loaded build
UNBOUND = API + "/unbound"
GATE = API + "/gate"
SIGNATURES = API + "/signatures"
SIGNATURE = SIGNATURES + "/{sig}"
GATE_RUNS = API + "/gate-runs"  # the CI gate's recorded runs, newest first
GATE_RUN = GATE_RUNS + "/{id}"
QUERIES = API + "/queries"
QUERY = QUERIES + "/{name}"
RULES = API + "/rules"
RULE = RULES + "/{name}"
JOBS = API + "/jobs"
JOB = JOBS + "/{job_id}"
MCP = "/mcp"  # heapdb mcp --transport http: the Model Context Protocol over streamable HTTP
API_DOCS = "/docs"  # FastAPI's: the API's description, to read and to try
OPENAPI = "/openapi.json"

# --- the pages (heapdb.service.pages, .compare_pages, .query_pages, .rule_pages, .gate_run_pages...),
# each with its JSON twin
HOME_PAGE = "/"  # the snapshots
SNAPSHOT_PAGE = "/snapshots/{tag:segment}"
OBJECT_PAGE = SNAPSHOT_PAGE + "/objects/{object_id}"
TREEMAP_PAGE = SNAPSHOT_PAGE + "/treemap"
TYPE_PAGE = SNAPSHOT_PAGE + "/types/{type:segment}"  # a type's objects (DevTools' Summary, opened)
OWNERS_PAGE = SNAPSHOT_PAGE + "/owners"  # memory by package, file, category... (heapdb owners)
TREE_PAGE = OBJECT_PAGE + "/tree"  # one level of an object's retainers or containment tree
SEARCH_PAGE = "/search"
ASK_PAGE = "/ask/{question}"  # any question, its subject and parameters in the query
RULES_PAGE = "/rules"  # the rule sets
RULE_PAGE = RULES_PAGE + "/{name}"
GATE_RUNS_PAGE = "/gate-runs"  # the CI gate's recorded runs
GATE_RUN_PAGE = GATE_RUNS_PAGE + "/{run_id}"
COMPARE_PAGE = "/compare"
LEAKS_PAGE = COMPARE_PAGE + "/leaks"
GROWTH_PAGE = COMPARE_PAGE + "/growth"
QUERIES_PAGE = "/queries"
QUERY_PAGE = QUERIES_PAGE + "/{name}"
LOGIN = "/login"  # no twin
STATIC = "/static"  # the style sheet, the pages' small client and the icon
JSON_SUFFIX = ".json"

_PLACEHOLDER = re.compile(r"\{(\w+)(?::\w+)?\}")


def encode_segment(value: object) -> str:
    """One path segment: every character but the unreserved ones percent-encoded (``/`` too)."""
    return quote(str(value), safe="")


def path(template: str, **values: object) -> str:
    """A route ``template`` (with or without converters) filled in, each value one encoded segment."""
    return _PLACEHOLDER.sub(lambda m: encode_segment(values[m.group(1)]), template)


def is_api(url_path: str) -> bool:
    """Whether a request's path is the API's (JSON answers, bearer tokens), not a page's."""
    return url_path.startswith(API + "/")


def twin_of(page: str) -> str:
    """A page's JSON twin: its route template or path with ``.json`` appended (``/`` has ``/.json``)."""
    return page + JSON_SUFFIX


def page_route(page: str, twin: bool) -> str:
    """The route template of ``page``, or of its JSON twin."""
    return twin_of(page) if twin else page


def page_path(template: str, **values: object) -> str:
    """A page's URL. A segment that ends in ``.json`` (a tag such as ``v1.json``) gets that dot
    encoded (``%2E``), so its page is not taken for another tag's JSON twin."""
    segments = path(template, **values).split("/")  # a tag's own slashes are %2F by now
    return "/".join(
        seg[: -len(JSON_SUFFIX)] + "%2E" + JSON_SUFFIX[1:] if seg.endswith(JSON_SUFFIX) else seg for seg in segments
    )


def why_path(ref: ObjectRef) -> str:
    """The why-alive permalink of an object (add ``?format=dot`` or ``svg`` for a drawing)."""
    return path(WHY, tag=ref.tag, object_id=ref.id)


def to_json(answer: Any) -> Any:
    """An answer as JSON-ready data, its object references as why-alive permalinks."""
    return to_data(answer, why_path)
