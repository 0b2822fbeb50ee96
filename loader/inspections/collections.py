"""Collections holding stale objects: Maps, Sets and Arrays that still reference detached DOM or
unmounted React fibers, the usual way a page leaks them (a cache, a registry, an undo list).

Which collections and children count is memlab's ``collections-with-stale`` analysis (``memlab
analyze collections-with-stale``): an object named ``Map`` or ``Set`` is judged by what its first
``table`` reference (its backing hash table) references, an ``Array`` by what it references itself;
every reference counts as a child, and a child is stale when it is a detached DOM object
(:mod:`.dom`) or an unmounted fiber (:mod:`.react`, with heapdb's correction). Only collections
the roots reach count. A collection's stale bytes are its stale children's retained sizes summed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from heapdb.loader.graph import HeapGraph
from heapdb.loader.inspections.common import first_targets, string_indexes, tail
from heapdb.units import human_bytes

if TYPE_CHECKING:
    from heapdb.loader.analysis import Analysis
    from heapdb.loader.paths import FirstPaths

HASHED = ("Map", "Set")  # judged by their backing table
LISTS = ("Array",)  # judged by their own references
TABLE = "table"
KEPT = 100  # collections a load stores, most stale bytes first: the stored question's largest limit
SHOWN_CHILDREN = 10  # stale children's ids a row names
PATH_CHARS = 100


@dataclass(frozen=True)
class StaleCollection:
    """One collection that references stale objects."""

    id: int
    type: str
    children: int  # references of the collection (or of its table)
    stale: int  # of which reach a detached DOM object or an unmounted fiber
    stale_size: int  # those children's retained sizes summed
    retained_size: int  # the collection's own retained size
    stale_ids: tuple[int, ...]  # the first SHOWN_CHILDREN stale children, in reference order
    path: str  # the collection's first retainer path


@dataclass(frozen=True)
class StaleCollections:
    """The collections of one snapshot that hold stale objects, most stale bytes first."""

    source: str
    collections: int  # collections holding at least one stale child
    stale: int  # stale children over all of them
    stale_size: int
    rows: tuple[StaleCollection, ...]


# The figures of StaleCollections over every collection (a load stores them with the rows).
STALE_TOTALS = ("collections", "stale", "stale_size")


def stale_objects(graph: HeapGraph, result: Analysis) -> np.ndarray | None:
    """bool[n]: what a collection should no longer hold, detached DOM and unmounted fibers; None
    where the format has no DOM."""
    from heapdb.loader.inspections.dom import detached
    from heapdb.loader.inspections.react import unmounted

    dom, fibers = detached(graph), unmounted(graph, result)
    return None if dom is None or fibers is None else dom | fibers


def stale_collections(
    graph: HeapGraph,
    result: Analysis,
    paths: FirstPaths,
    stale: np.ndarray,
    *,
    source: str,
    limit: int = KEPT,
) -> StaleCollections:
    """The collections of ``graph`` that reference objects ``stale`` (bool[n]) marks: the ``limit``
    with the most stale bytes (then the most stale children, then the lowest id) and the totals."""
    from heapdb.loader.paths import path_hops

    if not stale.any():
        return StaleCollections(source, 0, 0, 0, ())
    at = string_indexes(graph, (*HASHED, *LISTS, TABLE))
    hashed = np.zeros(len(graph.strings), dtype=np.bool_)
    listed = np.zeros(len(graph.strings), dtype=np.bool_)
    hashed[np.concatenate([at[name] for name in HASHED])] = True
    listed[np.concatenate([at[name] for name in LISTS])] = True
    reachable = result.reachable
    maps = np.flatnonzero(hashed[graph.name] & reachable)
    arrays = np.flatnonzero(listed[graph.name] & reachable)
    table = first_targets(graph, maps, at[TABLE])
    collections = np.concatenate([maps, arrays])
    held_by = np.concatenate([table[maps], arrays]).astype(np.int64)  # whose references count; -1: none

    # Per node, its references to stale objects: how many, and their retained sizes.
    stale_edges = np.flatnonzero(stale[graph.edge_to])
    holders = np.searchsorted(graph.edge_start, stale_edges, side="right") - 1
    count = np.bincount(holders, minlength=graph.node_count)
    size = np.zeros(graph.node_count, dtype=np.int64)
    np.add.at(size, holders, result.retained_size[graph.edge_to[stale_edges]])

    has = held_by >= 0
    found = np.zeros(collections.size, dtype=np.int64)
    found[has] = count[held_by[has]]
    bytes_ = np.zeros(collections.size, dtype=np.int64)
    bytes_[has] = size[held_by[has]]
    keep = found > 0
    collections, held_by, found, bytes_ = collections[keep], held_by[keep], found[keep], bytes_[keep]
    order = np.lexsort((graph.ids[collections], -found, -bytes_))[:limit]
    synthetic = graph.synthetic_nodes()
    rows = []
    for i in order.tolist():
        c, s = int(collections[i]), int(held_by[i])
        targets = graph.edge_to[graph.edge_start[s] : graph.edge_start[s + 1]]
        stale_targets = targets[stale[targets]][:SHOWN_CHILDREN]
        rows.append(
            StaleCollection(
                id=int(graph.ids[c]),
                type=graph.type_name(c),
                children=int(targets.size),
                stale=int(found[i]),
                stale_size=int(bytes_[i]),
                retained_size=int(result.retained_size[c]),
                stale_ids=tuple(int(v) for v in graph.ids[stale_targets]),
                path=" / ".join(path_hops(graph, paths, c, synthetic)),
            )
        )
    return StaleCollections(
        source=source,
        collections=int(collections.size),
        stale=int(found.sum()),
        stale_size=int(bytes_.sum()),
        rows=tuple(rows),
    )


def stale_collections_text(answer: StaleCollections) -> str:
    """The report as ``heapdb analyze --stale`` and ``heapdb stale`` print it."""
    if not answer.collections:
        return f"Collections holding stale objects in {answer.source}: none"
    lines = [
        f"Collections holding stale objects in {answer.source}: {answer.collections:,} collections hold "
        f"{answer.stale:,} detached DOM objects or unmounted fibers retaining {human_bytes(answer.stale_size)}",
        f"  {'stale':>10}  {'children':>15}  {'collection':>18}  held by",
    ]
    for r in answer.rows:
        lines.append(
            f"  {human_bytes(r.stale_size):>10}  {f'{r.stale:,} of {r.children:,}':>15}  "
            f"{f'{r.type} @{r.id}':>18}  {tail(r.path, PATH_CHARS)}"
        )
    if answer.collections > len(answer.rows):
        lines.append(f"  … {answer.collections - len(answer.rows):,} more collections")
    return "\n".join(lines)
