"""Single-snapshot leak suspects in the style of Eclipse MAT, on the real Neo4j.

The final snapshot of tests/js/leak.js and, when present, the final Luau dump of
../shared/fixtures/luau are loaded; the suspects, their accumulation points and the suspect types
are checked against the same rules applied in process to the analysis' dominator tree.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from heapdb.cli import main
from heapdb.db import Database
from heapdb.errors import ParameterError
from heapdb.loader import store
from heapdb.queries import params
from heapdb.queries.questions import Questions
from heapdb.queries.results import ObjectRef, Suspects
from heapdb.service.app import create_app
from tests.support.snapshots import LUAU_FIXTURES, Loaded, load_snapshot

LUAU_FINAL = LUAU_FIXTURES / "luau-3-final.json"


@pytest.fixture(scope="module")
def v8(leak_loaded: Loaded) -> Loaded:
    return leak_loaded


@pytest.fixture(scope="module")
def luau(database: Database):
    if not LUAU_FINAL.exists():
        pytest.skip(f"the Luau fixtures are not there ({LUAU_FINAL})")
    loaded = load_snapshot(database, LUAU_FINAL, "suspects-luau")
    return loaded


def expected_suspects(graph, result, share: float, percent: int):
    """In process: [(suspect id, point id, depth, children, largest child)] by MAT's rules, and the threshold."""
    synthetic = np.isin(graph.kind, [i for i, k in enumerate(graph.node_kinds) if k == "synthetic"])
    reachable_size = int(graph.self_size[result.reachable].sum())
    threshold = max(1, math.ceil(share * reachable_size))
    children: dict[int, list[int]] = {}
    for node, parent in enumerate(result.idom.tolist()):
        if parent >= 0 and result.reachable[node]:
            children.setdefault(parent, []).append(node)
    size = result.retained_size
    out = []
    for node in np.flatnonzero(result.reachable & ~synthetic).tolist():
        parent = int(result.idom[node])
        if node == result.root or size[node] < threshold or not (parent == result.root or synthetic[parent]):
            continue
        point, depth = node, 0
        while True:
            below = children.get(point, [])
            largest = max(below, key=lambda c: size[c], default=None)
            if largest is None or size[largest] * 100 < size[point] * percent:
                break
            point, depth = largest, depth + 1
        below = children.get(point, [])
        out.append(
            (
                -int(size[node]),
                int(graph.ids[node]),
                int(graph.ids[point]),
                depth,
                len(below),
                max((int(size[c]) for c in below), default=0),
            )
        )
    return [row[1:] for row in sorted(out)], threshold, reachable_size


def check(database: Database, loaded, share: float, ratio: float = 0.8) -> Suspects:
    tag, graph, result = loaded.tag, loaded.graph, loaded.result
    answer = Questions(database).suspects(tag, params.Suspects(share=share, ratio=ratio, limit=1000))
    expected, threshold, reachable_size = expected_suspects(graph, result, share, round(ratio * 100))
    assert (answer.min_retained, answer.reachable_size) == (threshold, reachable_size)
    got = [
        (
            s.object.id,
            s.accumulation.object.id,
            s.accumulation.depth,
            s.accumulation.children,
            s.accumulation.largest_child,
        )
        for s in answer.objects
    ]
    assert got == expected
    for s in answer.objects:
        assert s.object.retained_size >= threshold and s.share == s.object.retained_size / reachable_size
        assert s.why == ObjectRef(tag, s.object.id)
        point = s.accumulation
        assert point.largest_child * 100 < point.object.retained_size * round(ratio * 100)
    groups = store.LoadInput.from_analysis(graph, result).type_groups()
    expected_types = sorted((-row[3], row[0], row[1]) for row in groups if row[3] >= threshold)
    assert [(-t.retained_size, t.type, t.count) for t in answer.types] == expected_types
    return answer


@pytest.mark.parametrize("share", [0.1, 0.02, 0.005])
def test_suspects_follow_mats_rules_on_v8(database: Database, v8, share: float) -> None:
    answer = check(database, v8, share)
    if share <= 0.02:
        assert answer.objects, "some object of leak.js's heap retains 2% of it"


def test_suspects_without_the_stored_root_groups(database: Database, v8) -> None:
    """A snapshot lists its root and root groups, where suspects starts; one stored before that
    list was recorded (here: the list removed) gives the same suspects from every object read."""
    graph = v8.graph
    groups = np.flatnonzero(np.isin(graph.kind, [i for i, k in enumerate(graph.node_kinds) if k == "synthetic"]))
    expected_groups = sorted({int(graph.ids[graph.root]), *graph.ids[groups].tolist()})
    [stored] = database.read("MATCH (s:Snapshot {tag: $tag}) RETURN s.root_group_ids AS ids", {"tag": v8.tag})
    assert sorted(stored["ids"]) == expected_groups and len(expected_groups) > 1
    database.write("MATCH (s:Snapshot {tag: $tag}) REMOVE s.root_group_ids", {"tag": v8.tag})
    try:
        check(database, v8, 0.005)
    finally:
        database.write(
            "MATCH (s:Snapshot {tag: $tag}) SET s.root_group_ids = $ids", {"tag": v8.tag, "ids": stored["ids"]}
        )


def test_suspects_with_another_ratio(database: Database, v8) -> None:
    check(database, v8, 0.005, ratio=0.6)


def test_suspects_on_luau(database: Database, luau) -> None:
    answer = check(database, luau, 0.05)
    # leak.luau's cache and listeners hold most of the heap: some suspect accumulates below its top.
    assert answer.objects and answer.types


def test_suspects_on_the_command_line_and_rest(database: Database, v8) -> None:
    tag = v8.tag
    text = CliRunner().invoke(main, ["suspects", tag, "--share", "0.01"])
    assert text.exit_code == 0, text.output
    assert "leak suspects in" in text.stdout and f"heapdb why {tag}" in text.stdout
    cli = CliRunner().invoke(main, ["suspects", tag, "--share", "0.01", "--json"])
    client = TestClient(create_app())
    rest = client.get(f"/api/snapshots/{tag}/suspects", params={"share": 0.01})
    assert rest.status_code == 200 and rest.json() == json.loads(cli.stdout)
    first = rest.json()["objects"][0]
    assert first["why"] == f"/api/snapshots/{tag}/objects/{first['object']['id']}/why"
    assert client.get(first["why"]).json()["target"]["id"] == first["object"]["id"]
    assert client.get(first["accumulation"]["why"], params={"format": "dot"}).text.startswith("digraph")
    assert client.get(f"/api/snapshots/{tag}/suspects", params={"share": 0}).status_code == 422
    assert client.get(f"/api/snapshots/{tag}/suspects", params={"ratio": 0.4}).status_code == 422
    assert client.get("/api/snapshots/no-such-tag/suspects").status_code == 404
    with pytest.raises(ParameterError):
        Questions(database).suspects(tag, params.Suspects(share=1.5))
