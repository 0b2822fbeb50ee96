"""Unmounted React components from a file (heapdb.loader.inspections.react), against memlab.

A real React app (tests/js/react_leak.jsx: react and react-dom from npm, bundled by esbuild as a
development build) runs in headless Chromium; its LeakyPanel components subscribe to a store and
never unsubscribe, so closing them leaves their fibers alive. Two snapshots: panels open
(``mounted``) and closed (``unmounted``).

memlab's ``unmounted-fiber-node`` analysis (tests/js/memlab_nodes.js) is the oracle for the rule,
replayed here by brute force over memlab's own dominators: its set is exactly the brute force of its
rule, and heapdb's exactly the brute force of the same rule with the root groups exempt as the root
is (the one correction: memlab lists every mounted fiber of a Chromium page, which the ``mounted``
snapshot shows).
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
from heapdb.loader.graph import EdgeKind, HeapGraph
from heapdb.loader.inspections import collections, dom, react
from heapdb.loader.paths import first_paths
from tests.support.chromium import REACT_PANELS
from tests.support.v8 import run_memlab_nodes
from tests.support.v8_fixtures import memlab_oracle, node_tools  # noqa: F401

Inspected = tuple[HeapGraph, analysis.Analysis, react.UnmountedFibers]


@pytest.fixture(scope="module")
def memlab_answers(
    react_snapshots: dict[str, Path],
    node_tools: Path,  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, dict]:
    answers = tmp_path_factory.mktemp("memlab-react")
    return {label: run_memlab_nodes(path, answers / f"{label}.json") for label, path in react_snapshots.items()}


@pytest.fixture(scope="module")
def memlab(memlab_answers: dict[str, dict]) -> dict[str, dict]:
    return {label: answers["unmounted-fiber-node"] for label, answers in memlab_answers.items()}


@pytest.fixture(scope="module")
def inspected(react_snapshots: dict[str, Path]) -> dict[str, Inspected]:
    found = {}
    for label, path in react_snapshots.items():
        graph = formats.read_graph(path)
        result = analysis.analyze(graph)
        answer = react.unmounted_fibers(graph, result, first_paths(graph, result.retaining), source=str(path))
        assert answer is not None
        found[label] = (graph, result, answer)
    return found


def first_property(graph: HeapGraph, v: int, name: str) -> int:
    for e in graph.out_edges(v):
        if graph.edge_kind[e] == EdgeKind.PROPERTY and graph.strings[graph.edge_name[e]] == name:
            return int(graph.edge_to[e])
    return -1


def brute_force(graph: HeapGraph, dominator: list[int], root_groups_exempt: bool) -> set[int]:
    """memlab's markDetachedFiberNode, walked fiber by fiber, over ``dominator`` (memlab's)."""
    fiber = {v for v in range(graph.node_count) if graph.node_name(v) == "FiberNode"}
    fiber = {v for v in fiber if graph.node_kinds[graph.kind[v]] == "object"}
    detached_dom = dom.detached(graph)
    assert detached_dom is not None

    def host_root(v: int) -> bool:
        state = first_property(graph, v, "stateNode")
        return state >= 0 and graph.node_name(state) == "FiberRootNode"

    def exempt(d: int) -> bool:
        if d == graph.root or (root_groups_exempt and graph.node_kinds[graph.kind[d]] == "synthetic"):
            return True
        if d in fiber:
            return True
        name = graph.node_name(d)
        is_dom = graph.node_kinds[graph.kind[d]] == "native" and react._is_dom_name(name)
        return is_dom and not detached_dom[d]

    marked = set()
    for start in sorted(fiber):
        chain, seen, v, reached = [], set(), start, False
        while v in fiber and v not in seen:
            seen.add(v)
            chain.append(v)
            if dominator[v] >= 0 and not exempt(dominator[v]):
                marked.add(v)
            if host_root(v):
                reached = True
                break
            v = first_property(graph, v, "return")
        if not reached:
            marked.update(chain)
    return {int(graph.ids[v]) for v in marked}


@pytest.mark.parametrize("label", ["mounted", "unmounted"])
def test_memlabs_rule_and_heapdbs_correction_by_brute_force(
    label: str,
    react_snapshots: dict[str, Path],
    inspected: dict[str, Inspected],
    memlab: dict[str, dict],
    memlab_oracle,  # noqa: F811
) -> None:
    graph, result, answer = inspected[label]
    oracle = memlab_oracle(react_snapshots[label])
    index_of = {int(i): n for n, i in enumerate(graph.ids.tolist())}
    dominator = [index_of.get(int(d), -1) for d in oracle.dominator_id.tolist()]
    theirs = {o["id"] for o in memlab[label]["all"]}
    assert theirs == brute_force(graph, dominator, root_groups_exempt=False)
    mask = react.unmounted(graph, result)
    assert mask is not None
    ours = set(graph.ids[mask].tolist())
    assert ours == brute_force(graph, dominator, root_groups_exempt=True)
    assert ours <= theirs
    fibers = int(np.count_nonzero(react.fibers(graph)))
    assert answer.fibers == len(ours) and answer.mounted == fibers - len(ours)
    if label == "mounted":
        assert not ours and len(theirs) == fibers > 0  # memlab lists every mounted fiber of the page


def test_the_leaked_components_and_what_holds_them(inspected: dict[str, Inspected], memlab_oracle) -> None:  # noqa: F811
    graph, result, answer = inspected["unmounted"]
    by_component = {r.component: r for r in answer.rows}
    leaky = by_component["LeakyPanel"]
    assert leaky.fibers == REACT_PANELS  # one fiber per panel, kept by its state setter
    assert "setUpdates" in leaky.path and leaky.path.endswith("FiberNode")
    assert "CleanPanel" in by_component  # unmounted, kept until React's next commit drops its deletions
    assert "App" not in by_component and "Footer" not in by_component  # still mounted
    # Figures: per component over its fibers, each byte counted once.
    mask = react.unmounted(graph, result)
    assert mask is not None
    nodes = np.flatnonzero(mask)
    names = react.components(graph, nodes)
    assert Counter(names) == {r.component: r.fibers for r in answer.rows}
    assert answer.self_size == int(graph.self_size[nodes].sum())
    sizes = [r.retained_size for r in answer.rows]
    assert sizes == sorted(sizes, reverse=True)
    retained = result.retained_size
    assert [o.retained_size for o in answer.largest] == sorted((int(retained[v]) for v in nodes), reverse=True)


def test_heapdb_analyze_react_prints_and_writes_the_same(react_snapshots: dict[str, Path], inspected) -> None:
    path = react_snapshots["unmounted"]
    answer = inspected["unmounted"][2]
    as_json = CliRunner().invoke(main, ["analyze", str(path), "--rules", "none", "--react", "--json"])
    assert as_json.exit_code == 0, as_json.output
    data = json.loads(as_json.stdout)["react"]
    assert data["fibers"] == answer.fibers and [r["component"] for r in data["rows"]] == [
        r.component for r in answer.rows
    ]
    as_text = CliRunner().invoke(main, ["analyze", str(path), "--rules", "none", "--react", "--top", "1"])
    assert as_text.exit_code == 0, as_text.output
    assert f"{answer.fibers:,} fibers of {answer.components:,} components" in as_text.stdout
    assert "LeakyPanel" in as_text.stdout and f"… {answer.components - 1:,} more components" in as_text.stdout
    mounted = CliRunner().invoke(main, ["analyze", str(react_snapshots["mounted"]), "--rules", "none", "--react"])
    assert mounted.exit_code == 0 and "none (" in mounted.stdout and "all in a mounted tree" in mounted.stdout


def test_the_collections_holding_unmounted_fibers(inspected: dict[str, Inspected], memlab_answers) -> None:
    graph, result, _ = inspected["unmounted"]
    mask = react.unmounted(graph, result)
    assert mask is not None
    found = collections.stale_collections(graph, result, first_paths(graph, result.retaining), mask, source="app")
    # memlab's stale children are its own unmounted fibers (every mounted one too): where a collection
    # holds only fibers both count, its row is ours.
    theirs = {c["id"]: c for c in memlab_answers["unmounted"]["collections-with-stale"]}
    ours = set(graph.ids[mask].tolist())
    compared = 0
    for r in found.rows:
        assert r.type == "Array" and set(r.stale_ids) <= ours
        if r.id in theirs and set(theirs[r.id]["staleIds"]) <= ours:
            compared += 1
            assert (r.children, r.stale, list(r.stale_ids)) == (
                theirs[r.id]["children"],
                theirs[r.id]["stale"],
                theirs[r.id]["staleIds"],
            )
    assert compared >= 1
    assert any("deletions → Array" in r.path for r in found.rows)  # React's pending deletions hold the clean panel
