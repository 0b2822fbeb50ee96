"""Detached DOM from a file (heapdb.loader.inspections.dom), against memlab's own analysis.

A real Chromium page (heapgen.chromium's ``DETACHED_DOM_PAGE``) leaves DOM trees detached in three
ways: three closed panels kept "for undo" in one array, a removed dialog that an attached button's
click listener still closes over, and a list row cached in a Map that was never attached. memlab's ``detached-DOM`` analysis
(tests/js/memlab_nodes.js) is the oracle for which objects are detached and for its list of the
largest; the trees, their groups and their sizes are checked by brute force over memlab's own
dominators (tests/js/memlab_oracle.js).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from heapdb.cli import main
from heapdb.loader import analysis, formats
from heapdb.loader.graph import Detachedness, HeapGraph
from heapdb.loader.inspections import collections, dom, react
from heapdb.loader.paths import first_paths
from tests.support.chromium import (
    DETACHED_DOM_HOLDERS,
    DOM_DIALOG_ITEMS,
    DOM_PANEL_ITEMS,
    DOM_PANELS,
)
from tests.support.v8 import run_memlab_nodes
from tests.support.v8_fixtures import leak_snapshots, memlab_oracle, node_tools  # noqa: F401


@pytest.fixture(scope="module")
def memlab_answers(dom_page_snapshot: Path, node_tools: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:  # noqa: F811
    answers: dict = run_memlab_nodes(dom_page_snapshot, tmp_path_factory.mktemp("memlab-dom") / "memlab.json")
    return answers


@pytest.fixture(scope="module")
def memlab_dom(memlab_answers: dict) -> dict:
    answer: dict = memlab_answers["detached-DOM"]
    return answer


@pytest.fixture(scope="module")
def inspected(dom_page_snapshot: Path) -> tuple[HeapGraph, analysis.Analysis, dom.DetachedDom]:
    graph = formats.read_graph(dom_page_snapshot)
    result = analysis.analyze(graph)
    paths = first_paths(graph, result.retaining, result.transient)
    found = dom.detached_dom(graph, result, paths, source=str(dom_page_snapshot))
    assert found is not None
    return graph, result, found


def test_the_detached_objects_are_memlabs(inspected, memlab_dom: dict) -> None:
    graph, result, found = inspected
    theirs = {o["id"]: o for o in memlab_dom["all"]}
    mask = dom.detached(graph)
    assert mask is not None
    assert set(graph.ids[mask].tolist()) == set(theirs)
    assert found.objects == len(theirs) > DOM_PANELS * (1 + 2 * DOM_PANEL_ITEMS)
    assert found.self_size == sum(o["selfSize"] for o in theirs.values())
    for node in np.flatnonzero(mask).tolist():
        assert int(result.retained_size[node]) == theirs[int(graph.ids[node])]["retainedSize"]
    # The page's own elements are among them, by the names Chrome gives them.
    names = Counter(graph.type_name(int(v)) for v in np.flatnonzero(mask))
    assert names["Detached <span>"] == DOM_PANELS * DOM_PANEL_ITEMS + DOM_DIALOG_ITEMS
    assert names["Detached <div>"] == DOM_PANELS + 1 and names["Detached <li>"] == 1


def test_the_largest_are_memlabs_list(inspected, memlab_dom: dict) -> None:
    _, _, found = inspected
    listed = memlab_dom["listed"]
    assert len(found.largest) == len(listed) == dom.LARGEST
    assert [o.retained_size for o in found.largest] == [o["retainedSize"] for o in listed]
    # Ties at the cut may be broken differently (memlab keeps the first in node order, heapdb the
    # lowest id); above the smallest size listed, the objects are the same.
    cut = listed[-1]["retainedSize"]
    assert {o.id for o in found.largest if o.retained_size > cut} == {
        o["id"] for o in listed if o["retainedSize"] > cut
    }
    assert all(o.type.startswith(dom.DETACHED_PREFIX) for o in found.largest)


def test_trees_groups_and_attached_by_brute_force(
    dom_page_snapshot: Path,
    inspected,
    memlab_dom: dict,
    memlab_oracle,  # noqa: F811
) -> None:
    graph, result, found = inspected
    oracle = memlab_oracle(dom_page_snapshot)
    assert oracle.node_count == graph.node_count
    index_of = {int(i): n for n, i in enumerate(oracle.ids.tolist())}
    dominator = [index_of.get(int(d), -1) for d in oracle.dominator_id.tolist()]
    detached = {index_of[o["id"]] for o in memlab_dom["all"]}

    def above(v: int) -> list[int]:  # v and its dominators by memlab, nearest first
        found_chain = [v]
        while dominator[v] >= 0 and dominator[v] != v and len(found_chain) <= len(dominator):
            v = dominator[v]
            found_chain.append(v)
        return found_chain

    roots = {v for v in detached if not any(u in detached for u in above(v)[1:])}

    def tree_of(v: int) -> int:  # the detached tree at or above v, -1 if none
        return next((u for u in above(v) if u in roots), -1)

    assert found.trees == len(roots)
    assert found.retained_size == sum(int(oracle.retained_size[v]) for v in roots)
    objects = Counter(tree_of(v) for v in detached)
    assert graph.detachedness is not None
    attached = Counter(tree_of(v) for v in np.flatnonzero(graph.detachedness == Detachedness.ATTACHED).tolist())
    # Groups: the trees by heapdb's first-path signature (tested on its own in test_paths.py).
    signature = first_paths(graph, result.retaining, result.transient).signature
    expected: dict[int, list[int]] = {}
    for v in roots:
        expected.setdefault(int(signature[v]), []).append(v)
    assert found.paths == len(found.groups) == len(expected) == len(DETACHED_DOM_HOLDERS)
    for group in found.groups:
        trees = expected[group.signature]
        assert group.trees == len(trees)
        assert group.objects == sum(objects[v] for v in trees)
        assert group.attached == sum(attached[v] for v in trees)
        assert group.retained_size == sum(int(oracle.retained_size[v]) for v in trees)
        largest = max(trees, key=lambda v: (int(oracle.retained_size[v]), -int(oracle.ids[v])))
        assert group.example_id == int(oracle.ids[largest])
        assert group.path.endswith(f"→ {group.type}")
    for name, held in DETACHED_DOM_HOLDERS.items():
        (group,) = [g for g in found.groups if f"{name} → " in g.path]
        assert group.trees == held
    sizes = [g.retained_size for g in found.groups]
    assert sizes == sorted(sizes, reverse=True)


def propagated(path: Path, skipped: set[str]) -> set[int]:
    """Brute force over the raw file: the ids detached after DevTools' DOM-state propagation,
    walking every reference except those of the ``skipped`` kinds (React's FiberNode left out)."""
    with open(path) as f:
        raw = json.load(f)
    meta = raw["snapshot"]["meta"]
    fields, edge_fields = meta["node_fields"], meta["edge_fields"]
    node_types, edge_types = meta["node_types"][0], meta["edge_types"][0]
    nodes, edges, strings = raw["nodes"], raw["edges"], raw["strings"]
    width, edge_width = len(fields), len(edge_fields)
    n = len(nodes) // width
    at = {name: fields.index(name) for name in ("type", "name", "id", "edge_count", "detachedness")}
    to, kind = edge_fields.index("to_node"), edge_fields.index("type")
    native = node_types.index("native")
    skip = {edge_types.index(k) for k in skipped}
    first = [0] * (n + 1)
    for v in range(n):
        first[v + 1] = first[v] + nodes[v * width + at["edge_count"]]
    state = [nodes[v * width + at["detachedness"]] for v in range(n)]
    visited = [False] * n
    stacks: dict[int, list[int]] = {1: [], 2: []}

    def reach(v: int, new: int) -> None:
        if visited[v]:
            return
        visited[v] = True
        if nodes[v * width + at["type"]] == native:  # the state spreads over native objects only
            state[v] = new
            stacks[new].append(v)

    for v in range(n):
        if state[v]:
            reach(v, state[v])
    for new in (1, 2):  # attached first: what an attached object reaches stays attached
        while stacks[new]:
            v = stacks[new].pop()
            if new == 2 and state[v] == 1:
                continue
            for e in range(first[v], first[v + 1]):
                if edges[e * edge_width + kind] not in skip:
                    reach(edges[e * edge_width + to] // width, new)
    return {
        nodes[v * width + at["id"]]
        for v in range(n)
        if state[v] == 2 and strings[nodes[v * width + at["name"]]] not in dom.LEFT_OUT
    }


DEVTOOLS_SKIPS = {"hidden", "weak"}  # and "invisible", which V8 never writes
# memlab looks its edge kinds up in the wrong list (edge_fields, not edge_types), so the one kind it
# skips is whichever has index 3 in edge_types: "internal" in every V8 snapshot.
MEMLAB_SKIPS = {"internal"}


@pytest.mark.parametrize("which", ["page", "node"])
def test_detachedness_is_devtools_and_memlab_differs_only_by_its_edge_filter(
    which: str,
    dom_page_snapshot: Path,
    leak_snapshots: dict[str, Path],  # noqa: F811
    tmp_path: Path,
) -> None:
    path = dom_page_snapshot if which == "page" else leak_snapshots["final"]
    theirs = {o["id"] for o in run_memlab_nodes(path, tmp_path / "memlab.json")["detached-DOM"]["all"]}
    graph = formats.read_graph(path)
    mask = dom.detached(graph)
    assert mask is not None
    ours = set(graph.ids[mask].tolist())
    assert ours == propagated(path, DEVTOOLS_SKIPS) and ours
    assert theirs == propagated(path, MEMLAB_SKIPS)
    if which == "page":
        assert ours == theirs  # a page's DOM trees hang off internal references nowhere
    else:
        # Node marks some of its own native objects detached; what they reach over internal
        # references is detached too for DevTools (and heapdb), not for memlab.
        assert theirs < ours


def memlab_view(graph: HeapGraph, found: collections.StaleCollections) -> list[tuple[int, int, int, list[int], int]]:
    """heapdb's rows as memlab lists a collection: a Map or Set by its backing table."""
    index_of = {int(i): n for n, i in enumerate(graph.ids.tolist())}
    rows = []
    for r in found.rows:
        v = index_of[r.id]
        if r.type in collections.HASHED:
            (v,) = [int(graph.edge_to[e]) for e in graph.out_edges(v) if graph.edge_label(e) == collections.TABLE][:1]
        rows.append((int(graph.ids[v]), r.children, r.stale, list(r.stale_ids), r.stale_size))
    return sorted(rows)


def test_the_collections_holding_detached_trees_are_memlabs(inspected, memlab_answers: dict) -> None:
    graph, result, _ = inspected
    stale = dom.detached(graph)
    fibers = react.unmounted(graph, result)
    assert stale is not None and fibers is not None
    paths = first_paths(graph, result.retaining, result.transient)
    found = collections.stale_collections(graph, result, paths, stale | fibers, source="page")
    theirs = memlab_answers["collections-with-stale"]
    assert memlab_view(graph, found) == sorted(
        (c["id"], c["children"], c["stale"], c["staleIds"], c["staleRetainedSize"]) for c in theirs
    )
    by_type = {r.type: r for r in found.rows}
    assert by_type["Array"].stale == DOM_PANELS and "closedPanels → Array" in by_type["Array"].path
    assert by_type["Map"].stale == 1 and "rowCache → Map" in by_type["Map"].path
    assert found.collections == 2 and found.stale == DOM_PANELS + 1
    assert found.stale_size == sum(r.stale_size for r in found.rows)


def test_heapdb_analyze_dom_prints_and_writes_the_same(dom_page_snapshot: Path, inspected) -> None:
    _, _, found = inspected
    as_json = CliRunner().invoke(main, ["analyze", str(dom_page_snapshot), "--rules", "none", "--dom", "--json"])
    assert as_json.exit_code == 0, as_json.output
    data = json.loads(as_json.stdout)["dom"]
    assert data["objects"] == found.objects and data["retained_size"] == found.retained_size
    assert [g["path"] for g in data["groups"]] == [g.path for g in found.groups]
    as_text = CliRunner().invoke(main, ["analyze", str(dom_page_snapshot), "--rules", "none", "--dom", "--top", "1"])
    assert as_text.exit_code == 0, as_text.output
    assert f"Detached DOM in {dom_page_snapshot}: {found.objects:,} objects" in as_text.stdout
    assert "closedPanels → Array" in as_text.stdout and "… 2 more paths" in as_text.stdout


def test_a_format_without_dom_is_refused_before_it_is_read(tmp_path: Path) -> None:
    dump = tmp_path / "empty.json"
    dump.write_text('{"objects": {}, "roots": {}}')  # a Luau dump: its first bytes say so
    result = CliRunner().invoke(main, ["analyze", str(dump), "--dom"])
    assert (
        result.exit_code == 2
        and "--dom, --react, --react-hooks and --stale: luau snapshots hold no DOM" in result.output
    )
    assert "Traceback" not in result.output
