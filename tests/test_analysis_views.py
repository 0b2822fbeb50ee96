"""Lifelines, heapdomstats and re-rooted analysis against brute force on small random graphs, and
the ``heapdb analyze`` options that show them.

Brute force here uses the definitions: a first path is the one a breadth-first search over the
retaining references (in the snapshot's order) finds; a step of the merged tree leads to every
selected object whose first path starts with it; an object floats when its immediate dominator
(from :func:`tests.test_analysis.brute_force`) is the root or a synthetic node.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter, deque
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from heapdb.cli import main
from heapdb.loader import views
from heapdb.loader.analysis import Semantics, analyze
from heapdb.loader.graph import EdgeKind, HeapGraph, csr_from_coo
from tests.test_analysis import (
    brute_force,
    generic_retaining,
    generic_retaining_mask,
    memlab_retaining,
    random_graph,
)

NAMES = ["a", "b", "c"]
TYPES = ["T", "U", "V"]


def typed_graph(rng: np.random.Generator) -> HeapGraph:
    """A small graph of plain objects of types T, U, V whose references are named a, b, c."""
    n = int(rng.integers(1, 30))
    m = int(rng.integers(0, 4 * n + 1))
    strings = ["", *NAMES, *TYPES]
    src = rng.integers(0, n, size=m)
    dst = rng.integers(0, n, size=m)
    kinds = rng.choice([EdgeKind.PROPERTY, EdgeKind.REFERENCE, EdgeKind.WEAK], size=m, p=[0.45, 0.4, 0.15])
    names = rng.integers(1, 1 + len(NAMES), size=m)
    edge_start, edge_to, edge_kind, edge_name = csr_from_coo(n, src.astype(np.int64), dst, kinds, names)
    types = rng.integers(1 + len(NAMES), len(strings), size=n).astype(np.int32)
    graph = HeapGraph(
        ids=np.arange(1, n + 1, dtype=np.int64) * 3,
        kind=np.zeros(n, dtype=np.uint8),
        type=types,
        name=types.copy(),
        self_size=rng.integers(0, 500, size=n).astype(np.int64),
        edge_start=edge_start,
        edge_to=edge_to,
        edge_kind=edge_kind,
        edge_name=edge_name,
        strings=strings,
        node_kinds=["object"],
        root=int(rng.integers(0, n)),
        meta={"format": "test"},
    )
    graph.validate()
    return graph


def first_path_labels(graph: HeapGraph, root: int) -> list[list[str] | None]:
    """Per object: its first path's labels by plain BFS from ``root``, repeats folded (None: unreached)."""
    mask = generic_retaining_mask(graph)
    labels: list[list[str] | None] = [None] * graph.node_count
    labels[root] = [graph.type_name(root)]
    queue = deque([root])
    while queue:
        u = queue.popleft()
        for e in graph.out_edges(u):
            v = int(graph.edge_to[e])
            if not mask[e] or labels[v] is not None:
                continue
            hop = f"{graph.strings[int(graph.edge_name[e])]} → {graph.type_name(v)}"
            path = labels[u]
            assert path is not None
            labels[v] = path if path[-1] == hop and len(path) > 1 else [*path, hop]
            queue.append(v)
    return labels


def flatten(answer: views.Lifelines) -> dict[tuple[str, ...], tuple[int, int, int]]:
    """Every hop prefix of the merged tree: (objects, retained, ending) of the step it ends."""
    found: dict[tuple[str, ...], tuple[int, int, int]] = {}
    stack: list[tuple[tuple[str, ...], views.LifelineStep]] = [((), s) for s in answer.steps]
    while stack:
        prefix, step = stack.pop()
        for k in range(1, len(step.path) + 1):
            last = k == len(step.path)
            found[(*prefix, *step.path[:k])] = (step.objects, step.retained_size, step.ending if last else 0)
        stack.extend(((*prefix, *step.path), c) for c in step.children)
    return found


@pytest.mark.parametrize("seed", range(30))
def test_lifelines_count_first_paths(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(20):
        graph = typed_graph(rng)
        root = int(rng.integers(0, graph.node_count))
        rooted = dataclasses.replace(graph, root=root)
        result = analyze(graph, semantics=Semantics.GENERIC, root=root)
        labels = first_path_labels(graph, root)
        _, idom, retained, _, _ = brute_force(rooted, generic_retaining(rooted), graph.self_size)
        for type_name in TYPES:
            answer = views.lifelines(
                views.lifeline_rows(graph, result, type_name), source="t", type_name=type_name, limit=1000
            )
            selected = [
                v
                for v in range(graph.node_count)
                if labels[v] is not None and graph.type_name(v) == type_name and v != root
            ]
            head = {v for v in selected if idom[v] not in selected}
            expected: Counter[tuple[str, ...]] = Counter()
            size: Counter[tuple[str, ...]] = Counter()
            ending: Counter[tuple[str, ...]] = Counter()
            for v in selected:
                path = labels[v]
                assert path is not None
                ending[tuple(path)] += 1
                for k in range(1, len(path) + 1):
                    expected[tuple(path[:k])] += 1
                    size[tuple(path[:k])] += retained[v] if v in head else 0
            assert answer.objects == len(selected)
            assert answer.paths == len(ending)
            got = flatten(answer)
            assert {p: o for p, (o, _, _) in got.items()} == dict(expected)
            assert {p: r for p, (_, r, _) in got.items()} == {p: size[p] for p in expected}
            assert {p: e for p, (_, _, e) in got.items() if e} == dict(ending)


def test_lifelines_limit_sums_up_the_rest() -> None:
    rows = [(["(root)", f"x{i} → T"], 10 * i, i) for i in range(1, 6)]
    answer = views.lifelines(rows, source="t", type_name="T", limit=2)
    (top,) = answer.steps
    assert top.path == ("(root)",) and top.objects == 15 and top.retained_size == 150
    assert [c.path for c in top.children] == [("x5 → T",), ("x4 → T",)]
    assert (top.more_steps, top.more_objects, top.more_retained_size) == (3, 6, 60)
    text = views.lifelines_text(answer)
    assert "… 3 more: 6 objects" in text
    # A chain without branches is one step.
    chain = views.lifelines([(["(root)", "a → U", "b → T"], 5, 2)], source="t", type_name="T")
    assert [s.path for s in chain.steps] == [("(root)", "a → U", "b → T")]
    empty = views.lifelines([], source="t", type_name="T")
    assert empty.steps == () and "no reachable object" in views.lifelines_text(empty)


@pytest.mark.parametrize("seed", range(30))
def test_rerooted_analysis_equals_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(20):
        v8 = bool(rng.integers(0, 2))
        graph = random_graph(rng, v8=v8)
        root = int(rng.integers(0, graph.node_count))
        if v8 and root == graph.root:
            continue  # the plain analysis, memlab's unreachable objects included (test_analysis.py)
        result = analyze(graph, root=root)
        # Which references retain is the runtime's rule from the graph's own root; the rest starts at ``root``.
        edges = memlab_retaining(graph) if v8 else generic_retaining(graph)
        reachable, idom, retained, count, dist = brute_force(
            dataclasses.replace(graph, root=root), edges, graph.self_size
        )
        assert result.root == root
        assert result.reachable.tolist() == reachable
        assert result.idom.tolist() == idom
        assert result.retained_size.tolist() == retained
        assert result.retained_count.tolist() == count
        assert result.distance.tolist() == dist


def test_root_parameter_at_the_graph_root_changes_nothing() -> None:
    rng = np.random.default_rng(7)
    for _ in range(30):
        graph = random_graph(rng, v8=True)
        plain, same = analyze(graph), analyze(graph, root=graph.root)
        for field in ("reachable", "idom", "retained_size", "retained_count", "distance", "retaining"):
            assert getattr(plain, field).tolist() == getattr(same, field).tolist(), field
    with pytest.raises(ValueError, match="root must be a node index"):
        analyze(graph, root=graph.node_count)


def in_root_layer(v: int, root: int, reachable: list[bool], idom: list[int], synthetic: np.ndarray) -> bool:
    """The root, or a synthetic object whose dominators up to the root all are synthetic."""
    while v != root:
        if not (reachable[v] and synthetic[v]):
            return False
        v = idom[v]
    return True


@pytest.mark.parametrize("seed", range(30))
def test_heapdomstats_are_the_objects_the_root_or_a_root_group_dominates(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(20):
        graph = random_graph(rng)
        result = analyze(graph, semantics=Semantics.GENERIC)
        reachable, idom, retained, _, _ = brute_force(graph, generic_retaining(graph), graph.self_size)
        synthetic = graph.synthetic_nodes()
        layer = [in_root_layer(v, graph.root, reachable, idom, synthetic) for v in range(graph.node_count)]
        top = [v for v in range(graph.node_count) if reachable[v] and not layer[v] and layer[idom[v]]]
        assert np.flatnonzero(views.floating(graph, result)).tolist() == top
        rows = views.heapdomstats_rows(graph, result)
        expected: dict[str, list[int]] = {}
        for v in top:
            row = expected.setdefault(graph.type_name(v), [0, 0, 0, 0])
            row[0] += 1
            row[1] += int(graph.self_size[v])
            row[2] += retained[v]
            row[3] = max(row[3], retained[v])
        assert {r.type: [r.objects, r.self_size, r.retained_size, r.max_retained_size] for r in rows} == expected
        assert [r.retained_size for r in rows] == sorted((r.retained_size for r in rows), reverse=True)
        answer = views.heapdomstats(rows, source="t", reachable_size=result.reachable_size, limit=1)
        assert answer.objects == len(top) and answer.types == len(expected) and len(answer.rows) <= 1
        # The floating objects' retained sizes add up: no one of them dominates another.
        assert answer.retained_size <= result.reachable_size


# ------------------------------------------------------------------------------------ the CLI


def run(*args: str) -> tuple[int, str]:
    done = CliRunner().invoke(main, list(args))
    return done.exit_code, done.output


def test_analyze_options_in_help() -> None:
    code, out = run("analyze", "--help")
    assert code == 0
    for option in ("--root", "--lifelines", "--name", "--limit", "--heapdomstats"):
        assert option in out
    for command in ("lifelines", "heapdomstats"):
        code, out = run(command, "--help")
        assert code == 0 and "--json" in out and "--limit" in out


def test_analyze_views_on_a_snapshot(leak_snapshot: Path) -> None:
    code, out = run(
        "analyze", str(leak_snapshot), "--json", "--top", "5", "--lifelines", "LeakedItem", "--heapdomstats"
    )
    assert code == 0, out
    data = json.loads(out)
    lifelines = data["lifelines"]
    assert lifelines["type"] == "LeakedItem" and lifelines["objects"] > 0
    (top,) = lifelines["steps"]
    assert top["objects"] == lifelines["objects"]
    floating = data["heapdomstats"]
    assert 0 < floating["retained_size"] <= data["reachable_size"] and len(floating["rows"]) <= 5

    code, text = run("analyze", str(leak_snapshot), "--lifelines", "LeakedItem", "--limit", "1", "--heapdomstats")
    assert code == 0 and "Lifelines of" in text and "Floating to the root" in text

    # Scoped to the largest retainer: it becomes the root, and what it retains is unchanged.
    biggest = data["top_retainers"][0]
    code, out = run("analyze", str(leak_snapshot), "--json", "--root", str(biggest["id"]))
    assert code == 0, out
    scoped = json.loads(out)
    assert scoped["scoped_to"] == biggest["id"] and scoped["root"]["id"] == biggest["id"]
    assert scoped["root"]["retained_size"] >= biggest["retained_size"]
    assert scoped["reachable_size"] == scoped["root"]["retained_size"]

    code, out = run("analyze", str(leak_snapshot), "--root", "-12345")
    assert code != 0 and "no object with id -12345" in out
    code, out = run("analyze", str(leak_snapshot), "--name", "x")
    assert code != 0 and "--name needs --lifelines" in out
