"""The numba kernels of the fill inspection (:mod:`.fill`): element references per array, and the
entries of V8's ordered hash tables. Imported only where a graph is inspected, so that the records
and the text of a stored answer load no numba."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def edges_of_kind(edge_start, edge_kind, nodes, kind):  # pragma: no cover - compiled
    """int64[k]: per node of ``nodes``, its references of ``kind``."""
    found = np.zeros(nodes.shape[0], dtype=np.int64)
    for i in range(nodes.shape[0]):
        v = nodes[i]
        for e in range(edge_start[v], edge_start[v + 1]):
            if edge_kind[e] == kind:
                found[i] += 1
    return found


@numba.njit(cache=True)
def table_entries(
    edge_start, edge_kind, edge_name, slot_of, tables, buckets, per_entry, header, kind
):  # pragma: no cover - compiled
    """int64[k]: per table of ``tables``, the distinct entries its ``kind`` references point from:
    a reference named by slot ``s`` (``slot_of`` its name; -1: not a slot) past the header and the
    table's ``buckets`` is in entry ``(s - header - buckets) // per_entry`` (in any order: a graph
    read back from the store orders references by name as text)."""
    found = np.zeros(tables.shape[0], dtype=np.int64)
    for i in range(tables.shape[0]):
        v = tables[i]
        first = header + buckets[i]
        entries = np.empty(edge_start[v + 1] - edge_start[v], dtype=np.int64)
        k = 0
        for e in range(edge_start[v], edge_start[v + 1]):
            if edge_kind[e] != kind:
                continue
            s = slot_of[edge_name[e]]
            if s < first:
                continue
            entries[k] = (s - first) // per_entry
            k += 1
        if k:
            entries = np.sort(entries[:k])
            found[i] = 1 + np.count_nonzero(entries[1:] != entries[:-1])
    return found
