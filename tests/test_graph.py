"""The graph contract's own checks and lookups (heapdb.loader.graph) against brute force."""

from __future__ import annotations

import numpy as np
import pytest

from heapdb.loader.graph import EdgeKind, HeapGraph, csr_from_coo, string_positions


def graph_with_ids(ids: np.ndarray) -> HeapGraph:
    """A root holding every other object, the objects numbered ``ids``."""
    n = ids.shape[0]
    src = np.zeros(n - 1, dtype=np.int64)
    dst = np.arange(1, n, dtype=np.int64)
    kind = np.full(n - 1, int(EdgeKind.PROPERTY), dtype=np.uint8)
    edge_start, edge_to, edge_kind, edge_name = csr_from_coo(n, src, dst, kind, np.zeros(n - 1, dtype=np.uint32))
    return HeapGraph(
        ids=ids.astype(np.int64),
        kind=np.zeros(n, dtype=np.uint8),
        type=np.zeros(n, dtype=np.int32),
        name=np.zeros(n, dtype=np.int32),
        self_size=np.ones(n, dtype=np.int64),
        edge_start=edge_start,
        edge_to=edge_to,
        edge_kind=edge_kind,
        edge_name=edge_name,
        strings=[""],
        node_kinds=["object"],
        root=0,
    )


def test_duplicate_ids_are_refused_wherever_they_are() -> None:
    """Nearly sorted ids (as runtimes write them), shuffled ones and tiny ones: validate refuses
    exactly the graphs where two objects share an id."""
    rng = np.random.default_rng(5)
    for trial in range(3000):
        n = int(rng.integers(2, 40))
        if trial % 3 == 0:
            ids = rng.integers(0, 2 * n, n)  # shuffled, often repeating
        else:
            ids = np.arange(n) * 2 + 1  # in order, then a few moved or copied
            for _ in range(int(rng.integers(0, 3))):
                ids[int(rng.integers(0, n))] = int(rng.integers(0, 2 * n + 2))
        graph = graph_with_ids(ids)
        if len(set(ids.tolist())) == n:
            graph.validate()
        else:
            with pytest.raises(ValueError, match="not unique"):
                graph.validate()


def test_string_positions_finds_every_copy() -> None:
    strings = ["", "a", "b", "a", "(Handle scope)", "b", "c"]
    assert string_positions(strings, ["a", "b"]) == [1, 2, 3, 5]
    assert string_positions(strings, {"(Handle scope)", "missing"}) == [4]
    assert string_positions(strings, []) == []
