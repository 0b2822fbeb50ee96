"""The pages for walking one snapshot as DevTools' Memory panel is walked: a type's objects, one level
of an object's retainers or containment tree, and the search every page's header box sends to.

- ``/snapshots/{tag}/types/{type}``: the type's objects, a page at a time, sorted by retained size,
  self size or distance, filtered by name, detachedness, bucket, owner and what is new since another
  snapshot (the types table and the compare page link here);
- ``/snapshots/{tag}/objects/{id}/tree?direction=in&path=12.34``: one level of the object's
  retainers (``in``) or containment (``out``) tree; ``fragment=1`` answers its rows alone, which the
  pages' client inserts into the object page's trees (:mod:`heapdb.service.trees`);
- ``/search?tag=T&text=...&mode=contains``: types by name, an object by id, strings by content.

Each has its JSON twin (``.json`` before the query), as every page does (:mod:`heapdb.service.pages`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal
from urllib.parse import urlencode

from fastapi import FastAPI, Request, Response
from fastapi.responses import HTMLResponse
from pydantic import Field

from heapdb.errors import NotFound
from heapdb.loader.inspections.dom import shows_dom
from heapdb.loader.owners import table as owner_table
from heapdb.loader.owners.table import OTHERS
from heapdb.loader.store import Snapshot
from heapdb.queries import params
from heapdb.queries.questions import Questions
from heapdb.queries.results import ObjectInfo
from heapdb.renderers import treemap as treemaps
from heapdb.service import links, trees
from heapdb.service.pages import add_page, brief, query_values, respond, templates, treemap_page, wants_json

TYPE = links.TYPE_PAGE
TREE = links.TREE_PAGE
SEARCH = links.SEARCH_PAGE
OWNERS = links.OWNERS_PAGE


def _with_query(base: str, values: dict[str, Any]) -> str:
    query = {k: v for k, v in values.items() if v is not None and v != ""}
    return f"{base}?{urlencode(query)}" if query else base


def type_page(tag: str, type_name: str, **query: Any) -> str:
    """A type's objects in a snapshot, with the page's query (sort, offset, filters) where given."""
    return _with_query(links.page_path(TYPE, tag=tag, type=type_name), query)


def tree_page(
    tag: str, subject: int, direction: str, path: trees.Path = (), offset: int = 0, *, fragment: bool = False
) -> str:
    """One level of ``subject``'s tree: the level of the object at the end of ``path``."""
    values = {
        "direction": direction,
        "path": ".".join(map(str, path)),
        "offset": offset or None,
        "fragment": 1 if fragment else None,
    }
    return _with_query(links.page_path(TREE, tag=tag, object_id=subject), values)


def search_page(tag: str | None = None, text: str = "", mode: str = "contains", offset: int = 0) -> str:
    return _with_query(
        SEARCH, {"tag": tag, "text": text, "mode": None if mode == "contains" else mode, "offset": offset or None}
    )


def owners_page(tag: str, level: str | None = None) -> str:
    """Memory by owner in a snapshot, at ``level`` (None: the first)."""
    return _with_query(links.page_path(OWNERS, tag=tag), {"level": level})


templates.globals.update(
    owners_page=owners_page,
    type_page=type_page,
    tree_page=tree_page,
    search_page=search_page,
    search_path=SEARCH,
    open_value=trees.open_value,
)


class OwnersView(params.Params):
    """The owners page's query: which level of owners."""

    level: str | None = Field(None, description="The level of owners (default: the first, package or category).")


class TreeView(params.Params):
    """A tree level's query: which tree, which node's level, where the page starts, rows alone or a page."""

    direction: Literal["in", "out"] = Field("in", description="in: the retainers tree; out: the containment tree.")
    path: str = Field("", max_length=2000, description="The node: ids from the object's first level down, dot-joined.")
    offset: int = Field(0, ge=0, le=params.MAX_OFFSET, description="How many references to pass over.")
    fragment: bool = Field(False, description="Answer the level's rows alone, for the pages' client to insert.")


class SearchView(params.Params):
    """The search page's query: the snapshot (the newest when none is given) and the search."""

    tag: str | None = Field(None, description="The snapshot to search (the newest ready one when not given).")
    text: str = Field("", max_length=1000, description="What to look for (empty: the form alone).")
    mode: Literal["exact", "prefix", "contains"] = Field("contains", description="How it must match.")
    offset: int = Field(0, ge=0, le=params.MAX_OFFSET, description="How many of each kind of match to pass over.")


def owner_names(snapshot: Snapshot) -> list[str]:
    """The first level's owners the snapshot's load stored (none before owners were), for a filter."""
    stored = snapshot.owners or {}
    levels = stored.get("levels") or [{}]
    return [r["name"] for r in levels[0].get("rows", []) if r["name"] != OTHERS]


def add_browse_pages(app: FastAPI, questions: Callable[[], Questions]) -> None:
    """The browsing pages' routes on ``app``, twins first (not in the OpenAPI description)."""

    def type_(request: Request, tag: str, type_name: str, twin: bool) -> Response:
        p = params.Instances(**(query_values(request, params.Instances) | {"type": type_name}))
        ask = questions()
        found = ask.snapshot(tag, all_objects=True)
        objects = ask.instances(found, p)
        data: dict[str, Any] = {
            "snapshot": found.as_dict(),
            "type": ask.type_row(found, type_name),
            "instances": objects,
        }
        if not wants_json(request, twin):
            chosen = p.model_dump(exclude={"type"}, exclude_defaults=True)
            data |= {
                "view": p,
                "here": lambda **changes: type_page(found.tag, type_name, **(chosen | changes)),
                "earlier": [s.tag for s in ask.snapshots() if s.tag != found.tag],
                "buckets": [b["name"] for b in found.buckets],
                "owners": owner_names(found),
                "shows_dom": shows_dom(found.format),
            }
        return respond(request, "type.html", data, twin)

    def tree(request: Request, tag: str, object_id: int, twin: bool) -> Response:
        view = TreeView(**query_values(request, TreeView))
        path = trees.parse_path(view.path)
        ask = questions()
        found = ask.snapshot(tag, objects=True)
        holder = path[-1] if path else object_id
        answer = ask.references(
            found, holder, params.References(direction=view.direction, offset=view.offset, limit=trees.LEVEL_ROWS)
        )
        if wants_json(request, twin):
            return respond(request, "tree.html", {"path": list(path), "level": answer}, twin)
        data = {
            "snapshot": found.as_dict(),
            "subject": brief(ask, found, object_id),
            "steps": _steps(ask, found, path),
            "level": trees.level(view.direction, object_id, answer, path),
            "fragment": view.fragment,
            # On this page a node opens as the next level's own page.
            "toggle": lambda direction, node, opening: tree_page(found.tag, object_id, direction, node),
        }
        if view.fragment:  # the rows alone, for the pages' client to insert
            return HTMLResponse(templates.get_template("tree.html").render(**data, json_twin=None))
        return respond(request, "tree.html", data, twin)

    def search(request: Request, twin: bool) -> Response:
        view = SearchView(**query_values(request, SearchView))
        ask = questions()
        ready = ask.snapshots()
        if view.tag is None and not ready:
            raise NotFound("no snapshots loaded: there is nothing to search (load one with `heapdb load FILE`)")
        found = ask.snapshot(view.tag if view.tag is not None else ready[-1].tag)
        results = None
        if view.text:
            results = ask.search(found, params.Search(text=view.text, mode=view.mode, offset=view.offset))
        data: dict[str, Any] = {"snapshot": found.as_dict(), "results": results}
        if not wants_json(request, twin):
            data |= {
                "view": view,
                "search_text": view.text,
                "tags": [s.tag for s in reversed(ready)],
                "limit": params.Search.model_fields["limit"].default,
            }
        return respond(request, "search.html", data, twin)

    def owners(request: Request, tag: str, twin: bool) -> Response:
        view = OwnersView(**query_values(request, OwnersView))
        ask = questions()
        found = ask.snapshot(tag)
        every = ask.owners(found, params.Owners(limit=owner_table.KEPT))
        level = view.level if view.level is not None else (every.levels[0].level if every.levels else None)
        chosen = ask.owners(found, params.Owners(level=level, limit=owner_table.KEPT)) if level else every
        data: dict[str, Any] = {"snapshot": found.as_dict(), "owners": chosen}
        if not wants_json(request, twin):
            data |= {
                "levels": [lv.level for lv in every.levels],
                "level": level,
                "first_level": level == (every.levels[0].level if every.levels else None),
                "heap": sum(r.self_size for r in chosen.levels[0].rows) if chosen.levels else 0,
                "treemap_by_owner": treemap_page(found.tag, limits=treemaps.Limits(colour="owner")),
            }
        return respond(request, "owners.html", data, twin)

    add_page(app, TYPE, lambda request, twin, tag, type: type_(request, tag, type, twin))
    add_page(app, OWNERS, lambda request, twin, tag: owners(request, tag, twin))
    add_page(app, TREE, lambda request, twin, tag, object_id: tree(request, tag, object_id, twin))
    add_page(app, SEARCH, search)


def _steps(ask: Questions, found: Snapshot, path: trees.Path) -> list[ObjectInfo | None]:
    """The objects on the path to a tree level, in one query (None for an id the snapshot has not)."""
    by_id = {o.id: o for o in ask.briefs(found, list(path))}
    return [by_id.get(i) for i in path]
