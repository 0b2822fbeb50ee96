"""One URL builder (heapdb/service/links.py): every route the service declares is one of its
templates, every template is routed, and links built from them are the URLs the routes answer."""

from __future__ import annotations

from starlette.routing import BaseRoute, Mount, Route

from heapdb.errors import DatabaseUnavailable
from heapdb.service import links
from heapdb.service.app import create_app

PAGES = {v for k, v in vars(links).items() if k.endswith("_PAGE")}
TEMPLATES = {v for k, v in vars(links).items() if k.isupper() and isinstance(v, str) and v.startswith("/")}
FASTAPI_OWN = {"/redoc", "/docs/oauth2-redirect"}  # FastAPI's, beside /docs and /openapi.json


def _unreachable() -> object:
    raise DatabaseUnavailable("no database in this test")


def route_paths() -> set[str]:
    app = create_app(_unreachable, token="")  # type: ignore[arg-type]  # never called: routes only

    def paths(routes: list[BaseRoute]) -> set[str]:
        found = set()
        for route in routes:
            if isinstance(route, Route | Mount):
                found.add(route.path)
            else:  # a router included whole (heapdb.service.intake's): FastAPI keeps it as it was declared
                found |= paths(route.original_router.routes)  # type: ignore[attr-defined]
        return found

    return paths(app.routes)


def test_every_route_is_declared_in_links_and_every_template_is_routed() -> None:
    routed = route_paths()
    declared = TEMPLATES | {links.twin_of(p) for p in PAGES}
    assert routed - FASTAPI_OWN == declared - {links.API, links.MCP}, "routes and links.py's templates differ"


def test_the_mcp_server_answers_at_its_declared_path() -> None:
    from heapdb.service.mcp import build_server, http_app

    app = http_app(build_server(connect=_unreachable), "127.0.0.1", token=None)  # type: ignore[arg-type]
    assert [route.path for route in app.routes] == [links.MCP]


def test_links_are_the_urls_the_routes_answer() -> None:
    assert links.path(links.TOP, tag="release/1.2") == "/api/snapshots/release%2F1.2/top"
    assert links.path(links.JOB, job_id="a-b_C9") == "/api/jobs/a-b_C9"
    assert links.path(links.RULE, name="owners.v2") == "/api/rules/owners.v2"
    assert links.page_path(links.OBJECT_PAGE, tag="v1.json", object_id=7) == "/snapshots/v1%2Ejson/objects/7"
    assert links.twin_of(links.HOME_PAGE) == "/.json"
    assert links.page_route(links.TREEMAP_PAGE, twin=True) == "/snapshots/{tag:segment}/treemap.json"
    assert links.page_route(links.TREEMAP_PAGE, twin=False) == links.TREEMAP_PAGE
    assert links.is_api(links.HEALTH) and not links.is_api("/apiary") and not links.is_api(links.HOME_PAGE)
