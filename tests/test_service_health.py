"""The service's health endpoint against the real Neo4j, its 503 when Neo4j cannot be reached, and the
turns its requests take (HEAPDB_REQUESTS_AT_ONCE)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from fastapi.testclient import TestClient

from heapdb import config, db
from heapdb.errors import ConfigError, DatabaseUnavailable
from heapdb.service import pressure
from heapdb.service.app import create_app
from tests.support.snapshots import Loaded


def test_health_reports_neo4j(neo4j_server_settings: config.ManagedSettings) -> None:
    client = TestClient(create_app())
    response = client.get("/api/health")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "ok"
    assert any("5.26" in line for line in body["neo4j"])


def test_health_is_503_with_a_json_error_when_neo4j_is_unreachable(monkeypatch) -> None:
    monkeypatch.setenv("NEO4J_URI", "bolt://127.0.0.1:1")
    monkeypatch.setenv("NEO4J_PASSWORD", "x")
    client = TestClient(create_app(lambda: db.connect(start_managed=False)))
    response = client.get("/api/health")
    assert response.status_code == 503
    assert "cannot reach" in response.json()["error"]


def test_openapi_is_published() -> None:
    client = TestClient(create_app(lambda: (_ for _ in ()).throw(DatabaseUnavailable("unused"))))
    spec = client.get("/openapi.json").json()
    assert "/api/health" in spec["paths"]
    health = spec["components"]["schemas"]["Health"]["properties"]
    assert {"status", "heapdb", "neo4j", "requests"} <= set(health)
    assert set(spec["components"]["schemas"]["TurnCounts"]["properties"]) == {"size", "running", "waiting"}
    assert client.get("/docs").status_code == 200


def test_requests_take_turns_and_each_is_answered_as_without_them(leak_loaded: Loaded, monkeypatch) -> None:
    """HEAPDB_REQUESTS_AT_ONCE=1: sixteen questions asked at once all come back, each answered as a
    service without turns answers it, and the turns are all given back afterwards
    (heapdb.service.turns). The test client runs each request on an event loop of its own."""
    monkeypatch.setenv("HEAPDB_REQUESTS_AT_ONCE", "1")
    one_at_a_time = TestClient(create_app(token=""))
    assert one_at_a_time.get("/api/health").json()["requests"] == {"size": 1, "running": 0, "waiting": 0}
    # Sixteen reachable objects, each its own question: none is answered from another's memory.
    distance = leak_loaded.result.distance
    nodes = np.flatnonzero((distance > 1) & (distance < 8))[:16]
    paths = [f"/api/snapshots/{leak_loaded.tag}/objects/{leak_loaded.id(int(n))}/why" for n in nodes]
    with ThreadPoolExecutor(len(paths)) as pool:
        answers = list(pool.map(lambda p: one_at_a_time.get(p), paths))
    assert one_at_a_time.get("/api/health").json()["requests"] == {"size": 1, "running": 0, "waiting": 0}

    monkeypatch.setenv("HEAPDB_REQUESTS_AT_ONCE", "0")
    unbounded = TestClient(create_app(token=""))
    assert unbounded.get("/api/health").json()["requests"] is None
    for path, answer in zip(paths, answers, strict=True):
        assert answer.status_code == 200, answer.text
        assert answer.json() == unbounded.get(path).json()


def test_requests_at_once_is_twice_the_cores_by_default_and_a_bad_value_is_refused(monkeypatch) -> None:
    monkeypatch.delenv("HEAPDB_REQUESTS_AT_ONCE", raising=False)
    turns = pressure.request_turns()
    assert turns is not None and turns.size == 2 * pressure.CORES
    monkeypatch.setenv("HEAPDB_REQUESTS_AT_ONCE", "-1")
    with pytest.raises(ConfigError, match="HEAPDB_REQUESTS_AT_ONCE"):
        pressure.request_turns()
