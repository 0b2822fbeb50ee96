"""HTML pages over the same questions as the REST API: the snapshots, one snapshot, one object.

Every page is a permalink with a JSON twin: the same URL with ``.json`` appended (or asked with
``Accept: application/json``) answers the data the page shows, as the API's answers are shaped. The
pages are rendered on the server with Jinja2 (autoescaped), link to each other, and need no
JavaScript. They ask :class:`~heapdb.queries.questions.Questions`, the core the CLI and ``/api`` ask.

A tag is one percent-encoded path segment, as in the API. A tag that itself ends in ``.json`` has
its last dot encoded in page links (``%2E``), so its page is not taken for another tag's JSON twin.
The pages' URLs are declared in :mod:`heapdb.service.links`, with the API's.
"""

from __future__ import annotations

import inspect
import re
import secrets
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import parse_qs, urlencode

import anyio.to_thread
from fastapi import FastAPI, Query, Request, Response
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup
from pydantic import Field

from heapdb.errors import NotComputed, NotFound
from heapdb.loader.inspections.dom import shows_dom
from heapdb.loader.inspections.objects import shows_objects
from heapdb.loader.store import Snapshot, list_snapshots
from heapdb.loader.store.prune import SUMMARY_ANSWERS, load_again
from heapdb.loader.store.snapshots import BUILD_META
from heapdb.queries import params
from heapdb.queries.questions import Questions
from heapdb.queries.results import ObjectDetails, ObjectInfo, ReferenceLevel, Retains
from heapdb.renderers import drawing, text
from heapdb.renderers import treemap as treemaps
from heapdb.service import links, trees
from heapdb.service.links import JSON_SUFFIX, LOGIN, page_path
from heapdb.units import human_bytes

# The pages' routes by the names this module's callers know them by.
SNAPSHOTS = links.HOME_PAGE
SNAPSHOT = links.SNAPSHOT_PAGE
OBJECT = links.OBJECT_PAGE
TREEMAP = links.TREEMAP_PAGE
TOP_ROWS = 20  # top retainers on a snapshot's page
# Rows of each inspection on a snapshot's page: string contents, detached DOM paths, components, collections.
WASTE_ROWS = 5
NEIGHBOURS = 20  # references listed each way on an object's page
RETAINS_DEPTH = 4  # levels of what an object retains, on its page
RETAINS_LIMIT = 60  # objects of those levels in all, largest first level by level (Questions.retains' limit)

templates = Environment(
    loader=PackageLoader("heapdb.service", "templates"),
    autoescape=select_autoescape(default=True),
)


def object_page(tag: str, object_id: int) -> str:
    return page_path(OBJECT, tag=tag, object_id=object_id)


def treemap_page(tag: str, root: int | None = None, limits: treemaps.Limits = treemaps.DEFAULTS) -> str:
    """The treemap page rooted at ``root`` (the snapshot's root: None), keeping non-default limits."""
    query = {"root": root} if root is not None else {}
    query |= limits.model_dump(exclude={"root"}, exclude_defaults=True)
    base = page_path(TREEMAP, tag=tag)
    return f"{base}?{urlencode(query)}" if query else base


templates.globals.update(
    human_bytes=human_bytes,
    treemap_page=treemap_page,
    treemap_labels=treemaps.labels,
    reference_label=text.reference_label,
    snapshot_page=lambda tag: page_path(SNAPSHOT, tag=tag),
    object_page=object_page,
    api_docs=links.API_DOCS,
    home_page=links.HOME_PAGE,
    static_path=links.STATIC,
    login_page=LOGIN,
    summary_answers=SUMMARY_ANSWERS,  # what a pruned snapshot's page says it still answers
    load_again=load_again,  # ... and how to bring its objects back
    build_meta=BUILD_META,
)


def wants_json(request: Request, twin: bool) -> bool:
    accept = request.headers.get("accept", "")
    return twin or ("application/json" in accept and "text/html" not in accept)


def respond(request: Request, template: str, data: dict[str, Any], twin: bool) -> Response:
    """``data`` as JSON for a twin (or a client that asks for JSON), else rendered by ``template``
    with a link to its twin: the same URL with ``.json``, the same query."""
    if wants_json(request, twin):
        return JSONResponse(links.to_json(data))
    here = request.url.path
    twin_url = links.twin_of(here)
    if request.url.query:  # the same view's data: a treemap's root, a table's sort
        twin_url += "?" + request.url.query
    html = templates.get_template(template).render(**data, json_twin=twin_url)
    return HTMLResponse(html)


# --- signing in: with HEAPDB_API_TOKEN set, a browser gives the token once and keeps it in a cookie

TOKEN_COOKIE = "heapdb_token"
# What anyone may fetch when a token is set: the sign-in page, the style sheet, the API's description.
_OPEN = frozenset({LOGIN, links.API_DOCS, links.OPENAPI})


def open_to_all(path: str) -> bool:
    return path in _OPEN or path.startswith(links.STATIC + "/")


def signed_in(request: Request, token: str) -> bool:
    given = request.cookies.get(TOKEN_COOKIE, "")
    return bool(given) and secrets.compare_digest(given.encode(), token.encode())


def sign_in_first(request: Request) -> Response | None:
    """A page asked for without the token: off to the sign-in page (None for the API and JSON twins)."""
    path = request.url.path
    if links.is_api(path) or path.endswith(JSON_SUFFIX) or wants_json(request, False):
        return None
    return RedirectResponse(f"{LOGIN}?{urlencode({'next': _local(request.url.path)})}", status_code=303)


def _local(target: str) -> str:
    """Only a path on this site is a place to go back to after signing in (never another host)."""
    return target if target.startswith("/") and not target.startswith("//") else links.HOME_PAGE


def add_pages(
    app: FastAPI,
    questions: Callable[[], Questions],
    token: str | None,
    scoped: Callable[[str], bool] | None = None,
) -> None:
    """The pages' routes on ``app`` (not in the OpenAPI description: that one is the API's).
    ``scoped`` says whether a token is one per team (None: those are off), which signs in too."""
    app.mount(links.STATIC, StaticFiles(directory=Path(__file__).parent / "static"), name="static")
    needed = token is not None or scoped is not None

    def login_form(request: Request, next: str = links.HOME_PAGE, wrong: bool = False) -> Response:
        html = templates.get_template("login.html").render(
            next=_local(next), wrong=wrong, needed=needed, json_twin=None
        )
        return HTMLResponse(html, status_code=401 if wrong else 200)

    async def login(request: Request) -> Response:
        form = parse_qs((await request.body()).decode("utf-8", "replace"))
        given, target = form.get("token", [""])[0], _local(form.get("next", [links.HOME_PAGE])[0])
        known = token is not None and secrets.compare_digest(given.encode(), token.encode())
        if not known and scoped is not None and given:
            known = await anyio.to_thread.run_sync(scoped, given)
        if not known:
            return login_form(request, target, wrong=needed)
        response = RedirectResponse(target, status_code=303)
        # HttpOnly: no script reads it; SameSite=Strict: no other site's page sends it.
        response.set_cookie(TOKEN_COOKIE, given, httponly=True, samesite="strict", secure=request.url.scheme == "https")
        return response

    app.add_api_route(LOGIN, login_form, include_in_schema=False, methods=["GET"])
    app.add_api_route(LOGIN, login, include_in_schema=False, methods=["POST"])

    def snapshots(request: Request, twin: bool) -> Response:
        ask = questions()
        found = [s for s in list_snapshots(ask.database, include_incomplete=True) if ask.scope.reads(s.tag)]
        return respond(request, "snapshots.html", {"snapshots": [s.as_dict() for s in found]}, twin)

    def snapshot(request: Request, tag: str, twin: bool, p: params.Types) -> Response:
        ask = questions()
        found = ask.snapshot(tag)
        types = ask.types(found, p)
        data = {
            "snapshot": found.as_dict(),
            **{k: v for section in SECTIONS for k, v in section.shown(ask, found).items()},
            # A pruned snapshot has no objects to rank: its page shows the types and a notice.
            "top": [] if found.summary else ask.top(found, params.Top(limit=TOP_ROWS)),
            "suspects": None if found.summary else ask.suspects(found, params.Suspects()),
            "types": types,
            "sort": p.sort,
            "limit": p.limit,
            "more": min(p.limit * 4, params.MAX_GROUP_LIMIT)
            if len(types) == p.limit < params.MAX_GROUP_LIMIT
            else None,
        }
        return respond(request, "snapshot.html", data, twin)

    def object_(request: Request, tag: str, object_id: int, twin: bool) -> Response:
        view = ObjectView(**query_values(request, ObjectView))  # a bad value: a 422 page, not a 500
        ask = questions()
        found = ask.snapshot(tag)
        # Four questions, asked side by side: Neo4j answers each on its own thread, so the page takes
        # about as long as the slowest (an array's many references, or a wide dominator subtree).
        with ThreadPoolExecutor(4) as pool:
            why_ = pool.submit(ask.why_alive, found, object_id, view.why)
            details_ = pool.submit(ask.object, found, object_id, params.ObjectDetails(limit=view.limit))
            retains_ = pool.submit(
                ask.retains, found, object_id, params.Retains(depth=RETAINS_DEPTH, limit=RETAINS_LIMIT)
            )
            dominators_ = pool.submit(ask.dominators, found, object_id)
            why, details, retains = why_.result(), details_.result(), retains_.result()
            answers = {"details": details, "why": why, "dominators": dominators_.result(), "retains": retains}
        data = {"snapshot": found.as_dict(), "view": view.model_dump(), **answers}
        if not wants_json(request, twin):
            picture = drawing.svg(why, link=lambda i: object_page(found.tag, i))
            data["why_svg"] = Markup(picture[picture.index("<svg") :])
            data["tree"] = retained_tree(retains)
            data["ignored_objects"] = {i: brief(ask, found, i) for i in view.ignore_id}
            data["here"] = lambda **changes: object_view_url(found.tag, object_id, view, **changes)
            data |= object_trees(ask, found, details, view)
            more = min(view.limit * 4, params.MAX_LIMIT)
            shown_all = details.incoming_count <= view.limit and details.outgoing_count <= view.limit
            data["more"] = None if shown_all or view.limit >= params.MAX_LIMIT else more
        return respond(request, "object.html", data, twin)

    def treemap(request: Request, tag: str, twin: bool, limits: treemaps.Limits) -> Response:
        ask = questions()
        found = ask.snapshot(tag)
        root_id = limits.root if limits.root is not None else found.root_id
        if root_id is None:
            raise NotFound(f"snapshot {found.tag!r} has no root to draw a treemap from")
        chain = ask.dominators(found, root_id)
        view = treemaps.lay_out(ask, found, chain.target, limits)
        data = {"snapshot": found.as_dict(), "chain": chain.chain, **view.as_dict()}
        if not wants_json(request, twin):
            data["view"] = view
        return respond(request, "treemap.html", data, twin)

    def routes(twin: bool) -> None:

        def snapshots_route(request: Request) -> Response:
            return snapshots(request, twin)

        def snapshot_route(request: Request, tag: str, p: Annotated[params.Types, Query()]) -> Response:
            return snapshot(request, tag, twin, p)

        # The view's parameters (ObjectView) are read from the query by object_ itself, so that a bad
        # one is a ParameterError: an HTML page with a 422 (FastAPI's own check would answer JSON).
        def object_route(request: Request, tag: str, object_id: int) -> Response:
            return object_(request, tag, object_id, twin)

        app.add_api_route(links.page_route(SNAPSHOTS, twin), snapshots_route, include_in_schema=False)
        app.add_api_route(links.page_route(SNAPSHOT, twin), snapshot_route, include_in_schema=False)
        app.add_api_route(links.page_route(OBJECT, twin), object_route, include_in_schema=False)

        def treemap_route(request: Request, tag: str, limits: Annotated[treemaps.Limits, Query()]) -> Response:
            return treemap(request, tag, twin, limits)

        app.add_api_route(links.page_route(TREEMAP, twin), treemap_route, include_in_schema=False)

    routes(twin=True)  # first: a twin's URL would also match its page's route, the other way round not
    routes(twin=False)


WHOLE_NUMBERS = ("object_id", "run_id")  # the path values of pages that are numbers (others are text)


def add_page(app: FastAPI, page: str, handler: Callable[..., Response]) -> None:
    """``page`` (a route template of :mod:`heapdb.service.links`) and its JSON twin on ``app``, each
    answered by ``handler(request, twin, **path values)``; the twin first, since a twin's URL would
    also match its page's route (the other way round not). Path values are text, ``object_id`` and
    ``run_id`` whole numbers; the query is the handler's to read (a bad value then is an HTML 422 page)."""
    names = re.findall(r"\{(\w+)", page)
    keyword = inspect.Parameter.KEYWORD_ONLY
    signature = inspect.Signature(
        [
            inspect.Parameter("request", keyword, annotation=Request),
            *(inspect.Parameter(n, keyword, annotation=int if n in WHOLE_NUMBERS else str) for n in names),
        ]
    )
    for twin in (True, False):

        def route(request: Request, _twin: bool = twin, **values: Any) -> Response:
            return handler(request, twin=_twin, **values)

        route.__signature__ = signature  # type: ignore[attr-defined]
        app.add_api_route(links.page_route(page, twin), route, include_in_schema=False)


# --- the object page's view: why-alive ignores and how many references, all in the URL


class ObjectView(params.Why):
    """An object page's query: the why-alive parameters (ignores, ``k``) and the references' limit."""

    limit: int = Field(NEIGHBOURS, ge=1, le=params.MAX_LIMIT, description="References to list in each direction.")
    open: tuple[str, ...] = Field(
        (), description="Open nodes of the retainers (in:ID.ID...) and containment (out:ID.ID...) trees (repeatable)."
    )

    @property
    def why(self) -> params.Why:
        return params.Why(**self.model_dump(include=set(params.Why.model_fields)))


def object_trees(ask: Questions, found: Snapshot, details: ObjectDetails, view: ObjectView) -> dict[str, Any]:
    """The object page's retainers and containment trees, their first levels the references
    ``details`` lists, the nodes ``view`` opens read below them."""
    opened = trees.parse_open(view.open)
    subject = details.object

    def toggle(direction: str, path: trees.Path, opening: bool) -> str:
        value = trees.open_value(direction, path)
        now = trees.closed(view.open, direction, path)
        if opening:
            now = [v for v in now if not value.startswith(v + ".")] + [value]  # below an open node: implied
        elif len(path) > 1:
            now.append(trees.open_value(direction, path[:-1]))  # its holder stays open
        anchor = "retainers-title" if direction == "in" else "containment-title"
        return object_view_url(found.tag, subject.id, view, open=sorted(set(now))) + "#" + anchor

    firsts = {
        "in": ReferenceLevel(found.tag, subject, "in", 0, details.incoming_count, details.incoming),
        "out": ReferenceLevel(found.tag, subject, "out", 0, details.outgoing_count, details.outgoing),
    }
    answers = trees.read_levels(ask, found, subject.id, opened)
    levels = {d: trees.level(d, subject.id, first, answers=answers) for d, first in firsts.items()}
    return {"retainers": levels["in"], "containment": levels["out"], "toggle": toggle}


def query_values(request: Request, model: type[params.Params]) -> dict[str, Any]:
    """The query's values of ``model``'s fields: every value of a repeatable one, the last of others.
    An empty value of a field whose default is None is no value (a form's "any" choice)."""
    values: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        given = request.query_params.getlist(name)
        if field.default is None:
            given = [g for g in given if g != ""]
        if given:
            values[name] = tuple(given) if isinstance(field.default, tuple) else given[-1]
    return values


def object_view_url(tag: str, object_id: int, view: ObjectView, **changes: Any) -> str:
    """The object page with ``view`` changed by ``changes``, defaults left out of the query."""
    changed = {k: tuple(v) if isinstance(v, list) else v for k, v in changes.items()}  # () is the default
    query = view.model_copy(update=changed).model_dump(exclude_defaults=True)
    base = object_page(tag, object_id)
    return f"{base}?{urlencode(query, doseq=True)}" if query else base


def brief(ask: Questions, found: Snapshot, object_id: int) -> ObjectInfo | None:
    """An object of the snapshot without its references; None for an id the snapshot has not."""
    found_objects = ask.briefs(found, [object_id])
    return found_objects[0] if found_objects else None


def retained_tree(retains: Retains) -> dict[str, Any]:
    """What the target retains as nested nodes under their dominators, largest first, from the target's
    own: each node ``{"object", "children", "unlisted"}``, ``unlisted`` counting the objects it
    retains that the bounds left out."""
    info: dict[int, ObjectInfo] = {o.id: o for o in retains.objects}
    children: dict[int, list[int]] = {}
    for parent, child in retains.edges:  # level by level, largest first: so is each parent's share
        children.setdefault(parent, []).append(child)

    def node(object_id: int) -> dict[str, Any]:
        kids = [node(c) for c in children.get(object_id, [])]
        o = info[object_id]
        # In the dominator tree an object retains itself and its children's subtrees, nothing else.
        unlisted = o.retained_count - 1 - sum(k["object"].retained_count for k in kids)
        return {"object": o, "children": kids, "unlisted": max(unlisted, 0)}

    return node(retains.target.id)


def error_page(request: Request, status: int, message: str, retry_after: int | None = None) -> Response | None:
    """An HTML error for a page request (None for the API and JSON twins, which answer JSON). With
    ``retry_after`` (an answer still being worked out), the page asks again by itself then."""
    path = request.url.path
    if links.is_api(path) or path.endswith(JSON_SUFFIX) or wants_json(request, False):
        return None
    html = templates.get_template("error.html").render(
        status=status, message=message, json_twin=None, retry_after=retry_after
    )
    headers = None if retry_after is None else {"Retry-After": str(retry_after)}
    return HTMLResponse(html, status_code=status, headers=headers)


def _every(_format: str | None) -> bool:
    return True


@dataclass(frozen=True)
class Section:
    """One inspection on the snapshot page: the page data's key (its JSON twin's too), the question
    and parameters that answer it, the formats whose pages ask it, and those whose pages say why it
    is empty (``KEY_note``) where it was not computed or is still being worked out. Elsewhere an
    inspection that is not there leaves its section out (a snapshot stored before it existed, a
    format without what it needs), as each section shows only what there is."""

    key: str
    question: str  # the method of heapdb.queries.questions.Questions
    asked: params.Params
    asked_for: Callable[[str | None], bool] = _every
    noted_for: Callable[[str | None], bool] | None = None  # None: never a note

    def shown(self, ask: Questions, found: Snapshot) -> dict[str, Any]:
        answer, note = None, None
        if self.asked_for(found.format):
            try:
                answer = getattr(ask, self.question)(found, self.asked)
            except NotComputed as e:
                note = str(e) if self.noted_for is not None and self.noted_for(found.format) else None
        return {self.key: answer} if self.noted_for is None else {self.key: answer, f"{self.key}_note": note}


# The snapshot page's inspections, in the order snapshot.html shows them.
SECTIONS = (
    Section("strings", "strings", params.Strings(limit=WASTE_ROWS), noted_for=_every),
    Section("dom", "dom", params.Dom(limit=WASTE_ROWS), asked_for=shows_dom, noted_for=_every),
    Section("react", "react", params.React(limit=WASTE_ROWS), asked_for=shows_dom, noted_for=_every),
    Section("react_hooks", "react_hooks", params.ReactHooks(limit=WASTE_ROWS), asked_for=shows_dom),
    Section("stale", "stale", params.Stale(limit=WASTE_ROWS), asked_for=shows_dom),
    Section("dup_objects", "dup_objects", params.DupObjects(limit=WASTE_ROWS), noted_for=shows_objects),
    Section("fill", "fill", params.Fill(limit=WASTE_ROWS)),
    Section("held", "held", params.Held(limit=WASTE_ROWS)),
    Section("lifecycles", "lifecycles", params.Lifecycles(limit=WASTE_ROWS)),
    Section("owners", "owners", params.Owners(limit=WASTE_ROWS)),
)
