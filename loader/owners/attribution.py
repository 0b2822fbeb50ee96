"""Who owns the memory: each object's owner (its package, file, category...), worked out without rules.

The rule is the Dart SDK's (``v8_profile.dart``'s owners), put in terms of the dominator tree:

1. **Program structure names some objects' owners.** Each runtime says it its own way
   (:mod:`heapdb.loader.owners.sources`): a V8 closure's or constructor's script, and the npm
   package that script is in; a Java instance's class's package and class loader; a Luau object's
   memory category; a Python object's module; a .NET class's namespace; a Dart library. A
   ``[[bucket]]`` rule that selects an object names its owner first, before any of these.
2. **The rest take the owner of their nearest dominator that has one.** What only an owner's
   objects keep alive is that owner's.
3. **What no owned object dominates** goes to the one owner whose objects reach it, if one does;
   to ``@shared`` when two or more owners' objects reach it; to ``@unknown`` when none does (the
   runtime's own objects, reached from its roots alone). Its dominator-tree subtree follows it,
   owned objects inside aside.

Owners come in levels, coarse first (package, then file; category, then script), each worked out
on its own by the same rule: two files of one package share an object at the file level and not at
the package level. The first level is each object's ``owner`` in the database.

Per owner, :func:`owner_totals` counts its objects, their self sizes (which add up to the heap:
every reached object has exactly one owner per level) and its retained size, the retained sizes of
its outermost members only, so each byte counts once (the rule of ``[[bucket]]`` totals).

Memory: an int32 per object and level; the walk of step 3 another int32 per object while it runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from heapdb.loader.analysis import Analysis, Tree, group_figures, spread_down
from heapdb.loader.graph import HeapGraph
from heapdb.loader.owners.kernels import MANY, NONE, reaching_owners
from heapdb.loader.rules.summary import BucketRow

SHARED = "@shared"  # reached from two or more owners' objects, dominated by none
UNKNOWN = "@unknown"  # reached from no owner's objects: the runtime's own


@dataclass(frozen=True)
class DirectOwners:
    """One level of what program structure says: some objects' owners, before attribution."""

    level: str  # "package", "file", "category"...
    owner: np.ndarray  # int32[n], an index into ``names``; -1 for the objects it says nothing of
    names: tuple[str, ...]


@dataclass(frozen=True)
class OwnerLevel:
    """One level's answer: every counted object's owner."""

    level: str
    owner: np.ndarray  # int32[n], an index into ``names``; -1 for the root, synthetic and unreached objects
    names: tuple[str, ...]  # the owners program structure named, then SHARED and UNKNOWN


@dataclass(frozen=True)
class Owners:
    """Every level's answer for one snapshot; ``levels`` is empty for a format that names no owner."""

    levels: tuple[OwnerLevel, ...]

    def level(self, name: str) -> OwnerLevel | None:
        return next((lv for lv in self.levels if lv.level == name), None)


def owners_of(
    graph: HeapGraph,
    result: Analysis,
    *,
    rule_bucket: np.ndarray | None = None,
    rule_bucket_names: tuple[str, ...] = (),
) -> Owners:
    """Each object's owner at every level its format gives. ``rule_bucket`` (int32[n], -1 for none;
    indexes ``rule_bucket_names``) is what ``[[bucket]]`` rules chose: it names the first level's
    owner wherever it selects an object."""
    from heapdb.loader.owners.sources import direct_owners  # (sources imports this module)

    directs = list(direct_owners(graph))
    if directs and rule_bucket is not None and len(rule_bucket_names):
        directs[0] = with_rule_buckets(directs[0], rule_bucket, rule_bucket_names)
    counted = counted_objects(graph, result)
    owns = [np.where(counted, d.owner, -1).astype(np.int32) for d in directs]
    # Levels that own the same objects (a V8 file and its package) share one pass of each step.
    found: dict[int, np.ndarray] = {}
    while len(found) < len(directs):
        first = next(k for k in range(len(directs)) if k not in found)
        alike = [k for k in range(len(directs)) if k not in found and _same_owned(owns[first], owns[k])]
        names = [len(directs[k].names) for k in alike]
        for k, owner in zip(alike, attribute(graph, result, [owns[k] for k in alike], names, counted), strict=True):
            found[k] = owner
    return Owners(tuple(OwnerLevel(d.level, found[k], (*d.names, SHARED, UNKNOWN)) for k, d in enumerate(directs)))


def _same_owned(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.array_equal(a >= 0, b >= 0))


def counted_objects(graph: HeapGraph, result: Analysis) -> np.ndarray:
    """bool[n]: the objects owners are worked out for: those reached, the root and root groups aside."""
    counted = result.reachable & ~graph.synthetic_nodes()
    counted[result.root] = False
    return counted


def with_rule_buckets(direct: DirectOwners, bucket: np.ndarray, names: tuple[str, ...]) -> DirectOwners:
    """``direct`` with the rules' buckets first: a selected object's owner is its bucket."""
    merged = list(direct.names)
    position = {name: i for i, name in enumerate(merged)}
    codes = np.empty(len(names), dtype=np.int32)
    for b, name in enumerate(names):
        if name not in position:
            position[name] = len(merged)
            merged.append(name)
        codes[b] = position[name]
    owner = direct.owner.copy()
    chosen = bucket >= 0
    owner[chosen] = codes[bucket[chosen]]
    return DirectOwners(direct.level, owner, tuple(merged))


def attribute(
    graph: HeapGraph, result: Analysis, owns: list[np.ndarray], names: list[int], counted: np.ndarray
) -> list[np.ndarray]:
    """Levels' owners by the module's rule, from what program structure named (``owns``: int32[n]
    per level, -1 for none, every level owning the same objects; ``names``: how many owners each
    names, so that SHARED and UNKNOWN follow them), for the ``counted`` objects
    (:func:`counted_objects`). Each step runs once for all the levels: the nearest owned dominator
    is a node, whatever the level."""
    n = graph.node_count
    node = np.arange(n, dtype=np.int32)
    owned = owns[0] >= 0
    nearest = spread_down(result, np.where(owned, node, -1))  # each object's nearest owned dominator
    orphan = counted & (nearest < 0)
    seeds = [own.copy() for own in owns]
    if orphan.any():
        # The tops of the subtrees no owned object dominates: their dominator is the root or a root group.
        parent = result.idom[orphan]
        top = np.zeros(n, dtype=bool)
        top[np.flatnonzero(orphan)[(parent < 0) | ~counted[np.maximum(parent, 0)]]] = True
        reach = reaching_owners(graph.edge_start, graph.edge_to, result.retaining, np.stack(owns, axis=1))
        for seed, label, count in zip(seeds, reach.T, names, strict=True):
            found = label[top]
            seed[top] = np.where(found == MANY, count, np.where(found == NONE, count + 1, found))
        nearest = spread_down(result, np.where(owned | top, node, -1))
    reached = counted & (nearest >= 0)
    return [np.where(reached, seed[np.maximum(nearest, 0)], -1).astype(np.int32) for seed in seeds]


def owner_totals(result: Analysis, level: OwnerLevel, tree: Tree | None = None) -> tuple[BucketRow, ...]:
    """Per owner of ``level`` with a reached object: its objects, self size and retained size (its
    outermost members', each byte once) and its largest member's retained size, largest retained
    first. ``tree``: the dominator tree's children (:func:`~heapdb.loader.analysis.dominator_tree`), when already at hand."""
    objects, own, retained, best = group_figures(result, level.owner, len(level.names), tree)
    rows = [
        BucketRow(level.names[k], int(objects[k]), int(own[k]), int(retained[k]), int(result.retained_size[best[k]]))
        for k in np.flatnonzero(objects).tolist()
    ]
    rows.sort(key=lambda r: (-r.retained_size, r.name))
    return tuple(rows)
