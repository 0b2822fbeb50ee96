"""Graphs as other tools see them, for comparing heapdb's figures with theirs (in the hprof oracle
test and in ``benchmarks/hprof.py``)."""

from __future__ import annotations

import dataclasses

import numpy as np

from heapdb.loader.graph import EdgeKind, HeapGraph


def visualvm_view(g: HeapGraph) -> HeapGraph:
    """The graph as VisualVM's heap library walks it: an instance's fields and array elements, and a
    class object's static fields, but none of heapdb's class-structure edges (object -> its class,
    class -> super class, class loader, signers, protection domain, constant pool)."""
    keep = g.edge_kind != int(EdgeKind.INTERNAL)
    counts = np.bincount(g.edge_sources()[keep], minlength=g.node_count)
    start = np.zeros(g.node_count + 1, dtype=np.int64)
    np.cumsum(counts, out=start[1:])
    return dataclasses.replace(
        g, edge_start=start, edge_to=g.edge_to[keep], edge_kind=g.edge_kind[keep], edge_name=g.edge_name[keep]
    )
