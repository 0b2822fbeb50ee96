"""A tree of labelled paths with bytes and object counts at each, and the totals below each.

The one tree both path attributions build and both renderers draw: Luau's ``heapgraph.py`` rules
(:mod:`heapdb.loader.luau_heapgraph`) fill one as they walk a dump, :func:`build_tree` makes one from
``(path, bytes, objects)`` rows (a diff's growth by retainer path), and :mod:`heapdb.renderers.flamegraph`
draws either. Trees can be thousands of labels deep, so nothing here recurses. Whoever makes labels
from heap text bounds them (:data:`~heapdb.units.NAME_LIMIT`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(eq=False)
class PathNode:
    """One label of a path. ``size`` and ``count`` are what sits at exactly this path;
    ``total_size`` and ``total_count`` add everything below (set by :meth:`sum_totals`)."""

    name: str
    count: int = 0
    size: int = 0
    children: dict[str, PathNode] = field(default_factory=dict)
    total_count: int = 0
    total_size: int = 0

    def child(self, name: str) -> PathNode:
        """The child labelled ``name``, created empty if missing."""
        node = self.children.get(name)
        if node is None:
            node = self.children[name] = PathNode(name)
        return node

    def walk(self) -> list[tuple[tuple[str, ...], PathNode]]:
        """Every node below this one (itself first) with its path of labels from here, parents before children."""
        order: list[tuple[tuple[str, ...], PathNode]] = []
        stack: list[tuple[tuple[str, ...], PathNode]] = [((), self)]
        while stack:
            path, node = stack.pop()
            order.append((path, node))
            stack.extend(((*path, c.name), c) for c in node.children.values())
        return order

    def sum_totals(self) -> PathNode:
        """Fill ``total_size`` and ``total_count`` of this node and every node below it; returns self."""
        for _, node in reversed(self.walk()):  # children before parents
            node.total_size = node.size + sum(c.total_size for c in node.children.values())
            node.total_count = node.count + sum(c.total_count for c in node.children.values())
        return self

    def rows(self) -> list[dict[str, Any]]:
        """Every path with its own and total count and size, largest total first."""
        order = self.sum_totals().walk()
        rows: list[dict[str, Any]] = [
            {
                "path": list(path),
                "count": node.count,
                "size": node.size,
                "total_count": node.total_count,
                "total_size": node.total_size,
            }
            for path, node in order
        ]
        rows.sort(key=lambda r: (-r["total_size"], r["path"]))
        return rows


def build_tree(rows: Iterable[tuple[Sequence[str], int, int]], name: str = "all") -> PathNode:
    """A tree from ``(path, bytes, objects)`` rows, totals summed; rows sharing a path add up."""
    root = PathNode(name)
    for path, size, count in rows:
        node = root
        for label in path:
            node = node.child(label)
        node.size += size
        node.count += count
    return root.sum_totals()
