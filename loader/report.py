"""Reports on one snapshot file, computed in process without a database: what ``heapdb analyze`` and
``heapdb inspect`` show.

Each is a frozen record; ``as_dict()`` gives the plain data of their ``--json`` output, in the
same key order, and the CLI only prints them.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from heapdb.loader.analysis import Analysis
from heapdb.loader.graph import HeapGraph
from heapdb.units import shorten

# Graph meta keys that describe the file's format rather than the heap; the summary lists them apart.
_FORMAT_KEYS = ("format", "format_version")


@dataclass(frozen=True)
class ObjectRow:
    """One object as the analysis report lists it."""

    id: int
    type: str
    name: str  # shortened: a string's contents can be megabytes
    self_size: int
    retained_size: int
    retained_count: int
    distance: int
    location: str | None = None  # its script position, where the snapshot records it
    allocated_at: str | None = None  # its allocation stack, innermost first, where recorded

    @classmethod
    def of(cls, graph: HeapGraph, result: Analysis, node: int) -> ObjectRow:
        return cls(
            id=int(graph.ids[node]),
            type=graph.type_name(node),
            name=shorten(graph.node_name(node)),
            self_size=int(result.self_size[node]),
            retained_size=int(result.retained_size[node]),
            retained_count=int(result.retained_count[node]),
            distance=int(result.distance[node]),
            location=graph.locations.text(graph.strings, node) if graph.locations is not None else None,
            allocated_at=graph.allocations.text(graph.strings, node) if graph.allocations is not None else None,
        )


@dataclass(frozen=True)
class AnalysisReport:
    """Dominators and retained sizes of one snapshot, summed up: ``heapdb analyze``."""

    file: str
    format: Any  # the graph's meta["format"], None when the reader did not say
    semantics: str
    objects: int
    references: int
    total_self_size: int
    reachable_objects: int
    reachable_size: int
    unreachable_objects: int
    root: ObjectRow
    roots: tuple[ObjectRow, ...]  # the root kinds, largest first
    top_retainers: tuple[ObjectRow, ...]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def root_children(graph: HeapGraph, result: Analysis) -> list[int]:
    """The objects the root holds directly and dominates (its root kinds, e.g. ``(GC roots)``), largest first."""
    root = result.root
    children = np.unique(graph.edge_to[graph.edge_start[root] : graph.edge_start[root + 1]])
    held = children[(result.idom[children] == root) & result.reachable[children]]
    return held[np.argsort(-result.retained_size[held], kind="stable")].tolist()


def analysis_report(
    path: str, graph: HeapGraph, result: Analysis, top: int, *, looked_through: np.ndarray | None = None
) -> AnalysisReport:
    """The report of ``heapdb analyze`` on ``graph`` (read from ``path``), listing ``top`` objects.

    ``looked_through`` (bool[n]) marks the runtime's bookkeeping objects the top retainers look
    through to the program's (a rule set's ``internal`` rules), as a load's top ranks do.
    """
    # Synthetic nodes are the snapshot's root bookkeeping; they would top every list.
    synthetic = graph.synthetic_nodes()
    excluded = synthetic if looked_through is None else synthetic | looked_through
    return AnalysisReport(
        file=path,
        format=graph.meta.get("format"),
        semantics=result.semantics.value,
        objects=graph.node_count,
        references=graph.edge_count,
        total_self_size=int(result.self_size.sum()),
        reachable_objects=graph.node_count - result.unreachable_count,
        reachable_size=result.reachable_size,
        unreachable_objects=result.unreachable_count,
        root=ObjectRow.of(graph, result, result.root),
        roots=tuple(ObjectRow.of(graph, result, i) for i in root_children(graph, result)[:top]),
        top_retainers=tuple(ObjectRow.of(graph, result, int(i)) for i in result.top_retainers(top, exclude=excluded)),
    )


@dataclass(frozen=True)
class Counts:
    nodes: int
    edges: int
    strings: int
    types: int
    self_size: int


@dataclass(frozen=True)
class TypeRow:
    type: str
    count: int
    self_size: int


@dataclass(frozen=True)
class RootRow:
    name: str  # the root node's name, or the reference's when the node has none
    type: str
    references: int


@dataclass(frozen=True)
class FileSummary:
    """What a snapshot file holds, without analysing it: ``heapdb inspect``."""

    file: str
    bytes: int
    format: Any
    version: Any  # the graph's meta["format_version"], None when the format has none
    metadata: dict[str, Any]
    counts: Counts
    top_types_by_count: tuple[TypeRow, ...]
    top_types_by_self_size: tuple[TypeRow, ...]
    roots: tuple[RootRow, ...]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def file_summary(path: str | os.PathLike[str], format_name: str, graph: HeapGraph, top: int) -> FileSummary:
    """The summary of ``graph``, read from ``path`` by the ``format_name`` reader, listing ``top`` types."""
    strings = len(graph.strings)
    count = np.bincount(graph.type, minlength=strings)
    size = np.zeros(strings, dtype=np.int64)
    np.add.at(size, graph.type, graph.self_size)

    def ranking(values: np.ndarray) -> tuple[TypeRow, ...]:
        used = np.flatnonzero(count)
        best = used[np.lexsort((-count[used], -values[used]))][:top]
        return tuple(TypeRow(graph.strings[t], int(count[t]), int(size[t])) for t in best)

    roots = []
    for e in graph.out_edges(graph.root):
        node = int(graph.edge_to[e])
        roots.append(
            RootRow(graph.node_name(node) or graph.edge_label(e), graph.type_name(node), len(graph.out_edges(node)))
        )
    return FileSummary(
        file=str(path),
        bytes=os.path.getsize(path),
        format=graph.meta.get("format", format_name),
        version=graph.meta.get("format_version"),
        metadata={k: v for k, v in graph.meta.items() if k not in _FORMAT_KEYS},
        counts=Counts(
            nodes=graph.node_count,
            edges=graph.edge_count,
            strings=strings,
            types=int(np.count_nonzero(count)),
            self_size=int(graph.self_size.sum()),
        ),
        top_types_by_count=ranking(count),
        top_types_by_self_size=ranking(size),
        roots=tuple(roots),
    )
