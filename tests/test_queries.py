"""The stored queries and the questions built on them, on the real Neo4j with real snapshots.

Every answer is checked against the in-process graph and analysis of the same file: each hop of a
why-alive path must be a retaining reference of the graph, its length the analysis' breadth-first
distance (and, on V8, consistent with memlab's retainer paths as docs/queries.md states), ignored
references must really be avoided (checked with a breadth-first search that drops them), dominator
chains must follow the analysis' immediate dominators, and top/types must equal numpy aggregates.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import uuid
from collections import deque
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from heapdb.cli import main
from heapdb.db import Database
from heapdb.errors import NotFound, ParameterError
from heapdb.loader.analysis import kernels
from heapdb.loader.graph import EDGE_KIND_NAMES, EdgeKind
from heapdb.queries import catalog, docs, ignoring, params
from heapdb.queries.questions import Questions
from heapdb.queries.results import RetainerPath
from tests.support.snapshots import LUAU_FIXTURES, Loaded, load_snapshot

REPO = Path(__file__).resolve().parent.parent
LUAU_FIXTURE = LUAU_FIXTURES / "luau-3-final.json"
LEAK_TYPES = ("LeakedItem", "LeakedBuffer", "LeakyCache")


@pytest.fixture(scope="module")
def v8(leak_loaded: Loaded) -> Loaded:
    return leak_loaded


@pytest.fixture(scope="module")
def luau(database: Database):
    if not LUAU_FIXTURE.exists():
        pytest.skip(f"the Luau fixtures are not there ({LUAU_FIXTURE})")
    loaded = load_snapshot(database, LUAU_FIXTURE, "queries-luau")
    return loaded


@pytest.fixture(scope="module")
def questions(database: Database) -> Questions:
    return Questions(database, timeout=60)


def sample_by_distance(loaded: Loaded, count: int, seed: int = 1) -> list[int]:
    """Reachable objects spread over all distances, the deepest one always included."""
    rng = np.random.default_rng(seed)
    d = loaded.result.distance
    reachable = np.flatnonzero(loaded.result.reachable & (d > 0))
    levels = np.unique(d[reachable])
    picked = {int(reachable[np.argmax(d[reachable])])}
    while len(picked) < count:
        level = rng.choice(levels)
        picked.add(int(rng.choice(reachable[d[reachable] == level])))
    return sorted(picked)


def assert_retaining_path(loaded: Loaded, path: RetainerPath, target: int) -> None:
    """Each hop is a retaining reference of the graph with that name and kind, from the root to the target."""
    g, r = loaded.graph, loaded.result
    nodes = [loaded.index(o.id) for o in path.objects]
    assert nodes[0] == r.root and nodes[-1] == target
    assert len(path.references) == len(nodes) - 1
    for a, b, ref in zip(nodes, nodes[1:], path.references):
        matching = [
            e
            for e in g.out_edges(a)
            if g.edge_to[e] == b
            and r.retaining[e]
            and g.edge_label(e) == ref.name
            and EDGE_KIND_NAMES[g.edge_kind[e]] == ref.kind
        ]
        assert matching, f"no retaining reference {ref.name!r} ({ref.kind}) from {g.ids[a]} to {g.ids[b]}"


def bfs_distance(loaded: Loaded, target: int, edge_ok: np.ndarray, node_ok: np.ndarray) -> int:
    """Breadth-first distance from the root to ``target`` over the allowed retaining edges and nodes."""
    g, r = loaded.graph, loaded.result
    dist = {r.root: 0}
    queue = deque([r.root])
    while queue:
        v = queue.popleft()
        if v == target:
            return dist[v]
        for e in g.out_edges(v):
            w = int(g.edge_to[e])
            if r.retaining[e] and edge_ok[e] and w not in dist and (node_ok[w] or w == target):
                dist[w] = dist[v] + 1
                queue.append(w)
    return -1


# --- the catalog ------------------------------------------------------------------------------


def test_every_stored_query_parses_and_starts_from_a_ready_snapshot() -> None:
    queries = catalog.catalog()
    assert {
        "why-alive",
        "why-alive-avoiding",
        "dominators",
        "dominated",
        "retainers",
        "top",
        "types",
        "object",
        "find",
        "snapshots",
        "snapshot",
    } <= set(queries)
    for q in queries.values():
        if any(p.name == "tag" for p in q.parameters):
            assert q.cypher.startswith("MATCH (s:Snapshot {tag: $tag, status: 'ready'})"), q.name
        elif ":Snapshot" in q.cypher:
            assert "status: 'ready'" in q.cypher, q.name
        else:  # the remembered history (builds, signatures, gate runs) outlives the snapshots it came from
            remembered = {"build", "signature", "signatureobservation", "gaterun"}
            assert remembered & set(re.findall(r":(\w+)", q.cypher.lower())), q.name


def test_parameters_are_checked_and_converted() -> None:
    why = catalog.get("why-alive-avoiding")
    bound = why.bind({"tag": "t", "id": "42", "ignore_names": ["a", '["b", "c"]'], "ignore_ids": "[1, 2]"})
    assert bound == {
        "tag": "t",
        "id": 42,
        "ignore_names": ["a", "b", "c"],
        "ignore_types": [],
        "ignore_ids": [1, 2],
        "ignore_kinds": [],
        "ignore_kind_names": [],
        "ignore_templates": [],
        "ignore_keys": [],
        "ignore_refs": [],
    }
    top = catalog.get("top")
    assert top.bind({"tag": "t"}) == {"tag": "t", "type": None, "limit": 20}
    bad: list[tuple[catalog.StoredQuery, dict[str, object]]] = [
        (why, {"tag": "t"}),  # id missing
        (why, {"tag": "t", "id": "x"}),
        (why, {"tag": "t", "id": 2**63}),
        (why, {"tag": "t", "id": True}),
        (why, {"tag": "t", "id": 1, "ignore_ids": ["one"]}),
        (why, {"tag": "t", "id": 1, "ignore_names": "[not json"}),
        (why, {"tag": "t", "id": 1, "colour": "red"}),
        (top, {"tag": "t", "limit": "0"}),
        (top, {"tag": "t", "limit": "1001"}),
        (catalog.get("types"), {"tag": "t", "sort": "name"}),
        (top, {"tag": ["a", "b"]}),
    ]
    for query, values in bad:
        with pytest.raises(ParameterError):
            query.bind(values)


def test_malformed_headers_are_refused() -> None:
    good = "// name: x\n// description: d\n// param tag: string -- t\nMATCH (s:Snapshot {tag: $tag, status: 'ready'}) RETURN s\n"
    assert catalog.parse(good, "x.cypher").name == "x"
    for text in (
        good.replace("// name: x\n", ""),
        good.replace("string", "float"),
        good.replace("$tag", "$other"),  # uses an undeclared parameter
        good.replace("// param tag: string -- t\n", "// param tag: string -- t\n// param extra: int -- unused\n"),
        "// name: x\n// description: d\n",
    ):
        with pytest.raises(ValueError):
            catalog.parse(text, "x.cypher")


def test_docs_queries_md_is_generated_from_the_catalog() -> None:
    text = (REPO / "docs" / "queries.md").read_text(encoding="utf-8")
    start, end = text.index(docs.BEGIN), text.index(docs.END) + len(docs.END)
    assert text[start:end] == docs.render(), (
        "docs/queries.md is stale: run `python -m heapdb.queries.docs docs/queries.md`"
    )
    for name in catalog.catalog():
        assert f"### `{name}`" in text


def plan_operators(plan: dict | None) -> list[tuple[str, str, int]]:
    """(operator, details, db hits) of a plan or profile, depth first."""
    assert plan is not None, "the result summary carries no plan"
    operators: list[tuple[str, str, int]] = []

    def walk(p: dict) -> None:
        operators.append((p["operatorType"].split("@")[0], p.get("args", {}).get("Details", ""), p.get("dbHits", 0)))
        for child in p.get("children", []):
            walk(child)

    walk(plan)
    return operators


def test_why_alive_avoiding_plan_is_one_shortest_path_search_from_index_seeks(database: Database, v8: Loaded) -> None:
    query = catalog.get("why-alive-avoiding")
    values = {"tag": v8.tag, "id": v8.id(int(np.argmax(v8.result.distance))), "ignore_names": ["x"]}
    with database.session() as session:
        operators = plan_operators(session.run("EXPLAIN " + query.cypher, query.bind(values)).consume().plan)
    shortest = [details for op, details, _ in operators if op == "ShortestPath"]
    assert len(shortest) == 1
    # The ignore lists are checked during the search, not after it.
    assert "ignore_names" in shortest[0] and "ignore_types" in shortest[0] and "ignore_ids" in shortest[0]
    assert any(op == "NodeIndexSeek" and "target:Object" in details for op, details, _ in operators)
    assert not any(op in ("AllNodesScan", "NodeByLabelScan") and ":Object" in details for op, details, _ in operators)
    assert not any("AntiConditionalApply" in op for op, _, _ in operators), (
        "shortestPath fell back to an exhaustive search"
    )


def test_why_alive_reads_the_first_path_in_steps_proportional_to_its_length(database: Database, v8: Loaded) -> None:
    """No search: from the object's index entry back along `via`, a bounded amount of work per hop,
    also for the deepest object and for objects held by the heap's biggest hubs."""
    query = catalog.get("why-alive")
    g, r = v8.graph, v8.result
    # The deepest object, and an element of the array with the most references (a hub on its path).
    hub = int(np.argmax(np.diff(g.edge_start)))
    element = int(g.edge_to[g.edge_start[hub]])
    assert r.reachable[element] and np.diff(g.edge_start)[hub] > 1000
    for node in (int(np.argmax(r.distance)), element):
        with database.session() as session:
            operators = plan_operators(
                session.run("PROFILE " + query.cypher, query.bind({"tag": v8.tag, "id": v8.id(node)})).consume().profile
            )
        assert any(op == "NodeIndexSeek" and "target:Object" in details for op, details, _ in operators)
        assert not any(op in ("AllNodesScan", "NodeByLabelScan", "ShortestPath") for op, _, _ in operators)
        hits = sum(h for _, _, h in operators)
        assert hits <= 40 * (int(r.distance[node]) + 2), (hits, int(r.distance[node]), int(np.diff(g.edge_start)[hub]))


# --- why-alive ---------------------------------------------------------------------------------


def test_why_alive_paths_are_shortest_retaining_paths_on_v8(
    questions: Questions, v8: Loaded, leak_snapshot: Path, memlab_oracle
) -> None:
    oracle = memlab_oracle(leak_snapshot)
    assert np.array_equal(oracle.ids, v8.graph.ids)
    sample = sample_by_distance(v8, 30)
    types = np.array([v8.graph.type_name(i) for i in range(v8.graph.node_count)])
    leaks = [int(i) for t in LEAK_TYPES for i in np.flatnonzero(types == t)[:2]]
    g, nowhere = v8.graph, np.zeros(v8.graph.node_count, dtype=np.bool_)
    shortest = kernels.first_search(g.root, g.edge_start, g.edge_to, v8.result.retaining, nowhere, False)[3]
    for node in sample + leaks:
        answer = questions.why_alive(v8.tag, v8.id(node))
        assert len(answer.paths) == 1
        path = answer.paths[0]
        assert_retaining_path(v8, path, node)
        assert path.length == v8.result.distance[node]
        memlab = int(oracle.path_length[node])
        # memlab counts from its own roots ((GC roots) is 0) and skips or postpones some edges:
        # never shorter than ours minus the root hop, and exactly that for the leak objects. Where
        # our first path is longer than the plain shortest one (a transient root group such as
        # "(Handle scope)" holds the object or what holds it, and we follow those groups last),
        # memlab, which postpones every root group in an order of its own, may take the shorter.
        if memlab >= 0 and path.length == shortest[node]:
            assert path.length <= memlab + 1, (v8.id(node), path.length, memlab)
        if types[node] in LEAK_TYPES:
            assert path.length == memlab + 1


def test_why_alive_paths_on_luau(questions: Questions, luau: Loaded) -> None:
    for node in sample_by_distance(luau, 25):
        path = questions.why_alive(luau.tag, luau.id(node)).paths[0]
        assert_retaining_path(luau, path, node)
        assert path.length == luau.result.distance[node]
    # The root itself: a path of no references.
    root = questions.why_alive(luau.tag, luau.id(luau.result.root))
    assert root.paths[0].length == 0 and root.paths[0].objects[0].root


def test_ignored_names_types_and_ids_are_avoided(questions: Questions, v8: Loaded) -> None:
    g = v8.graph
    everything = np.ones(g.edge_count, dtype=np.bool_)
    all_nodes = np.ones(g.node_count, dtype=np.bool_)
    types = np.array([g.type_name(i) for i in range(g.node_count)])
    checked = 0
    for node in sample_by_distance(v8, 12, seed=5):
        first = questions.why_alive(v8.tag, v8.id(node)).paths[0]
        if first.length < 3:
            continue
        name = first.references[-2].name  # a reference in the middle of the path
        middle = first.objects[len(first.objects) // 2]
        edge_ok = np.array([g.edge_label(e) != name for e in range(g.edge_count)])
        by_name = questions.why_alive(v8.tag, v8.id(node), params.Why(ignore_name=[name]))
        expected = bfs_distance(v8, node, edge_ok, all_nodes)
        if expected < 0:
            assert by_name.paths == []
        else:
            assert_retaining_path(v8, by_name.paths[0], node)
            assert all(ref.name != name for ref in by_name.paths[0].references)
            assert by_name.paths[0].length == expected

        by_type = questions.why_alive(v8.tag, v8.id(node), params.Why(ignore_type=[middle.type]))
        expected = bfs_distance(v8, node, everything, types != middle.type)
        if expected < 0:
            assert by_type.paths == []
        else:
            assert_retaining_path(v8, by_type.paths[0], node)
            assert all(o.type != middle.type for o in by_type.paths[0].objects[1:-1])
            assert by_type.paths[0].length == expected

        by_id = questions.why_alive(v8.tag, v8.id(node), params.Why(ignore_id=[middle.id]))
        expected = bfs_distance(v8, node, everything, g.ids != middle.id)
        assert [p.length for p in by_id.paths] == ([] if expected < 0 else [expected])
        if by_id.paths:
            assert middle.id not in [o.id for o in by_id.paths[0].objects]
        checked += 1
    assert checked >= 5


def test_k_paths_end_with_distinct_retaining_references(questions: Questions, v8: Loaded) -> None:
    g, r = v8.graph, v8.result
    sources = g.edge_sources()
    retaining = r.retaining & r.reachable[sources] & (sources != g.edge_to)

    def distinct_holders(edges: np.ndarray) -> np.ndarray:
        pairs = np.unique(np.stack([sources[edges], g.edge_to[edges]]), axis=1)
        return np.bincount(pairs[1], minlength=g.node_count)

    holders = distinct_holders(retaining)
    # Holders nearer the root than the object cannot reach it only through the object, so each of
    # them gives a path: objects with at least three of those and no others have three paths.
    near_holders = distinct_holders(retaining & (r.distance[sources] < r.distance[g.edge_to]))
    candidates = np.flatnonzero((near_holders >= 3) & (near_holders == holders) & (r.distance > 2))[:8]
    assert candidates.size >= 3
    for node in candidates.tolist():
        answer = questions.why_alive(v8.tag, v8.id(node), params.Why(k=3))
        assert len(answer.paths) == 3
        assert answer.paths[0].length == r.distance[node]
        last_hops = set()
        transient = set(g.ids[g.transient_root_groups()].tolist())
        for path in answer.paths:
            assert_retaining_path(v8, path, node)
            # Only a path through a transient root group (followed last by the first path) is shorter.
            assert path.length >= answer.paths[0].length or transient & {o.id for o in path.objects}
            assert [o.id for o in path.objects].count(v8.id(node)) == 1  # never through the object itself
            last_hops.add((path.objects[-2].id, path.references[-1].kind, path.references[-1].name))
        assert len(last_hops) == 3
    single = int(np.flatnonzero((holders == 1) & r.reachable & (r.distance > 2))[0])
    assert len(questions.why_alive(v8.tag, v8.id(single), params.Why(k=5)).paths) == 1
    with pytest.raises(ParameterError):
        questions.why_alive(v8.tag, v8.id(single), params.Why(k=11))


def test_further_paths_are_independent_when_an_independent_path_exists(questions: Questions, v8: Loaded) -> None:
    """Path 2 shares no object with path 1 but the root groups and the object's dominators, when the
    graph has such a path (a breadth-first search without path 1's other objects says whether), and is
    then the shortest one; otherwise it goes through another holder."""
    g, r = v8.graph, v8.result
    synthetic = g.synthetic_nodes()
    sources = g.edge_sources()
    holders = np.bincount(
        np.unique(np.stack([sources[r.retaining], g.edge_to[r.retaining]]), axis=1)[1], minlength=g.node_count
    )
    candidates = np.flatnonzero((holders >= 2) & r.reachable & (r.distance > 2))
    rng = np.random.default_rng(7)
    independent = other_holder = 0
    for node in rng.choice(candidates, size=min(40, candidates.size), replace=False).tolist():
        answer = questions.why_alive(v8.tag, v8.id(node), params.Why(k=2))
        first = answer.paths[0]
        shared = set(idom_chain(v8, node))
        fenced = {o.id for o in first.objects[1:-1]} - shared
        fenced = {i for i in fenced if not synthetic[v8.index(i)]}
        node_ok = ~np.isin(g.ids, sorted(fenced))
        expected = bfs_distance(v8, node, np.ones(g.edge_count, dtype=np.bool_), node_ok)
        if len(answer.paths) < 2:
            assert expected < 0 or not fenced
            continue
        second = answer.paths[1]
        assert_retaining_path(v8, second, node)
        if expected >= 0 and fenced:
            assert not fenced & {o.id for o in second.objects}
            assert second.length == expected
            independent += 1
        else:  # through another direct holder than the first path's
            assert second.objects[-2].id != first.objects[-2].id
            other_holder += 1
    assert independent >= 3 and other_holder >= 1, (independent, other_holder)


def test_ignore_selectors_are_avoided_like_a_rule_file_says(questions: Questions, v8: Loaded) -> None:
    """--ignore takes a rule file's [[ignore]] selector; the path found is the shortest that uses no
    reference it selects (a breadth-first search over the graph without them says how long)."""
    g = v8.graph
    sources = g.edge_sources()
    types = np.array([g.type_name(i) for i in range(g.node_count)])
    labels = np.array([g.edge_label(e) for e in range(g.edge_count)])
    all_nodes = np.ones(g.node_count, dtype=np.bool_)
    checked = 0
    for node in sample_by_distance(v8, 12, seed=11):
        first = questions.why_alive(v8.tag, v8.id(node)).paths[0]
        if first.length < 3:
            continue
        holder, reference = first.objects[-2], first.references[-1]
        # Checked hop by hop: a holder's type and a regex over the name (the search cannot check those).
        pattern = re.escape(reference.name)
        selector = f"from.type = {json.dumps(holder.type)}, edge.name = {{ regex = {json.dumps(pattern)} }}"
        answer = questions.why_alive(v8.tag, v8.id(node), params.Why(ignore=[selector]))
        edge_ok = ~((types[sources] == holder.type) & (labels == reference.name))
        expected = bfs_distance(v8, node, edge_ok, all_nodes)
        assert [p.length for p in answer.paths] == ([] if expected < 0 else [expected])
        for path in answer.paths:
            assert_retaining_path(v8, path, node)
            assert not any(
                a.type == holder.type and ref.name == reference.name for a, ref in zip(path.objects, path.references)
            )
        assert answer.ignored["selectors"] == [selector]
        # The same references by exact patterns: checked by the search itself, the same answer.
        exact = f"from.type = {json.dumps(holder.type)}, edge.name = {json.dumps(reference.name)}"
        assert ignoring.exact_keys(ignoring.parse_ignore(exact)) is not None
        pushed = questions.why_alive(v8.tag, v8.id(node), params.Why(ignore=[exact]))
        assert [p.length for p in pushed.paths] == [p.length for p in answer.paths]
        # Holder and target types: every reference from one type to the other.
        both = f"from.type = {json.dumps(holder.type)}, to.type = {json.dumps(types[node])}"
        by_ends = questions.why_alive(v8.tag, v8.id(node), params.Why(ignore=[both]))
        ends_ok = ~((types[sources] == holder.type) & (types[g.edge_to] == types[node]))
        expected = bfs_distance(v8, node, ends_ok, all_nodes)
        assert [p.length for p in by_ends.paths] == ([] if expected < 0 else [expected])
        # Exact names alone are the same as --ignore-name.
        by_name = questions.why_alive(
            v8.tag, v8.id(node), params.Why(ignore=[f"edge.name = {json.dumps(reference.name)}"])
        )
        plain = questions.why_alive(v8.tag, v8.id(node), params.Why(ignore_name=[reference.name]))
        assert [p.length for p in by_name.paths] == [p.length for p in plain.paths]
        # Every reference into the object's type ignored: nothing retains it.
        cut = questions.why_alive(v8.tag, v8.id(node), params.Why(ignore=[f"to.type = {json.dumps(types[node])}"]))
        assert cut.paths == []
        checked += 1
    assert checked >= 5


@pytest.mark.parametrize(
    "selector, expected",
    [
        ("", "expected a selector"),
        ('to.type = "A"\nfrom.type = "B"', "one line"),
        ('path = ["a", "b"]', "a path chain belongs in a rule file"),
        ('edge.colour = "red"', "unknown key 'colour'"),
        ("to.type = { regex = '(' }", "bad regex"),
        ('to.type = "A" }] [[weak]', "not valid TOML"),
        ('object = "A"', "unknown key 'object'"),
    ],
)
def test_bad_ignore_selectors_are_parameter_errors(selector: str, expected: str) -> None:
    with pytest.raises(ParameterError, match=re.escape(expected)) as caught:
        params.Why(ignore=[selector])
    assert "--ignore" in str(caught.value)


def reached_without(loaded: Loaded, kind: EdgeKind) -> np.ndarray:
    """bool[n]: what the root reaches over retaining references of any kind but ``kind``."""
    g = loaded.graph
    usable = loaded.result.retaining & (g.edge_kind != kind)
    seen = np.zeros(g.node_count, dtype=np.bool_)
    seen[g.root] = True
    frontier = [int(g.root)]
    while frontier:
        following = []
        for v in frontier:
            for e in range(int(g.edge_start[v]), int(g.edge_start[v + 1])):
                w = int(g.edge_to[e])
                if usable[e] and not seen[w]:
                    seen[w] = True
                    following.append(w)
        frontier = following
    return seen


def test_why_ignore_selector_on_the_command_line(v8: Loaded) -> None:
    # The snapshot is written anew each run: take a sampled object that some path without a property
    # reference reaches, so the ignoring answer has a path to give.
    reachable = reached_without(v8, EdgeKind.PROPERTY)
    node = next(v for v in reversed(sample_by_distance(v8, 12, seed=2)) if reachable[v])
    code, out, err = invoke("why", v8.tag, str(v8.id(node)), "--ignore", 'edge.kind = "property"', "--k", "2", "--json")
    assert code == 0, err
    answer = json.loads(out)
    assert answer["ignored"]["selectors"] == ['edge.kind = "property"']
    assert answer["paths"] and all(ref["kind"] != "property" for p in answer["paths"] for ref in p["references"])
    code, out, err = invoke("why", v8.tag, str(v8.id(node)), "--ignore", 'path = ["a", "b"]')
    assert code != 0 and "Traceback" not in err and "path chain" in err


# --- dominators, retains, top, types ---------------------------------------------------------


def idom_chain(loaded: Loaded, node: int) -> list[int]:
    chain = [node]
    while loaded.result.idom[chain[-1]] >= 0:
        chain.append(int(loaded.result.idom[chain[-1]]))
    return [loaded.id(i) for i in reversed(chain)]


def test_dominator_chains_follow_the_analysis(questions: Questions, v8: Loaded, luau: Loaded) -> None:
    for loaded in (v8, luau):
        for node in sample_by_distance(loaded, 15, seed=3):
            answer = questions.dominators(loaded.tag, loaded.id(node))
            assert [o.id for o in answer.chain] == idom_chain(loaded, node)
            assert answer.chain[0].root and answer.target.id == loaded.id(node)
            sizes = [o.retained_size for o in answer.chain]
            assert sizes == sorted(sizes, reverse=True)


def test_retains_is_the_dominated_subtree_largest_first(questions: Questions, v8: Loaded) -> None:
    r = v8.result
    cache = int(
        np.flatnonzero(np.array([v8.graph.type_name(i) == "LeakyCache" for i in range(v8.graph.node_count)]))[0]
    )
    answer = questions.retains(v8.tag, v8.id(cache), params.Retains(depth=3, limit=25))
    assert answer.objects[0].id == v8.id(cache) and len(answer.objects) == 26 and answer.truncated
    depth = {v8.id(cache): 0}
    for parent, child in answer.edges:
        assert v8.id(int(r.idom[v8.index(child)])) == parent
        depth[child] = depth[parent] + 1
    assert max(depth.values()) <= 3
    # The first level holds the largest children of the object, in order.
    children = np.flatnonzero(r.idom == cache)
    expected = children[np.lexsort((v8.graph.ids[children], -r.retained_size[children]))]
    first_level = [c for p, c in answer.edges if p == v8.id(cache)]
    assert first_level == [v8.id(int(i)) for i in expected[: len(first_level)]]
    leaf = int(np.flatnonzero(r.reachable & (r.retained_count == 1))[0])
    small = questions.retains(v8.tag, v8.id(leaf))
    assert [o.id for o in small.objects] == [v8.id(leaf)] and not small.truncated


def test_top_and_types_equal_in_process_aggregates(questions: Questions, v8: Loaded, luau: Loaded) -> None:
    for loaded in (v8, luau):
        g, r = loaded.graph, loaded.result
        synthetic = g.kind == g.node_kinds.index("synthetic")
        keep = np.flatnonzero(r.reachable & ~synthetic)
        keep = keep[keep != r.root]
        order = keep[np.lexsort((g.ids[keep], -r.retained_size[keep]))]
        top = questions.top(loaded.tag, params.Top(limit=15))
        assert [o.id for o in top] == [loaded.id(int(i)) for i in order[:15]]
        assert [o.retained_size for o in top] == r.retained_size[order[:15]].tolist()

        kinds = np.array([g.type_name(i) for i in range(g.node_count)])
        some_type = kinds[order[0]]
        of_type = questions.top(loaded.tag, params.Top(type=some_type, limit=5))
        expected = [i for i in order if kinds[i] == some_type][:5]
        assert [o.id for o in of_type] == [loaded.id(int(i)) for i in expected]

        rows = questions.types(loaded.tag, params.Types(sort="count", limit=10_000))
        members = r.reachable & ~synthetic
        members[r.root] = False
        assert sum(row.count for row in rows) == int(members.sum())
        # Each byte once: an object counts unless a dominator-tree ancestor of its type (of nonzero
        # size) does; found here by walking every object's dominator chain upward.
        counted = members & (g.self_size > 0)
        covered = np.zeros(g.node_count, dtype=bool)
        above = r.idom.copy()
        while (above >= 0).any():
            up = np.maximum(above, 0)
            covered |= (above >= 0) & counted[up] & (g.type[up] == g.type)
            above = np.where(above >= 0, r.idom[up], -1)
        for row in rows[:10]:
            mask = members & (kinds == row.type)
            assert row.count == int(mask.sum())
            assert row.self_size == int(g.self_size[mask].sum())
            assert row.retained_size == int(r.retained_size[mask & counted & ~covered].sum())
            assert row.max_retained_size == int(r.retained_size[mask].max())
        assert [row.count for row in rows] == sorted((row.count for row in rows), reverse=True)


def test_objects_are_found_by_type_and_name(questions: Questions, v8: Loaded) -> None:
    g, r = v8.graph, v8.result
    items = np.flatnonzero(np.array([g.type_name(i) == "LeakedItem" for i in range(g.node_count)]))
    best = items[np.lexsort((g.ids[items], -r.retained_size[items]))][0]
    assert questions.resolve(v8.tag, "LeakedItem") == v8.id(int(best))
    with pytest.raises(NotFound, match="LeakedItem"):
        questions.resolve(v8.tag, "LeakedItem", "no such name anywhere")
    details = questions.object(v8.tag, v8.id(int(best)), params.ObjectDetails(limit=5))
    assert details.object.type == "LeakedItem"
    incoming = sum(1 for s in g.edge_sources()[g.edge_to == best])
    assert details.incoming_count == incoming
    assert details.outgoing_count == len(g.out_edges(int(best)))
    assert len(details.outgoing) == min(5, details.outgoing_count)


def test_unknown_tags_and_objects_are_not_found(questions: Questions, v8: Loaded) -> None:
    with pytest.raises(NotFound, match="no snapshot tagged"):
        questions.why_alive("no-such-tag-" + uuid.uuid4().hex, 1)
    with pytest.raises(NotFound, match="no object with id"):
        questions.why_alive(v8.tag, -12345)
    with pytest.raises(NotFound, match="no snapshot tagged"):
        questions.top("no-such-tag-" + uuid.uuid4().hex)
    with pytest.raises(NotFound):
        catalog.get("no-such-query")


# --- the command line -----------------------------------------------------------------------


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_cli_why_in_every_format(v8: Loaded, tmp_path: Path) -> None:
    code, out, err = invoke("why", v8.tag, "--type", "LeakedItem")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("why is LeakedItem") and "path 1" in out
    hops = [line for line in lines if "--[" in line]
    assert hops and all("]-->" in line for line in hops) and "LeakedItem" in hops[-1]

    code, out, err = invoke("why", v8.tag, "--type", "LeakedItem", "--format", "json")
    answer = json.loads(out)
    target = answer["target"]["id"]
    assert answer["paths"][0]["objects"][-1]["id"] == target
    assert len(answer["paths"][0]["references"]) == v8.result.distance[v8.index(target)]

    dot_file = tmp_path / "why.dot"
    code, _, err = invoke("why", v8.tag, str(target), "--format", "dot", "-o", str(dot_file))
    assert code == 0, err
    source = dot_file.read_text()
    assert "shape=house" in source and 'tooltip="target"' in source
    if shutil.which("dot"):
        done = subprocess.run(["dot", "-Tsvg"], input=source, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        code, out, _ = invoke("why", v8.tag, str(target), "--format", "svg")
        assert code == 0 and out.lstrip().startswith("<?xml") and "<svg" in out


def test_cli_other_questions_and_errors(v8: Loaded) -> None:
    cache_id = v8.id(
        int(np.flatnonzero(np.array([v8.graph.type_name(i) == "LeakyCache" for i in range(v8.graph.node_count)]))[0])
    )
    code, out, _ = invoke("dominators", v8.tag, str(cache_id), "--format", "json")
    assert code == 0 and json.loads(out)["chain"][-1]["id"] == cache_id
    code, out, _ = invoke("retains", v8.tag, str(cache_id), "--depth", "2", "--limit", "5")
    assert code == 0 and "LeakyCache" in out.splitlines()[1]
    code, out, _ = invoke("top", v8.tag, "--limit", "3", "--format", "json")
    assert code == 0 and len(json.loads(out)) == 3
    code, out, _ = invoke("types", v8.tag, "--limit", "3")
    assert code == 0 and len(out.splitlines()) == 5
    code, out, _ = invoke("object", v8.tag, str(cache_id))
    assert code == 0 and "referenced by" in out

    code, _, err = invoke("why", "no-such-tag-" + uuid.uuid4().hex, "1")
    assert code == 1 and "no snapshot tagged" in err
    code, _, err = invoke("why", v8.tag, "999999999999")
    assert code == 1 and "no object with id 999999999999" in err
    code, _, err = invoke("why", v8.tag)
    assert code == 2 and "--type" in err


def test_cli_find_lists_what_the_api_finds(questions: Questions, v8: Loaded) -> None:
    code, out, err = invoke("find", v8.tag, "--type", "LeakedItem", "--limit", "3", "--json")
    assert code == 0, err
    expected = questions.find(v8.tag, params.Find(type="LeakedItem", limit=3))
    assert [o["id"] for o in json.loads(out)] == [o.id for o in expected] and expected
    code, out, _ = invoke("find", v8.tag, "--type", "LeakedItem", "--limit", "3")
    assert code == 0 and all("LeakedItem" in line for line in out.splitlines()[1:])
    code, _, err = invoke("find", v8.tag)  # a missing parameter is a ParameterError, as for lifelines
    assert code == 1 and "type: Field required" in err


def test_cli_stored_queries(v8: Loaded) -> None:
    code, out, _ = invoke("queries", "--json")
    assert code == 0 and {q["name"] for q in json.loads(out)} == set(catalog.catalog())
    code, out, _ = invoke("query", "top", "-p", f"tag={v8.tag}", "-p", "limit=2", "--json")
    assert code == 0 and len(json.loads(out)) == 2
    code, out, _ = invoke(
        "query", "dominated", "-p", f"tag={v8.tag}", "-p", f"ids={v8.id(v8.result.root)}", "-p", "limit=3"
    )
    assert code == 0 and len(out.splitlines()) == 4
    code, _, err = invoke("query", "top", "-p", f"tag={v8.tag}", "-p", "limit=many")
    assert code == 1 and "limit" in err
    code, _, err = invoke("query", "no-such-query")
    assert code == 1 and "no stored query" in err


LIMITS = (1, 7, 1000)


def test_find_equals_brute_force_through_listings_and_the_object_scan(
    database: Database, questions: Questions, v8: Loaded, luau: Loaded
) -> None:
    """`find` searches each type's stored listing; the answer must be what a scan of every object
    gives (stored query `find`) and what the arrays give, for common, rare and absent texts, names
    that begin or end a listing's joined string, types without a listing, and with a cache."""
    from heapdb.queries.cache import AnswerCache
    from heapdb.units import shorten

    cached = Questions(database, timeout=60, cache=AnswerCache(max_bytes=1))  # evicts all but the last
    rng = np.random.default_rng(7)
    for loaded in (v8, luau):
        g, r = loaded.graph, loaded.result
        types = np.array([g.type_name(i) for i in range(g.node_count)], dtype=object)
        names = np.array([shorten(g.strings[int(k)]) for k in g.name], dtype=object)
        order = np.lexsort((g.ids, -r.retained_size))
        asked = 0
        for node in rng.choice(g.node_count, 8, replace=False).tolist() + [int(g.root), int(order[0])]:
            name = str(names[node])
            of_type = order[types[order] == types[node]]
            for turn, text in enumerate(("", name, name[:2], name[-3:], name[1:4], "\x00no such text\x00")):
                matching = [loaded.id(int(i)) for i in of_type if text in names[i]]
                for limit in LIMITS:
                    expected = matching[:limit]
                    p = params.Find(type=str(types[node]), name_contains=text, limit=limit)
                    assert [o.id for o in questions.find(loaded.tag, p)] == expected, (types[node], text, limit)
                    assert [o.id for o in cached.find(loaded.tag, p)] == expected
                    asked += 1
                # The scan of every object is the slow one: once per text, each limit in turn.
                limit = LIMITS[turn % len(LIMITS)]
                scanned = catalog.run(
                    database,
                    "find",
                    {"tag": loaded.tag, "type": str(types[node]), "name_contains": text, "limit": limit},
                )
                assert [row["object"]["id"] for row in scanned] == matching[:limit]
        assert asked > 100
