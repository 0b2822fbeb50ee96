"""The analysis under rule weights (ignore, weak, owns) against an oracle written from the definition.

The oracle uses Python sets only: the retaining references minus the ignored ones, the live set by a
plain fixpoint, the highest-weight filter, then the fallback round by round (each cut-off object
that a reached object references gets back its highest-weight references from the reached
objects); dominators by "d dominates v iff v is not reached once d is removed", retained sizes as
sums of the self sizes dominated. The example tests follow MemorySnapshotAnalyzer's OWNS rules.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from heapdb.loader.analysis import (
    IGNORED,
    MAX_OWNS_WEIGHT,
    NO_RULE,
    WEAK_WEIGHT,
    Semantics,
    analyze,
    kernels,
)
from heapdb.loader.formats import read_graph
from heapdb.loader.graph import EdgeKind, HeapGraph
from tests.test_analysis import edge_list, generic_retaining_mask, make_graph, memlab_retaining_mask, random_graph

OWNS = 1
P = EdgeKind.PROPERTY


def weighted(
    n: int, edges: list[tuple[int, int, int]], sizes: list[int] | None = None, *, v8: bool = False
) -> tuple[HeapGraph, np.ndarray]:
    """A graph from (source, target, weight) triples (property edges) and its weights in edge order."""
    src = [s for s, _, _ in edges]
    graph = make_graph(
        n,
        src,
        [t for _, t, _ in edges],
        [P] * len(edges),
        np.array(sizes if sizes is not None else [10] * n),
        node_kind=np.array([0] + [1] * (n - 1)) if v8 else None,
        fmt="v8" if v8 else "t",
    )
    order = np.argsort(np.array(src, dtype=np.int64), kind="stable")
    return graph, np.array([w for _, _, w in edges], dtype=np.int8)[order]


# ---------------------------------------------------------------------------------------------
# The oracle.


def closure(root: int, edges: list[tuple[int, int]], removed: int = -1) -> set[int]:
    """Everything the root reaches over `edges` without passing `removed`, by a plain fixpoint."""
    if root == removed:
        return set()
    seen = {root}
    changed = True
    while changed:
        changed = False
        for s, t in edges:
            if s in seen and t not in seen and t != removed:
                seen.add(t)
                changed = True
    return seen


def filtered(graph: HeapGraph, weights: np.ndarray, v8: bool):
    """(kept edge flags, live set, owner_weight, ambiguous, fallback rounds) from the definition."""
    root = graph.root
    base = memlab_retaining_mask(graph) if v8 else generic_retaining_mask(graph)
    edges = [(s, t, int(w)) for (s, t, _), w in zip(edge_list(graph), weights)]
    retaining = {i for i, ok in enumerate(base) if ok and weights[i] != IGNORED}

    def pairs(ids: set[int]) -> list[tuple[int, int]]:
        return [edges[i][:2] for i in sorted(ids)]

    live = closure(root, pairs(retaining))
    best: dict[int, int] = {}
    for i in retaining:
        s, t, w = edges[i]
        if s in live:
            best[t] = max(best.get(t, -1000), w)
    kept = {i for i in retaining if edges[i][2] >= best.get(edges[i][1], -1000)}
    rounds = 0
    while (got := closure(root, pairs(kept))) != live:
        rounds += 1
        for t in live - got:
            from_got = [i for i in retaining if edges[i][1] == t and edges[i][0] in got]
            if from_got:
                top = max(edges[i][2] for i in from_got)
                kept |= {i for i in from_got if edges[i][2] == top}
    owner_weight = [best[v] if v in live and v != root else 0 for v in range(graph.node_count)]
    owners: dict[int, set[int]] = {}
    for i in kept:
        s, t, w = edges[i]
        if s in live and w >= 1 and t != root:
            owners.setdefault(t, set()).add(s)
    ambiguous = sorted(t for t, sources in owners.items() if len(sources) >= 2)
    flags = [i in kept for i in range(len(edges))]
    return flags, live, owner_weight, ambiguous, rounds


def dominators(n: int, root: int, edges: list[tuple[int, int]], sizes: np.ndarray):
    """(covered, idom, retained size, retained count) over `edges`, by removing each object in turn."""
    covered = closure(root, edges)
    dominated_by: dict[int, set[int]] = {v: set() for v in covered}
    for d in covered:
        without = closure(root, edges, removed=d)
        for v in covered:
            if v not in without:
                dominated_by[v].add(d)
    idom = {}
    for v in covered - {root}:
        strict = dominated_by[v] - {v}
        idom[v] = max(strict, key=lambda d: len(dominated_by[d]))  # the deepest strict dominator
    size = {d: sum(int(sizes[v]) for v in covered if d in dominated_by[v]) for d in covered}
    count = {d: sum(1 for v in covered if d in dominated_by[v]) for d in covered}
    return covered, idom, size, count


def distances(n: int, root: int, edges: list[tuple[int, int]]) -> list[int]:
    dist = [-1] * n
    dist[root] = 0
    frontier = {root}
    depth = 0
    while frontier:
        depth += 1
        frontier = {t for s, t in edges if s in frontier and dist[t] < 0}
        for t in frontier:
            dist[t] = depth
    return dist


def random_weights(rng: np.random.Generator, m: int) -> np.ndarray:
    choices = [NO_RULE] * 6 + [WEAK_WEIGHT, -2, OWNS, OWNS, 2, 3, IGNORED, MAX_OWNS_WEIGHT]
    return np.array(rng.choice(choices, size=m), dtype=np.int8)


def check_rule_arrays(result, graph: HeapGraph, weights: np.ndarray, v8: bool) -> tuple[list[bool], set[int], int]:
    flags, live, owner_weight, ambiguous, rounds = filtered(graph, weights, v8)
    assert result.retaining.tolist() == flags
    assert result.reachable.tolist() == [v in live for v in range(graph.node_count)]
    assert result.owner_weight.dtype == np.int8
    assert result.owner_weight.tolist() == owner_weight
    assert result.ambiguous.dtype == np.int64
    assert result.ambiguous.tolist() == ambiguous
    return flags, live, rounds


# ---------------------------------------------------------------------------------------------


def test_constants_agree_with_the_kernels() -> None:
    assert int(kernels._IGNORED) == IGNORED
    assert (NO_RULE, WEAK_WEIGHT, IGNORED, MAX_OWNS_WEIGHT) == (0, -1, -128, 127)


@pytest.mark.parametrize("seed", range(30))
def test_generic_semantics_under_weights_equal_the_oracle(seed: int) -> None:
    rng = np.random.default_rng(7000 + seed)
    for _ in range(25):
        graph = random_graph(rng)
        weights = random_weights(rng, graph.edge_count)
        result = analyze(graph, semantics=Semantics.GENERIC, edge_weight=weights)
        flags, live, _ = check_rule_arrays(result, graph, weights, v8=False)
        n, root = graph.node_count, graph.root
        kept = [(s, t) for (s, t, _), keep in zip(edge_list(graph), flags) if keep]
        covered, idom, size, count = dominators(n, root, kept, graph.self_size)
        assert covered == live
        assert result.idom.tolist() == [idom.get(v, -1) for v in range(n)]
        assert result.retained_size.tolist() == [size.get(v, 0) for v in range(n)]
        assert result.retained_count.tolist() == [count.get(v, 0) for v in range(n)]
        assert result.distance.tolist() == distances(n, root, kept)


def test_the_random_graphs_exercise_every_rule() -> None:
    """The graphs and weights above do produce fallbacks (over several rounds), ambiguity and owners."""
    fallback = multi_round = ambiguous = owned = 0
    for v8, base in ((False, 7000), (True, 9000)):
        for seed in range(0, 30, 3):
            rng = np.random.default_rng(base + seed)
            for _ in range(25):
                graph = random_graph(rng, v8=v8)
                _, _, owner_weight, ambiguous_objects, rounds = filtered(
                    graph, random_weights(rng, graph.edge_count), v8
                )
                fallback += rounds > 0
                multi_round += rounds > 1
                ambiguous += len(ambiguous_objects) > 0
                owned += max(owner_weight) > 0
    assert fallback >= 30 and multi_round >= 5 and ambiguous >= 30 and owned >= 100


@pytest.mark.parametrize("seed", range(30))
def test_v8_semantics_under_weights_equal_the_oracle(seed: int) -> None:
    rng = np.random.default_rng(9000 + seed)
    checked = 0
    for _ in range(25):
        graph = random_graph(rng, v8=True)
        weights = random_weights(rng, graph.edge_count)
        result = analyze(graph, edge_weight=weights)
        assert result.semantics is Semantics.V8
        flags, live, _ = check_rule_arrays(result, graph, weights, v8=True)
        n, root = graph.node_count, graph.root
        all_edges = edge_list(graph)
        kept = [(s, t) for (s, t, _), keep in zip(all_edges, flags) if keep]
        assert result.distance.tolist() == distances(n, root, kept)
        assert result.retained_size[root] == int(graph.self_size.sum())
        # memlab's restarts: dead objects no reference holds but weak, shortcut or ignored ones.
        held = {
            t
            for (_, t, k), w in zip(all_edges, weights)
            if k not in (EdgeKind.WEAK, EdgeKind.SHORTCUT) and w != IGNORED
        }
        restarts = [(root, v) for v in range(n) if v not in live and v not in held]
        covered = closure(root, kept + restarts)
        leftover = [v for v in range(n) if v not in covered]
        for v in leftover:
            assert (result.idom[v], result.retained_size[v], result.retained_count[v]) == (root, graph.self_size[v], 1)
        if any(s not in covered and t in covered for s, t in kept):
            continue  # the answer depends on memlab's DFS numbering, not on the graph alone
        checked += 1
        _, idom, size, count = dominators(n, root, kept + restarts, graph.self_size)
        for v in covered - {root}:
            assert (result.idom[v], result.retained_size[v], result.retained_count[v]) == (idom[v], size[v], count[v])
    assert checked >= 10


@pytest.mark.parametrize("semantics", [Semantics.GENERIC, Semantics.V8])
def test_all_zero_weights_change_nothing(semantics: Semantics) -> None:
    rng = np.random.default_rng(42)
    for _ in range(200):
        graph = random_graph(rng, v8=semantics is Semantics.V8)
        plain = analyze(graph, semantics=semantics)
        zero = analyze(graph, semantics=semantics, edge_weight=np.zeros(graph.edge_count, dtype=np.int8))
        assert_same(plain, zero)
        assert not zero.owner_weight.any() and zero.ambiguous.size == 0


def assert_same(a, b) -> None:
    for field in ("reachable", "idom", "retained_size", "retained_count", "distance", "retaining", "self_size"):
        x, y = getattr(a, field), getattr(b, field)
        assert x.dtype == y.dtype and np.array_equal(x, y), field


def test_without_weights_the_rule_fields_are_trivial() -> None:
    graph, _ = weighted(3, [(0, 1, 0), (1, 2, 0)])
    result = analyze(graph)
    assert result.owner_weight.dtype == np.int8 and result.owner_weight.tolist() == [0, 0, 0]
    assert result.ambiguous.dtype == np.int64 and result.ambiguous.size == 0


def test_weights_of_the_wrong_shape_or_type_are_refused() -> None:
    graph, weights = weighted(3, [(0, 1, 0), (1, 2, 0)])
    with pytest.raises(ValueError, match="int8"):
        analyze(graph, edge_weight=weights.astype(np.int16))
    with pytest.raises(ValueError, match="int8"):
        analyze(graph, edge_weight=weights[:1])


# ---------------------------------------------------------------------------------------------
# MemorySnapshotAnalyzer's semantics, by example. Node 0 is the root.

ROOT, CACHE, OWNER, ITEM, CHILD = 0, 1, 2, 3, 4


def test_owns_moves_an_object_from_the_root_under_its_owner() -> None:
    # The root holds a cache and an owner; both reference the item, the owner through an owns field.
    edges = [(ROOT, CACHE, 0), (ROOT, OWNER, 0), (CACHE, ITEM, 0), (OWNER, ITEM, OWNS), (ITEM, CHILD, 0)]
    graph, weights = weighted(5, edges, [0, 10, 20, 30, 40])
    plain = analyze(graph)
    assert plain.idom[ITEM] == ROOT and plain.retained_size[OWNER] == 20
    owned = analyze(graph, edge_weight=weights)
    assert owned.idom.tolist() == [-1, ROOT, ROOT, OWNER, ITEM]
    assert owned.retained_size[OWNER] == 20 + 30 + 40
    assert owned.retained_size[CACHE] == 10
    assert owned.owner_weight.tolist() == [0, 0, 0, OWNS, 0]
    assert owned.ambiguous.size == 0
    # The cache's reference is no longer on a retainer path; liveness is unchanged.
    assert owned.reachable.tolist() == plain.reachable.tolist()
    assert [bool(owned.retaining[e]) for e in graph.out_edges(CACHE)] == [False]
    # The unowned objects (MSA's listobj 'unowned): reached, owner weight <= 0.
    unowned = np.flatnonzero(owned.reachable & (owned.owner_weight <= 0))
    assert unowned.tolist() == [ROOT, CACHE, OWNER, CHILD]


def test_two_owners_of_the_same_weight_are_ambiguous() -> None:
    edges = [(ROOT, CACHE, 0), (ROOT, OWNER, 0), (CACHE, ITEM, 2), (OWNER, ITEM, 2)]
    graph, weights = weighted(4, edges)
    result = analyze(graph, edge_weight=weights)
    assert result.ambiguous.tolist() == [ITEM]
    assert result.idom[ITEM] == ROOT
    assert result.owner_weight[ITEM] == 2


def test_the_higher_owns_weight_wins_without_ambiguity() -> None:
    edges = [(ROOT, CACHE, 0), (ROOT, OWNER, 0), (CACHE, ITEM, 1), (OWNER, ITEM, 3), (OWNER, ITEM, 3)]
    graph, weights = weighted(4, edges)
    result = analyze(graph, edge_weight=weights)
    assert result.idom[ITEM] == OWNER
    assert result.owner_weight[ITEM] == 3
    assert result.ambiguous.size == 0  # two references, one owner


def test_a_weak_reference_yields_to_a_plain_one_but_keeps_its_only_target_alive() -> None:
    edges = [(ROOT, CACHE, 0), (ROOT, OWNER, 0), (CACHE, ITEM, WEAK_WEIGHT), (OWNER, ITEM, 0)]
    graph, weights = weighted(4, edges)
    result = analyze(graph, edge_weight=weights)
    assert result.idom[ITEM] == OWNER and result.owner_weight[ITEM] == 0
    # Only the weak reference: the object stays alive, under the cache.
    graph, weights = weighted(4, [(ROOT, CACHE, 0), (ROOT, OWNER, 0), (CACHE, ITEM, WEAK_WEIGHT)])
    result = analyze(graph, edge_weight=weights)
    assert result.reachable[ITEM] and result.idom[ITEM] == CACHE
    assert result.owner_weight[ITEM] == WEAK_WEIGHT


def test_ignore_makes_an_object_unreachable_when_it_was_the_only_path() -> None:
    edges = [(ROOT, CACHE, 0), (CACHE, ITEM, IGNORED), (ITEM, CHILD, 0), (ROOT, OWNER, 0)]
    graph, weights = weighted(5, edges, [0, 10, 20, 30, 40])
    result = analyze(graph, semantics=Semantics.GENERIC, edge_weight=weights)
    assert result.reachable.tolist() == [True, True, True, False, False]
    assert result.idom[ITEM] == -1 and result.retained_size[CACHE] == 10
    assert result.unreachable_count == 2
    # Under V8 semantics the dead item hangs under the root as memlab hangs every dead object, and
    # the ignored reference no longer counts as a referrer: the item heads its own subtree.
    graph, weights = weighted(5, edges, [0, 10, 20, 30, 40], v8=True)
    result = analyze(graph, edge_weight=weights)
    assert result.reachable.tolist() == [True, True, True, False, False]
    assert result.idom.tolist() == [-1, ROOT, ROOT, ROOT, ITEM]
    assert result.retained_size[ITEM] == 70 and result.distance[ITEM] == -1
    assert result.owner_weight.tolist() == [0] * 5


def test_ignore_on_one_of_two_paths_only_moves_the_object() -> None:
    edges = [(ROOT, CACHE, 0), (ROOT, OWNER, 0), (CACHE, ITEM, IGNORED), (OWNER, ITEM, 0)]
    graph, weights = weighted(4, edges)
    result = analyze(graph, edge_weight=weights)
    assert result.reachable.all() and result.idom[ITEM] == OWNER


def test_an_owner_reached_only_through_what_it_owns_falls_back() -> None:
    # The root holds the child; the child points back to its parent; the parent owns the child.
    # Keeping only the owns reference would cut both off: the child gets the root's reference back.
    parent, child = 1, 2
    edges = [(ROOT, child, 0), (child, parent, 0), (parent, child, OWNS)]
    graph, weights = weighted(3, edges, [0, 10, 20])
    result = analyze(graph, edge_weight=weights)
    assert result.reachable.all()
    assert result.idom.tolist() == [-1, child, ROOT]
    assert result.retained_size.tolist() == [30, 10, 30]
    assert result.owner_weight.tolist() == [0, 0, OWNS]
    assert result.retaining.tolist() == [True, True, True]


def test_the_fallback_goes_round_by_round_along_a_chain() -> None:
    # A doubly linked list whose `prev` fields own: each node's owner is its successor, so only
    # the root's reference to the head and each `next` given back in turn reach the list.
    n = 7
    edges = [(ROOT, 1, 0)]
    for v in range(1, n - 1):
        edges += [(v, v + 1, 0), (v + 1, v, OWNS)]
    graph, weights = weighted(n, edges)
    result = analyze(graph, edge_weight=weights)
    assert result.reachable.all()
    assert result.idom.tolist() == [-1, ROOT] + list(range(1, n - 1))
    assert result.owner_weight.tolist() == [0] + [OWNS] * (n - 2) + [0]
    flags, live, _, _, rounds = filtered(graph, weights, v8=False)
    assert rounds == n - 2 and result.retaining.tolist() == flags


def test_the_root_is_never_owned() -> None:
    a, b = 1, 2
    edges = [(ROOT, a, 0), (ROOT, b, 0), (a, ROOT, OWNS), (b, ROOT, OWNS)]
    graph, weights = weighted(3, edges)
    result = analyze(graph, edge_weight=weights)
    assert result.owner_weight.tolist() == [0, 0, 0] and result.ambiguous.size == 0
    assert result.idom.tolist() == [-1, ROOT, ROOT]


def test_an_ownership_cycle_keeps_its_own_references() -> None:
    # a and b own each other and the root also holds a: a gets the root's reference back, and b
    # stays under a through a's owns field.
    a, b = 1, 2
    edges = [(ROOT, a, 0), (a, b, OWNS), (b, a, OWNS)]
    graph, weights = weighted(3, edges)
    result = analyze(graph, edge_weight=weights)
    assert result.idom.tolist() == [-1, ROOT, a]
    assert result.owner_weight.tolist() == [0, OWNS, OWNS]
    assert result.ambiguous.size == 0


# ---------------------------------------------------------------------------------------------
# A real snapshot.


def test_a_real_snapshot_without_or_with_zero_weights_is_unchanged(leak_snapshot: Path) -> None:
    graph = read_graph(leak_snapshot)
    plain = analyze(graph)
    assert_same(plain, analyze(graph, edge_weight=np.zeros(graph.edge_count, dtype=np.int8)))
    # Owns on every reference out of the largest retainer's objects moves nothing out of the live set.
    top = int(plain.top_retainers(1)[0])
    weights = np.zeros(graph.edge_count, dtype=np.int8)
    weights[graph.edge_start[top] : graph.edge_start[top + 1]] = OWNS
    owned = analyze(graph, edge_weight=weights)
    assert np.array_equal(owned.reachable, plain.reachable)
    assert owned.retained_size[graph.root] == plain.retained_size[graph.root]
