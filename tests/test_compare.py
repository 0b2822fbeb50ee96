"""Comparing snapshots: diff by type, path and object, leak candidates by id and by path, growth.

Three real snapshots of one Node process (tests/js/leak.js: baseline, target, final) are loaded,
and for the cases where ids are addresses, the three Luau dumps of ../shared/fixtures/luau; every
figure the database answers is checked against the same figure computed in process from the files.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from heapdb.cli import main
from heapdb.db import Database
from heapdb.errors import ParameterError
from heapdb.loader import analysis, formats, store
from heapdb.loader.paths import describe_path, first_paths
from heapdb.queries import params
from heapdb.queries.cache import AnswerCache
from heapdb.queries.questions import Questions
from heapdb.queries.results import Diff, Leaks, ObjectDiff, ObjectRef
from heapdb.service.app import create_app
from tests.support.snapshots import LUAU_FIXTURES, Loaded


@pytest.fixture(scope="module")
def loaded(leak_series_loaded: dict[str, Loaded]):
    """The three snapshots as loaded for every module that reads them (no rules, not even the
    defaults: these are the engine-level answers the tests compute in process;
    tests/test_leaks_rules.py covers leaks under rules), by tag and by their in-process analyses."""
    tags = {label: loaded.tag for label, loaded in leak_series_loaded.items()}
    local = {label: (loaded.graph, loaded.result) for label, loaded in leak_series_loaded.items()}
    return tags, local


LUAU = LUAU_FIXTURES
LUAU_FILES = {"baseline": "luau-1-baseline.json", "target": "luau-2-target.json", "final": "luau-3-final.json"}


@pytest.fixture(scope="module")
def luau_loaded(database: Database):
    """The three Luau dumps (ids are addresses) loaded with `heapdb load`, and their in-process analyses."""
    if not all((LUAU / name).exists() for name in LUAU_FILES.values()):
        pytest.skip(f"the Luau fixtures are not there ({LUAU})")
    run = uuid.uuid4().hex[:8]
    tags, local = {}, {}
    for label, name in LUAU_FILES.items():
        tags[label] = f"test-compare-luau-{label}-{run}"
        result = CliRunner().invoke(main, ["load", str(LUAU / name), "--tag", tags[label]])
        assert result.exit_code == 0, result.output
        graph = formats.read_graph(LUAU / name)
        local[label] = (graph, analysis.analyze(graph))
    yield tags, local


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
    answer = Questions(database).diff(tags["baseline"], tags["final"], params.Diff(by="type", limit=10_000))
    assert isinstance(answer, Diff)
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
    answer = Questions(database).diff(tags["baseline"], tags["final"], params.Diff(by="path", limit=2000))
    assert isinstance(answer, Diff)
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
    answer = Questions(database).leaks(tags["baseline"], tags["target"], tags["final"], params.Leaks(limit=1000))
    baseline_ids = set(local["baseline"][0].ids.tolist())
    target_ids = set(local["target"][0].ids.tolist())
    graph, result = local["final"]
    keep = members(graph, result)
    candidates = np.array(
        [
            keep[i] and int(graph.ids[i]) in target_ids and int(graph.ids[i]) not in baseline_ids
            for i in range(graph.node_count)
        ]
    )
    expected = Counter(first_paths(graph, result.retaining).signature[candidates].tolist())
    assert len(answer.clusters) == min(1000, len(expected))
    assert {c.signature: c.objects for c in answer.clusters} == {
        c.signature: expected[c.signature] for c in answer.clusters
    }
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
    result = CliRunner().invoke(
        main, ["diff", tags["baseline"], tags["final"], "--by", "path", "--svg", str(svg), "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    assert svg.read_text().startswith("<svg") and "LeakedItem" in svg.read_text()
    cli = CliRunner().invoke(main, ["leaks", tags["baseline"], tags["target"], tags["final"], "--format", "json"])
    assert cli.exit_code == 0, cli.output
    text = CliRunner().invoke(main, ["leaks", tags["baseline"], tags["target"], tags["final"]])
    assert f"heapdb why {tags['final']}" in text.stdout

    client = TestClient(create_app())
    # No limit on either side: the CLI and REST share every default (heapdb.queries.params).
    rest = client.get(
        "/api/leaks", params={"baseline": tags["baseline"], "target": tags["target"], "final": tags["final"]}
    )
    assert rest.status_code == 200
    import json

    assert rest.json() == json.loads(cli.stdout)
    # Each candidate links to its why-alive answer, as JSON and as dot.
    # The flame graph the CLI writes is served too.
    drawing = client.get(f"/api/diff/{tags['baseline']}/{tags['final']}", params={"by": "path", "format": "svg"})
    assert drawing.status_code == 200 and drawing.headers["content-type"].startswith("image/svg+xml")
    assert drawing.text == svg.read_text()
    assert (
        client.get(f"/api/diff/{tags['baseline']}/{tags['final']}", params={"by": "type", "format": "svg"}).status_code
        == 422
    )
    permalink = rest.json()["clusters"][0]["why"]
    assert permalink == f"/api/snapshots/{tags['final']}/objects/{rest.json()['clusters'][0]['sample_ids'][0]}/why"
    assert client.get(permalink).status_code == 200
    assert client.get(permalink, params={"format": "dot"}).text.startswith("digraph")
    by_path = client.get(f"/api/diff/{tags['baseline']}/{tags['final']}", params={"by": "path", "limit": 5})
    assert by_path.status_code == 200 and len(by_path.json()["changes"]) == 5
    assert client.get(f"/api/diff/{tags['baseline']}/no-such-tag").status_code == 404
    assert client.get(f"/api/diff/{tags['baseline']}/{tags['final']}", params={"by": "colour"}).status_code == 422


# --- by object -------------------------------------------------------------------------------


def turnover(before, after) -> tuple[dict[str, list[int]], dict[str, list[tuple[int, int]]]]:
    """Per type [new count, new size, survived count, survived size, freed count, freed size], matching
    members by id and type; and per type the new objects as (-retained size, id), largest first."""
    (gb, rb), (ga, ra) = before, after
    old = {(i, gb.strings[t]) for i, t in zip(gb.ids[members(gb, rb)].tolist(), gb.type[members(gb, rb)].tolist())}
    keep = members(ga, ra)
    now = set()
    figures: dict[str, list[int]] = {}
    fresh: dict[str, list[tuple[int, int]]] = {}
    for i, t, size, retained in zip(
        ga.ids[keep].tolist(), ga.type[keep].tolist(), ga.self_size[keep].tolist(), ra.retained_size[keep].tolist()
    ):
        key = (i, ga.strings[t])
        now.add(key)
        row = figures.setdefault(key[1], [0] * 6)
        if key in old:
            row[2] += 1
            row[3] += size
        else:
            row[0] += 1
            row[1] += size
            fresh.setdefault(key[1], []).append((-retained, i))
    for i, t, size in zip(
        gb.ids[members(gb, rb)].tolist(), gb.type[members(gb, rb)].tolist(), gb.self_size[members(gb, rb)].tolist()
    ):
        if (i, gb.strings[t]) not in now:
            row = figures.setdefault(gb.strings[t], [0] * 6)
            row[4] += 1
            row[5] += size
    return figures, {t: sorted(v) for t, v in fresh.items()}


def id_check(before, after) -> tuple[int, int, int]:
    """(members of after, of those whose id a member of before has, of those whose type differs)."""
    (gb, rb), (ga, ra) = before, after
    keep_b, keep_a = members(gb, rb), members(ga, ra)
    old = dict(zip(gb.ids[keep_b].tolist(), (gb.strings[t] for t in gb.type[keep_b].tolist())))
    objects = shared = retyped = 0
    for i, t in zip(ga.ids[keep_a].tolist(), ga.type[keep_a].tolist()):
        objects += 1
        if i in old:
            shared += 1
            retyped += old[i] != ga.strings[t]
    return objects, shared, retyped


def test_diff_by_object_equals_in_process_matching(database: Database, loaded) -> None:
    tags, local = loaded
    answer = Questions(database).diff(
        tags["baseline"], tags["final"], params.Diff(by="object", limit=10_000, samples=3)
    )
    assert isinstance(answer, ObjectDiff)
    figures, fresh = turnover(local["baseline"], local["final"])
    got = {
        t.type: [t.new_count, t.new_size, t.survived_count, t.survived_size, t.freed_count, t.freed_size]
        for t in answer.types
    }
    assert got == figures
    total = answer.total
    assert [
        total.new_count,
        total.new_size,
        total.survived_count,
        total.survived_size,
        total.freed_count,
        total.freed_size,
    ] == np.sum(list(figures.values()), axis=0).tolist()
    new_sizes = [t.new_size for t in answer.types]
    assert new_sizes == sorted(new_sizes, reverse=True)
    for t in answer.types:
        assert [s.id for s in t.samples] == [i for _, i in fresh.get(t.type, [])[:3]], t.type
        assert all(s.why == ObjectRef(tags["final"], s.id) for s in t.samples)
    # leak.js added 500 items after the baseline and freed none of the first 100.
    leaked = next(t for t in answer.types if t.type == "LeakedItem")
    assert (leaked.new_count, leaked.survived_count, leaked.freed_count) == (500, 100, 0)
    # One process: ids are stable, the data agree, nothing to warn about.
    assert (answer.check.after_objects, answer.check.shared, answer.check.retyped) == id_check(
        local["baseline"], local["final"]
    )
    assert answer.warnings == []
    # A limit lists fewer types, not smaller totals.
    short = Questions(database).diff(tags["baseline"], tags["final"], params.Diff(by="object", limit=2, samples=0))
    assert isinstance(short, ObjectDiff)
    assert len(short.types) == 2 and short.total == answer.total and all(not t.samples for t in short.types)


def test_diff_by_object_says_when_ids_are_addresses(database: Database, loaded, luau_loaded) -> None:
    tags, local = luau_loaded
    answer = Questions(database).diff(tags["baseline"], tags["final"], params.Diff(by="object", limit=10_000))
    assert isinstance(answer, ObjectDiff)
    figures, _ = turnover(local["baseline"], local["final"])
    assert {
        t.type: [t.new_count, t.new_size, t.survived_count, t.survived_size, t.freed_count, t.freed_size]
        for t in answer.types
    } == figures
    assert (answer.check.after_objects, answer.check.shared, answer.check.retyped) == id_check(
        local["baseline"], local["final"]
    )
    assert any("luau" in w and "addresses" in w for w in answer.warnings)
    assert any("by path" in w for w in answer.warnings)
    retyped_share = answer.check.retyped / max(answer.check.shared, 1)
    assert any("different type" in w for w in answer.warnings) == (retyped_share > 0.01)
    # A V8 snapshot against a Luau dump: different runtimes, and their ids have nothing in common.
    mixed = Questions(database).diff(loaded[0]["final"], tags["final"], params.Diff(by="object", limit=5))
    assert isinstance(mixed, ObjectDiff)
    assert any("different runtimes" in w for w in mixed.warnings)
    assert (mixed.check.after_objects, mixed.check.shared, mixed.check.retyped) == id_check(
        loaded[1]["final"], local["final"]
    )
    # The CLI prints the warnings on stderr and keeps stdout for the answer.
    result = CliRunner().invoke(main, ["diff", tags["baseline"], tags["final"], "--by", "object", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert "heapdb: warning:" in result.stderr and "addresses" in result.stderr
    assert json.loads(result.stdout)["warnings"] == answer.warnings


def test_diff_by_object_notices_reused_ids(database: Database, tmp_path: Path) -> None:
    """Two unrelated heaps whose objects sit at the same addresses (heapgen/synth.py lays objects
    out alike whatever the seed; the seed draws their types): most shared ids change type."""
    from heapgen.synth import synth_graph, write_snapbin

    run = uuid.uuid4().hex[:8]
    tags, local = [], []
    for seed in (1, 2):
        path = tmp_path / f"heap-{seed}.snap.bin"
        write_snapbin(synth_graph(3000, 9000, seed=seed), path)
        tags.append(f"test-compare-reused-{seed}-{run}")
        result = CliRunner().invoke(main, ["load", str(path), "--tag", tags[-1]])
        assert result.exit_code == 0, result.output
        graph = formats.read_graph(path)
        local.append((graph, analysis.analyze(graph)))
    try:
        answer = Questions(database).diff(tags[0], tags[1], params.Diff(by="object", limit=10_000))
        assert isinstance(answer, ObjectDiff)
        figures, _ = turnover(local[0], local[1])
        assert {
            t.type: [t.new_count, t.new_size, t.survived_count, t.survived_size, t.freed_count, t.freed_size]
            for t in answer.types
        } == figures
        assert (answer.check.after_objects, answer.check.shared, answer.check.retyped) == id_check(local[0], local[1])
        assert answer.check.retyped > 0.01 * answer.check.shared
        assert any("different type" in w for w in answer.warnings)
        assert any("snapbin" in w and "addresses" in w for w in answer.warnings)
    finally:
        for tag in tags:
            store.drop(database, tag)


# --- leaks by path ---------------------------------------------------------------------------


def path_leaks(local) -> list[tuple[int, list[int], int, int, int]]:
    """In process: (sig, [baseline, target, final] counts, objects, self size, retained size) of the
    paths that gained objects from baseline to target and kept at least as many in final, ranked."""
    groups = {
        label: {row[0]: row for row in store.LoadInput.from_analysis(*local[label]).path_groups()}
        for label in ("baseline", "target", "final")
    }
    out = []
    for sig, gt in groups["target"].items():
        gb, gf = groups["baseline"].get(sig), groups["final"].get(sig)
        base = gb[3:6] if gb else [0, 0, 0]
        if gt[3] > base[0] and gf is not None and gf[3] >= gt[3]:
            out.append((sig, [base[0], gt[3], gf[3]], gf[3] - base[0], gf[4] - base[1], gf[5] - base[2]))
    return sorted(out, key=lambda c: (-c[4], -c[2], c[0]))


def check_path_leaks(database: Database, tags, local) -> Leaks:
    answer = Questions(database).leaks(
        tags["baseline"], tags["target"], tags["final"], params.Leaks(by="path", limit=1000)
    )
    expected = path_leaks(local)
    assert answer.by == "path" and answer.warnings == []
    assert [(c.signature, c.counts, c.objects, c.self_size, c.retained_size) for c in answer.clusters] == expected[
        :1000
    ]
    graph, result = local["final"]
    signature = first_paths(graph, result.retaining).signature
    for c in answer.clusters[:20]:
        held = np.flatnonzero(signature == c.signature)
        ranked = sorted(zip((-result.retained_size[held]).tolist(), graph.ids[held].tolist()))
        assert c.sample_ids == [i for _, i in ranked[:5]]
        assert c.type == graph.type_name(int(held[graph.ids[held].tolist().index(c.sample_ids[0])]))
        assert c.why == ObjectRef(tags["final"], c.sample_ids[0])
    return answer


def test_leaks_by_path_on_v8(database: Database, loaded) -> None:
    tags, local = loaded
    answer = check_path_leaks(database, tags, local)
    # The cache's items, 100 → 300 → 600 held the same way.
    items = [c for c in answer.clusters if c.type == "LeakedItem" and "entries" in c.path]
    assert [c.counts for c in items] == [[100, 300, 600]]


def test_leaks_by_path_on_luau(database: Database, luau_loaded) -> None:
    tags, local = luau_loaded
    answer = check_path_leaks(database, tags, local)
    # leak.luau: sessions held by the cache's entries and by the listener closures grow 10 → 210 → 410.
    assert any("entries" in c.path and c.counts == [10, 210, 410] for c in answer.clusters)
    # ... and the closures themselves hang on the signal's listener list.
    assert any(
        "onTick → table / listeners → table" in c.path and c.type == "function" and c.counts == [10, 210, 410]
        for c in answer.clusters
    )
    # By id the answer warns: Luau ids are addresses.
    by_id = Questions(database).leaks(tags["baseline"], tags["target"], tags["final"], params.Leaks(by="id", limit=5))
    assert any("addresses" in w for w in by_id.warnings)


def test_leaked_classes_are_the_top_candidates_by_id(database: Database, loaded) -> None:
    tags, local = loaded
    answer = Questions(database).leaks(tags["baseline"], tags["target"], tags["final"], params.Leaks(limit=20))
    assert answer.warnings == []
    # In process: memlab's candidates, clustered by first-path signature, each cluster's retained size
    # counting the members whose immediate dominator is held another way (nesting counted once).
    baseline_ids, target_ids = set(local["baseline"][0].ids.tolist()), set(local["target"][0].ids.tolist())
    graph, result = local["final"]
    signature = first_paths(graph, result.retaining).signature
    keep = members(graph, result)
    retained: Counter = Counter()
    count: Counter = Counter()
    for node in np.flatnonzero(keep).tolist():
        i = int(graph.ids[node])
        if i in target_ids and i not in baseline_ids:
            parent = int(result.idom[node])
            nested = parent >= 0 and signature[parent] == signature[node]
            retained[int(signature[node])] += 0 if nested else int(result.retained_size[node])
            count[int(signature[node])] += 1
    ranked = sorted(retained.items(), key=lambda item: (-item[1], -count[item[0]], item[0]))
    assert [(c.signature, c.retained_size) for c in answer.clusters[:3]] == ranked[:3]
    # The two leaks leak.js grows by 200 units between baseline and target lead the list: the
    # listeners' closures on the emitter's listener list, and the cache's LeakedItem instances.
    top = {c.type: c for c in answer.clusters[:2]}
    assert set(top) == {"(closure)", "LeakedItem"} and all(c.objects == 200 for c in top.values())
    assert "cache → LeakyCache / entries → Map" in top["LeakedItem"].path
    assert "emitter → EventEmitter / _events → Object / tick → Array" in top["(closure)"].path


def test_leaks_export_dot_per_cluster(database: Database, loaded, tmp_path: Path) -> None:
    tags, _ = loaded
    out = tmp_path / "dots"
    result = CliRunner().invoke(
        main,
        [
            "leaks",
            tags["baseline"],
            tags["target"],
            tags["final"],
            "--by",
            "path",
            "--limit",
            "4",
            "--dot",
            str(out),
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    clusters = json.loads(result.stdout)["clusters"]
    files = sorted(out.glob("*.dot"))
    assert len(files) == len(clusters) == 4
    client = TestClient(create_app())
    for number, (cluster, path) in enumerate(zip(clusters, files), 1):
        assert path.name.startswith(f"leak-{number:02d}-") and path.name.endswith(f"-{cluster['sample_ids'][0]}.dot")
        text = path.read_text()
        assert text.startswith("digraph") and f"n{cluster['sample_ids'][0]} [" in text
        # The permalink draws the same graph.
        assert client.get(cluster["why"], params={"format": "dot"}).text == text


# --- growth ----------------------------------------------------------------------------------


def growth_rows(local, labels, by: str) -> list[tuple[object, list[int], list[int]]]:
    """In process: (key, counts, sizes) of the groups whose self size grew at every step and count never fell."""
    series: dict[object, list[list[int]]] = {}
    for step, label in enumerate(labels):
        data = store.LoadInput.from_analysis(*local[label])
        rows = data.type_groups() if by == "type" else data.path_groups()
        for row in rows:
            key, figures = (row[0], row[1:3]) if by == "type" else (row[0], row[3:5])
            series.setdefault(key, [[0, 0] for _ in labels])[step] = list(figures)
    last = {row[0] for row in rows}  # groups of the last snapshot: a group gone by then did not grow
    out = []
    for key, values in series.items():
        if key in last and all(b[1] > a[1] and b[0] >= a[0] for a, b in pairwise(values)):
            out.append((key, [v[0] for v in values], [v[1] for v in values]))
    return sorted(out, key=lambda r: (-(r[2][-1] - r[2][0]), -(r[1][-1] - r[1][0]), r[0]))


@pytest.mark.parametrize("by", ["type", "path"])
def test_growth_equals_in_process_series(database: Database, loaded, by: str) -> None:
    tags, local = loaded
    labels = ("baseline", "target", "final")
    answer = Questions(database).growth([tags[label] for label in labels], params.Growth(by=by, limit=10_000))
    expected = growth_rows(local, labels, by)
    assert expected
    got = [((r.label if by == "type" else r.signature), r.counts, r.sizes) for r in answer.rows]
    assert got == expected
    if by == "type":
        leaked = next(r for r in answer.rows if r.label == "LeakedItem")
        assert leaked.counts == [100, 300, 600] and leaked.count_growth == 500


def test_growth_on_luau_and_bad_input(database: Database, luau_loaded) -> None:
    tags, local = luau_loaded
    labels = ("baseline", "target", "final")
    answer = Questions(database).growth([tags[label] for label in labels], params.Growth(by="path", limit=10_000))
    assert [(r.signature, r.counts, r.sizes) for r in answer.rows] == growth_rows(local, labels, "path")
    with pytest.raises(ParameterError):
        Questions(database).growth([tags["baseline"], tags["final"]])
    with pytest.raises(ParameterError):
        Questions(database).growth([tags["baseline"], tags["final"], tags["baseline"]])
    result = CliRunner().invoke(main, ["growth", tags["baseline"], tags["final"]])
    assert result.exit_code != 0 and "at least three" in result.output
    text = CliRunner().invoke(main, ["growth", *(tags[label] for label in labels), "--by", "path", "--limit", "3"])
    assert text.exit_code == 0, text.output
    assert text.stdout.count("    objects: ") == min(3, len(answer.rows))
    client = TestClient(create_app())
    rest = client.get("/api/growth", params={"tag": [tags[label] for label in labels], "by": "path", "limit": 10_000})
    assert (
        rest.status_code == 200
        and rest.json()["rows"]
        == json.loads(
            CliRunner()
            .invoke(main, ["growth", *(tags[label] for label in labels), "--by", "path", "--limit", "10000", "--json"])
            .stdout
        )["rows"]
    )
    assert client.get("/api/growth", params={"tag": [tags["baseline"], tags["final"]]}).status_code == 422
    assert (
        client.get("/api/growth", params={"tag": [tags["baseline"], tags["final"], "no-such-tag"]}).status_code == 404
    )


def test_rest_diff_by_object_and_leaks_by_path(database: Database, loaded) -> None:
    tags, _ = loaded
    client = TestClient(create_app())
    rest = client.get(f"/api/diff/{tags['baseline']}/{tags['final']}", params={"by": "object", "limit": 5})
    assert rest.status_code == 200
    body = rest.json()
    assert body["by"] == "object" and len(body["types"]) == 5 and body["warnings"] == []
    sample = body["types"][0]["samples"][0]
    assert client.get(sample["why"]).json()["target"]["id"] == sample["id"]
    cli = CliRunner().invoke(
        main, ["diff", tags["baseline"], tags["final"], "--by", "object", "--limit", "5", "--format", "json"]
    )
    assert json.loads(cli.stdout) == body
    text = CliRunner().invoke(main, ["diff", tags["baseline"], tags["final"], "--by", "object", "--limit", "5"])
    assert body["types"][0]["type"] in text.stdout and "largest new objects" in text.stdout and text.stderr == ""
    leaks = client.get(
        "/api/leaks",
        params={"baseline": tags["baseline"], "target": tags["target"], "final": tags["final"], "by": "path"},
    )
    assert leaks.status_code == 200 and leaks.json()["by"] == "path"
    assert client.get(leaks.json()["clusters"][0]["why"], params={"format": "dot"}).text.startswith("digraph")
    assert (
        client.get(
            "/api/leaks",
            params={"baseline": tags["baseline"], "target": tags["target"], "final": tags["final"], "by": "colour"},
        ).status_code
        == 422
    )


def test_the_service_cuts_one_report_for_every_smaller_limit(database: Database, loaded) -> None:
    # With a cache (the service), a diff by type, path or object and a growth report are worked out
    # once for at least the default limit; a smaller limit is that answer cut, which must be the
    # answer asked with that limit (each order ends on a unique key) and must not compute again.
    tags, _ = loaded
    cache = AnswerCache()
    served, direct = Questions(database, timeout=60, cache=cache), Questions(database, timeout=60)
    series = [tags["baseline"], tags["target"], tags["final"]]
    sids = [store.get_snapshot(database, tag).sid for tag in series]

    def computed_again() -> Any:
        raise AssertionError("the report at the default limit is not what the service kept")

    for by in ("type", "path", "object"):
        whole = direct.diff(series[0], series[2], params.Diff.model_validate({"by": by}))
        rows = whole.types if isinstance(whole, ObjectDiff) else whole.changes
        assert len(rows) > 3, f"diff by {by}: too few rows to cut"
        for limit in (3, 1):
            p = params.Diff.model_validate({"by": by, "limit": limit})
            assert served.diff(series[0], series[2], p) == direct.diff(series[0], series[2], p), (by, limit)
        assert cache.get((sids[0], "diff", sids[2], params.Diff.model_validate({"by": by})), computed_again) == whole
    for by in ("type", "path"):
        report = direct.growth(series, params.Growth.model_validate({"by": by}))
        assert len(report.rows) > 3, f"growth by {by}: too few rows to cut"
        for limit in (3, 1):
            g = params.Growth.model_validate({"by": by, "limit": limit})
            assert served.growth(series, g) == direct.growth(series, g), (by, limit)
        key = (sids[0], "growth", tuple(sids[1:]), params.Growth.model_validate({"by": by}))
        assert cache.get(key, computed_again) == report
