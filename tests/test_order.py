"""The order a load writes objects in (loader/store/order.py), checked against brute force on a real
V8 snapshot: the first objects are those the first answers name, closed under first-path holders and
dominators, and the figures suspects reads on them are the dominator tree's."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from heapdb.loader import analysis, formats
from heapdb.loader.store import LoadInput
from heapdb.loader.store.order import MIN_DESCENT_PERCENT, early_suspect_floor, nearest_first, write_order


def test_the_first_objects_are_those_early_answers_name_closed_under_both_trees(leak_snapshot: Path) -> None:
    g = formats.read_graph(leak_snapshot)
    result = analysis.analyze(g)
    data = LoadInput.from_analysis(g, result)
    ranks = data.top_ranks()
    order = write_order(data, ranks)
    n = g.node_count
    assert np.array_equal(np.sort(order.order), np.arange(n))  # every object once
    early = order.early_mask
    assert 0 < order.early == early.sum() < n
    assert early[g.root]

    # What the first answers name: top (overall and per type), the path groups' samples, suspects.
    assert early[ranks[0] > 0].all() and early[ranks[1] > 0].all()
    assert early[data.path_sample_indexes()].all()
    retained = result.retained_size
    candidates = np.flatnonzero(result.reachable & (retained >= early_suspect_floor(data.reachable_size)))
    assert candidates.size > 1 and early[candidates].all()
    children: dict[int, list[int]] = defaultdict(list)
    for child, parent in enumerate(result.idom.tolist()):
        if parent >= 0:
            children[parent].append(child)
    descended = 0
    for start in candidates.tolist():
        at = start
        while children[at]:
            largest = max(children[at], key=lambda c: retained[c])
            if retained[largest] * 100 < MIN_DESCENT_PERCENT * retained[at]:
                break
            assert early[largest], f"the descent from {start} passes {largest}, written later"
            at, descended = largest, descended + 1
    assert descended > 0

    # Closed: why-alive and dominators about an early object walk only early objects.
    holders = data.paths.holder
    members = np.flatnonzero(early)
    for parents in (holders[members], result.idom[members]):
        assert early[parents[parents >= 0]].all()

    # Nearest to the root first in both parts, the unreachable last.
    distance = np.where(result.distance >= 0, result.distance, n + 1)
    for part in (order.order[: order.early], order.order[order.early :]):
        assert (np.diff(distance[part]) >= 0).all()

    # Each object's children (its stored dominated_order), against the children listed one by one
    # and sorted as the stored query `dominated` sorts: largest retained first, then by id.
    largest_child = order.largest_dominated(retained, np.arange(n))
    ids = data.graph.ids
    for i in np.random.default_rng(7).choice(n, 2000, replace=False).tolist() + candidates.tolist():
        expected = sorted(children[i], key=lambda c: (-int(retained[c]), int(ids[c])))
        assert order.children[order.child_start[i] : order.child_start[i + 1]].tolist() == expected
        assert order.dominates[i] == len(children[i])
        assert largest_child[i] == max((int(retained[c]) for c in children[i]), default=0)
    assert order.child_start[-1] == sum(len(c) for c in children.values())


def test_the_root_groups_listed_and_their_bound(leak_snapshot: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A snapshot lists its root and synthetic objects (where suspects starts), and lists nothing
    past the bound, where suspects reads every object instead."""
    from heapdb.loader.store import summaries

    g = formats.read_graph(leak_snapshot)
    data = LoadInput.from_analysis(g, analysis.analyze(g))
    synthetic = [i for i in range(g.node_count) if g.node_kinds[g.kind[i]] == "synthetic" or i == g.root]
    listed = data.root_groups_property()["root_group_ids"]
    assert sorted(listed) == sorted(int(g.ids[i]) for i in synthetic) and len(listed) > 1
    monkeypatch.setattr(summaries, "MAX_ROOT_GROUPS", len(listed))
    assert data.root_groups_property() == {"root_group_ids": listed}
    monkeypatch.setattr(summaries, "MAX_ROOT_GROUPS", len(listed) - 1)
    assert data.root_groups_property() == {}


@pytest.mark.parametrize("farthest", [0, 7, 40_000])
def test_objects_go_nearest_first_and_the_unreachable_last(farthest: int) -> None:
    """Both ways of sorting (16-bit keys while distances fit, else 64-bit) give the same order as a
    plain sort: by distance, ties in index order, the unreachable (-1) after every reached object."""
    distance = np.random.default_rng(farthest).integers(-1, farthest + 1, 5_000).astype(np.int32)
    order = nearest_first(distance)
    expected = sorted(range(distance.size), key=lambda i: (distance[i] < 0, int(distance[i]), i))
    assert order.tolist() == expected
    assert distance[order[-1]] == -1
