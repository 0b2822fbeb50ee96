"""What several inspections share: a listed object, the largest of a set, the first reference of a
given name, and a path's end for a line of text."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from heapdb.loader.graph import HeapGraph
from heapdb.units import ELLIPSIS

if TYPE_CHECKING:
    from heapdb.loader.analysis import Analysis

LARGEST = 50  # objects an inspection lists, largest retained first: memlab's lists


@dataclass(frozen=True)
class ObjectRow:
    """One object an inspection lists."""

    id: int
    type: str
    self_size: int
    retained_size: int


def largest(graph: HeapGraph, result: Analysis, mask: np.ndarray, count: int = LARGEST) -> tuple[ObjectRow, ...]:
    """The ``count`` objects ``mask`` marks that retain most, lowest id on ties."""
    from heapdb.loader.analysis.ranking import largest_first_of

    return tuple(
        ObjectRow(
            id=int(graph.ids[v]),
            type=graph.type_name(int(v)),
            self_size=int(graph.self_size[v]),
            retained_size=int(result.retained_size[v]),
        )
        for v in largest_first_of(result.retained_size, graph.ids, mask, count).tolist()
    )


def string_indexes(graph: HeapGraph, names: Iterable[str]) -> dict[str, np.ndarray]:
    """Where each of ``names`` stands in the graph's string table (one pass over it)."""
    found: dict[str, list[int]] = {name: [] for name in names}
    for i, s in enumerate(graph.strings):
        if s in found:
            found[s].append(i)
    return {name: np.array(at, dtype=np.int64) for name, at in found.items()}


def first_targets(
    graph: HeapGraph, sources: np.ndarray, indexes: np.ndarray, edges: np.ndarray | None = None
) -> np.ndarray:
    """int32[n]: for each of ``sources``, the target of its first reference named by one of the
    string ``indexes`` (among the references ``edges`` marks, default all named ones); -1 elsewhere."""
    from heapdb.loader.graph import NUMERIC_NAME_KINDS
    from heapdb.loader.inspections import kernels

    if edges is None:
        edges = ~np.isin(graph.edge_kind, np.array(sorted(NUMERIC_NAME_KINDS), dtype=graph.edge_kind.dtype))
    if not sources.size or not indexes.size:
        return np.full(graph.node_count, -1, dtype=np.int32)
    found: np.ndarray = kernels.first_edge_named(
        graph.edge_start, graph.edge_to, graph.edge_name, edges, sources, indexes
    )
    return found


def tail(text: str, chars: int) -> str:
    """``text``'s last ``chars`` characters, marked where cut: a holder path's end names the holder."""
    return text if len(text) <= chars else ELLIPSIS + text[-(chars - len(ELLIPSIS)) :]
