"""The order of a hub's references, worked out at load, so that a level of its trees is one slice.

A level of an object's retainers tree lists its holders nearest the root first; a level of its
containment tree lists what it references largest first (the stored queries ``retainer-level``
and ``containment-level``). Neo4j pages them by reading the sort key of every reference and
sorting them all: milliseconds for most objects, but 0.5-1 s for a hub (a context held by 278,000
closures, an array of 278,000 elements), and a person opens exactly those. So for each object with
more than :data:`HUB_REFERENCES` references one way, the load writes their order that way on the
object, one entry per reference (docs/data-model.md):

- ``holders_order``: the holders' ids, sorted as ``retainer-level`` sorts (distance, unreachable
  last; then id);
- ``held_order``: the referenced objects' ids, sorted as ``containment-level`` sorts (retained
  size, largest first; then id);
- ``holders_nth`` / ``held_nth``: which of the references between the same two objects each entry
  is, in the order of their names, the key the queries break the last ties with.

The queries read a page of the order where an object has one, and sort otherwise: the same rows.

Every object's children in the dominator tree are listed in that order on the object itself
(``dominated_order``, written with it: :mod:`.rows`), not only a hub's.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from heapdb.db import Database
from heapdb.loader.store.summaries import LoadInput

# An object with more references than this one way is a hub: its order that way is stored. Below
# it, sorting at question time stays within the browsing pages' 100 ms for a tree level.
HUB_REFERENCES = 10_000
# Hubs' orders go in transactions of about this many entries (16 bytes each, id and nth).
ENTRIES_PER_WRITE = 1_000_000

SET_HOLDERS = """
UNWIND $rows AS r
MATCH (o:Object {sid: $sid, id: r.id})
SET o.holders_order = r.order, o.holders_nth = r.nth
"""
SET_HELD = """
UNWIND $rows AS r
MATCH (o:Object {sid: $sid, id: r.id})
SET o.held_order = r.order, o.held_nth = r.nth
"""


def hub_orders(data: LoadInput) -> dict[str, list[dict[str, Any]]]:
    """Each hub's order, by direction ("in": its holders, "out": what it holds); rows of ``{id,
    order, nth}`` as :data:`SET_HOLDERS` and :data:`SET_HELD` write them."""
    g, least = data.graph, HUB_REFERENCES
    sources = g.edge_sources()
    unreachable_last = np.where(data.distance < 0, np.iinfo(np.int64).max, data.distance.astype(np.int64))
    return {
        # Holders: nearest the root first, then the lower id (retainer-level's ORDER BY).
        "in": list(_orders(g.ids, g.edge_to, sources, [unreachable_last[sources], g.ids[sources]], least)),
        # What it holds: largest retained first, then the lower id (containment-level's ORDER BY).
        "out": list(
            _orders(
                g.ids, sources, g.edge_to, [-data.retained_size[g.edge_to].astype(np.int64), g.ids[g.edge_to]], least
            )
        ),
    }


def _orders(
    ids: np.ndarray, hub_end: np.ndarray, other_end: np.ndarray, keys: list[np.ndarray], least: int
) -> Iterator[dict[str, Any]]:
    """For each object at ``hub_end`` of more than ``least`` references, its references' other
    ends sorted by ``keys`` (most significant first), with each entry's rank among the references
    to the same other end."""
    degree = np.bincount(hub_end, minlength=ids.size)
    edges = np.flatnonzero((degree > least)[hub_end])
    if edges.size == 0:
        return
    # lexsort's last key is its first: by hub, then the keys, then the other end (ties of equal keys).
    order = edges[np.lexsort((other_end[edges], *(k[edges] for k in reversed(keys)), hub_end[edges]))]
    hub, other = hub_end[order], other_end[order]
    # Entries between the same two objects are neighbours: each one's rank is its distance from the
    # first of its run.
    first = np.r_[True, (hub[1:] != hub[:-1]) | (other[1:] != other[:-1])]
    starts = np.flatnonzero(first)
    nth = np.arange(order.size) - np.repeat(starts, np.diff(np.r_[starts, order.size]))
    bounds = np.flatnonzero(np.r_[True, hub[1:] != hub[:-1]])
    for lo, hi in zip(bounds.tolist(), [*bounds[1:].tolist(), order.size]):
        yield {"id": int(ids[hub[lo]]), "order": ids[other[lo:hi]].tolist(), "nth": nth[lo:hi].tolist()}


def write_hub_orders(database: Database, sid: int, orders: dict[str, list[dict[str, Any]]]) -> None:
    """Write :func:`hub_orders` on the snapshot's objects (written before: the rows match them)."""
    for direction, statement in (("in", SET_HOLDERS), ("out", SET_HELD)):
        for rows in _batches(orders[direction]):
            database.write(statement, {"sid": sid, "rows": rows})


def _batches(rows: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    size = 0
    for row in rows:
        batch.append(row)
        size += len(row["order"])
        if size >= ENTRIES_PER_WRITE:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch
