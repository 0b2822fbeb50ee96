"""The compare pages: what changed between builds, as HTML pages with JSON twins.

- ``/compare?before=A&after=B&by=type|path|bucket``: the diff by type, retainer path or owner bucket, a table sorted by
  the column a person picks (``sort=``), with the diff's flame graph of what grew drawn inline (the
  same drawing as ``heapdb diff --format svg``); ``by=object``: DevTools' Comparison view, objects
  matched by id, each type's new, deleted and delta counts and sizes, its row opening its new objects;
  ``by=dominator``: one level of the dominator tree's groups (``under=KEY`` the group drilled into),
  each row drilling further and naming its largest objects;
- ``/compare/leaks?tag=A&tag=B&tag=C``: memlab's three-snapshot leak candidates, each cluster with
  its example objects linked to their pages;
- ``/compare/growth?tag=A&tag=B&tag=C...``: the types or paths that grew at every step.

Each page's twin is the same URL with ``.json`` inserted before the query (``/compare.json?...``),
answering the page's data as the API shapes it (:mod:`heapdb.service.pages`). Tags come in the query
string, as the snapshots page's compare form sends them; a missing or unknown tag is a 422 or 404
error page (a JSON error for a twin), never a 500.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import FastAPI, Query, Request, Response
from markupsafe import Markup

from heapdb.errors import ParameterError
from heapdb.queries import params
from heapdb.queries.dominator_diff import DominatorDiff
from heapdb.queries.questions import Questions
from heapdb.queries.results import Change, Diff, ObjectDiff
from heapdb.renderers import charts, text
from heapdb.service import links
from heapdb.service.pages import respond, templates, wants_json

# The pages' routes (declared in heapdb.service.links) by the names this module's callers know them by.
COMPARE = links.COMPARE_PAGE
LEAKS = links.LEAKS_PAGE
GROWTH = links.GROWTH_PAGE
LEAK_TAGS = 3  # baseline, target, final: memlab's three snapshots

# The diff table's columns a person may sort by. The label sorts A to Z, the figures largest first;
# the default is the question's own order (largest growth first), which a stable sort keeps.
SORT_KEYS: dict[str, Callable[[Change], Any]] = {
    "label": lambda c: c.label,
    "count_before": lambda c: -c.count_before,
    "count_after": lambda c: -c.count_after,
    "size_before": lambda c: -c.size_before,
    "size_after": lambda c: -c.size_after,
    "size_delta": lambda c: -c.size_delta,
}
DEFAULT_SORT = "size_delta"

Tags = Annotated[list[str] | None, Query(description="the snapshots' tags, oldest first (repeat the key)")]
OneTag = Annotated[str | None, Query()]


def _query(path: str, values: Sequence[tuple[str, object]]) -> str:
    return f"{path}?{urlencode(values)}"


def compare_page(before: str, after: str, by: str = "type", sort: str = DEFAULT_SORT, under: str | None = None) -> str:
    """The diff page of two snapshots (the default sort left out of the URL); by dominator, ``under``
    is the key of the group drilled into."""
    values: list[tuple[str, object]] = [("before", before), ("after", after), ("by", by)]
    if sort != DEFAULT_SORT:
        values.append(("sort", sort))
    if under is not None:
        values.append(("under", under))
    return _query(COMPARE, values)


def leaks_page(tags: Sequence[str], by: str = "id") -> str:
    return _query(LEAKS, [*(("tag", t) for t in tags), ("by", by)])


def growth_page(tags: Sequence[str], by: str = "type") -> str:
    return _query(GROWTH, [*(("tag", t) for t in tags), ("by", by)])


# The snapshots page's compare form and these pages' own links build their URLs with these.
templates.globals.update(
    compare_path=COMPARE,
    leaks_path=LEAKS,
    growth_path=GROWTH,
    compare_page=compare_page,
    leaks_page=leaks_page,
    growth_page=growth_page,
    line_colour=charts.line_colour,
)


def _two_tags(before: str | None, after: str | None) -> tuple[str, str]:
    # Checked here, not by FastAPI: its validation error is a JSON body, and a person deserves a page.
    if not before or not after:
        raise ParameterError("compare needs two snapshots: before=TAG and after=TAG (pick them on the snapshots page)")
    return before, after


def _leak_tags(given: list[str] | None) -> tuple[str, str, str]:
    tags = [t for t in given or [] if t]  # an empty value is no tag (a form's blank field)
    if len(tags) != LEAK_TAGS:
        raise ParameterError(
            f"leak candidates need exactly {LEAK_TAGS} snapshots, oldest first (tag=baseline&tag=target&tag=final),"
            f" got {len(tags)}: tick three on the snapshots page"
        )
    baseline, target, final = tags
    return baseline, target, final


def _check(p: params.Diff, sort: str) -> None:
    """Refuse what the page cannot show before any database is asked."""
    if sort not in SORT_KEYS:
        raise ParameterError(f"sort: expected one of {', '.join(SORT_KEYS)}, got {sort!r}")


def _sorted(answer: Diff, sort: str) -> Diff:
    changes = sorted(answer.changes, key=SORT_KEYS[sort])
    return Diff(before=answer.before, after=answer.after, by=answer.by, changes=changes, notes=answer.notes)


def _flamegraph(ask: Questions, answer: Diff, limit: int) -> Markup | None:
    """What grew, by retainer path, drawn by the function the CLI and the API draw it with; a diff
    by type asks for the paths too (a type has no path to stack)."""
    by_path = (
        answer if answer.by == "path" else ask.diff(answer.before, answer.after, params.Diff(by="path", limit=limit))
    )
    assert isinstance(by_path, Diff)
    drawing = text.growth_flamegraph(by_path)
    return None if drawing is None else Markup(drawing[drawing.index("<svg") :])


def add_compare_pages(app: FastAPI, questions: Callable[[], Questions]) -> None:
    """The compare pages' routes on ``app``, twins first (not in the OpenAPI description)."""

    def compare(request: Request, twin: bool, before: str, after: str, p: params.Diff, sort: str) -> Response:
        _check(p, sort)
        ask = questions()
        answer = ask.diff(before, after, p)
        if isinstance(answer, ObjectDiff):  # DevTools' Comparison view: new, deleted, delta per type
            return respond(request, "compare_objects.html", {"diff": answer}, twin)
        if isinstance(answer, DominatorDiff):  # one level of the dominator tree, each group drilled into
            return respond(request, "compare_dominator.html", {"diff": answer}, twin)
        assert isinstance(answer, Diff)
        data: dict[str, Any] = {"diff": _sorted(answer, sort), "sort": sort, "limit": p.limit}
        if not wants_json(request, twin):
            data |= {"flamegraph": _flamegraph(ask, answer, p.limit), "sorts": list(SORT_KEYS)}
        return respond(request, "compare.html", data, twin)

    def leaks(request: Request, twin: bool, tags: tuple[str, str, str], p: params.Leaks) -> Response:
        return respond(request, "compare_leaks.html", {"leaks": questions().leaks(*tags, p)}, twin)

    def growth(request: Request, twin: bool, tags: list[str], p: params.Growth) -> Response:
        answer = questions().growth(tags, p)
        data: dict[str, Any] = {"growth": answer}
        if not wants_json(request, twin) and answer.rows:
            series = [(g.label, g.sizes) for g in answer.rows]
            data |= {
                "trend": charts.trend_svg(answer.tags, series, "Shallow size"),
                "drawn": series[: charts.TREND_SERIES],
            }
        return respond(request, "compare_growth.html", data, twin)

    def routes(twin: bool) -> None:

        def compare_route(
            request: Request,
            p: Annotated[params.Diff, Query()],
            before: OneTag = None,
            after: OneTag = None,
            sort: str = DEFAULT_SORT,
        ) -> Response:
            return compare(request, twin, *_two_tags(before, after), p, sort)

        def leaks_route(request: Request, p: Annotated[params.Leaks, Query()], tag: Tags = None) -> Response:
            return leaks(request, twin, _leak_tags(tag), p)

        def growth_route(request: Request, p: Annotated[params.Growth, Query()], tag: Tags = None) -> Response:
            # Questions.growth says how many snapshots it needs (three or more) and that they differ.
            return growth(request, twin, [t for t in tag or [] if t], p)

        app.add_api_route(links.page_route(COMPARE, twin), compare_route, include_in_schema=False)
        app.add_api_route(links.page_route(LEAKS, twin), leaks_route, include_in_schema=False)
        app.add_api_route(links.page_route(GROWTH, twin), growth_route, include_in_schema=False)

    routes(twin=True)  # first, as in heapdb.service.pages: a twin's URL must never reach a page's route
    routes(twin=False)
