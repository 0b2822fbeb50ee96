"""Java heap dumps end to end: three dumps of tests/java/Leak.java at growing leak sizes (one process
each, dumped with `jcmd GC.heap_dump`) loaded into the test Neo4j with `heapdb load`, then every question
asked of them, and `heapdb convert` to Chrome's .heapsnapshot read back by heapdb's V8 reader and memlab."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from heapdb.cli import main
from heapdb.db import Database
from heapdb.loader import analysis
from heapdb.loader.formats import hprof, v8
from heapdb.loader.graph import EdgeKind, HeapGraph
from heapdb.queries import params
from heapdb.queries.questions import Questions
from heapdb.queries.results import Diff, Leaks, ObjectDiff
from heapdb.service import pages
from heapdb.service.app import create_app
from heapgen.java import compile_java, dump_leak
from tests.support.v8_fixtures import memlab_oracle, node_tools  # noqa: F401

SESSIONS = {"baseline": 100, "target": 600, "final": 1200}
SESSION = "Leak$Session"


@pytest.fixture(scope="module")
def dumps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if not all(shutil.which(tool) for tool in ("javac", "java", "jcmd")):
        pytest.skip("needs a JDK (javac, java, jcmd): scripts/bootstrap.sh installs it")
    tmp = tmp_path_factory.mktemp("java-e2e")
    classes = compile_java(tmp)
    out = {}
    for label, sessions in SESSIONS.items():
        out[label] = tmp / f"{label}.hprof"
        # A full GC first (jcmd's default): only live objects, as a leak hunt wants them.
        dump_leak(classes, sessions, out[label], everything=False)
    return out


@pytest.fixture(scope="module")
def loaded(database: Database, dumps: dict[str, Path]) -> Iterator[tuple[dict[str, str], dict[str, HeapGraph]]]:
    run = uuid.uuid4().hex[:8]
    tags, graphs = {}, {}
    for label, path in dumps.items():
        tags[label] = f"test-hprof-{label}-{run}"
        result = CliRunner().invoke(main, ["load", str(path), "--tag", tags[label], "--rules", "none"])
        assert result.exit_code == 0, result.output
        graphs[label] = hprof.read_graph(path)
    yield tags, graphs


def cache_map(g: HeapGraph) -> int:
    """The node of the HashMap in Leak.CACHE (the leak)."""
    leak = next(v for v in np.flatnonzero(g.kind == g.node_kinds.index("class")).tolist() if g.node_name(v) == "Leak")
    return next(int(g.edge_to[e]) for e in g.out_edges(leak) if g.edge_label(e) == "CACHE")


def a_session(g: HeapGraph) -> int:
    return int(g.ids[np.flatnonzero(g.type == g.strings.index(SESSION))[0]])


def test_load_why_dominators_and_retains_name_the_leak(database: Database, loaded) -> None:
    tags, graphs = loaded
    g = graphs["final"]
    q = Questions(database)
    session = a_session(g)
    why = q.why_alive(tags["final"], session)
    assert why.target.type == SESSION and why.paths
    names = [r.name for r in why.paths[0].references]
    # ... -> Leak (the class) -CACHE-> HashMap -table-> HashMap$Node[] -n-> HashMap$Node -value-> Session
    assert names[-4:-2] == ["CACHE", "table"] and names[-1] == "value", names
    assert [o.type for o in why.paths[0].objects[-4:]] == [
        "java.util.HashMap",
        "java.util.HashMap$Node[]",
        "java.util.HashMap$Node",
        SESSION,
    ]

    cache = int(g.ids[cache_map(g)])
    chain = q.dominators(tags["final"], session).chain
    assert cache in [o.id for o in chain] and "Leak" in [o.name for o in chain]

    retains = q.retains(tags["final"], cache, params.Retains(depth=3, limit=200))
    assert retains.target.type == "java.util.HashMap"
    assert retains.target.retained_size > SESSIONS["final"] * 1000
    assert {o.type for o in retains.objects} >= {"java.util.HashMap$Node[]", "java.util.HashMap$Node"}
    entry = next(o for o in retains.objects if o.type == "java.util.HashMap$Node")
    assert SESSION in {o.type for o in q.retains(tags["final"], entry.id, params.Retains(depth=1)).objects}

    # The database holds what the reader and the analysis computed.
    a = analysis.analyze(g)
    assert retains.target.retained_size == int(a.retained_size[cache_map(g)])
    assert cache in [o.id for o in q.top(tags["final"], params.Top(limit=20))]


def test_types_and_diffs_show_the_sessions_growing(database: Database, loaded) -> None:
    tags, graphs = loaded
    q = Questions(database)
    rows = {r.type: r for r in q.types(tags["final"], params.Types(limit=1000))}
    assert rows[SESSION].count == SESSIONS["final"]
    assert rows[SESSION].self_size == SESSIONS["final"] * 24  # 12-byte header, an int, 2 compressed refs

    by_type = q.diff(tags["baseline"], tags["final"], params.Diff(by="type", limit=1000))
    assert isinstance(by_type, Diff)
    change = next(c for c in by_type.changes if c.label == SESSION)
    assert change.count_delta == SESSIONS["final"] - SESSIONS["baseline"]

    by_path = q.diff(tags["baseline"], tags["final"], params.Diff(by="path", limit=50))
    assert isinstance(by_path, Diff)
    top = max(by_path.changes, key=lambda c: c.count_delta)
    assert "CACHE → java.util.HashMap" in top.hops and top.count_delta >= SESSIONS["final"] - SESSIONS["baseline"], top


def test_leaks_by_path_find_the_cache_and_ids_are_called_addresses(database: Database, loaded) -> None:
    tags, _ = loaded
    q = Questions(database)
    leaks = q.leaks(tags["baseline"], tags["target"], tags["final"], params.Leaks(by="path"))
    assert isinstance(leaks, Leaks)
    sessions = [c for c in leaks.clusters if c.type == SESSION]
    assert sessions and "CACHE → java.util.HashMap" in sessions[0].hops
    assert sessions[0].counts == [SESSIONS[k] for k in ("baseline", "target", "final")]
    # By id: the dumps' ids are addresses (three processes here; one process reuses them after a GC).
    by_id = q.leaks(tags["baseline"], tags["target"], tags["final"], params.Leaks(by="id"))
    assert any("hprof" in w and "addresses" in w for w in by_id.warnings), by_id.warnings
    objects = q.diff(tags["baseline"], tags["final"], params.Diff(by="object", limit=5))
    assert isinstance(objects, ObjectDiff)
    assert any("hprof" in w and "addresses" in w for w in objects.warnings)


def test_suspects_name_the_cache(database: Database, loaded) -> None:
    tags, graphs = loaded
    g = graphs["final"]
    cache = cache_map(g)
    table = next(int(g.edge_to[e]) for e in g.out_edges(cache) if g.edge_label(e) == "table")
    suspects = Questions(database).suspects(tags["final"], params.Suspects())
    # The Leak class (CACHE is its static) is the big object; its retained size piles up in the map's table.
    leak = next(s for s in suspects.objects if s.object.kind == "class" and s.object.name == "Leak")
    assert leak.accumulation.object.id in (int(g.ids[cache]), int(g.ids[table])), leak.accumulation
    assert leak.share > 0.5


def test_cli_answers_on_a_java_dump(loaded) -> None:
    tags, graphs = loaded
    session = a_session(graphs["final"])
    for args in (["why", tags["final"], str(session)], ["types", tags["final"], "--limit", "400"]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
        assert SESSION in result.output
    result = CliRunner().invoke(main, ["why", tags["final"], str(session)])
    assert "CACHE" in result.output


def test_an_objects_primitive_values_are_stored_and_shown(database: Database, loaded) -> None:
    """A Session's fields and its byte[] buffer, as the object question, the CLI and the object page
    give them: the values the dump holds, read back from the store and decoded."""
    tags, graphs = loaded
    g = graphs["final"]
    q = Questions(database)
    sessions = np.flatnonzero(g.type == g.strings.index(SESSION))
    ids = {}
    for node in sessions[:50].tolist():
        details = q.object(tags["final"], int(g.ids[node]), params.ObjectDetails(limit=5))
        (value,) = details.values  # Session's one primitive field: its id
        assert (value.type, value.name) == ("int", "id")
        ids[int(value.value)] = node
        buffer = next(n.object.id for n in details.outgoing if n.reference.name == "buffer")
        (array,) = q.object(tags["final"], buffer, params.ObjectDetails(limit=0)).values
        assert (array.type, array.name, array.value) == ("byte[1000]", "", "[" + "0, " * 16 + "…]")
    assert len(ids) == 50 and set(ids) <= set(range(SESSIONS["final"]))
    # Its "user" string holds the same number: the values are this object's, not another's.
    some = next(iter(ids))
    user = next(
        n.object.id
        for n in q.object(tags["final"], int(g.ids[ids[some]]), params.ObjectDetails(limit=5)).outgoing
        if n.reference.name == "user"
    )
    text = CliRunner().invoke(main, ["object", tags["final"], str(user)])
    assert text.exit_code == 0 and "values:" in text.output and "byte coder = 0" in text.output, text.output
    page = TestClient(create_app(token="")).get(pages.object_page(tags["final"], int(g.ids[ids[some]])))
    assert page.status_code == 200 and '<h2 id="values-title">Values</h2>' in page.text
    assert f"<code>{some}</code>" in page.text


def test_convert_to_heapsnapshot_reads_back(dumps: dict[str, Path], tmp_path: Path, memlab_oracle) -> None:  # noqa: F811
    out = tmp_path / "leak.heapsnapshot"
    result = CliRunner().invoke(main, ["convert", str(dumps["final"]), str(out)])
    assert result.exit_code == 0, result.output
    graph = hprof.read_graph(dumps["final"])
    back = v8.read_graph(out)
    assert back.node_count == graph.node_count and np.array_equal(back.edge_to, graph.edge_to)
    assert np.array_equal(back.self_size, graph.self_size)
    # V8 has no edge kind for a GC root's: those come back as another strong kind; weak stays weak.
    assert np.array_equal(back.edge_kind == EdgeKind.WEAK, graph.edge_kind == EdgeKind.WEAK)
    # Java types come back as the nodes' class names (the synthetic roots as V8's "(synthetic)").
    java = np.flatnonzero(graph.kind != graph.node_kinds.index("synthetic")).tolist()
    assert [back.type_name(v) for v in java] == [graph.type_name(v) for v in java]
    # Read back as V8, DevTools' rules apply (unreachable objects count differently); the leak's
    # figures stay the same.
    cache = cache_map(graph)
    assert analysis.analyze(back).retained_size[cache] == analysis.analyze(graph).retained_size[cache]
    oracle = memlab_oracle(out)
    assert (oracle.node_count, oracle.edge_count) == (graph.node_count, graph.edge_count)
    # Ids are the dump's addresses when they fit the 32 bits memlab keeps (a small heap's do), else
    # renumbered: either way both readers see the same.
    assert np.array_equal(back.ids, oracle.ids)
