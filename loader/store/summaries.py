"""What a load writes besides the objects themselves: per-group totals, top ranks, type listings.

:class:`LoadInput` bundles a graph with its analysis and first paths, and computes the figures a
question would otherwise sort millions of objects for: one row per first-path signature and per
type, each object's rank among the largest retainers, and per type the list of its objects that
``find`` searches (:class:`TypeListing`).

The inspections a load stores are :class:`~heapdb.loader.store.inspected.Inspections`, worked out
from the same graph and analysis once the snapshot answers (:attr:`LoadInput.inspections`).
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from functools import cached_property
from typing import Any

import numpy as np

from heapdb.loader.analysis import Analysis, LookThrough, outermost_members
from heapdb.loader.analysis.ranking import largest_first
from heapdb.loader.graph import EDGE_KIND_NAMES, NUMERIC_NAME_KINDS, HeapGraph
from heapdb.loader.inspections.leak_status import Inspectors
from heapdb.loader.owners.attribution import Owners, owners_of
from heapdb.loader.owners.table import owner_table
from heapdb.loader.paths import FirstPaths, first_paths, path_hops
from heapdb.loader.redaction import Redaction
from heapdb.loader.rules.summary import bucket_totals
from heapdb.loader.store.bulk import NULL
from heapdb.loader.store.inspected import Contents, Inspections, contents
from heapdb.loader.store.listings import DroppedReferences, TypeListing
from heapdb.units import shorten

TOP_RANKS = 1000  # how far top lists go (the API's largest limit); see LoadInput.top_ranks
# How many members a path group names, largest retained first (leaks-paths' largest `samples`).
PATH_SAMPLES = 20
# A snapshot lists its root and root groups (root_groups_property) when it has at most this many:
# suspects and heapdomstats start from them in the dominator index. Only a strange file has more;
# those questions then read every object instead.
MAX_ROOT_GROUPS = 4096
# "None" in TreeIds' columns (0 can be an object id; this cannot). It is the writer's NULL, so these
# columns go into a batch as they are and a missing parent is a missing property.
NO_OBJECT = NULL


@dataclass(frozen=True)
class TreeIds:
    """Per object, the ids of its two parents, NO_OBJECT where there is none.

    ``dom``: its immediate dominator (none for the root and the unreachable). ``via``: the holder its
    first retainer path arrives from (none for the root and the unreachable). Stored on each object,
    they let why-alive and the dominator questions walk up with one index seek per step.
    """

    dom: np.ndarray  # int64[n]
    via: np.ndarray  # int64[n]


def reference_label(g: HeapGraph, kind: int, name: int) -> tuple[str, str]:
    """A reference's stored kind and name: element indexes as text, other names from the string table."""
    label = str(name) if kind in _NUMERIC_KINDS else shorten(g.strings[name])
    return EDGE_KIND_NAMES[kind], label


_NUMERIC_KINDS = frozenset(int(k) for k in NUMERIC_NAME_KINDS)


@dataclass(frozen=True)
class LoadInput:
    """What the loader writes: the graph, its analysis, and which edges retain."""

    graph: HeapGraph
    retained_size: np.ndarray
    retained_count: np.ndarray
    distance: np.ndarray
    idom: np.ndarray
    reachable: np.ndarray
    retaining: np.ndarray  # bool[m]: the edge retains (stored as :REF), else :WEAK_REF
    paths: FirstPaths  # each object's first retainer path and its signature
    # Under rules: each object's bucket, an index into ``bucket_names`` (-1: none; stored as ``bucket``).
    bucket: np.ndarray | None = None  # int32[n]
    bucket_names: tuple[str, ...] = ()
    # Under internal rules: the objects answers look through, and each object's nearest holder that
    # is not one (stored as ``through`` and ``holder``); top ranks skip the looked-through objects.
    look_through: LookThrough | None = None
    # Under known_leak and verdict rules: each object's known leak reason and verdict note, as
    # indexes into ``notes`` (-1: none; stored as ``known_leak`` and ``verdict``).
    known_leak: np.ndarray | None = None  # int16[n]
    verdict: np.ndarray | None = None  # int16[n]
    notes: tuple[str, ...] = ()
    # Under weight rules: the references stored as :REF that do not retain under the rules (ignored,
    # weak, or outranked by an owner), as edge indices. Questions that walk :REF at question time
    # leave them out (see :meth:`dropped_references`).
    rules_dropped: np.ndarray | None = None  # int64[k]
    # What a load's inspections are worked out from, once the snapshot answers (:attr:`inspections`):
    # the analysis, and the content inspections where they were worked out before a redaction.
    analysis: Analysis | None = None
    contents: Contents | None = None
    # The lifecycle rules and known leaks the objects past their lifecycle are found by (the load's
    # rules'; None: heapdb's own, heapdb.loader.inspections.leak_status.Inspectors.of).
    lifecycle_rules: Inspectors | None = None

    @classmethod
    def from_analysis(
        cls,
        graph: HeapGraph,
        result: Analysis,
        *,
        retaining: np.ndarray | None = None,
        bucket: np.ndarray | None = None,
        bucket_names: tuple[str, ...] = (),
        look_through: LookThrough | None = None,
        known_leak: np.ndarray | None = None,
        verdict: np.ndarray | None = None,
        notes: tuple[str, ...] = (),
        redaction: Redaction | None = None,
        lifecycle_rules: Inspectors | None = None,
    ) -> LoadInput:
        """The load of ``result``. For an analysis under rules, ``retaining`` is the mask of the
        references that retain under the runtime's own rules (what :REF and :WEAK_REF record, which
        rules never change), while the first paths follow the rules (``result.retaining``, and
        ``result.transient``: what the distances followed last, first paths follow last too); the
        default is ``result.retaining`` for both.

        The inspections (:attr:`inspections`) are worked out when first asked for, except the
        duplicate strings and objects under a ``redaction``: those come from the whole contents,
        before the graph is redacted; everything else comes from the redacted graph, which is what
        the load stores."""
        found = None
        if redaction is not None:
            graph, found = contents(graph, result, redaction)
        paths = first_paths(graph, result.retaining, result.transient)
        return cls(
            graph=graph,
            retained_size=result.retained_size,
            retained_count=result.retained_count,
            distance=result.distance,
            idom=result.idom,
            reachable=result.reachable,
            retaining=result.retaining if retaining is None else retaining,
            paths=paths,
            bucket=bucket,
            bucket_names=bucket_names,
            look_through=look_through,
            known_leak=known_leak,
            verdict=verdict,
            notes=notes,
            rules_dropped=None if retaining is None else np.flatnonzero(retaining & ~result.retaining),
            analysis=result,
            contents=found,
            lifecycle_rules=lifecycle_rules,
        )

    @cached_property
    def inspections(self) -> Inspections:
        """Every inspection the load stores, worked out when first asked for: a load asks once the
        snapshot answers (loader/store/writer.py), since no first question needs them."""
        if self.analysis is None:
            return Inspections()
        return Inspections.compute(self.graph, self.analysis, self.paths, self.contents, self.lifecycle_rules)

    @cached_property
    def owners(self) -> Owners:
        """Each object's owner at every level its format gives (heapdb.loader.owners), the rules'
        buckets first; worked out with the inspections, once the snapshot answers (stored as each
        object's ``owner``, its first level, and the ``:Snapshot``'s ``owners`` table)."""
        if self.analysis is None:
            return Owners(())
        return owners_of(self.graph, self.analysis, rule_bucket=self.bucket, rule_bucket_names=self.bucket_names)

    def owners_property(self) -> dict[str, str]:
        """The ``:Snapshot`` property ``owners``: JSON text of every level's rows
        (:class:`~heapdb.loader.owners.table.OwnerTable`); nothing for an analysis not at hand (a
        rebuild keeps what was stored)."""
        if self.analysis is None:
            return {}
        table = owner_table("", self.graph, self.analysis, self.owners)
        return {"owners": json.dumps(table.as_stored())}

    def dropped_references(self) -> DroppedReferences | None:
        """The holder and target ids of the references the rules keep from retaining (None: none).

        By object pair: a pair is listed when every :REF from the holder to the target is dropped, so
        that a second reference the rules keep between the same two objects keeps the hop."""
        dropped = self.rules_dropped
        if dropped is None or dropped.size == 0:
            return None
        g = self.graph
        sources = np.searchsorted(g.edge_start, dropped, side="right") - 1
        pairs = np.unique(np.stack([g.edge_to[dropped], sources]), axis=1)  # (target, holder) node pairs
        kept = self.retaining.copy()
        kept[dropped] = False
        kept_edges = np.flatnonzero(kept & np.isin(g.edge_to, pairs[0]))
        if kept_edges.size:
            kept_sources = np.searchsorted(g.edge_start, kept_edges, side="right") - 1
            n = np.int64(g.node_count)
            still = np.isin(pairs[0] * n + pairs[1], g.edge_to[kept_edges].astype(np.int64) * n + kept_sources)
            pairs = pairs[:, ~still]
        if pairs.shape[1] == 0:
            return None
        holders, targets = g.ids[pairs[1]], g.ids[pairs[0]]
        order = np.lexsort((holders, targets))  # by target id, then holder id
        return DroppedReferences(holders=holders[order], targets=targets[order])

    @property
    def reachable_size(self) -> int:
        """The summed self sizes of the objects the root reaches: the 100% of shares of the heap."""
        return int(self.graph.self_size[self.reachable].sum())

    @cached_property
    def tree_ids(self) -> TreeIds:
        """Each object's immediate dominator and first-path holder, as object ids."""
        g = self.graph
        dom = np.full(g.node_count, NO_OBJECT, dtype=np.int64)
        dominated = self.idom >= 0
        dom[dominated] = g.ids[self.idom[dominated]]
        holders = self.paths.holder
        reached = holders >= 0
        via = np.full(g.node_count, NO_OBJECT, dtype=np.int64)
        via[reached] = g.ids[holders[reached]]
        return TreeIds(dom=dom, via=via)

    def path_sample_indexes(self) -> np.ndarray:
        """The members each path group names as its ``samples`` (see :meth:`path_groups`), as
        object indexes, grouped by signature, largest retained first within a group."""
        return self._path_samples

    @cached_property
    def _path_samples(self) -> np.ndarray:
        # Kept: the write order and the path groups both ask, and each answer sorts every member.
        ranked, place = _first_in_groups(self._largest_first(), self.paths.signature, PATH_SAMPLES)
        return ranked[place < PATH_SAMPLES]

    def path_groups(self) -> list[list[Any]]:
        """One row per distinct first-path signature: [sig, path text, hops, *group figures, samples, held].

        ``samples``: the ids of the group's first PATH_SAMPLES members, largest retained first, so
        that a question naming a group's members reads them here instead of an index over every
        object's signature. ``held``: see :func:`held_under`.
        """
        g = self.graph
        signature = self.paths.signature
        kept = self.path_sample_indexes()
        if kept.shape[0] == 0:  # nothing reachable but the root (an empty dump): no group
            return []
        bounds = np.flatnonzero(np.r_[True, signature[kept][1:] != signature[kept][:-1]])
        samples = dict(zip(signature[kept][bounds].tolist(), np.split(g.ids[kept], bounds[1:])))
        rows = []
        synthetic = g.synthetic_nodes()
        for sig, first, figures in self._groups(signature):
            hops = path_hops(g, self.paths, first, synthetic)
            rows.append([int(sig), " / ".join(hops), hops, *figures, samples[sig].tolist()])
        for row, held in zip(rows, held_under([r[1] for r in rows], [r[5] for r in rows])):
            row.append(held)
        return rows

    def type_groups(self) -> list[list[Any]]:
        """One row per type: [type, *group figures]."""
        g = self.graph
        return [[g.strings[int(t)], *figures] for t, _first, figures in self._groups(g.type.astype(np.int64))]

    def bucket_groups(self) -> list[dict[str, Any]]:
        """Under bucket rules, one row per bucket (every bucket the rules name):
        ``{"name", "objects", "self_size", "retained_size", "max_retained_size"}``, the figures
        ``heapdb analyze --rules`` prints (:func:`~heapdb.loader.rules.summary.bucket_totals`: the
        retained size of its outermost members only, each byte once). Empty without bucket rules.
        Stored on the ``:Snapshot`` as ``buckets`` (:meth:`buckets_property`), which ``diff --by
        bucket`` compares."""
        if self.bucket is None or not self.bucket_names or self.analysis is None:
            return []
        rows = bucket_totals(self.analysis, self.bucket, self.bucket_names, self_size=self.graph.self_size)
        return [asdict(row) for row in rows]

    def buckets_property(self) -> dict[str, str]:
        """The ``:Snapshot`` property ``buckets`` (JSON text of :meth:`bucket_groups`' rows, largest
        retained first, then by name); nothing without bucket rules."""
        rows = self.bucket_groups()
        if not rows:
            return {}
        rows.sort(key=lambda r: (-r["retained_size"], r["name"]))
        return {"buckets": json.dumps(rows)}

    def group_rows(self) -> dict[str, list[list[Any]]]:
        """The rows of every group node, by label (groups.GROUP_KINDS)."""
        return {
            "PathGroup": self.path_groups(),
            "TypeGroup": self.type_groups(),
        }

    def root_groups_property(self) -> dict[str, list[int]]:
        """The ``:Snapshot`` property ``root_group_ids``: the root's id and its synthetic objects'
        (V8's ``(GC roots)`` and the other root groups), the only immediate dominators a leak
        suspect can have; nothing when there are more than :data:`MAX_ROOT_GROUPS`."""
        g = self.graph
        groups = g.synthetic_nodes()
        groups[g.root] = True
        listed = np.flatnonzero(groups)
        if listed.shape[0] > MAX_ROOT_GROUPS:
            return {}
        return {"root_group_ids": g.ids[listed].tolist()}

    def type_listings(self) -> Iterator[tuple[str, TypeListing]]:
        """Each type with a ``:TypeGroup`` (see :meth:`type_groups`) and the :class:`TypeListing`
        of every object of that type, the root, synthetic and unreachable ones included."""
        g = self.graph
        listed = np.unique(g.type[self._members()])
        order = np.lexsort((g.ids, -self.retained_size, g.type))  # by type, then largest first, then id
        by_type = g.type[order]
        for t, lo, hi in zip(
            listed.tolist(),
            np.searchsorted(by_type, listed, "left").tolist(),
            np.searchsorted(by_type, listed, "right").tolist(),
        ):
            objects = order[lo:hi]
            codes, inverse = np.unique(g.name[objects], return_inverse=True)
            names = np.array([shorten(g.strings[int(c)]) for c in codes.tolist()], dtype=object)
            lengths = np.fromiter((len(name) for name in names), dtype=np.int64, count=names.size)
            yield (
                g.strings[t],
                TypeListing(
                    g.ids[objects],
                    "".join(names[inverse].tolist()),
                    np.cumsum(lengths[inverse]),
                    g.self_size[objects],
                    self.distance[objects],
                    self.paths.signature[objects],
                ),
            )

    def _groups(self, key: np.ndarray) -> list[tuple[int, int, list[int]]]:
        """Reachable objects (the root and synthetic nodes aside) grouped by ``key``.

        Per group: the key, its first member, and [objects, self size, retained size, largest
        retained size]. The retained size counts each byte once, by Chrome DevTools' rule (see
        :func:`~heapdb.loader.analysis.outermost_members`): members below another member of the
        group in the dominator tree, or of zero size, add nothing.
        """
        g = self.graph
        members = self._members()
        if not members.any():
            return []
        index = np.flatnonzero(members)
        keys, first, inverse, counts = np.unique(key[index], return_index=True, return_inverse=True, return_counts=True)
        self_size = np.bincount(inverse, weights=g.self_size[index], minlength=keys.size)
        group = np.zeros(g.node_count, dtype=np.int64)
        group[index] = inverse
        outermost = outermost_members(self.idom, g.root, group, members & (g.self_size > 0), keys.size)[index]
        retained = np.bincount(inverse, weights=np.where(outermost, self.retained_size[index], 0), minlength=keys.size)
        largest = np.zeros(keys.size, dtype=np.int64)
        np.maximum.at(largest, inverse, self.retained_size[index])
        return [
            (int(k), int(index[f]), [int(c), int(a), int(r), int(x)])
            for k, f, c, a, r, x in zip(
                keys.tolist(), first.tolist(), counts.tolist(), self_size.tolist(), retained.tolist(), largest.tolist()
            )
        ]

    def _members(self) -> np.ndarray:
        """bool[n]: the objects groups and top lists count: reachable, not the root, not synthetic."""
        g = self.graph
        members = self.reachable & ~g.synthetic_nodes()
        members[g.root] = False
        return members

    def top_ranks(self, depth: int = TOP_RANKS) -> tuple[np.ndarray, np.ndarray]:
        """Each object's place among the largest retainers, overall and within its type (0: not in the first ``depth``).

        Stored at load so the ``top`` question reads at most ``depth`` objects through an index
        instead of sorting millions; only ranked objects carry the properties, so the index stays
        small. Order: :func:`~heapdb.loader.analysis.ranking.largest_first`'s, as ``heapdb analyze`` lists them.
        """
        g = self.graph
        order = self._largest_first()
        ranked = order if self.look_through is None else order[~self.look_through.through[order]]
        rank = np.zeros(g.node_count, dtype=np.int64)
        rank[ranked[:depth]] = np.arange(1, min(depth, ranked.size) + 1)
        by_type, place = _first_in_groups(order, g.type, depth)
        type_rank = np.zeros(g.node_count, dtype=np.int64)
        kept = place < depth
        type_rank[by_type[kept]] = place[kept] + 1
        return rank, type_rank

    def _largest_first(self) -> np.ndarray:
        """The members (see :meth:`_members`), largest retained first, as ``heapdb analyze`` lists them."""
        return largest_first(self.retained_size, self.graph.ids, np.flatnonzero(self._members()))


def _first_in_groups(order: np.ndarray, key: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
    """``order`` regrouped by ``key`` (each group keeping its order), and each object's place in its group."""
    grouped = order[np.argsort(key[order], kind="stable")]  # stable: each group keeps the order
    keys = key[grouped]
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]]) if keys.size else np.zeros(0, dtype=np.int64)
    place = np.arange(keys.size) - np.repeat(starts, np.diff(np.r_[starts, keys.size]))
    return grouped, place


def held_under(paths: list[str], retained: list[int]) -> list[int]:
    """Per path, the most that it or any path extending it (``path + " / " + ...``) retains.

    What the CI gate compares between builds (queries/gate-paths.cypher says why), written once per
    load so the gate reads one figure per group instead of matching every group's path against every
    other's. The paths that extend ``p`` are one run of the sorted paths, from ``p + " / "`` up to
    ``p + " /!"`` (the next text after that prefix), so a sparse table of range maxima answers each in
    constant time.
    """
    if not paths:
        return []
    order = sorted(range(len(paths)), key=paths.__getitem__)
    ordered = [paths[i] for i in order]
    values = np.asarray(retained, dtype=np.int64)[order]
    lo = np.array([bisect.bisect_left(ordered, p + " / ") for p in ordered], dtype=np.int64)
    hi = np.array([bisect.bisect_left(ordered, p + " /!") for p in ordered], dtype=np.int64)
    table = [values]  # table[k][i]: the largest of values[i : i + 2**k]
    while 2 ** len(table) <= len(values):
        half, previous = 2 ** (len(table) - 1), table[-1]
        table.append(np.maximum(previous[:-half], previous[half:]))
    held = values.copy()
    some = np.flatnonzero(hi > lo)
    level = np.log2(hi[some] - lo[some]).astype(np.int64)
    for k in np.unique(level).tolist():
        at = some[level == k]
        below = np.maximum(table[k][lo[at]], table[k][hi[at] - 2**k])
        held[at] = np.maximum(held[at], below)
    result = np.empty_like(held)
    result[order] = held
    return [int(v) for v in result]
