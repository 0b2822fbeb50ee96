"""Any :class:`HeapGraph` as snap.bin: :func:`write_graph`, through :class:`SnapbinWriter`'s public API."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any, BinaryIO

import numpy as np

from heapdb.loader.formats import SNAPBIN
from heapdb.loader.formats.snapbin.layout import NUMERIC_KINDS, MetaValue
from heapdb.loader.formats.snapbin.writer import SnapbinWriter
from heapdb.loader.graph import ROOT_NAME, SYNTHETIC_KIND, HeapGraph, root_kind_from_node_name


def write_graph(
    graph: HeapGraph,
    path: str | os.PathLike[str] | BinaryIO,
    *,
    compress: bool = False,
    chunk_objects: int = 65536,
    chunk_refs: int = 1 << 20,
) -> None:
    """Write any :class:`HeapGraph` as snap.bin.

    A graph with the synthetic root layout (``"(root)"`` over ``"(<kind> roots)"`` nodes, as snap.bin
    and Luau readers build it) is written as root records, so reading the file rebuilds the same
    layout: a graph read from snap.bin round-trips exactly. Any other graph (a V8 snapshot) is written
    node for node, and its root becomes the single root of kind ``"snapshot"``.
    """
    layout = _root_layout(graph)
    keep = np.ones(graph.node_count, dtype=bool)
    if layout is not None:
        keep[[graph.root, *layout]] = False
    nodes = np.flatnonzero(keep)
    with SnapbinWriter(path, compress=compress, chunk_objects=chunk_objects, chunk_refs=chunk_refs) as w:
        # The string table goes out verbatim after the implicit "" (shifted by one if the graph's table
        # does not start with ""), so string indexes survive the round trip.
        shift = 0 if graph.strings and graph.strings[0] == "" else 1
        w.append_strings(graph.strings[1 - shift :])

        # Types are (type name, node kind) pairs; only the kinds real objects use are written.
        kinds_used = np.unique(graph.kind[nodes])
        kind_string = np.zeros(len(graph.node_kinds), dtype=np.int64)
        for k in kinds_used.tolist():
            kind_string[k] = w.add_string(graph.node_kinds[k])
        pair = (graph.type[nodes].astype(np.int64) + shift) * len(graph.node_kinds) + graph.kind[nodes]
        pairs, type_index = np.unique(pair, return_inverse=True)
        for p in pairs.tolist():
            w.add_type_by_index(p // len(graph.node_kinds), int(kind_string[p % len(graph.node_kinds)]))

        # Objects go out a chunk at a time, so the temporaries (target ids as int64) stay chunk-sized.
        counts = np.diff(graph.edge_start)[nodes]
        for start, stop, _, _ in w.chunk_bounds(counts):
            part = nodes[start:stop]
            edges = _expand_ranges(graph.edge_start[part], counts[start:stop])
            edge_kind = graph.edge_kind[edges]
            edge_name = graph.edge_name[edges]
            if shift:
                edge_name = np.where(np.isin(edge_kind, NUMERIC_KINDS), edge_name, edge_name + 1)
            w.add_objects(
                graph.ids[part],
                type_index[start:stop],
                graph.self_size[part],
                counts[start:stop],
                graph.ids[graph.edge_to[edges]],
                edge_kind,
                edge_name,
                None if graph.detachedness is None else graph.detachedness[part],
            )

        empty = np.fromiter((s == "" for s in graph.strings), dtype=bool, count=len(graph.strings))
        names = graph.name[nodes]
        named = np.flatnonzero(~empty[names])
        if named.size:
            w.add_names(graph.ids[nodes][named], (names[named].astype(np.int64) + shift).astype(np.uint32))

        if layout is None:
            w.add_root("snapshot", "", int(graph.ids[graph.root]))
        else:
            for group in layout:
                kind = root_kind_from_node_name(graph.node_name(group))
                assert kind is not None  # _root_layout checked every group's name
                for e in graph.out_edges(group):
                    w.add_root(kind, graph.edge_label(e), int(graph.ids[graph.edge_to[e]]))
        w.set_metadata(_meta_for_file(graph.meta))


def _expand_ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The positions ``starts[i] .. starts[i] + counts[i]`` of every ``i``, concatenated."""
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.repeat(starts - (np.cumsum(counts) - counts), counts)
    return offsets + np.arange(total)


def _meta_for_file(meta: Mapping[str, Any]) -> dict[str, MetaValue]:
    """A graph's meta as snap.bin metadata: scalars as they are, lists and dicts as JSON text.

    Arrays are left out: they hold per-node data (a reader's extra columns), whose node order does not
    survive the synthetic root layout being rebuilt.
    """
    out: dict[str, MetaValue] = {}
    for key, value in meta.items():
        if key in ("format", "format_version") or isinstance(value, np.ndarray):
            continue
        if isinstance(value, (bool, str, float)) or (isinstance(value, int) and -(1 << 63) <= value < 1 << 63):
            out[key] = value
        elif isinstance(value, (np.integer, np.floating)):
            out[key] = value.item()
        else:
            out[key] = json.dumps(value, default=str)
    if meta.get("format") and meta.get("format") != SNAPBIN.name:
        out.setdefault("source_format", str(meta["format"]))
    return out


def _root_layout(graph: HeapGraph) -> list[int] | None:
    """The ``(<kind> roots)`` nodes under a synthetic ``(root)``, or None if ``graph`` lacks that layout."""
    root = graph.root
    if graph.node_kinds[int(graph.kind[root])] != SYNTHETIC_KIND or graph.node_name(root) != ROOT_NAME:
        return None
    groups = [int(graph.edge_to[e]) for e in graph.out_edges(root)]
    if len(set(groups)) != len(groups) or root in groups:
        return None
    in_degree = np.bincount(graph.edge_to, minlength=graph.node_count)
    if in_degree[root] != 0:
        return None
    for g in groups:
        name = graph.node_name(g)
        if (
            graph.node_kinds[int(graph.kind[g])] != SYNTHETIC_KIND
            or in_degree[g] != 1
            or root_kind_from_node_name(name) is None
        ):
            return None
    return groups
