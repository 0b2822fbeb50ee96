"""The order a load writes objects in, so that a snapshot answers long before its last object is in.

Writing millions of ``:Object`` nodes is what a load spends most of its time on before any question
can be asked (docs/benchmarks.md, "Loading into Neo4j"), yet the first questions people ask name a
few thousand objects: the largest retainers (``top``, overall and per type), the members path
groups name (``leaks`` and ``diff`` by path), the leak suspects and their accumulation points. So a
load writes those first, with every object on their first paths and dominator chains, then the
groups, and the snapshot starts answering; the rest of the objects follow nearest to the root first,
then the references. :func:`write_order` says which objects come first; docs/data-model.md ("When a
snapshot answers") says which questions answer at which point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # the summaries import the paths' kernels, and numba: questions read this module
    from heapdb.loader.store.summaries import LoadInput


# Suspects answer while the objects are still written down to this share of the reachable heap
# (`heapdb suspects --share`; the default, 0.1, is a hundred times more): the objects retaining at
# least this much, and their accumulation points, are written first.
EARLY_SUSPECT_SHARE = 0.001
# The least share of its parent's retained size a child must hold for suspects to descend into it,
# in percent: over half, so at most one child qualifies and the descent is a chain.
MIN_DESCENT_PERCENT = 51


@dataclass(frozen=True)
class WriteOrder:
    """Object indexes in the order a load writes them; the first ``early`` before the snapshot answers.

    The early objects are closed under first-path holders and immediate dominators, so a question
    about any of them walks only written objects. ``children`` lists every object's children in the
    dominator tree, largest retained first (``children[child_start[v]:child_start[v + 1]]``): each
    object stores their ids (``dominated_order``), and the early ones the largest one's retained
    size, which suspects reads before the children are written.
    """

    order: np.ndarray  # int64[n]
    early: int
    child_start: np.ndarray  # int64[n + 1]
    children: np.ndarray  # int32[objects the root reaches, but the root]

    @cached_property
    def early_mask(self) -> np.ndarray:
        """bool[n]: the objects written before the snapshot answers (made once: read per batch)."""
        mask = np.zeros(self.order.shape[0], dtype=bool)
        mask[self.order[: self.early]] = True
        return mask

    @property
    def dominates(self) -> np.ndarray:
        """int64[n]: how many objects each one immediately dominates."""
        return np.diff(self.child_start)

    def largest_dominated(self, retained_size: np.ndarray, index: np.ndarray) -> np.ndarray:
        """int64[len(index)]: the largest retained size among the children of each object ``index``
        names (0 for none): its first child's."""
        first, end = self.child_start[index], self.child_start[index + 1]
        largest = np.zeros(index.shape[0], dtype=np.int64)
        has = end > first
        largest[has] = retained_size[self.children[first[has]]]
        return largest


def early_suspect_floor(reachable_size: int) -> int:
    """The least retained size of the suspects a snapshot answers before all its objects are written
    (the same rounding as the question's own ``min_retained``)."""
    return max(1, math.ceil(EARLY_SUSPECT_SHARE * reachable_size))


def write_order(data: LoadInput, ranks: tuple[np.ndarray, np.ndarray]) -> WriteOrder:
    """Which objects a load writes first (see the module's docstring), and in what order the rest."""
    g = data.graph
    n = g.node_count
    from heapdb.loader.analysis import ordered_dominator_tree  # numba: loads only

    retained = data.retained_size
    idom = data.idom
    dominated = np.flatnonzero(idom >= 0)
    parents = idom[dominated]
    child_start, children = ordered_dominator_tree(idom, retained, g.ids)

    early = np.zeros(n, dtype=bool)
    early[g.root] = True
    early |= (ranks[0] > 0) | (ranks[1] > 0)
    early[data.path_sample_indexes()] = True
    # Suspects: every object retaining at least the floor, and each one's descent into the child
    # holding over half of it (there is at most one), down to its accumulation point.
    candidates = np.flatnonzero(data.reachable & (retained >= early_suspect_floor(data.reachable_size)))
    heirs = dominated[retained[dominated] * 100 >= MIN_DESCENT_PERCENT * retained[parents]]
    heir = np.full(n, -1, dtype=np.int64)
    heir[idom[heirs]] = heirs
    descended = np.zeros(n, dtype=bool)
    frontier = candidates
    while frontier.size:
        descended[frontier] = True
        frontier = heir[frontier]
        frontier = frontier[frontier >= 0]
        frontier = frontier[~descended[frontier]]
    early |= descended
    # Closed under first-path holders and immediate dominators: why-alive and dominators walk these.
    holder = data.paths.holder
    frontier = np.flatnonzero(early)
    while frontier.size:
        up = np.concatenate([holder[frontier], idom[frontier]])
        up = np.unique(up[up >= 0])
        frontier = up[~early[up]]
        early[frontier] = True

    # Nearest to the root first (a holder and a dominator are always nearer than what they hold),
    # the unreachable last.
    by_distance = nearest_first(data.distance)
    first = by_distance[early[by_distance]]
    rest = by_distance[~early[by_distance]]
    return WriteOrder(
        order=np.concatenate([first, rest]).astype(np.int64),
        early=int(first.shape[0]),
        child_start=child_start,
        children=children,
    )


def nearest_first(distance: np.ndarray) -> np.ndarray:
    """Object indexes by distance from the root, the unreachable (-1) last, each distance's in index
    order. Distances are small: as 16-bit keys numpy's stable sort is a radix sort, linear (a
    comparison sort of 24 million objects took 5 s of a load's time before its first answer)."""
    far = int(distance.max()) if distance.size else 0
    if far < np.iinfo(np.int16).max:
        return np.argsort(np.where(distance >= 0, distance, far + 1).astype(np.int16), kind="stable")
    # (in int64 first: an int32 array's np.where with int64's largest wraps it to -1)
    return np.argsort(np.where(distance >= 0, distance.astype(np.int64), np.iinfo(np.int64).max), kind="stable")
