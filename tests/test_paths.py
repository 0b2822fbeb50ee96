"""First retainer paths and their signatures (loader/paths.py)."""

from __future__ import annotations

from collections import deque
from pathlib import Path

import numpy as np
import pytest

from heapdb.loader import analysis, formats
from heapdb.loader.graph import EdgeKind, HeapGraph, csr_from_coo
from heapdb.loader.paths import FirstPaths, describe_path, first_paths, normalize_name

TYPES = ["", "(root)", "Node", "Map", "Item", "Array", "next", "items", "cache", "17", "42", "0xdeadbeef", "value"]


def make_graph(edges: list[tuple[int, int, EdgeKind, int]], types: list[int], strings: list[str] = TYPES) -> HeapGraph:
    n = len(types)
    src, dst, kind, name = (np.array(c) for c in zip(*edges)) if edges else (np.zeros(0, np.int64),) * 4
    es, et, ek, en = csr_from_coo(n, src, dst, kind, name)
    graph = HeapGraph(
        ids=np.arange(1, n + 1, dtype=np.int64),
        kind=np.zeros(n, np.uint8),
        type=np.array(types, dtype=np.int32),
        name=np.zeros(n, np.int32),
        self_size=np.full(n, 8, np.int64),
        edge_start=es,
        edge_to=et,
        edge_kind=ek,
        edge_name=en,
        strings=list(strings),
        node_kinds=["object"],
        root=0,
    )
    graph.validate()
    return graph


def random_graph(rng: np.random.Generator, n: int, m: int) -> HeapGraph:
    kinds = [EdgeKind.PROPERTY, EdgeKind.ELEMENT, EdgeKind.WEAK, EdgeKind.CONTEXT]
    edges = []
    for _ in range(m):
        kind = kinds[int(rng.integers(len(kinds)))]
        name = int(rng.integers(0, 40)) if kind == EdgeKind.ELEMENT else int(rng.integers(6, len(TYPES)))
        edges.append((int(rng.integers(n)), int(rng.integers(1, n)), kind, name))
    types = [1] + [int(rng.integers(2, 6)) for _ in range(n - 1)]
    return make_graph(edges, types)


def bfs_parents(graph: HeapGraph, retaining: np.ndarray) -> np.ndarray:
    parent = np.full(graph.node_count, -1, dtype=np.int64)
    seen = {graph.root}
    queue = deque([graph.root])
    while queue:
        u = queue.popleft()
        for e in graph.out_edges(u):
            v = int(graph.edge_to[e])
            if retaining[e] and v not in seen:
                seen.add(v)
                parent[v] = e
                queue.append(v)
    return parent


@pytest.mark.parametrize("seed", range(40))
def test_first_paths_are_bfs_paths_and_signatures_follow_the_text(seed: int) -> None:
    rng = np.random.default_rng(seed)
    graph = random_graph(rng, n=int(rng.integers(5, 60)), m=int(rng.integers(5, 200)))
    result = analysis.analyze(graph)
    paths = first_paths(graph, result.retaining)

    assert np.array_equal(paths.parent_edge, bfs_parents(graph, result.retaining))
    # Each holder is the object its first reference leaves from, found here by the offsets.
    sources = graph.edge_sources()
    assert paths.holder.tolist() == [int(sources[e]) if e >= 0 else -1 for e in paths.parent_edge.tolist()]
    # Each first path is a shortest path of retaining references.
    for v in range(graph.node_count):
        length, node = 0, v
        while paths.parent_edge[node] >= 0:
            assert result.retaining[paths.parent_edge[node]]
            node = int(np.searchsorted(graph.edge_start, paths.parent_edge[node], side="right") - 1)
            length += 1
        assert (node == graph.root) == bool(result.reachable[v])
        if result.reachable[v]:
            assert length == result.distance[v]

    # Equal signatures exactly where the folded, normalized text of the paths is equal.
    texts = [describe_path(graph, paths, v) if result.reachable[v] else None for v in range(graph.node_count)]
    for a in range(graph.node_count):
        for b in range(a + 1, graph.node_count):
            if texts[a] is None or texts[b] is None:
                continue
            assert (paths.signature[a] == paths.signature[b]) == (texts[a] == texts[b]), (texts[a], texts[b])
    assert all(paths.signature[v] == 0 for v in range(graph.node_count) if not result.reachable[v])
    assert (paths.signature >= 0).all()


def test_signatures_do_not_depend_on_string_table_order() -> None:
    rng = np.random.default_rng(7)
    graph = random_graph(rng, 50, 160)
    before = first_paths(graph, analysis.analyze(graph).retaining).signature
    # The same heap with its string table permuted, as another snapshot would number it.
    order = rng.permutation(len(graph.strings))
    position = np.empty_like(order)
    position[order] = np.arange(len(order))
    named = ~np.isin(graph.edge_kind, [int(EdgeKind.ELEMENT), int(EdgeKind.HIDDEN)])
    renamed = graph.edge_name.copy()
    renamed[named] = position[graph.edge_name[named]]
    graph.edge_name = renamed
    graph.type = position[graph.type].astype(np.int32)
    graph.name = position[graph.name].astype(np.int32)
    graph.strings = [graph.strings[i] for i in order]
    graph.validate()
    after = first_paths(graph, analysis.analyze(graph).retaining).signature
    assert np.array_equal(before, after)


def test_indexes_numbers_and_list_depth_are_normalized() -> None:
    s = {name: i for i, name in enumerate(TYPES)}
    edges = [
        (0, 1, EdgeKind.PROPERTY, s["cache"]),  # root → Map
        (1, 2, EdgeKind.ELEMENT, 17),  # Map[17] → Item
        (1, 3, EdgeKind.ELEMENT, 42),  # Map[42] → Item
        (1, 4, EdgeKind.PROPERTY, s["17"]),  # Map."17" → Item
        (1, 5, EdgeKind.PROPERTY, s["0xdeadbeef"]),  # Map.0xdeadbeef → Item
        (0, 6, EdgeKind.PROPERTY, s["items"]),  # root → Node, then a linked list of Nodes
        (6, 7, EdgeKind.PROPERTY, s["next"]),
        (7, 8, EdgeKind.PROPERTY, s["next"]),
        (8, 9, EdgeKind.PROPERTY, s["next"]),
    ]
    graph = make_graph(
        edges,
        [s["(root)"], s["Map"], s["Item"], s["Item"], s["Item"], s["Item"], s["Node"], s["Node"], s["Node"], s["Node"]],
    )
    sig = first_paths(graph, analysis.analyze(graph).retaining).signature
    assert sig[2] == sig[3], "element indexes are not part of the path"
    assert sig[4] == sig[5], "numeric and address-like names are normalized alike"
    assert sig[2] != sig[4], "an element and a named property are different hops"
    assert sig[7] == sig[8] == sig[9], "a linked list's depth does not split it"
    assert sig[6] != sig[7], "the list's head is held differently from its tail"
    assert normalize_name("0x7ffe12") == normalize_name("1234") == "*" and normalize_name("entries") == "entries"
    assert normalize_name("k1001") == normalize_name("k7") == "k#" and normalize_name("session-12a") == "session-#a"


def test_leaked_class_keeps_its_path_across_real_snapshots(leak_snapshots: dict[str, Path]) -> None:
    groups = {}
    for label in ("baseline", "final"):
        graph = formats.read_graph(leak_snapshots[label])
        paths = first_paths(graph, analysis.analyze(graph).retaining)
        items = np.flatnonzero(np.array([graph.type_name(i) == "LeakedItem" for i in range(graph.node_count)]))
        signatures, counts = np.unique(paths.signature[items], return_counts=True)
        groups[label] = dict(zip(signatures.tolist(), counts.tolist()))
        # All leaked items are held the same way: one path group holds (nearly) all of them.
        assert max(counts) >= 0.9 * items.size
    (main_group,) = [sig for sig, count in groups["final"].items() if count == max(groups["final"].values())]
    assert main_group in groups["baseline"], "the same path group exists in both snapshots"
    assert groups["final"][main_group] > groups["baseline"][main_group]


def test_root_groups_within_root_groups_fold() -> None:
    """The same program state filed under different V8 root groups has one signature and one path."""
    strings = [
        "",
        "(root)",
        "(GC roots)",
        "(Stack roots)",
        "(Handle scope)",
        "Context",
        "cache",
        "Map",
        "x",
        "(Document DOM trees)",
    ]
    s = {name: i for i, name in enumerate(strings)}

    def snapshot(group: str) -> tuple[HeapGraph, FirstPaths]:
        edges = [
            (0, 1, EdgeKind.ELEMENT, 1),  # (root) → (GC roots)
            (1, 2, EdgeKind.ELEMENT, 1),  # (GC roots) → the group
            (2, 3, EdgeKind.ELEMENT, 1),  # the group → a Context
            (3, 4, EdgeKind.CONTEXT, s["cache"]),  # Context.cache → Map
            (0, 5, EdgeKind.ELEMENT, 2),  # (root) → (Document DOM trees), a root group of its own
            (5, 6, EdgeKind.ELEMENT, 1),
        ]
        graph = make_graph(edges, [0, 0, 0, s["Context"], s["Map"], 0, s["Map"]], strings)
        graph.kind = np.array([1, 1, 1, 0, 0, 1, 0], dtype=np.uint8)
        graph.name = np.array(
            [s["(root)"], s["(GC roots)"], s[group], 0, 0, s["(Document DOM trees)"], 0], dtype=np.int32
        )
        graph.node_kinds = ["object", "synthetic"]
        graph.validate()
        return graph, first_paths(graph, analysis.analyze(graph).retaining)

    (stack, stack_paths), (handles, handle_paths) = snapshot("(Stack roots)"), snapshot("(Handle scope)")
    assert stack_paths.signature[4] == handle_paths.signature[4]
    assert (
        describe_path(stack, stack_paths, 4)
        == describe_path(handles, handle_paths, 4)
        == "(root) / (GC roots) / [] → Context / cache → Map"
    )
    # A root group directly below the root keeps its name, and sets its objects apart.
    assert describe_path(stack, stack_paths, 6) == "(root) / (Document DOM trees) / [] → Map"
    assert stack_paths.signature[6] != stack_paths.signature[4]


def test_transient_root_groups_yield_to_the_programs_own_paths() -> None:
    """An array a compiler's handle holds directly (V8's "(Handle scope)") is still named by the
    variable that holds it; what only such a group holds keeps its path through the group."""
    strings = ["", "(root)", "(GC roots)", "(Stack roots)", "(Handle scope)", "Context", "trail", "Array", "Map"]
    s = {name: i for i, name in enumerate(strings)}
    edges = [
        (0, 1, EdgeKind.ELEMENT, 1),  # (root) → (GC roots)
        (1, 2, EdgeKind.ELEMENT, 1),  # (GC roots) → (Handle scope), first in the file's order
        (1, 3, EdgeKind.ELEMENT, 2),  # (GC roots) → (Stack roots)
        (2, 5, EdgeKind.ELEMENT, 1),  # (Handle scope) → the Array (one hop shorter than the variable)
        (2, 6, EdgeKind.ELEMENT, 2),  # (Handle scope) → a Map nothing else holds
        (3, 4, EdgeKind.ELEMENT, 1),  # (Stack roots) → Context
        (4, 5, EdgeKind.CONTEXT, s["trail"]),  # Context.trail → Array
    ]
    graph = make_graph(edges, [0, 0, 0, 0, s["Context"], s["Array"], s["Map"]], strings)
    graph.kind = np.array([1, 1, 1, 1, 0, 0, 0], dtype=np.uint8)
    graph.name = np.array([s["(root)"], s["(GC roots)"], s["(Handle scope)"], s["(Stack roots)"], 0, 0, 0], np.int32)
    graph.node_kinds = ["object", "synthetic"]
    graph.validate()
    result = analysis.analyze(graph)
    paths = first_paths(graph, result.retaining)
    assert describe_path(graph, paths, 5) == "(root) / (GC roots) / [] → Context / trail → Array"
    assert result.distance[5] == 4  # the distance is the first path's length
    assert describe_path(graph, paths, 6) == "(root) / (GC roots) / [] → Map"
    # Without the transient group the same heap reads the same: the signature does not see the handle.
    plain = [e for e in edges if e[:2] != (2, 5)]
    other = make_graph(plain, [0, 0, 0, 0, s["Context"], s["Array"], s["Map"]], strings)
    other.kind, other.name, other.node_kinds = graph.kind, graph.name, graph.node_kinds
    assert first_paths(other, analysis.analyze(other).retaining).signature[5] == paths.signature[5]
