"""The REST service against hostile requests: every parameter bounded (422, never 500, the
keep-alive connection kept), tags with any character reachable, and no open service without a token."""

from __future__ import annotations

import http.client
import json
import uuid
from typing import Any, cast
from urllib.parse import quote

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from heapdb.cli import main
from heapdb.cli.serve_cmd import loopback_only
from heapdb.db import Database
from heapdb.errors import NotFound
from heapdb.loader import analysis, store
from heapdb.queries.questions import Questions
from heapdb.service import links
from heapdb.service.app import MAX_NESTING, MAX_PARAMETERS, MAX_VALUE_CHARS, create_app
from heapgen.synth import synth_graph
from tests.support.serving import served


def no_database() -> Database:
    """Stands in for Neo4j where the requests must be refused before any question is asked."""
    return cast(Database, object())


def offline_client(monkeypatch: pytest.MonkeyPatch) -> tuple[TestClient, list[str]]:
    """A client whose snapshot lookups say which tag they were asked for, then 404."""
    asked: list[str] = []

    def snapshot(self: Questions, tag: str) -> Any:
        asked.append(tag)
        raise NotFound(f"no snapshot tagged {tag!r}")

    monkeypatch.setattr(Questions, "snapshot", snapshot)
    return TestClient(create_app(no_database, token=""), raise_server_exceptions=False), asked


NESTED = "[" * 990 + "]" * 990

HOSTILE = [
    ("/api/queries/why-alive-avoiding", {"tag": "t", "id": "1", "ignore_ids": NESTED}),
    ("/api/queries/why-alive-avoiding", {"tag": "t", "id": "1", "ignore_names": "[" * (MAX_NESTING + 1)}),
    ("/api/snapshots/t/objects/1/why", {"ignore_id": ["1"] * (MAX_PARAMETERS + 1)}),
    ("/api/snapshots/t/find", {"type": "x" * (MAX_VALUE_CHARS + 1)}),
    ("/api/growth", {"tag": ["a", "b", "c"], "x" * 101: "1"}),
    ("/api/snapshots/" + "a" * 20_000, {}),
    ("/api/snapshots/%FF%FE", {}),
]


@pytest.mark.parametrize(("path", "query"), HOSTILE, ids=lambda v: str(v)[:30])
def test_oversized_and_deeply_nested_parameters_are_422(
    monkeypatch: pytest.MonkeyPatch, path: str, query: dict[str, Any]
) -> None:
    client, _ = offline_client(monkeypatch)
    response = client.get(path, params=query)
    assert response.status_code == 422, response.text
    assert response.json()["error"].startswith("bad request: ")


def test_a_bug_is_a_json_500_on_a_connection_that_stays_open(monkeypatch: pytest.MonkeyPatch) -> None:
    """Over a real socket: an unexpected error is answered, and the keep-alive connection serves the next request."""

    def broken(self: Questions, tag: str) -> Any:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(Questions, "snapshot", broken)
    with served(create_app(no_database, token="")) as port:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        connection.request("GET", "/api/snapshots/x")
        response = connection.getresponse()
        assert response.status == 500 and json.loads(response.read())["error"] == "internal error: RecursionError"
        connection.request("GET", "/api/queries/why-alive-avoiding?" + f"tag=t&id=1&ignore_ids={quote(NESTED)}")
        response = connection.getresponse()
        assert response.status == 422, response.read()
        response.read()
        connection.request("GET", "/api/queries")  # the same connection, still open
        response = connection.getresponse()
        assert response.status == 200 and json.loads(response.read())
        connection.close()


@pytest.mark.parametrize("tag", ["release/1.2", "a%2Fb", "50% off", "what?#x", "été ☃", "...", "a+b c", "x;y=z", "/"])
def test_any_tag_is_one_path_segment(monkeypatch: pytest.MonkeyPatch, tag: str) -> None:
    client, asked = offline_client(monkeypatch)
    url = links.path(links.SNAPSHOT, tag=tag)
    assert url.count("/") == 3  # /api/snapshots/<one segment>
    response = client.get(url)
    assert response.status_code == 404 and asked == [tag], response.text
    assert tag in response.json()["error"] or repr(tag) in response.json()["error"]


def test_links_encode_the_tag() -> None:
    assert links.path(links.WHY, tag="release/1.2", object_id=7) == "/api/snapshots/release%2F1.2/objects/7/why"
    assert links.path(links.DIFF, before="a/b", after="c") == "/api/diff/a%2Fb/c"


def test_tags_with_any_character_work_over_rest(database: Database) -> None:
    """A snapshot tagged with a slash and friends is loaded, listed and asked over REST, and the
    permalinks in its answers lead back to it."""
    tag = f"test/rest {uuid.uuid4().hex[:8]}?%é#"
    graph = synth_graph(500, 2000, seed=3)
    store.load(database, store.LoadInput.from_analysis(graph, analysis.analyze(graph)), tag)
    client = TestClient(create_app(token=""))
    assert tag in {s["tag"] for s in client.get("/api/snapshots").json()}
    assert client.get(links.path(links.SNAPSHOT, tag=tag)).json()["tag"] == tag
    top = client.get(links.path(links.SNAPSHOT, tag=tag) + "/top", params={"limit": 3})
    assert top.status_code == 200, top.text
    suspects = client.get(links.path(links.SNAPSHOT, tag=tag) + "/suspects", params={"share": 0.01})
    assert suspects.status_code == 200, suspects.text
    permalinks = [v for v in json.dumps(suspects.json()).split('"') if v.startswith("/api/snapshots/")]
    assert permalinks and all(link.startswith(links.path(links.SNAPSHOT, tag=tag) + "/") for link in permalinks)
    for link in permalinks[:3]:  # the links the service makes lead back to it
        answer = client.get(link)
        assert answer.status_code == 200, (link, answer.text)
    diff = client.get(links.path(links.DIFF, before=tag, after=tag))
    assert diff.status_code == 200, diff.text


def test_loopback_only() -> None:
    for host in ("127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"):
        assert loopback_only(host), host
    for host in ("0.0.0.0", "::", "", "192.0.2.1", "no-such-host.invalid"):
        assert not loopback_only(host), host


def test_serve_refuses_an_open_address_without_a_token(monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn

    served_on: list[str] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, host, port, **kw: served_on.append(host))
    monkeypatch.delenv("HEAPDB_API_TOKEN", raising=False)
    refused = CliRunner().invoke(main, ["serve", "--host", "0.0.0.0"])
    assert refused.exit_code == 1 and served_on == []
    assert "refusing to serve on '0.0.0.0' without HEAPDB_API_TOKEN" in refused.stderr
    assert "--insecure-no-token" in refused.stderr

    allowed = CliRunner().invoke(main, ["serve", "--host", "0.0.0.0", "--insecure-no-token"])
    assert allowed.exit_code == 0, allowed.stderr
    assert "no authentication" in allowed.stderr and served_on == ["0.0.0.0"]

    monkeypatch.setenv("HEAPDB_API_TOKEN", "s3cret")
    assert CliRunner().invoke(main, ["serve", "--host", "0.0.0.0"]).exit_code == 0
    monkeypatch.delenv("HEAPDB_API_TOKEN")
    assert CliRunner().invoke(main, ["serve", "--host", "127.0.0.1"]).exit_code == 0
    assert served_on == ["0.0.0.0", "0.0.0.0", "127.0.0.1"]


def test_tags_no_url_can_carry_are_refused_at_load() -> None:
    from heapdb.errors import LoadError
    from heapdb.loader.store import lifecycle

    for tag in ("", ".", "..", "x" * (lifecycle.MAX_TAG_CHARS + 1), "a\udc80"):
        with pytest.raises(LoadError):
            lifecycle.check_tag(tag)
    for tag in ("release/1.2", "...", "50% off?#", "x" * lifecycle.MAX_TAG_CHARS):
        lifecycle.check_tag(tag)


OUT_OF_RANGE = [
    ("/api/snapshots/{tag}/objects/99999999999999999999999/why", {}),
    ("/api/snapshots/{tag}/objects/1/why", {"ignore_id": "99999999999999999999999"}),
    ("/api/queries/why-alive-avoiding", {"tag": "{tag}", "id": "1", "ignore_ids": "[99999999999999999999999]"}),
    ("/api/snapshots/{tag}/top", {"limit": "1e400"}),
]


@pytest.fixture(scope="module")
def small_snapshot(database: Database) -> str:
    tag = f"test-bounds-{uuid.uuid4().hex[:8]}"
    graph = synth_graph(300, 1200, seed=4)
    store.load(database, store.LoadInput.from_analysis(graph, analysis.analyze(graph)), tag)
    return tag


@pytest.mark.parametrize(("path", "query"), OUT_OF_RANGE, ids=lambda v: str(v)[:40])
def test_out_of_range_values_are_4xx_on_the_real_database(
    small_snapshot: str, path: str, query: dict[str, str]
) -> None:
    """Values only the database would trip over (numbers wider than 64 bits) are answered as bad
    requests, not as 500s, on a snapshot that exists."""
    client = TestClient(create_app(token=""), raise_server_exceptions=False)
    tag = small_snapshot
    response = client.get(path.replace("{tag}", tag), params={k: v.replace("{tag}", tag) for k, v in query.items()})
    assert 400 <= response.status_code < 500, response.text
