"""Comparing snapshots: diff by type and by path, memlab's three-snapshot leak candidates.

Three real snapshots of one Node process (tests/js/leak.js: baseline, target, final) are loaded;
every figure the database answers is checked against the same figure computed in process from the
files.
"""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from heapdb.answers import Questions
from heapdb.cli import main
from heapdb.db import Database
from heapdb.loader import analysis, formats, store
from heapdb.loader.paths import describe_path, first_paths
from heapdb.service.app import create_app


@pytest.fixture(scope="module")
def loaded(database: Database, leak_snapshots: dict[str, Path]):
    """The three snapshots loaded under unique tags, and their in-process graphs and analyses."""
    run = uuid.uuid4().hex[:8]
    tags, local = {}, {}
    for label in ("baseline", "target", "final"):
        tags[label] = f"test-compare-{label}-{run}"
        result = CliRunner().invoke(main, ["load", str(leak_snapshots[label]), "--tag", tags[label]])
        assert result.exit_code == 0, result.output
        graph = formats.read_graph(leak_snapshots[label])
        local[label] = (graph, analysis.analyze(graph))
    yield tags, local
    for tag in tags.values():
        store.drop(database, tag)


def members(graph, result) -> np.ndarray:
    """The objects groups count: reachable, not synthetic, not the root."""
    keep = result.reachable & (graph.kind != graph.node_kinds.index("synthetic"))
    keep[graph.root] = False
    return keep


def type_counts(graph, result) -> Counter:
    keep = members(graph, result)
    return Counter(graph.strings[t] for t in graph.type[keep].tolist())


def test_diff_by_type_equals_in_process_counts(database: Database, loaded) -> None:
    tags, local = loaded
    answer = Questions(database).diff(tags["baseline"], tags["final"], by="type", limit=10_000)
    before, after = type_counts(*local["baseline"]), type_counts(*local["final"])
    got = {c.label: (c.count_before, c.count_after) for c in answer.changes}
    assert got == {t: (before.get(t, 0), after.get(t, 0)) for t in set(before) | set(after)}
    # Sorted by growth in bytes, and the leaked class grew by what leak.js added (100 → 600 units).
    deltas = [c.size_delta for c in answer.changes]
    assert deltas == sorted(deltas, reverse=True)
    leaked = next(c for c in answer.changes if c.label == "LeakedItem")
    assert (leaked.count_before, leaked.count_after) == (100, 600)


def test_diff_by_path_equals_in_process_signatures(database: Database, loaded) -> None:
    tags, local = loaded
    answer = Questions(database).diff(tags["baseline"], tags["final"], by="path", limit=2000)
    expected: dict[str, list[int]] = {}
    for side, label in enumerate(("baseline", "final")):
        graph, result = local[label]
        paths = first_paths(graph, result.retaining)
        keep = members(graph, result)
        signatures, first, counts = np.unique(paths.signature[keep], return_index=True, return_counts=True)
        index = np.flatnonzero(keep)
        for f, count in zip(first.tolist(), counts.tolist()):
            expected.setdefault(describe_path(graph, paths, int(index[f])), [0, 0])[side] = count
    assert len(answer.changes) == 2000 < len(expected)
    for change in answer.changes:
        assert [change.count_before, change.count_after] == expected[change.label], change.label
    growth = sorted((after - before for before, after in expected.values()), reverse=True)
    deltas = [c.size_delta for c in answer.changes]
    assert deltas == sorted(deltas, reverse=True)
    assert max(c.count_delta for c in answer.changes) == growth[0]
    # The path holding the leaked items names the cache, and grew.
    item_paths = [c for c in answer.changes if c.hops and c.hops[-1].endswith("→ LeakedItem")]
    assert item_paths and any("LeakyCache" in " ".join(c.hops) for c in item_paths)
    assert sum(c.count_after for c in item_paths) == 600
    assert sum(c.count_delta for c in item_paths) == 500


def test_leaks_follow_memlabs_model(database: Database, loaded) -> None:
    tags, local = loaded
    answer = Questions(database).leaks(tags["baseline"], tags["target"], tags["final"], limit=1000)
    baseline_ids = set(local["baseline"][0].ids.tolist())
    target_ids = set(local["target"][0].ids.tolist())
    graph, result = local["final"]
    keep = members(graph, result)
    candidates = np.array([keep[i] and int(graph.ids[i]) in target_ids and int(graph.ids[i]) not in baseline_ids for i in range(graph.node_count)])
    expected = Counter(first_paths(graph, result.retaining).signature[candidates].tolist())
    assert len(answer.clusters) == min(1000, len(expected))
    assert {c.signature: c.objects for c in answer.clusters} == {c.signature: expected[c.signature] for c in answer.clusters}
    # leak.js allocated 200 units between baseline and target: the cache's items and the listeners'
    # closures are among the top clusters, and their paths name the cache and the listener list.
    top = answer.clusters[:4]
    assert any(c.type == "LeakedItem" and c.objects == 200 and "LeakyCache" in c.path for c in top)
    assert any(c.type == "(closure)" and c.objects == 200 and "tick → Array" in c.path for c in top)
    retained = [c.retained_size for c in answer.clusters]
    assert retained == sorted(retained, reverse=True)


def test_cli_and_rest_give_the_same_answers(database: Database, loaded, tmp_path: Path) -> None:
    tags, _ = loaded
    svg = tmp_path / "growth.svg"
    result = CliRunner().invoke(main, ["diff", tags["baseline"], tags["final"], "--by", "path", "--svg", str(svg), "--format", "json"])
    assert result.exit_code == 0, result.output
    assert svg.read_text().startswith("<svg") and "LeakedItem" in svg.read_text()
    cli = CliRunner().invoke(main, ["leaks", tags["baseline"], tags["target"], tags["final"], "--format", "json"])
    assert cli.exit_code == 0, cli.output
    text = CliRunner().invoke(main, ["leaks", tags["baseline"], tags["target"], tags["final"]])
    assert f"heapdb why {tags['final']}" in text.stdout

    client = TestClient(create_app())
    rest = client.get("/api/leaks", params={"baseline": tags["baseline"], "target": tags["target"], "final": tags["final"], "limit": 10})
    assert rest.status_code == 200
    import json

    assert rest.json() == json.loads(cli.stdout)
    # Each candidate links to its why-alive answer, as JSON and as dot.
    permalink = rest.json()["clusters"][0]["why"]
    assert client.get(permalink).status_code == 200
    assert client.get(permalink, params={"format": "dot"}).text.startswith("digraph")
    by_path = client.get(f"/api/diff/{tags['baseline']}/{tags['final']}", params={"by": "path", "limit": 5})
    assert by_path.status_code == 200 and len(by_path.json()["changes"]) == 5
    assert client.get(f"/api/diff/{tags['baseline']}/no-such-tag").status_code == 404
    assert client.get(f"/api/diff/{tags['baseline']}/{tags['final']}", params={"by": "colour"}).status_code == 422
