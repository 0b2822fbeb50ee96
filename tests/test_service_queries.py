"""The REST endpoints of the questions, on the real Neo4j with a real V8 snapshot: answers, formats,
bearer-token auth, and the JSON error bodies of 401, 404, 422 and 503."""

from __future__ import annotations

import shutil
import subprocess
import uuid
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient

from heapdb import db, errors
from heapdb.db import Database
from heapdb.loader import analysis, formats, store
from heapdb.queries import catalog
from heapdb.service.app import create_app


@pytest.fixture(scope="module")
def loaded(database: Database, leak_snapshots: dict[str, Path]):
    graph = formats.read_graph(leak_snapshots["baseline"])
    result = analysis.analyze(graph)
    tag = f"test-service-{uuid.uuid4().hex[:8]}"
    store.load(database, store.LoadInput.from_analysis(graph, result), tag)
    return tag, graph, result


def leak_item(graph, result) -> int:
    items = [i for i in range(graph.node_count) if graph.type_name(i) == "LeakedItem"]
    return int(graph.ids[max(items, key=lambda i: (result.distance[i], -i))])


def test_why_answers_json_dot_and_svg(client: TestClient, loaded) -> None:
    tag, graph, result = loaded
    target = leak_item(graph, result)
    response = client.get(f"/api/snapshots/{tag}/objects/{target}/why")
    assert response.status_code == 200, response.text
    body = response.json()
    path = body["paths"][0]
    index = int(np.flatnonzero(graph.ids == target)[0])
    assert len(path["references"]) == result.distance[index]
    assert path["objects"][0]["id"] == int(graph.ids[graph.root]) and path["objects"][-1]["id"] == target

    response = client.get(f"/api/snapshots/{tag}/objects/{target}/why", params={"format": "dot", "k": 2})
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/vnd.graphviz")
    assert "shape=house" in response.text and 'tooltip="target"' in response.text
    if shutil.which("dot"):
        assert (
            subprocess.run(["dot", "-Tsvg"], input=response.text, capture_output=True, text=True, timeout=60).returncode
            == 0
        )
        response = client.get(f"/api/snapshots/{tag}/objects/{target}/why", params={"format": "svg"})
        assert response.status_code == 200 and response.headers["content-type"].startswith("image/svg+xml")
        assert "<svg" in response.text

    # Ignoring the last reference's name leaves a path without it, or none.
    last = path["references"][-1]["name"]
    response = client.get(f"/api/snapshots/{tag}/objects/{target}/why", params={"ignore_name": last})
    assert response.status_code == 200
    assert all(r["name"] != last for p in response.json()["paths"] for r in p["references"])
    # A rule selector (repeatable), and a bad one a 422 naming it.
    holder_type = path["objects"][-2]["type"]
    selectors = [f'from.type = "{holder_type}"', 'edge.kind = "weak"']
    response = client.get(f"/api/snapshots/{tag}/objects/{target}/why", params={"ignore": selectors})
    assert response.status_code == 200 and response.json()["ignored"]["selectors"] == selectors
    assert all(o["type"] != holder_type for p in response.json()["paths"] for o in p["objects"][:-1])
    response = client.get(f"/api/snapshots/{tag}/objects/{target}/why", params={"ignore": "to.type = {"})
    assert response.status_code == 422 and "--ignore" in response.text


def test_the_other_questions(client: TestClient, loaded) -> None:
    tag, graph, result = loaded
    target = leak_item(graph, result)
    index = int(np.flatnonzero(graph.ids == target)[0])

    chain = client.get(f"/api/snapshots/{tag}/objects/{target}/dominators").json()["chain"]
    expected = [index]
    while result.idom[expected[-1]] >= 0:
        expected.append(int(result.idom[expected[-1]]))
    assert [o["id"] for o in chain] == graph.ids[expected[::-1]].tolist()

    holder = chain[-2]["id"]
    retains = client.get(f"/api/snapshots/{tag}/objects/{holder}/retains", params={"depth": 1, "limit": 5}).json()
    assert retains["objects"][0]["id"] == holder and len(retains["objects"]) <= 6
    assert all(parent == holder for parent, _ in retains["edges"])
    assert client.get(f"/api/snapshots/{tag}/objects/{holder}/retains", params={"format": "dot"}).text.startswith(
        "digraph"
    )

    top = client.get(f"/api/snapshots/{tag}/top", params={"limit": 5}).json()
    assert len(top) == 5 and [o["retained_size"] for o in top] == sorted(
        (o["retained_size"] for o in top), reverse=True
    )
    assert (
        top == client.get(f"/api/snapshots/{tag}/top", params={"limit": 5}).json()
    )  # the remembered answer is the same
    types = client.get(f"/api/snapshots/{tag}/types", params={"sort": "count", "limit": 3}).json()
    assert len(types) == 3 and types[0]["count"] >= types[1]["count"]

    details = client.get(f"/api/snapshots/{tag}/objects/{target}").json()
    assert details["object"]["type"] == "LeakedItem" and details["incoming_count"] >= 1
    found = client.get(f"/api/snapshots/{tag}/find", params={"type": "LeakedItem", "limit": 2}).json()
    assert len(found) == 2 and all(o["type"] == "LeakedItem" for o in found)

    listed = client.get("/api/snapshots").json()
    assert tag in [s["tag"] for s in listed]
    assert client.get(f"/api/snapshots/{tag}").json()["object_count"] == graph.node_count


def test_stored_queries_over_rest(client: TestClient, loaded) -> None:
    tag, _, _ = loaded
    names = [q["name"] for q in client.get("/api/queries").json()]
    assert names == list(catalog.catalog())
    response = client.get("/api/queries/top", params={"tag": tag, "limit": 2})
    assert response.status_code == 200 and len(response.json()["rows"]) == 2
    response = client.get("/api/queries/dominated", params=[("tag", tag), ("ids", "1"), ("ids", "3"), ("limit", "4")])
    assert response.status_code == 200 and {row["parent"] for row in response.json()["rows"]} <= {1, 3}


def test_404_and_422_come_with_json_errors(client: TestClient, loaded) -> None:
    tag, _, _ = loaded
    cases = [
        (f"/api/snapshots/no-such-{uuid.uuid4().hex}/top", 404, "no snapshot tagged"),
        (f"/api/snapshots/{tag}/objects/999999999999/why", 404, "no object with id"),
        (f"/api/snapshots/{tag}/objects/999999999999", 404, "no object with id"),
        ("/api/queries/no-such-query", 404, "no stored query"),
        (f"/api/snapshots/{tag}/find?type=NoSuchType", 200, None),
        (f"/api/snapshots/{tag}/objects/abc/why", 422, "object_id"),
        (f"/api/snapshots/{tag}/objects/1/why?k=11", 422, "k"),
        (f"/api/snapshots/{tag}/objects/1/why?format=png", 422, "format"),
        (f"/api/snapshots/{tag}/objects/1/retains?depth=0", 422, "depth"),
        (f"/api/snapshots/{tag}/top?limit=100000", 422, "limit"),
        (f"/api/queries/top?tag={tag}&limit=lots", 422, "limit"),
        (f"/api/queries/top?tag={tag}&colour=red", 422, "colour"),
        ("/api/queries/why-alive?id=1", 422, "tag"),
    ]
    for url, status, message in cases:
        response = client.get(url)
        assert response.status_code == status, (url, response.text)
        if message:
            assert message in response.json()["error"], (url, response.text)


def test_a_query_stopped_at_the_timeout_is_a_504_naming_the_setting(database: Database) -> None:
    # Ten billion rows: Neo4j stops it at the timeout (its monitor looks every few seconds).
    with pytest.raises(errors.QueryTimeout) as stopped:
        database.read("UNWIND range(1, 10000000000) AS x RETURN sum(x) AS total", timeout=0.5)
    assert stopped.value.http_status == 504
    assert "--timeout" in str(stopped.value) and "HEAPDB_QUERY_TIMEOUT" in str(stopped.value)
    with pytest.raises(errors.QueryError) as rejected:  # any other rejection stays a 422
        database.read("RETURN 1 +", timeout=0.5)
    assert type(rejected.value) is errors.QueryError and rejected.value.http_status == 422


def test_bearer_token_is_required_when_set(database: Database, loaded, monkeypatch) -> None:
    tag, _, _ = loaded
    monkeypatch.setenv("HEAPDB_API_TOKEN", "s3cret-token")
    client = TestClient(create_app())
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic s3cret-token"}):
        response = client.get(f"/api/snapshots/{tag}/top", headers=headers)
        assert response.status_code == 401 and "bearer token" in response.json()["error"]
        assert response.headers["www-authenticate"] == "Bearer"
    assert client.get(f"/api/snapshots/{tag}/top", headers={"Authorization": "Bearer s3cret-token"}).status_code == 200
    assert client.get("/api/health").status_code == 200  # for monitors, without the token
    assert client.get("/openapi.json").status_code == 200


def test_503_when_neo4j_is_out_of_reach_and_recovery(database: Database, loaded, monkeypatch) -> None:
    tag, graph, _ = loaded
    closed = {"NEO4J_URI": "bolt://127.0.0.1:1", "NEO4J_PASSWORD": "x"}

    def connect() -> db.Database:
        # The service reconnects through this on every request after a failure: first a closed port,
        # then, once the variables are gone, the session's real Neo4j.
        return db.connect(start_managed=False)

    client = TestClient(create_app(connect))
    for key, value in closed.items():
        monkeypatch.setenv(key, value)
    for url in (
        f"/api/snapshots/{tag}/objects/{int(graph.ids[graph.root])}/why",
        f"/api/snapshots/{tag}/types",
        "/api/queries/snapshots",
    ):
        response = client.get(url)
        assert response.status_code == 503, response.text
        assert "cannot reach" in response.json()["error"]
    for key in closed:
        monkeypatch.delenv(key)
    response = client.get(f"/api/snapshots/{tag}/objects/{int(graph.ids[graph.root])}/why")
    assert response.status_code == 200 and response.json()["paths"][0]["references"] == []


def test_openapi_lists_the_question_endpoints(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    for path in (
        "/api/snapshots",
        "/api/snapshots/{tag}/objects/{object_id}/why",
        "/api/snapshots/{tag}/objects/{object_id}/dominators",
        "/api/snapshots/{tag}/objects/{object_id}/retains",
        "/api/snapshots/{tag}/objects/{object_id}",
        "/api/snapshots/{tag}/top",
        "/api/snapshots/{tag}/types",
        "/api/queries",
        "/api/queries/{name}",
    ):
        assert path in paths, path
