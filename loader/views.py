"""Views over an analysis that rules make useful: lifelines and heapdomstats.

- **Lifelines** (MemorySnapshotAnalyzer's ``backtrace 'lifelines``, MAT's "merge shortest paths
  to GC roots"): the first retainer paths of many objects of one type, merged into one tree from
  the root down, with how many of the objects each step leads to. Thousands of objects held the
  same few ways read as a few branches.
- **heapdomstats** (MemorySnapshotAnalyzer's command of that name): per type, the objects that
  "float up" to the top of the dominator tree, their immediate dominator being the root or a
  synthetic root group such as ``(GC roots)``: no object below the root owns them. Under ``owns``
  rules this is the list of what no rule owns yet.

Both are computed here from a file's analysis, and by :mod:`heapdb.queries` from what a load
stored (``path_sig`` and ``:PathGroup.hops``, ``dom``); the records and renderers are shared, so
the two answers are equal (``tests/test_views_stored.py``). ``docs/analysis.md`` has the semantics.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from heapdb.loader.graph import HeapGraph
from heapdb.loader.pathtree import build_tree
from heapdb.units import human_bytes, short_name

if TYPE_CHECKING:  # the analysis imports its numba kernels; the stored views never call them
    from heapdb.loader.analysis import Analysis

LABEL_WIDTH = 100  # characters of one step's label in the text view

# ------------------------------------------------------------------------------------ lifelines


@dataclass(frozen=True)
class LifelineStep:
    """A run of path hops in the merged tree, with what passes through it.

    ``path`` is one hop, or several when the tree does not branch between them (a chain is one
    step, so deep paths make shallow trees). ``objects`` counts the selected objects whose first
    path runs through the step's last hop or ends there, ``ending`` those that end there;
    ``retained_size`` adds up the retained sizes of those objects whose immediate dominator is not a
    selected object too (a list's nodes are counted in its head's size, not again).
    ``more_*`` sum up the branches that ``limit`` left out.
    """

    path: tuple[str, ...]
    objects: int
    retained_size: int
    ending: int
    children: tuple[LifelineStep, ...]
    more_steps: int = 0
    more_objects: int = 0
    more_retained_size: int = 0


@dataclass(frozen=True)
class Lifelines:
    """The merged first paths of the objects of ``type`` whose name contains ``name_contains``."""

    source: str  # the snapshot file or tag
    type: str
    name_contains: str
    objects: int
    retained_size: int
    paths: int  # distinct first paths among the objects
    limit: int  # branches shown per step
    steps: tuple[LifelineStep, ...]  # the top of the tree: the root's step, unless nothing matched


LifelineRow = tuple[Sequence[str], int, int]  # (hops of a first path, retained bytes, objects)


def lifeline_rows(graph: HeapGraph, result: Analysis, type_name: str, name_contains: str = "") -> list[LifelineRow]:
    """One row per distinct first path of the selected objects: its hops, their retained bytes
    (counted as :class:`LifelineStep` says) and how many objects.

    Selected are the objects ``result``'s root reaches whose type is ``type_name`` and whose name
    contains ``name_contains``, the root and synthetic objects (its root groups) aside. First paths are taken over ``result.retaining`` from ``result.root``
    (so under rules and under ``--root`` too), exactly as a load stores them.
    """
    # Here, not at the top: the paths' kernels import numba, which the questions merging stored rows
    # (lifelines) never call.
    from heapdb.loader.paths import first_paths, path_hops

    wanted = [i for i, s in enumerate(graph.strings) if s == type_name]
    selected = result.reachable & np.isin(graph.type, wanted) & ~graph.synthetic_nodes()
    selected[result.root] = False
    if name_contains:
        for i in np.flatnonzero(selected):
            selected[i] = name_contains in graph.node_name(int(i))
    if not selected.any():
        return []
    rooted = graph if result.root == graph.root else dataclasses.replace(graph, root=result.root)
    paths = first_paths(rooted, result.retaining, result.transient)
    idom = result.idom
    head = selected.copy()
    dominated = selected & (idom >= 0)
    head[dominated] = ~selected[idom[dominated]]
    members = np.flatnonzero(selected)
    sigs, first, group = np.unique(paths.signature[members], return_index=True, return_inverse=True)
    counts = np.bincount(group, minlength=len(sigs))
    sizes = np.zeros(len(sigs), dtype=np.int64)  # int64: bincount's float weights would round large sums
    np.add.at(sizes, group, np.where(head[members], result.retained_size[members], 0))
    synthetic = rooted.synthetic_nodes()
    return [
        (path_hops(rooted, paths, int(members[f]), synthetic), int(size), int(count))
        for f, size, count in zip(first.tolist(), sizes.tolist(), counts.tolist(), strict=True)
    ]


def lifelines(
    rows: Iterable[LifelineRow], *, source: str, type_name: str, name_contains: str = "", limit: int = 10
) -> Lifelines:
    """The rows of :func:`lifeline_rows` (or the stored query ``lifelines``) merged from the root
    down, each step's branches most objects first, at most ``limit`` of them."""
    rows = list(rows)
    tree = build_tree(rows, name="")
    steps: dict[int, LifelineStep] = {}
    for _, node in reversed(tree.walk()):  # children before parents
        ranked = sorted(node.children.values(), key=lambda c: (-c.total_count, -c.total_size, c.name))
        shown, left = ranked[:limit], ranked[limit:]
        children = tuple(steps.pop(id(c)) for c in shown)
        for c in left:
            steps.pop(id(c))
        step = LifelineStep(
            path=(node.name,),
            objects=node.total_count,
            retained_size=node.total_size,
            ending=node.count,
            children=children,
            more_steps=len(left),
            more_objects=sum(c.total_count for c in left),
            more_retained_size=sum(c.total_size for c in left),
        )
        if len(children) == 1 and not left and node.count == 0 and children[0].objects == node.total_count:
            # No branching and nothing ending here: fold the only child into this step.
            only = children[0]
            step = dataclasses.replace(only, path=(node.name, *only.path))
        steps[id(node)] = step
    top = steps[id(tree)]
    return Lifelines(
        source=source,
        type=type_name,
        name_contains=name_contains,
        objects=tree.total_count,
        retained_size=tree.total_size,
        paths=len(rows),
        limit=limit,
        # The tree's own unnamed top is not a step; the root's is.
        steps=(dataclasses.replace(top, path=top.path[1:]),) if top.path[1:] else top.children,
    )


def lifelines_text(answer: Lifelines) -> str:
    """The merged paths as an indented tree, one hop a line, figures on a step's first line."""
    selection = answer.type + (f" named *{answer.name_contains}*" if answer.name_contains else "")
    lines = [
        f"Lifelines of {answer.objects:,} {short_name(selection, LABEL_WIDTH)} objects in {answer.source} "
        f"(retaining {human_bytes(answer.retained_size)}; {answer.paths:,} distinct first paths)",
    ]
    if not answer.objects:
        return lines[0] + "\n  no reachable object of that type"
    lines.append(f"  {'objects':>9}  {'retained':>10}  path")
    stack: list[tuple[int, LifelineStep | tuple[int, int, int]]] = [(0, s) for s in reversed(answer.steps)]
    while stack:
        depth, item = stack.pop()
        pad = "  " * depth
        if isinstance(item, tuple):
            steps, objects, size = item
            lines.append(f"  {'':>9}  {'':>10}  {pad}… {steps:,} more: {objects:,} objects, {human_bytes(size)}")
            continue
        last = len(item.path) - 1
        for k, hop in enumerate(item.path):
            figures = f"{item.objects:>9,}  {human_bytes(item.retained_size):>10}" if k == 0 else f"{'':>9}  {'':>10}"
            # Objects end at the step's last hop; said only where others go on below it.
            ending = f"  ({item.ending:,} end here)" if k == last and item.ending and item.children else ""
            lines.append(f"  {figures}  {pad}{short_name(hop, LABEL_WIDTH)}{ending}")
        if item.more_steps:
            stack.append((depth + 1, (item.more_steps, item.more_objects, item.more_retained_size)))
        stack.extend((depth + 1, c) for c in reversed(item.children))
    return "\n".join(lines)


# ---------------------------------------------------------------------------------- heapdomstats


@dataclass(frozen=True)
class FloatingType:
    """The objects of one type whose immediate dominator is the root or a root group."""

    type: str
    objects: int
    self_size: int
    retained_size: int  # their retained sizes added up: no one of them dominates another
    max_retained_size: int


@dataclass(frozen=True)
class HeapDomStats:
    """What floats up to the top of the dominator tree, per type, most retained first."""

    source: str
    reachable_size: int  # the whole reachable heap, for scale
    objects: int  # floating objects of every type
    retained_size: int
    types: int  # how many types float
    rows: tuple[FloatingType, ...]  # the first ``limit`` types


def root_layer(graph: HeapGraph, result: Analysis) -> np.ndarray:
    """bool[n]: ``result``'s root and its root groups: the synthetic objects whose immediate
    dominator is the root or, in turn, a root group (``(GC roots)``, ``(Stack roots)`` below it)."""
    layer = np.zeros(graph.node_count, dtype=np.bool_)
    layer[result.root] = True
    candidates = np.flatnonzero(graph.synthetic_nodes() & result.reachable & (result.idom >= 0))
    # A dominator lies on every path, so it is nearer the root: by distance, parents come first.
    for v in candidates[np.argsort(result.distance[candidates], kind="stable")].tolist():
        layer[v] = layer[result.idom[v]]
    return layer


def floating(graph: HeapGraph, result: Analysis) -> np.ndarray:
    """bool[n]: the reachable objects outside the :func:`root_layer` whose immediate dominator is in
    it: what no object below the root owns. No one of them dominates another."""
    layer = root_layer(graph, result)
    idom = result.idom
    has_dom = idom >= 0
    top = np.zeros(graph.node_count, dtype=np.bool_)
    top[has_dom] = layer[idom[has_dom]]
    top &= result.reachable & ~layer
    return top


def heapdomstats_rows(graph: HeapGraph, result: Analysis) -> list[FloatingType]:
    """Every floating type (:func:`floating`), most retained first, ties by name."""
    members = np.flatnonzero(floating(graph, result))
    names = np.array(graph.strings, dtype=object)[graph.type[members]] if members.size else np.zeros(0, dtype=object)
    rows: dict[str, list[int]] = {}
    for name, node in zip(names.tolist(), members.tolist(), strict=True):
        row = rows.setdefault(name, [0, 0, 0, 0])
        size = int(result.retained_size[node])
        row[0] += 1
        row[1] += int(result.self_size[node])
        row[2] += size
        row[3] = max(row[3], size)
    return rank_floating(FloatingType(t, *figures) for t, figures in rows.items())


def rank_floating(rows: Iterable[FloatingType]) -> list[FloatingType]:
    return sorted(rows, key=lambda r: (-r.retained_size, r.type))


def heapdomstats(rows: Sequence[FloatingType], *, source: str, reachable_size: int, limit: int) -> HeapDomStats:
    """All floating types summed up, the first ``limit`` of ``rows`` (ranked) listed."""
    return HeapDomStats(
        source=source,
        reachable_size=reachable_size,
        objects=sum(r.objects for r in rows),
        retained_size=sum(r.retained_size for r in rows),
        types=len(rows),
        rows=tuple(rows[:limit]),
    )


def heapdomstats_text(answer: HeapDomStats) -> str:
    share = answer.retained_size / answer.reachable_size if answer.reachable_size else 0.0
    lines = [
        f"Floating to the root in {answer.source}: {answer.objects:,} objects of {answer.types:,} types retain "
        f"{human_bytes(answer.retained_size)} ({share:.1%} of {human_bytes(answer.reachable_size)} reachable)",
        f"  {'retained':>10}  {'self':>10}  {'objects':>9}  {'largest':>10}  type",
    ]
    for r in answer.rows:
        lines.append(
            f"  {human_bytes(r.retained_size):>10}  {human_bytes(r.self_size):>10}  {r.objects:>9,}  "
            f"{human_bytes(r.max_retained_size):>10}  {short_name(r.type, LABEL_WIDTH)}"
        )
    if answer.types > len(answer.rows):
        lines.append(f"  … {answer.types - len(answer.rows):,} more types")
    return "\n".join(lines)


__all__ = [
    "FloatingType",
    "HeapDomStats",
    "LifelineStep",
    "Lifelines",
    "floating",
    "root_layer",
    "heapdomstats",
    "heapdomstats_rows",
    "heapdomstats_text",
    "lifeline_rows",
    "lifelines",
    "lifelines_text",
]
