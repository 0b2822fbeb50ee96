"""Detached DOM: the browser's DOM objects no document holds any more, and what keeps them alive.

Which objects count is memlab's ``detached-DOM`` analysis (``memlab analyze detached-DOM``), so that
its answers are ours object for object (``tests/test_inspections_dom.py`` checks them):

- an object is detached when its detachedness, after Chrome DevTools' propagation (done by the V8
  reader: a native object reachable from a detached one over other native objects is detached
  too), says so; in files without the field, when its name starts with ``Detached ``;
- React's ``FiberNode`` objects are left out (they are the unmounted-fiber inspection's).

The report adds what memlab leaves to its reader:

- **trees**: a detached object no other detached object dominates is the root of a detached tree
  (everything it alone keeps alive is freed with it). The trees' retained sizes summed are what all
  detached DOM retains, each byte counted once, as DevTools sums a constructor's retained size;
- **groups**: trees held the same way, by their first retainer path's signature
  (:mod:`heapdb.loader.paths`: ``closedPanels[3]`` and ``closedPanels[4]`` are one path), with the
  path, so that one fix in the holder frees the whole group;
- **attached objects inside**: DOM objects still attached to a document that a detached tree alone
  keeps alive, the part of the subtree that is not detached.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from heapdb.loader.formats import named
from heapdb.loader.graph import Detachedness, HeapGraph
from heapdb.loader.inspections.common import LARGEST, ObjectRow, largest, tail
from heapdb.units import human_bytes, short_name

if TYPE_CHECKING:
    from heapdb.loader.analysis import Analysis
    from heapdb.loader.paths import FirstPaths

DETACHED_PREFIX = "Detached "  # how Chrome names a detached native object, where no field says so
LEFT_OUT = frozenset({"FiberNode", "Detached FiberNode"})  # React's fibers: memlab's rule
LARGEST_SHOWN = 10  # of which the text report prints (--json has them all)
PATH_CHARS = 100  # of a holder path the text report prints: its end, nearest the detached tree
KEPT = 100  # groups a load stores, largest retained first: the stored question's largest limit
UNREACHABLE_PATH = "(not reachable from the roots)"


@dataclass(frozen=True)
class DetachedGroup:
    """Detached trees held the same way: by the same first retainer path."""

    signature: int  # the trees' first-path signature (as on :PathGroup); 0: not reachable
    path: str  # that path, root first (hops joined by " / ")
    type: str  # the type of the example tree's root
    trees: int  # detached trees held this way
    objects: int  # detached objects in them
    attached: int  # DOM objects still attached to a document that these trees alone keep alive
    retained_size: int  # the trees' retained sizes summed
    example_id: int  # the largest tree's root: ask `why` about it


@dataclass(frozen=True)
class DetachedDom:
    """The detached DOM of one snapshot: totals, groups by holder path, and the largest objects."""

    source: str
    objects: int  # detached objects (memlab's count)
    self_size: int  # their self sizes summed
    retained_size: int  # what the detached trees retain, each byte once
    trees: int  # detached objects no other detached object dominates
    paths: int  # distinct paths holding them (the groups, before any limit)
    groups: tuple[DetachedGroup, ...]
    largest: tuple[ObjectRow, ...]  # memlab's list: the LARGEST largest retained, lowest id on ties


# The figures of DetachedDom over all detached objects (a load stores them on the :Snapshot).
DOM_TOTALS = ("objects", "self_size", "retained_size", "trees", "paths")


def shows_dom(format_name: str | None) -> bool:
    """Whether snapshots of ``format_name`` can hold a browser's DOM."""
    declared = named(format_name)
    return declared is not None and declared.dom


def detached(graph: HeapGraph) -> np.ndarray | None:
    """bool[n]: the detached DOM objects, as memlab counts them; None where the format has no DOM."""
    if not shows_dom(graph.meta.get("format")):
        return None
    if graph.detachedness is not None:
        found = graph.detachedness == Detachedness.DETACHED
    else:
        prefixed = np.array([s.startswith(DETACHED_PREFIX) for s in graph.strings], dtype=np.bool_)
        found = prefixed[graph.name]
    left_out = np.array([s in LEFT_OUT for s in graph.strings], dtype=np.bool_)
    return found & ~left_out[graph.name]


def detached_dom(
    graph: HeapGraph, result: Analysis, paths: FirstPaths, *, source: str, limit: int = KEPT
) -> DetachedDom | None:
    """The detached DOM of ``graph``: its ``limit`` largest groups and :data:`LARGEST` largest
    objects; None where the format has no DOM. ``paths`` are the first paths of ``result``."""
    mask = detached(graph)
    if mask is None:
        return None
    # numba's kernels load only when a graph is inspected
    from heapdb.loader.analysis import outermost_members, spread_down
    from heapdb.loader.paths import path_hops

    if not mask.any():  # nothing to group: the dominator-tree passes below are skipped
        return DetachedDom(source, 0, 0, 0, 0, 0, (), ())
    idom = result.idom
    roots = np.flatnonzero(outermost_members(idom, result.root, np.zeros(graph.node_count, dtype=np.int64), mask, 1))
    seed = np.full(graph.node_count, -1, dtype=np.int32)
    seed[roots] = np.arange(roots.size, dtype=np.int32)
    tree = spread_down(result, seed)  # each object's detached tree (its number in ``roots``), -1: none
    attached = (
        graph.detachedness == Detachedness.ATTACHED
        if graph.detachedness is not None
        else np.zeros(graph.node_count, dtype=np.bool_)
    )
    per_tree_objects = np.bincount(tree[mask & (tree >= 0)], minlength=roots.size)
    per_tree_attached = np.bincount(tree[attached & (tree >= 0)], minlength=roots.size)

    # Trees by first-path signature; within a group, the largest tree (lowest id on ties) first.
    signature = paths.signature[roots]
    order = np.lexsort((graph.ids[roots], -result.retained_size[roots], signature))
    starts = np.flatnonzero(np.r_[True, np.diff(signature[order]) != 0]) if order.size else order
    sizes = np.add.reduceat(result.retained_size[roots][order], starts) if order.size else order
    examples = roots[order[starts]]
    ranked = np.lexsort((graph.ids[examples], -sizes))[:limit]
    synthetic = graph.synthetic_nodes()
    groups = []
    for g in ranked.tolist():
        members = order[starts[g] : starts[g + 1] if g + 1 < starts.size else order.size]
        example = int(examples[g])
        hops = path_hops(graph, paths, example, synthetic)
        groups.append(
            DetachedGroup(
                signature=int(signature[members[0]]),
                path=" / ".join(hops) if hops else UNREACHABLE_PATH,
                type=graph.type_name(example),
                trees=int(members.size),
                objects=int(per_tree_objects[members].sum()),
                attached=int(per_tree_attached[members].sum()),
                retained_size=int(sizes[g]),
                example_id=int(graph.ids[example]),
            )
        )
    return DetachedDom(
        source=source,
        objects=int(np.count_nonzero(mask)),
        self_size=int(graph.self_size[mask].sum()),
        retained_size=int(result.retained_size[roots].sum()),
        trees=int(roots.size),
        paths=int(starts.size),
        groups=tuple(groups),
        largest=largest(graph, result, mask, LARGEST),
    )


def detached_dom_text(answer: DetachedDom) -> str:
    """The report as ``heapdb analyze --dom`` and ``heapdb dom`` print it."""
    if not answer.objects:
        return f"Detached DOM in {answer.source}: none (no DOM object is detached from its document)"
    lines = [
        f"Detached DOM in {answer.source}: {answer.objects:,} objects ({human_bytes(answer.self_size)} self) in "
        f"{answer.trees:,} detached trees retaining {human_bytes(answer.retained_size)}, held by "
        f"{answer.paths:,} paths",
        f"  {'retained':>10}  {'trees':>6}  {'objects':>8}  {'attached':>8}  {'example':>10}  held by",
    ]
    for r in answer.groups:
        lines.append(
            f"  {human_bytes(r.retained_size):>10}  {r.trees:>6,}  {r.objects:>8,}  {r.attached:>8,}  "
            f"{'@' + str(r.example_id):>10}  {tail(r.path, PATH_CHARS)}"
        )
    if answer.paths > len(answer.groups):
        lines.append(f"  … {answer.paths - len(answer.groups):,} more paths")
    if answer.largest:
        lines.append(
            f"  The largest detached objects ({min(LARGEST_SHOWN, len(answer.largest))} of {answer.objects:,}):"
        )
        lines.append(f"  {'retained':>10}  {'self':>10}  {'id':>10}  type")
        for o in answer.largest[:LARGEST_SHOWN]:
            lines.append(
                f"  {human_bytes(o.retained_size):>10}  {human_bytes(o.self_size):>10}  {'@' + str(o.id):>10}  "
                f"{short_name(o.type, 60)}"
            )
    return "\n".join(lines)
