"""Lifelines and heapdomstats of a stored snapshot equal the same views of its file's analysis, over
the query core, the CLI and REST."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from heapdb.cli import main
from heapdb.db import Database
from heapdb.errors import ParameterError
from heapdb.loader import views
from heapdb.queries import params
from heapdb.queries.questions import Questions
from heapdb.service.app import create_app
from tests.support.snapshots import LUAU_FIXTURES, Loaded, load_snapshot

LUAU_FIXTURE = LUAU_FIXTURES / "luau-3-final.json"


@pytest.fixture(scope="module")
def v8(leak_loaded: Loaded) -> Loaded:
    return leak_loaded


def file_lifelines(loaded: Loaded, type_name: str, name_contains: str = "", limit: int = 1000) -> views.Lifelines:
    rows = views.lifeline_rows(loaded.graph, loaded.result, type_name, name_contains)
    return views.lifelines(rows, source=loaded.tag, type_name=type_name, name_contains=name_contains, limit=limit)


def file_heapdomstats(loaded: Loaded, limit: int) -> views.HeapDomStats:
    rows = views.heapdomstats_rows(loaded.graph, loaded.result)
    return views.heapdomstats(rows, source=loaded.tag, reachable_size=loaded.result.reachable_size, limit=limit)


@pytest.mark.parametrize(
    ("type_name", "name_contains", "limit"),
    [("LeakedItem", "", 1000), ("Map", "", 1000), ("(closure)", "", 3), ("Object", "", 1000), ("NoSuchType", "", 10)],
)
def test_stored_lifelines_equal_the_files(
    database: Database, v8: Loaded, type_name: str, name_contains: str, limit: int
) -> None:
    stored = Questions(database).lifelines(v8.tag, params.Lifelines(type=type_name, limit=limit))
    assert stored == file_lifelines(v8, type_name, name_contains, limit)


def test_stored_lifelines_by_name(database: Database, v8: Loaded) -> None:
    (largest,) = v8.result.top_retainers(1, exclude=v8.graph.synthetic_nodes()).tolist()
    name, type_name = v8.graph.node_name(largest), v8.graph.type_name(largest)
    part = name[:3]
    assert part
    stored = Questions(database).lifelines(v8.tag, params.Lifelines(type=type_name, name_contains=part))
    assert stored == file_lifelines(v8, type_name, part, 10)


def test_stored_heapdomstats_equal_the_files(database: Database, v8: Loaded) -> None:
    for limit in (1, 50, 10_000):
        stored = Questions(database).heapdomstats(v8.tag, params.HeapDomStats(limit=limit))
        assert stored == file_heapdomstats(v8, limit)
    assert stored.objects > 0 and stored.types > 1


@pytest.mark.skipif(not LUAU_FIXTURE.exists(), reason="needs ../shared/fixtures/luau (not part of the repository)")
def test_stored_views_of_a_luau_dump_equal_the_files(database: Database) -> None:
    luau = load_snapshot(database, LUAU_FIXTURE, "views-luau")
    questions = Questions(database)
    assert questions.heapdomstats(luau.tag, params.HeapDomStats(limit=100)) == file_heapdomstats(luau, 100)
    assert questions.lifelines(luau.tag, params.Lifelines(type="table")) == file_lifelines(luau, "table", limit=10)


def test_cli_and_rest(database: Database, v8: Loaded) -> None:
    runner = CliRunner()
    done = runner.invoke(main, ["lifelines", v8.tag, "--type", "LeakedItem", "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.output) == json.loads(json.dumps(asdict(file_lifelines(v8, "LeakedItem", limit=10))))
    done = runner.invoke(main, ["lifelines", v8.tag, "--type", "LeakedItem"])
    assert done.exit_code == 0 and "Lifelines of" in done.output
    done = runner.invoke(main, ["heapdomstats", v8.tag, "--json", "--limit", "5"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.output) == json.loads(json.dumps(asdict(file_heapdomstats(v8, 5))))
    done = runner.invoke(main, ["heapdomstats", v8.tag])
    assert done.exit_code == 0 and "Floating to the root" in done.output

    client = TestClient(create_app(token=""))
    answer = client.get(f"/api/snapshots/{v8.tag}/lifelines", params={"type": "LeakedItem", "limit": 2})
    assert answer.status_code == 200
    assert answer.json() == json.loads(json.dumps(asdict(file_lifelines(v8, "LeakedItem", limit=2))))
    answer = client.get(f"/api/snapshots/{v8.tag}/heapdomstats", params={"limit": 3})
    assert answer.status_code == 200 and len(answer.json()["rows"]) == 3
    assert client.get(f"/api/snapshots/{v8.tag}/lifelines").status_code == 422  # type is required
    assert client.get(f"/api/snapshots/{v8.tag}/heapdomstats", params={"limit": 0}).status_code == 422
    assert client.get("/api/snapshots/no-such-tag/heapdomstats").status_code == 404
    with pytest.raises(ParameterError):
        params.Lifelines(type="")
