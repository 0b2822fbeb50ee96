"""V8's collections for the fill inspection (:mod:`.fill`): Maps and Sets by their ordered hash
tables, Arrays by their element stores. What a V8 snapshot shows of them, and what not, is in
docs/analysis.md ("Empty and low-fill collections")."""

from __future__ import annotations

import numpy as np

from heapdb.loader.graph import EdgeKind, HeapGraph
from heapdb.loader.inspections.common import first_targets, string_indexes
from heapdb.loader.inspections.fill import Measured, element_counts

V8_HASHED = {"Map": 3, "Set": 2}  # V8's ordered hash tables: tagged slots per entry
V8_LISTS = "Array"
V8_OBJECT_KIND = "object"
V8_TABLE = "table"
V8_ELEMENTS = "elements"
# An ordered hash table is a fixed array: 2 header slots (its map, its length), then the number of
# entries, of deleted entries and of buckets, then the buckets (half the capacity), then the entries.
V8_ARRAY_HEADER = 2
V8_TABLE_HEADER = 3
V8_WORDS = (8, 4)  # a tagged slot's bytes: 8 in Node, 4 under pointer compression (Chrome)


def v8_collections(graph: HeapGraph, reachable: np.ndarray) -> Measured:
    """V8's Maps, Sets and Arrays the roots reach, measured (see :mod:`.fill`'s docstring)."""
    at = string_indexes(graph, (*V8_HASHED, V8_LISTS, V8_TABLE, V8_ELEMENTS))
    internal = graph.edge_kind == np.uint8(EdgeKind.INTERNAL)
    # Objects only: the constructor closures and the strings named "Map" are no collections.
    objects = np.array([k == V8_OBJECT_KIND for k in graph.node_kinds], dtype=np.bool_)[graph.kind] & reachable
    tables: list[tuple[np.ndarray, np.ndarray, int]] = []
    for name, per_entry in V8_HASHED.items():
        members = np.flatnonzero(np.isin(graph.name, at[name]) & objects)
        table = first_targets(graph, members, at[V8_TABLE], internal)[members].astype(np.int64)
        has = table >= 0  # the prototype objects named Map and Set hold no table: no collections
        tables.append((members[has], table[has], per_entry))
    word = _v8_word(graph, tables)
    nodes, sizes, capacities, entries = [], [], [], []
    for members, table, per_entry in tables:
        slots = graph.self_size[table] // word - V8_ARRAY_HEADER
        buckets = np.maximum(slots - V8_TABLE_HEADER, 0) // (1 + 2 * per_entry)
        size = _table_entries(graph, table, buckets, per_entry)
        nodes.append(members)
        sizes.append(size)
        capacities.append(2 * buckets)
        entries.append(np.full(members.size, per_entry * word, dtype=np.int64))
    arrays = np.flatnonzero(np.isin(graph.name, at[V8_LISTS]) & objects)
    store = first_targets(graph, arrays, at[V8_ELEMENTS], internal)[arrays].astype(np.int64)
    has = store >= 0
    capacity = np.zeros(arrays.size, dtype=np.int64)
    capacity[has] = np.maximum(graph.self_size[store[has]] // word - V8_ARRAY_HEADER, 0)
    size = element_counts(graph, arrays)
    size[has & (size == 0)] = -1  # a store referencing no object: numbers (or holes), not told apart
    nodes.append(arrays)
    sizes.append(size)
    capacities.append(capacity)
    entries.append(np.full(arrays.size, word, dtype=np.int64))
    every = np.concatenate(nodes)
    order = np.argsort(every, kind="stable")
    return Measured(
        every[order],
        np.concatenate(sizes)[order],
        np.concatenate(capacities)[order],
        np.concatenate(entries)[order],
        word,
    )


def _v8_word(graph: HeapGraph, tables: list[tuple[np.ndarray, np.ndarray, int]]) -> int:
    """The bytes of a tagged slot: the one of V8_WORDS under which most hash tables' sizes fit their
    layout (a power-of-two bucket count); 8, Node's, where none tells."""
    best, fits = V8_WORDS[0], -1
    for word in V8_WORDS:
        fit = 0
        for _members, table, per_entry in tables:
            size = graph.self_size[table]
            slots = size // word - V8_ARRAY_HEADER - V8_TABLE_HEADER
            buckets = slots // (1 + 2 * per_entry)
            whole = (size % word == 0) & (slots > 0) & (slots % (1 + 2 * per_entry) == 0)
            fit += int((whole & (buckets & (buckets - 1) == 0)).sum())
        if fit > fits:
            best, fits = word, fit
    return best


def _table_entries(graph: HeapGraph, tables: np.ndarray, buckets: np.ndarray, per_entry: int) -> np.ndarray:
    """int64[k]: per ordered hash table, its entries that reference an object (a key or a value):
    its references named by a slot index past the buckets, grouped per entry."""
    from heapdb.loader.inspections import fill_kernels

    # Each slot's name is one string whatever the table: parsed once (a marker, not a sort, finds them).
    used = np.zeros(len(graph.strings), dtype=np.bool_)
    used[graph.edge_name[_edges_of(graph, tables)]] = True
    names = np.flatnonzero(used).tolist()
    texts = [graph.strings[i] for i in names]
    slot_of = np.full(len(graph.strings), -1, dtype=np.int64)
    slot_of[names] = [int(t) if t.isdigit() else -1 for t in texts]
    found: np.ndarray = fill_kernels.table_entries(
        graph.edge_start, graph.edge_kind, graph.edge_name, slot_of, tables, buckets, np.int64(per_entry),
        np.int64(V8_TABLE_HEADER), np.uint8(EdgeKind.INTERNAL),
    )  # fmt: skip
    return found


def _edges_of(graph: HeapGraph, nodes: np.ndarray) -> np.ndarray:
    """The edge positions of ``nodes``' references, concatenated."""
    starts, ends = graph.edge_start[nodes], graph.edge_start[nodes + 1]
    counts = ends - starts
    if not counts.sum():
        return np.zeros(0, dtype=np.int64)
    offsets = np.repeat(starts - np.concatenate([[0], np.cumsum(counts)[:-1]]), counts)
    return np.arange(int(counts.sum()), dtype=np.int64) + offsets
