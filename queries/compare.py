"""Questions across snapshots: what changed (per type, per retainer path, object by object, along
the dominator tree), what leaked (memlab's three snapshots), and what grew at every step.

Why this module is long: the comparisons share how they look their snapshots up, how the service
keeps their answers (per pair of loads, one answer cut for every limit) and the id checks that
matching by object needs; apart, each would repeat them. The parts that stand alone (the dominator
tree's groups, leaks by id, the builds) are modules of their own already."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, replace
from typing import Any

import numpy as np

from heapdb.errors import ParameterError
from heapdb.loader.formats import named
from heapdb.loader.owners.table import OwnerTable
from heapdb.loader.store import Snapshot
from heapdb.queries import builds, dominator_diff, leaks_by_id, missing, params
from heapdb.queries.base import SnapshotRef
from heapdb.queries.dominator_diff import DominatorColumns, DominatorDiff, DominatorGroups
from heapdb.queries.inspected import InspectedQuestions
from heapdb.queries.matching import ObjectColumns, pair
from heapdb.queries.results import (
    Change,
    Diff,
    Growth,
    GrowthReport,
    IdCheck,
    KnownLeak,
    LeakCluster,
    Leaks,
    ObjectDiff,
    ObjectRef,
    Sample,
    Turnover,
)

RETYPED_SHARE = 0.01  # above this share of shared ids changing type, ids are not taken as stable
MIN_SERIES = 3  # snapshots growth compares: with two, "grew at every step" is just a diff
# The reports whose rows, for a limit, are the first rows of the same report for a larger limit
# (their order ends on a unique key: a type, a path's signature). With a cache (the service), one
# answer is worked out for at least the default limit and cut for each smaller one: clients asking
# 10, 20 or 50 rows, the warm-up and the service's look-ahead (heapdb.service.warmup) share one
# computation, the first answer of a comparison being what every client asking it waits for.
PREFIX_DIFFS = ("type", "path", "object")


def check_series(refs: Sequence[object]) -> None:
    """Refuse a growth question over fewer than :data:`MIN_SERIES` snapshots (the CLI asks before
    connecting, the method always)."""
    if len(refs) < MIN_SERIES:
        raise ParameterError(f"growth needs at least three snapshots, got {len(refs)}")


def _figures(column: np.ndarray) -> tuple[int, int, int, int, int, int]:
    """A column of the turnover figures: new, survived and freed, each a count and a size."""
    new_count, new_size, survived_count, survived_size, freed_count, freed_size = (int(x) for x in column)
    return new_count, new_size, survived_count, survived_size, freed_count, freed_size


def _at_least_default(p: params.Diff | params.Growth) -> Any:
    """``p`` asking at least its model's default number of rows (see :data:`PREFIX_DIFFS`)."""
    default = type(p).model_fields["limit"].default
    return p if p.limit >= default else p.model_copy(update={"limit": default})


def _cut(answer: Any, limit: int) -> Any:
    """A report worked out for a larger limit, cut to ``limit`` rows (see :data:`PREFIX_DIFFS`)."""
    if isinstance(answer, Diff) and len(answer.changes) > limit:
        return replace(answer, changes=answer.changes[:limit])
    if isinstance(answer, ObjectDiff) and len(answer.types) > limit:
        return replace(answer, types=answer.types[:limit])
    if isinstance(answer, GrowthReport) and len(answer.rows) > limit:
        return replace(answer, rows=answer.rows[:limit])
    return answer


def _runtime(snapshot: Snapshot) -> str:
    return " ".join(x for x in (snapshot.format, snapshot.runtime) if x) or "unknown"


def _diff_buckets(old: Snapshot, new: Snapshot, limit: int) -> Diff:
    """Per bucket, the change of its objects, self size and retained size (its outermost members'),
    from the totals each snapshot stores in its ``buckets`` property (so pruned snapshots answer
    too). A bucket only one snapshot has counts 0 in the other; sorted as ``diff-types`` sorts.
    Both snapshots need bucket totals: against one loaded without bucket rules every bucket would
    look new."""
    missing = list(dict.fromkeys(s.tag for s in (old, new) if not s.buckets))
    if missing:
        which = (
            f"snapshot {missing[0]!r} was" if len(missing) == 1 else f"snapshots {missing[0]!r} and {missing[1]!r} were"
        )
        fix = "; ".join(f"`heapdb reanalyze {tag} --rules RULES`" for tag in missing)
        raise ParameterError(
            f"by bucket: {which} loaded without bucket rules ([[bucket]] in a rule file, docs/rules.md), so no "
            f"bucket totals are stored; analyse them again under rules with buckets: {fix} "
            "(or load their files again with `heapdb load FILE --tag TAG --replace --rules RULES`)"
        )
    return _diff_totals(old, new, "bucket", old.buckets, new.buckets, limit)


def _diff_totals(
    old: Snapshot,
    new: Snapshot,
    by: str,
    rows_before: Iterable[dict[str, Any]],
    rows_after: Iterable[dict[str, Any]],
    limit: int,
) -> Diff:
    """Per named group (a bucket, an owner), the change of its objects, self size and retained
    size, from totals each snapshot stores (so pruned snapshots answer too). A group only one
    snapshot has counts 0 in the other; sorted as ``diff-types`` sorts."""
    before = {b["name"]: b for b in rows_before}
    after = {b["name"]: b for b in rows_after}
    names = list(dict.fromkeys([*after, *before]))

    def figure(side: dict[str, dict[str, Any]], name: str, key: str) -> int:
        return int(side.get(name, {}).get(key, 0))

    changes = [
        Change(
            label=name,
            hops=[name],
            count_before=figure(before, name, "objects"),
            count_after=figure(after, name, "objects"),
            size_before=figure(before, name, "self_size"),
            size_after=figure(after, name, "self_size"),
            retained_before=figure(before, name, "retained_size"),
            retained_after=figure(after, name, "retained_size"),
        )
        for name in names
    ]
    changes.sort(key=lambda c: (-c.size_delta, -c.count_delta, c.label))
    return Diff(before=old.tag, after=new.tag, by=by, changes=changes[:limit])


class CompareQuestions(InspectedQuestions, builds.BuildQuestions):
    def diff(
        self, before: SnapshotRef, after: SnapshotRef, p: params.Diff = params.Diff()
    ) -> Diff | ObjectDiff | DominatorDiff:
        """:meth:`diff_groups` by type, path or bucket, :meth:`diff_objects` by object,
        :meth:`diff_dominators` by dominator, as ``p.by`` says.

        Remembered per pair of snapshot loads when a cache is set, as every cross-snapshot answer is
        (loads never change, so neither do these answers)."""
        if p.under is not None and p.by != "dominator":
            raise ParameterError("under names a group of the dominator tree: use it with by dominator")
        by_object = p.by in ("object", "dominator")  # the others read stored totals only: summaries answer
        old, new = self.snapshot(before, objects=by_object), self.snapshot(after, objects=by_object)
        asked = _at_least_default(p) if self.cache is not None and p.by in PREFIX_DIFFS else p

        def compute() -> Diff | ObjectDiff | DominatorDiff:
            if p.by == "dominator":
                return self.diff_dominators(old, new, p)
            return self.diff_objects(old, new, asked) if p.by == "object" else self.diff_groups(old, new, asked)

        return _cut(self._cached(old, ("diff", new.sid, asked), compute), p.limit)

    def diff_dominators(
        self, before: SnapshotRef, after: SnapshotRef, p: params.Diff = params.Diff(by="dominator")
    ) -> DominatorDiff:
        """What grew along the dominator tree: the groups of objects below ``p.under`` (the root's at
        first), matched across the builds by the types of their chain of dominators, largest retained
        growth first (:mod:`heapdb.queries.dominator_diff`). Both snapshots must be full and loaded."""
        old, new = (self.snapshot(ref, all_objects=True) for ref in (before, after))
        with ThreadPoolExecutor(2) as pool:  # Neo4j builds one list while the other is decoded here
            a, b = pool.map(self._dominator_groups, (old, new))

        def details(ids: list[int]) -> dict[int, dict[str, Any]]:
            rows = self._run("objects-brief", tag=new.tag, ids=ids) if ids else []
            return {r["object"]["id"]: r["object"] for r in rows}

        return dominator_diff.diff(old.tag, new.tag, a, b, p.under, p.limit, p.samples, details)

    def _dominator_groups(self, snapshot: Snapshot) -> DominatorGroups:
        """The snapshot's objects grouped along its dominator tree, kept by the cache: drilling
        further, or comparing with another build, reads nothing again."""

        def read() -> DominatorGroups:
            rows = self._run("dominator-columns", tag=snapshot.tag)[0]["objects"]
            return DominatorGroups.build(DominatorColumns.from_rows(rows))

        return self._cached(snapshot, ("dominator groups",), read, weigh=lambda groups: groups.nbytes)

    def _diff_owners(self, old: Snapshot, new: Snapshot, p: params.Diff) -> Diff:
        """Per owner of one level (``p.level``, default the first), from the owner tables each load
        stored; both snapshots need that level."""
        levels = []
        for snapshot in (old, new):
            _s, stored = self.stored(snapshot, "owners", missing.OWNERS)
            table = OwnerTable.from_stored(snapshot.tag, stored)
            level = table.level(p.level)
            if level is None:
                have = ", ".join(lv.level for lv in table.levels) or "none"
                wanted = "any" if p.level is None else repr(p.level)
                raise ParameterError(
                    f"by owner: snapshot {snapshot.tag!r} has no {wanted} owner level (it has: {have})"
                )
            levels.append(level)
        if levels[0].level != levels[1].level:
            raise ParameterError(
                f"by owner: {old.tag!r} is by {levels[0].level}, {new.tag!r} by {levels[1].level}; pick one with --level"
            )
        rows = [[asdict(r) for r in lv.rows] for lv in levels]
        return _diff_totals(old, new, "owner", rows[0], rows[1], p.limit)

    def diff_groups(self, before: SnapshotRef, after: SnapshotRef, p: params.Diff = params.Diff()) -> Diff:
        """What changed per type, per retainer path, per bucket or per inspection row (``p.by``),
        largest growth first.

        Reads the per-group totals (by inspection: the inspections) stored at load, before and after:
        safe whatever the ids are.
        """
        if p.by == "object":
            raise ParameterError(
                "diff_groups compares types, paths, buckets or inspections; use diff_objects for by='object'"
            )
        old, new = self.snapshot(before), self.snapshot(after)
        if p.by == "bucket":
            return _diff_buckets(old, new, p.limit)
        if p.by == "owner":
            return self._diff_owners(old, new, p)
        if p.by == "inspection":
            return self.diff_inspections(old, new, p.limit)
        rows = self._run(f"diff-{p.by}s", before=old.tag, after=new.tag, limit=p.limit)
        by_type = p.by == "type"
        changes = [
            Change(
                label=r["type"] if by_type else r["path"],
                hops=[r["type"]] if by_type else list(r["hops"] or []),
                count_before=r["count_before" if by_type else "objects_before"],
                count_after=r["count_after" if by_type else "objects_after"],
                size_before=r["size_before"],
                size_after=r["size_after"],
                retained_before=r["retained_before"],
                retained_after=r["retained_after"],
                signature=r.get("sig"),
                type=r["type"],
                verdict=r.get("verdict"),
                known_leak=r.get("known_leak"),
            )
            for r in rows
        ]
        return Diff(before=old.tag, after=new.tag, by=p.by, changes=changes)

    def diff_objects(
        self, before: SnapshotRef, after: SnapshotRef, p: params.Diff = params.Diff(by="object")
    ) -> ObjectDiff:
        """Per type, the objects new in ``after``, those that survived from ``before``, those freed.

        Objects are matched by :func:`heapdb.queries.matching.pair`'s rule (same id and type), among
        those the root reaches (the root and synthetic root kinds aside). That is only right when ids
        are stable between the two snapshots, so the answer carries ``warnings`` when the formats say
        ids are addresses, when the snapshots come from different runtimes, or when many shared ids
        name objects of different types (see :meth:`id_check`). Both snapshots are read once as
        columns (stored query ``object-columns``) and joined here.
        """
        old_snapshot, new_snapshot = self.snapshot(before, objects=True), self.snapshot(after, objects=True)
        old, new = self._both_columns(old_snapshot, new_snapshot)
        check, warnings = self._id_warnings(old_snapshot, new_snapshot, old, new)
        candidate, _same_id, survived = pair(old, new)
        matched = np.zeros(old.ids.size, dtype=bool)
        matched[candidate[survived]] = True
        names = sorted(set(old.type_names) | set(new.type_names))
        code = {name: i for i, name in enumerate(names)}
        new_type = np.array([code[t] for t in new.type_names], dtype=np.int64)[new.type]
        old_type = np.array([code[t] for t in old.type_names], dtype=np.int64)[old.type]

        def per_type(types: np.ndarray, mask: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            counts = np.bincount(types[mask], minlength=len(names))
            return counts, np.bincount(types[mask], weights=sizes[mask], minlength=len(names)).astype(np.int64)

        figures = np.stack(
            [
                *per_type(new_type, ~survived, new.self_size),
                *per_type(new_type, survived, new.self_size),
                *per_type(old_type, ~matched, old.self_size),
            ]
        )  # rows: new count, new size, survived count, survived size, freed count, freed size
        present = np.flatnonzero(figures[[0, 2, 4]].sum(axis=0) > 0)
        by_name = np.array(names, dtype=object)[present]
        order = present[np.lexsort((by_name, -figures[5, present], -figures[0, present], -figures[1, present]))]
        # The largest new objects of each type: new objects sorted by type, then retained size, then id.
        fresh = np.flatnonzero(~survived)
        fresh = fresh[np.lexsort((new.ids[fresh], -new.retained_size[fresh], new_type[fresh]))]
        first = np.searchsorted(new_type[fresh], np.arange(len(names)))

        shown = order[: p.limit]
        picks = {
            int(t): fresh[first[t] : first[t] + min(p.samples, int(figures[0, t]))].tolist() for t in shown.tolist()
        }
        # Where the samples come from (source locations, allocation stacks): one read for them all.
        sample_ids = [int(new.ids[i]) for picked in picks.values() for i in picked]
        sources = {
            r["object"]["id"]: r["object"]
            for r in (self._run("objects-brief", tag=new_snapshot.tag, ids=sample_ids) if sample_ids else [])
        }

        def turnover(t: int) -> Turnover:
            samples = [
                Sample(
                    int(new.ids[i]),
                    names[t],
                    int(new.self_size[i]),
                    int(new.retained_size[i]),
                    ObjectRef(new_snapshot.tag, int(new.ids[i])),
                    location=sources.get(int(new.ids[i]), {}).get("location"),
                    allocated_at=sources.get(int(new.ids[i]), {}).get("allocated_at"),
                )
                for i in picks[t]
            ]
            return Turnover(names[t], *_figures(figures[:, t]), samples=samples)

        total = Turnover("(all types)", *_figures(figures.sum(axis=1)))
        return ObjectDiff(
            before=old_snapshot.tag,
            after=new_snapshot.tag,
            by="object",
            types=[turnover(int(t)) for t in shown],
            total=total,
            check=check,
            warnings=warnings,
        )

    def id_check(self, before: SnapshotRef, after: SnapshotRef) -> tuple[IdCheck, list[str]]:
        """Whether ids name the same objects in both snapshots: the figures, and a warning for each doubt.

        Doubts: a format whose ids are addresses (its ``ids_are_addresses``), different formats or
        runtimes, no id in common, or more than :data:`RETYPED_SHARE` of the shared ids with a
        different type (ids reused, or two processes). Counted are the objects the root reaches in
        each snapshot, the root and synthetic root kinds aside.
        """
        old, new = self.snapshot(before, objects=True), self.snapshot(after, objects=True)
        return self._id_warnings(old, new, *self._both_columns(old, new))

    def _both_columns(self, before: Snapshot, after: Snapshot) -> tuple[ObjectColumns, ObjectColumns]:
        """Both snapshots' columns, read at the same time: Neo4j builds one list while the other is
        decoded here."""
        with ThreadPoolExecutor(2) as pool:
            old, new = pool.map(self._columns, (before, after))
        return old, new

    def _columns(self, snapshot: Snapshot) -> ObjectColumns:
        """The snapshot's object columns, kept by the cache: every comparison with it (another
        snapshot, another limit) reuses them, and reading them is most of a comparison's time."""

        def read() -> ObjectColumns:
            return ObjectColumns.from_rows(self._run("object-columns", tag=snapshot.tag)[0]["objects"])

        return self._cached(snapshot, ("object columns",), read, weigh=lambda columns: columns.nbytes)

    def _id_warnings(
        self, a: Snapshot, b: Snapshot, old: ObjectColumns, new: ObjectColumns
    ) -> tuple[IdCheck, list[str]]:
        _candidate, shared, same_type = pair(old, new)
        check = IdCheck(
            after_objects=int(new.ids.size), shared=int(shared.sum()), retyped=int((shared & ~same_type).sum())
        )
        warnings = []
        for s in (a, b):
            if (declared := named(s.format)) is not None and declared.ids_are_addresses:
                warnings.append(
                    f"snapshot {s.tag!r} is a {s.format} snapshot: its ids are addresses, which a later object may reuse"
                )
        if (a.format, a.runtime) != (b.format, b.runtime):
            warnings.append(
                f"the snapshots come from different runtimes ({_runtime(a)} and {_runtime(b)}): their ids are unrelated"
            )
        if check.after_objects and not check.shared:
            warnings.append(f"no id of {b.tag!r} is in {a.tag!r}: the snapshots do not come from one process")
        elif check.shared and check.retyped > RETYPED_SHARE * check.shared:
            warnings.append(
                f"{check.retyped:,} of the {check.shared:,} ids both snapshots have ({check.retyped / check.shared:.1%}) name objects "
                "of a different type: ids were reused, or the snapshots come from different processes"
            )
        if warnings:
            warnings.append("matching by id may be wrong: compare by type or by path instead (they need no stable ids)")
        return check, warnings

    def leaks(
        self, baseline: SnapshotRef, target: SnapshotRef, final: SnapshotRef, p: params.Leaks = params.Leaks()
    ) -> Leaks:
        """memlab's three-snapshot leak candidates: allocated after ``baseline``, still alive in ``final``.

        By ``id`` (memlab's own rule): objects absent from baseline, present in target and in final,
        matched by :mod:`heapdb.queries.matching`'s rule (same id and type), clustered by retainer path
        in final and ranked by retained size; ids must be stable, so the answer carries the warnings
        of :meth:`id_check` (baseline against final). By ``path``: retainer paths that gained objects
        from baseline to target and did not give them back in final (count in final >= count in
        target), ranked by the growth of their retained size from baseline to final; needs no stable ids.

        Clusters a ``known_leak`` rule covers are answered apart (``known``), never as new leaks: by id
        the members it covers, by path the paths whose largest member in final (the group's first
        sample) it covers; by path, a cluster's ``verdict`` is that largest member's too.
        """
        # By path, baseline and target answer from their path groups (summaries do); final's objects
        # give each cluster its type and samples. By id, every snapshot's objects are matched.
        by_id = p.by == "id"
        base, middle = (self.snapshot(ref, objects=by_id) for ref in (baseline, target))
        last = self.snapshot(final, objects=True)
        return self._cached(base, ("leaks", middle.sid, last.sid, p), lambda: self._leaks(base, middle, last, p))

    def _leaks_by_id(
        self, base: Snapshot, middle: Snapshot, last: Snapshot, p: params.Leaks, tags: dict[str, Any]
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
        """Leak clusters by id as the stored query ``leaks`` rows (candidates, known leaks) and the id
        warnings: matched in process from the id listings (:mod:`heapdb.queries.leaks_by_id`), or by
        the stored query itself for snapshots stored without listings."""
        with ThreadPoolExecutor(3) as pool:
            columns = list(pool.map(lambda s: leaks_by_id.listed_objects(self._run, s), (base, middle, last)))
        if any(c is None for c in columns):
            _check, warnings = self._id_warnings(base, last, *self._both_columns(base, last))
            known = self._run("leaks", **tags, known=True) if last.known_leaks else []
            return self._run("leaks", **tags, known=False), known, warnings
        listed = [c for c in columns if c is not None]
        _check, warnings = self._id_warnings(base, last, listed[0], listed[2])
        new = leaks_by_id.new_objects(self._run, base, middle, last, listed)
        found = leaks_by_id.Candidates.read(self._run, last, new)
        answers = [
            self._leak_rows(last, leaks_by_id.clusters(self._run, last, found, new, known=known, limit=p.limit))
            for known in ((False, True) if last.known_leaks else (False,))
        ]
        return answers[0], answers[1] if len(answers) > 1 else [], warnings

    def _leak_rows(self, last: Snapshot, clusters: list[leaks_by_id.Cluster]) -> list[dict[str, Any]]:
        """The clusters as the stored query's rows, with their largest member's details."""
        if not clusters:
            return []
        largest = self._run("objects-brief", tag=last.tag, ids=[c.sample_ids[0] for c in clusters])
        return [
            {
                "sig": c.sig,
                "path": c.path,
                "hops": c.hops,
                "objects": c.objects,
                "self_size": c.self_size,
                "retained_size": c.retained_size,
                "sample_ids": c.sample_ids,
                "known_leak": c.known_leak,
                **{k: row["object"].get(k) for k in ("type", "verdict", "location", "allocated_at")},
            }
            for c, row in zip(clusters, largest)
        ]

    def _leaks(self, base: Snapshot, middle: Snapshot, last: Snapshot, p: params.Leaks) -> Leaks:
        warnings: list[str] = []
        tags = {"baseline": base.tag, "target": middle.tag, "final": last.tag, "limit": p.limit}
        known: list[dict[str, Any]] = []
        if p.by == "id":
            rows, known, warnings = self._leaks_by_id(base, middle, last, p, tags)
        else:
            # By path, a path whose largest member in final a known_leak rule covers is a known leak.
            rows = self._run("leaks-paths", **tags, known=False)
            known = self._run("leaks-paths", **tags, known=True) if last.known_leaks else []
        links = {k["reason"]: k.get("link") for k in last.known_leaks}

        def cluster(r: dict[str, Any]) -> LeakCluster:
            reason = r.get("known_leak")
            return LeakCluster(
                signature=r["sig"],
                path=r["path"],
                hops=list(r["hops"] or []),
                type=r["type"],
                objects=r["objects"],
                self_size=r["self_size"],
                retained_size=r["retained_size"],
                sample_ids=r["sample_ids"],
                why=ObjectRef(last.tag, r["sample_ids"][0]),
                counts=r.get("counts"),
                known_leak=None if reason is None else KnownLeak(reason, links.get(reason)),
                verdict=r.get("verdict"),
                location=r.get("location"),
                allocated_at=r.get("allocated_at"),
            )

        return Leaks(
            baseline=base.tag,
            target=middle.tag,
            final=last.tag,
            clusters=[cluster(r) for r in rows],
            by=p.by,
            warnings=warnings,
            known=[cluster(r) for r in known],
        )

    def growth(self, refs: Sequence[SnapshotRef], p: params.Growth = params.Growth()) -> GrowthReport:
        """Types or retainer paths whose shallow size grew at every step across three or more snapshots.

        Their object count must never shrink either. Ranked by the growth from the first snapshot to
        the last; reads the stored per-group totals only, so it is fast at any heap size. With
        ``p.builds``, the snapshots are the loaded builds of that range (:mod:`.builds`), not ``refs``.
        """
        if p.builds is not None:
            refs = builds.series(refs, self.build_candidates(), p.builds)
        check_series(refs)
        snapshots = [self.snapshot(ref) for ref in refs]
        tags = [s.tag for s in snapshots]
        if len(set(tags)) != len(tags):
            raise ParameterError("growth needs distinct snapshots: a tag is given twice")
        asked = p if self.cache is None else _at_least_default(p)
        answer = self._cached(
            snapshots[0], ("growth", tuple(s.sid for s in snapshots[1:]), asked), lambda: self._growth(tags, asked)
        )
        return _cut(answer, p.limit)

    def _growth(self, tags: list[str], p: params.Growth) -> GrowthReport:
        rows = self._run(f"growth-{p.by}s", tags=tags, limit=p.limit)
        by_type = p.by == "type"
        return GrowthReport(
            tags=tags,
            by=p.by,
            rows=[
                Growth(
                    label=r["type"] if by_type else r["path"],
                    hops=[r["type"]] if by_type else list(r["hops"] or []),
                    counts=r["counts"],
                    sizes=r["sizes"],
                    retained=r["retained"],
                    size_growth=r["size_growth"],
                    count_growth=r["count_growth"],
                    signature=r.get("sig"),
                    verdict=r.get("verdict"),
                    known_leak=r.get("known_leak"),
                )
                for r in rows
            ],
        )
