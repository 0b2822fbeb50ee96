"""The analysis engine against independent oracles: brute force on small graphs, igraph on larger ones.

Brute force uses the definitions directly: d dominates v iff v is reachable from the root but not
once d is removed; a retained size is the sum of the self sizes of the objects dominated; a distance
is a plain BFS depth. The memlab comparison on real V8 snapshots lives in test_analysis_memlab.py.
"""

from __future__ import annotations

import math
import random
from collections import deque

import igraph
import numpy as np
import pytest

from heapdb.loader.analysis import Semantics, analyze, devtools_self_sizes, outermost_members, ranking
from heapdb.loader.graph import EdgeKind, HeapGraph, csr_from_coo

KINDS = ["synthetic", "object", "hidden", "array", "closure"]


def make_graph(
    n: int,
    src: list[int] | np.ndarray,
    dst: list[int] | np.ndarray,
    kinds: list[int] | np.ndarray,
    sizes: np.ndarray,
    *,
    node_kind: np.ndarray | None = None,
    names: list[str] | None = None,
    root: int = 0,
    fmt: str = "test",
) -> HeapGraph:
    strings = ["", "(Document DOM trees)", "(GC roots)", "Object"]
    name = np.full(n, 3, dtype=np.int32)
    if names is not None:
        name = np.array([strings.index(s) for s in names], dtype=np.int32)
    edge_start, edge_to, edge_kind, edge_name = csr_from_coo(
        n, np.asarray(src, dtype=np.int64), np.asarray(dst), np.asarray(kinds), np.zeros(len(src))
    )
    graph = HeapGraph(
        ids=np.arange(1, n + 1, dtype=np.int64) * 2,
        kind=np.zeros(n, dtype=np.uint8) + 1 if node_kind is None else node_kind.astype(np.uint8),
        type=name.copy(),
        name=name,
        self_size=np.asarray(sizes, dtype=np.int64),
        edge_start=edge_start,
        edge_to=edge_to,
        edge_kind=edge_kind,
        edge_name=edge_name,
        strings=strings,
        node_kinds=KINDS,
        root=root,
        meta={"format": fmt},
    )
    graph.validate()
    return graph


def random_graph(rng: np.random.Generator, *, v8: bool = False) -> HeapGraph:
    """A small graph with every edge kind, cycles, self edges, duplicates and unreachable parts."""
    n = int(rng.integers(1, 28))
    m = int(rng.integers(0, 4 * n + 1))
    src = rng.integers(0, n, size=m)
    dst = rng.integers(0, n, size=m)
    # Mostly strong edges, some weak and shortcut ones.
    kinds = rng.choice(
        [
            EdgeKind.PROPERTY,
            EdgeKind.ELEMENT,
            EdgeKind.INTERNAL,
            EdgeKind.CONTEXT,
            EdgeKind.HIDDEN,
            EdgeKind.REFERENCE,
            EdgeKind.WEAK,
            EdgeKind.SHORTCUT,
        ],
        size=m,
        p=[0.2, 0.15, 0.1, 0.05, 0.05, 0.15, 0.15, 0.15],
    )
    sizes = rng.integers(0, 1000, size=n)
    root = int(rng.integers(0, n)) if not v8 else 0
    node_kind = rng.integers(0, len(KINDS), size=n)
    names = None
    if v8:
        node_kind[0] = 0
        choices = ["Object", "(GC roots)", "(Document DOM trees)"]
        names = [str(x) for x in rng.choice(choices, size=n, p=[0.8, 0.1, 0.1])]
    return make_graph(n, src, dst, kinds, sizes, node_kind=node_kind, names=names, root=root, fmt="v8" if v8 else "t")


# ---------------------------------------------------------------------------------------------
# Oracles, written from the definitions without looking at the engine.


def edge_list(graph: HeapGraph) -> list[tuple[int, int, int]]:
    out = []
    for v in range(graph.node_count):
        for e in graph.out_edges(v):
            out.append((v, int(graph.edge_to[e]), int(graph.edge_kind[e])))
    return out


def generic_retaining_mask(graph: HeapGraph) -> list[bool]:
    return [
        s != t and k != EdgeKind.WEAK and not (k == EdgeKind.SHORTCUT and s != graph.root)
        for s, t, k in edge_list(graph)
    ]


def generic_retaining(graph: HeapGraph) -> list[tuple[int, int]]:
    return [(s, t) for (s, t, _), keep in zip(edge_list(graph), generic_retaining_mask(graph)) if keep]


def memlab_retaining_mask(graph: HeapGraph) -> list[bool]:
    """memlab's essential edges: the generic rules plus "no self edges" and page ownership."""
    edges = edge_list(graph)
    root = graph.root
    synthetic = KINDS.index("synthetic")

    def dom_trees(v: int) -> bool:
        return graph.kind[v] == synthetic and graph.node_name(v) == "(Document DOM trees)"

    page = [False] * graph.node_count
    todo = []
    for s, t, k in edges:
        if s == root and not (k == EdgeKind.ELEMENT and dom_trees(t)) and k != EdgeKind.SHORTCUT:
            page[t] = True
            todo.append(t)
    while todo:
        v = todo.pop()
        for s, t, k in edges:
            if s == v and k != EdgeKind.WEAK and not page[t]:
                page[t] = True
                todo.append(t)
    return [
        s != t
        and k != EdgeKind.WEAK
        and not (k == EdgeKind.SHORTCUT and s != root)
        and not (s != root and page[t] and not page[s])
        for s, t, k in edges
    ]


def memlab_retaining(graph: HeapGraph) -> list[tuple[int, int]]:
    return [(s, t) for (s, t, _), keep in zip(edge_list(graph), memlab_retaining_mask(graph)) if keep]


def reach(n: int, edges: list[tuple[int, int]], root: int, removed: int = -1) -> list[int]:
    """BFS depths from root (-1: not reached), with `removed` taken out of the graph."""
    adj: list[list[int]] = [[] for _ in range(n)]
    for s, t in edges:
        adj[s].append(t)
    dist = [-1] * n
    if root == removed:
        return dist
    dist[root] = 0
    queue = deque([root])
    while queue:
        v = queue.popleft()
        for w in adj[v]:
            if w != removed and dist[w] < 0:
                dist[w] = dist[v] + 1
                queue.append(w)
    return dist


def brute_force(graph: HeapGraph, edges: list[tuple[int, int]], sizes: np.ndarray):
    n, root = graph.node_count, graph.root
    dist = reach(n, edges, root)
    reachable = [d >= 0 for d in dist]
    # dominators[v]: every d that dominates v, v included.
    dominators: list[set[int]] = [set() for _ in range(n)]
    for d in range(n):
        if not reachable[d]:
            continue
        without = reach(n, edges, root, removed=d)
        for v in range(n):
            if reachable[v] and (v == d or without[v] < 0):
                dominators[v].add(d)
    idom = [-1] * n
    for v in range(n):
        if reachable[v] and v != root:
            strict = dominators[v] - {v}
            # The immediate dominator is the strict dominator every other one dominates.
            (idom[v],) = [d for d in strict if strict <= dominators[d]]
    retained = [0] * n
    count = [0] * n
    for v in range(n):
        for d in dominators[v]:
            retained[d] += int(sizes[v])
            count[d] += 1
    return reachable, idom, retained, count, dist


# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(40))
def test_generic_semantics_equal_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(25):
        graph = random_graph(rng)
        result = analyze(graph, semantics=Semantics.GENERIC)
        reachable, idom, retained, count, dist = brute_force(graph, generic_retaining(graph), graph.self_size)
        assert result.retaining.tolist() == generic_retaining_mask(graph)
        assert result.reachable.tolist() == reachable
        assert result.idom.tolist() == idom
        assert result.retained_size.tolist() == retained
        assert result.retained_count.tolist() == count
        assert result.distance.tolist() == dist
        assert result.retained_size[graph.root] == int(graph.self_size[reachable].sum())
        assert result.unreachable_count == reachable.count(False)


def memlab_oracle_graph(graph: HeapGraph) -> tuple[list[tuple[int, int]], list[int], bool]:
    """memlab's dominator graph: essential edges, plus the root holding each unreachable object
    that nothing but weak or shortcut edges points at (memlab and DevTools restart their DFS there).

    Returns the edges, the objects still unreached (memlab hangs each directly below the root), and
    whether one of those has an essential edge into the rest, where memlab's result depends on its
    DFS numbering rather than on the graph alone.
    """
    n, root = graph.node_count, graph.root
    essential = memlab_retaining(graph)
    reached = reach(n, essential, root)
    strong = [False] * n
    for _, t, k in edge_list(graph):
        if k not in (EdgeKind.WEAK, EdgeKind.SHORTCUT):
            strong[t] = True
    edges = essential + [(root, v) for v in range(n) if reached[v] < 0 and not strong[v]]
    covered = reach(n, edges, root)
    leftover = [v for v in range(n) if covered[v] < 0]
    ambiguous = any(covered[t] >= 0 for s, t in essential if covered[s] < 0)
    return edges, leftover, ambiguous


@pytest.mark.parametrize("seed", range(40))
def test_v8_semantics_equal_brute_force(seed: int) -> None:
    rng = np.random.default_rng(1000 + seed)
    checked = 0
    for _ in range(25):
        graph = random_graph(rng, v8=True)
        result = analyze(graph)  # the graph says it is V8
        assert result.semantics is Semantics.V8
        n, root = graph.node_count, graph.root
        assert result.retaining.tolist() == memlab_retaining_mask(graph)
        reachable = reach(n, memlab_retaining(graph), root)
        assert result.reachable.tolist() == [d >= 0 for d in reachable]
        assert result.distance.tolist() == reachable
        # Whatever happens, memlab hangs everything below the root.
        assert result.retained_size[root] == int(graph.self_size.sum())
        assert result.retained_count[root] == n
        edges, leftover, ambiguous = memlab_oracle_graph(graph)
        for v in leftover:
            assert (result.idom[v], result.retained_size[v], result.retained_count[v]) == (root, graph.self_size[v], 1)
        if ambiguous:
            continue
        checked += 1
        covered, idom, retained, count, _ = brute_force(graph, edges, graph.self_size)
        for v in np.flatnonzero(covered).tolist():
            if v != root:
                assert (result.idom[v], result.retained_size[v], result.retained_count[v]) == (
                    idom[v],
                    retained[v],
                    count[v],
                )
    assert checked >= 10


def test_weak_and_shortcut_edges_do_not_retain() -> None:
    # 0 -> 1 -> 2, 0 -weak-> 3, 1 -shortcut-> 4, 0 -shortcut-> 5
    graph = make_graph(
        6,
        [0, 1, 0, 1, 0],
        [1, 2, 3, 4, 5],
        [EdgeKind.PROPERTY, EdgeKind.PROPERTY, EdgeKind.WEAK, EdgeKind.SHORTCUT, EdgeKind.SHORTCUT],
        np.array([0, 10, 20, 30, 40, 50]),
    )
    result = analyze(graph)
    assert result.reachable.tolist() == [True, True, True, False, False, True]
    assert result.idom.tolist() == [-1, 0, 1, -1, -1, 0]
    assert result.retained_size.tolist() == [80, 30, 20, 0, 0, 50]
    assert result.distance.tolist() == [0, 1, 2, -1, -1, 1]
    assert result.unreachable_count == 2
    assert result.reachable_size == 80
    assert result.top_retainers(2).tolist() == [5, 1]


def test_deep_chain_does_not_recurse() -> None:
    n = 300_000
    src = np.arange(n - 1)
    graph = make_graph(n, src, src + 1, np.full(n - 1, EdgeKind.REFERENCE), np.ones(n, dtype=np.int64))
    result = analyze(graph)
    assert result.idom[1:].tolist() == list(range(n - 1))
    assert result.retained_size[0] == n and result.retained_size[-1] == 1
    assert result.distance[-1] == n - 1


@pytest.mark.parametrize("seed", range(6))
def test_idom_equals_igraph_on_power_law_graphs(seed: int) -> None:
    random.seed(seed)  # igraph draws from Python's random module
    n, m = 20000, 60000
    # Power-law out- and in-degrees, like a heap's fan-out and its hubs.
    ig = igraph.Graph.Static_Power_Law(n, m, exponent_out=2.2, exponent_in=2.0, allowed_edge_types="all")
    rng = np.random.default_rng(seed)
    edges = np.array(ig.get_edgelist(), dtype=np.int64).reshape(-1, 2)
    root = int(np.argmax(ig.outdegree()))
    # Weak edges the engine must ignore; igraph never sees them.
    weak_src = rng.integers(0, n, size=5000)
    weak_dst = rng.integers(0, n, size=5000)
    src = np.concatenate([edges[:, 0], weak_src])
    dst = np.concatenate([edges[:, 1], weak_dst])
    kinds = np.concatenate([np.full(len(edges), EdgeKind.PROPERTY), np.full(5000, EdgeKind.WEAK)])
    graph = make_graph(n, src, dst, kinds, rng.integers(1, 100, size=n), root=root)
    result = analyze(graph)
    # igraph: -1 for the root, NaN for what the root does not reach.
    expected = [-1 if math.isnan(d) or d < 0 else int(d) for d in ig.dominator(root, mode="out")]
    assert result.idom.tolist() == expected
    reachable = np.array(ig.subcomponent(root, mode="out"))
    assert set(np.flatnonzero(result.reachable).tolist()) == set(reachable.tolist())
    assert result.distance.tolist() == [-1 if x == math.inf else int(x) for x in ig.distances(root, mode="out")[0]]
    # Each object's retained size is its own plus its dominator-tree children's.
    expected_size = graph.self_size * result.reachable
    children_sum = np.zeros(n, dtype=np.int64)
    live = np.flatnonzero(result.reachable & (np.arange(n) != root))
    np.add.at(children_sum, result.idom[live], result.retained_size[live])
    assert (result.retained_size == expected_size + children_sum).all()


def brute_force_owners(graph: HeapGraph, owned: np.ndarray) -> list[set[int]]:
    """For each node, the ordinary nodes that reach it through owned nodes only (strong edges)."""
    n = graph.node_count
    owners: list[set[int]] = [set() for _ in range(n)]
    for o in range(n):
        if owned[o]:
            continue
        seen = {o}
        todo = [o]
        while todo:
            v = todo.pop()
            for e in graph.out_edges(v):
                w = int(graph.edge_to[e])
                if graph.edge_kind[e] == EdgeKind.WEAK or w in seen or not owned[w]:
                    continue
                seen.add(w)
                owners[w].add(o)
                todo.append(w)
    return owners


@pytest.mark.parametrize("seed", range(20))
def test_devtools_sizes_move_singly_owned_hidden_and_array_sizes(seed: int) -> None:
    rng = np.random.default_rng(5000 + seed)
    for _ in range(20):
        graph = random_graph(rng, v8=True)
        # DevTools only does this when the root holds a non-synthetic object.
        graph.kind[graph.edge_to[graph.edge_start[0] : graph.edge_start[1]]] = KINDS.index("object")
        owned = np.isin(graph.kind, [KINDS.index("hidden"), KINDS.index("array")])
        owners = brute_force_owners(graph, owned)
        expected = graph.self_size.copy()
        has_user_root = graph.edge_start[1] > graph.edge_start[0]
        if has_user_root:
            for v in range(graph.node_count):
                if len(owners[v]) == 1:
                    (o,) = owners[v]
                    if o != graph.root and graph.kind[o] != KINDS.index("synthetic"):
                        expected[o] += graph.self_size[v]
                        expected[v] = 0
        assert devtools_self_sizes(graph).tolist() == expected.tolist()
        assert devtools_self_sizes(graph).sum() == graph.self_size.sum()
        result = analyze(graph, devtools_sizes=True)
        assert result.self_size.tolist() == expected.tolist()


def test_top_retainers_order_and_ties() -> None:
    # The root holds six leaves; sizes with ties: 5, 9, 5, 9, 1, 5.
    sizes = np.array([0, 5, 9, 5, 9, 1, 5])
    graph = make_graph(7, [0] * 6, [1, 2, 3, 4, 5, 6], [EdgeKind.PROPERTY] * 6, sizes)
    result = analyze(graph)
    assert result.top_retainers(10).tolist() == [2, 4, 1, 3, 6, 5]
    assert result.top_retainers(3).tolist() == [2, 4, 1]
    assert result.top_retainers(4).tolist() == [2, 4, 1, 3]
    assert result.top_retainers(0).tolist() == []
    exclude = np.zeros(7, dtype=bool)
    exclude[[2, 1]] = True
    assert result.top_retainers(2, exclude=exclude).tolist() == [4, 3]


def test_ranking_by_slices_equals_one_sort(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first ``count`` kept objects, ranked a slice at a time, are the sort's first ``count``:
    sizes with many ties, ids in any order, slices smaller than the count."""
    monkeypatch.setattr(ranking, "_SLICE", 7)
    rng = np.random.default_rng(11)
    for _ in range(2000):
        n = int(rng.integers(1, 60))
        sizes = rng.integers(0, 5, n)
        ids = rng.permutation(3 * n)[:n]
        keep = rng.random(n) < 0.7
        count = int(rng.integers(0, 12))
        # The oracle: Python's sort by (size descending, id ascending).
        expected = sorted(np.flatnonzero(keep).tolist(), key=lambda i: (-sizes[i], ids[i]))[:count]
        assert ranking.largest_first_of(sizes, ids, keep, count).tolist() == expected


@pytest.mark.parametrize("seed", range(10))
def test_group_retained_size_counts_each_byte_once(seed: int) -> None:
    """A group's retained size (outermost members' retained sizes summed) equals the self size of the
    union of what its members dominate, computed by brute force from the definition."""
    rng = np.random.default_rng(1000 + seed)
    for _ in range(25):
        graph = random_graph(rng)
        n = graph.node_count
        result = analyze(graph, semantics=Semantics.GENERIC)
        reachable, _idom, _retained, _count, _dist = brute_force(graph, generic_retaining(graph), graph.self_size)
        groups = rng.integers(0, 3, size=n)
        member = np.array(reachable) & (rng.random(n) < 0.7) & (graph.self_size > 0)
        outermost = outermost_members(result.idom, graph.root, groups, member, 3)
        assert not (outermost & ~member).any()
        edges = generic_retaining(graph)
        for group in range(3):
            held: set[int] = set()
            for d in np.flatnonzero(member & (groups == group)).tolist():
                without = reach(n, edges, graph.root, removed=d)
                held |= {v for v in range(n) if reachable[v] and (v == d or without[v] < 0)}
            expected = sum(int(graph.self_size[v]) for v in held)
            assert int(result.retained_size[outermost & (groups == group)].sum()) == expected
