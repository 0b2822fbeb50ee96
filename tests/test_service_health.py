"""The service's health endpoint against the real Neo4j, and its 503 when Neo4j cannot be reached."""

from __future__ import annotations

from fastapi.testclient import TestClient

from heapdb import config, db
from heapdb.errors import DatabaseUnavailable
from heapdb.service.app import create_app


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
    assert client.get("/docs").status_code == 200
