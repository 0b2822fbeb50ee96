"""Collections by fill as a load stores them (heapdb.loader.inspections.fill): the stored answer is
the file's, through the API, the command (`heapdb fill --json`), REST and the snapshot page; a
snapshot stored without it says what to do; a format without capacities says so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from heapdb.cli import main
from heapdb.db import Database
from heapdb.errors import NotComputed
from heapdb.loader.inspections import fill
from heapdb.loader.paths import first_paths
from heapdb.loader.store import Snapshot
from heapdb.queries import missing, params
from heapdb.queries.questions import Questions
from heapdb.service import pages
from heapdb.service.app import create_app
from heapdb.service.links import to_json
from heapgen.java import compile_java, dump_program
from tests.support.snapshots import Loaded, load_snapshot


def from_file(loaded: Loaded, limit: int) -> fill.CollectionFill:
    paths = first_paths(loaded.graph, loaded.result.retaining, loaded.result.transient)
    answer = fill.collection_fill(loaded.graph, loaded.result, paths, source=loaded.tag, limit=limit)
    assert answer is not None
    return answer


@pytest.fixture(scope="module")
def java_loaded(database: Database, tmp_path_factory: pytest.TempPathFactory) -> Loaded:
    tmp = tmp_path_factory.mktemp("fill-stored")
    dump = tmp / "fill.hprof"
    dump_program(compile_java(tmp / "classes", "Fill.java"), "Fill", dump)
    return load_snapshot(database, Path(dump), "fill-java")


def test_a_java_snapshot_answers_as_its_file_does(database: Database, java_loaded: Loaded) -> None:
    expected = from_file(java_loaded, fill.KEPT)
    questions = Questions(database)
    assert questions.fill(java_loaded.tag, params.Fill(limit=fill.KEPT)) == expected
    one = questions.fill(java_loaded.tag, params.Fill(limit=1))
    assert one.rows == expected.rows[:1] and one.types == expected.types and one.wasted == expected.wasted
    as_json = CliRunner().invoke(main, ["fill", java_loaded.tag, "--json", "--limit", "3"])
    assert as_json.exit_code == 0, as_json.output
    three = from_file(java_loaded, 3)
    assert json.loads(as_json.stdout) == to_json(three)
    client = TestClient(create_app(token=""))
    assert client.get(f"/api/snapshots/{java_loaded.tag}/fill?limit=3").json() == to_json(three)
    shown = client.get(pages.page_path(pages.SNAPSHOT, tag=java_loaded.tag))
    assert shown.status_code == 200 and 'id="fill-summary"' in shown.text
    assert "PRESIZED_MAPS" in shown.text  # the most wasteful of the program's groups: 4 maps of 1,024 slots


def test_a_node_snapshot_answers_as_its_file_does(database: Database, leak_loaded: Loaded) -> None:
    answer = Questions(database).fill(leak_loaded.tag, params.Fill(limit=fill.KEPT))
    assert answer == from_file(leak_loaded, fill.KEPT) and answer.collections > 0


def test_a_snapshot_stored_before_says_to_load_again(database: Database, java_loaded: Loaded) -> None:
    database.write("MATCH (s:Snapshot {tag: $tag}) REMOVE s.fill", {"tag": java_loaded.tag})
    with pytest.raises(NotComputed, match=f"heapdb load FILE --tag {java_loaded.tag} --replace"):
        Questions(database).fill(java_loaded.tag)
    said = CliRunner().invoke(main, ["fill", java_loaded.tag])
    assert said.exit_code == 1 and "not computed" in said.output and "Traceback" not in said.output
    client = TestClient(create_app(token=""))
    rest = client.get(f"/api/snapshots/{java_loaded.tag}/fill")
    assert rest.status_code == 409 and "not computed" in rest.json()["error"]
    shown = client.get(pages.page_path(pages.SNAPSHOT, tag=java_loaded.tag))  # the page still answers
    assert shown.status_code == 200 and 'id="fill-summary"' not in shown.text


def test_a_format_without_capacities_says_so() -> None:
    snapshot = Snapshot.from_properties({"sid": 1, "tag": "game", "format": "luau", "status": "ready"})
    assert str(missing.FILL(snapshot)) == "luau snapshots show no collection capacities (snapshot 'game')"
