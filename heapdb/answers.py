"""The questions heapdb answers, one typed function each, shared by the CLI and the REST service.

Every function takes a :class:`~heapdb.db.Database`, a snapshot tag and the question's parameters,
runs stored queries (:mod:`heapdb.queries.catalog`) and returns dataclasses. Callers only parse input
and render output (:mod:`heapdb.render`, the CLI, the service). An unknown tag or object raises
:class:`NotFound`; a bad parameter raises :class:`~heapdb.queries.catalog.ParameterError`.

Limits (the ``MAX_*`` constants) bound every answer, so no request can ask for the whole heap.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import quote

import numpy as np

from heapdb.db import Database
from heapdb.errors import NotFound, OutdatedSnapshot
from heapdb.loader.store import STORE_VERSION
from heapdb.queries import catalog
from heapdb.queries.catalog import ParameterError

MAX_K = 10  # retainer paths per why-alive answer
MAX_DEPTH = 20  # levels of a dominated subtree
MAX_LIMIT = 1000  # rows of a list, nodes of a subtree
DEFAULT_TIMEOUT = 30.0  # seconds per query
ADDRESS_ID_FORMATS = ("luau", "snapbin")  # formats whose object ids are (or may be) addresses
RETYPED_SHARE = 0.01  # above this share of shared ids changing type, ids are not taken as stable


@dataclass
class ObjectInfo:
    """One heap object as stored (see docs/data-model.md)."""

    id: int
    type: str
    name: str
    kind: str
    self_size: int
    retained_size: int
    retained_count: int
    distance: int | None
    reachable: bool
    detached: bool = False
    root: bool = False

    @classmethod
    def from_row(cls, row: dict[str, Any], root_id: int | None = None) -> ObjectInfo:
        return cls(
            id=row["id"],
            type=row["type"],
            name=row["name"],
            kind=row["kind"],
            self_size=row["self_size"],
            retained_size=row["retained_size"],
            retained_count=row["retained_count"],
            distance=row["distance"],
            reachable=bool(row["reachable"]),
            detached=bool(row.get("detached")),
            root=bool(row.get("root")) or (root_id is not None and row["id"] == root_id),
        )


@dataclass
class Reference:
    """A reference between two objects: its kind (``property``, ``element``...) and name."""

    kind: str
    name: str
    weak: bool = False

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Reference:
        return cls(kind=row["kind"], name=row["name"], weak=bool(row.get("weak")))


@dataclass
class RetainerPath:
    """``objects[0]`` (the root) holds ``objects[1]`` through ``references[0]``, and so on to the target."""

    objects: list[ObjectInfo]
    references: list[Reference]

    @property
    def length(self) -> int:
        return len(self.references)


@dataclass
class WhyAlive:
    """Why an object is alive: retaining paths from the root, shortest first."""

    tag: str
    target: ObjectInfo
    paths: list[RetainerPath]
    ignored: dict[str, list[Any]] = field(default_factory=dict)


@dataclass
class DominatorChain:
    """The immediate dominators from the root down to the target (both included)."""

    tag: str
    target: ObjectInfo
    chain: list[ObjectInfo]


@dataclass
class Retains:
    """A bounded piece of the target's dominator subtree: what would be freed with it."""

    tag: str
    target: ObjectInfo
    objects: list[ObjectInfo]  # the target first, then level by level, largest first
    edges: list[tuple[int, int]]  # (dominator id, dominated id)
    depth: int
    limit: int
    truncated: bool  # some dominated objects were not listed


@dataclass
class TypeRow:
    """One type of a snapshot's objects (the root reaches them; synthetic root kinds aside)."""

    type: str
    count: int
    self_size: int
    retained_size: int  # what the type's objects retain together, each byte once (DevTools' rule)
    max_retained_size: int  # the largest single object's retained size


@dataclass
class Change:
    """One type or retainer path, before and after (a row of a diff)."""

    label: str  # the type, or the path as text
    hops: list[str]  # the path as labels (for a type: just the type)
    count_before: int
    count_after: int
    size_before: int
    size_after: int
    retained_before: int
    retained_after: int
    count_delta: int = field(init=False)
    size_delta: int = field(init=False)
    retained_delta: int = field(init=False)

    def __post_init__(self) -> None:
        self.count_delta = self.count_after - self.count_before
        self.size_delta = self.size_after - self.size_before
        self.retained_delta = self.retained_after - self.retained_before


@dataclass
class Diff:
    before: str
    after: str
    by: str  # "type" or "path"
    changes: list[Change]


@dataclass
class LeakCluster:
    """Leak candidates held the same way: allocated after the baseline, alive in the final snapshot."""

    signature: int  # the retainer path's signature (the cluster's stable id across snapshots)
    path: str
    hops: list[str]
    type: str
    objects: int
    self_size: int
    retained_size: int
    sample_ids: list[int]
    why: str  # permalink to why-alive for the first sample, in the final snapshot
    counts: list[int] | None = None  # by path: objects held this way in baseline, target, final


@dataclass
class Leaks:
    """Leak candidates. By id, each cluster's figures are its candidate objects'; by path, they are
    the growth of the path's totals from baseline to final (see :meth:`Questions.leaks`)."""

    baseline: str
    target: str
    final: str
    clusters: list[LeakCluster]
    by: str = "id"
    warnings: list[str] = field(default_factory=list)  # why the answer may be wrong (ids not stable)


@dataclass
class Sample:
    """An object picked as an example, with its why-alive permalink."""

    id: int
    type: str
    self_size: int
    retained_size: int
    why: str


@dataclass
class Turnover:
    """One type's objects between two snapshots matched by id and type: new, survived, freed."""

    type: str
    new_count: int
    new_size: int  # self sizes, as are the other sizes
    survived_count: int
    survived_size: int
    freed_count: int
    freed_size: int
    samples: list[Sample] = field(default_factory=list)  # the largest new objects, by retained size


@dataclass
class IdCheck:
    """How far two snapshots' ids agree: ids of ``after`` also in ``before``, and of those how many changed type."""

    after_objects: int
    shared: int
    retyped: int


@dataclass
class ObjectColumns:
    """A snapshot's objects (those the root reaches) as arrays; ``type`` indexes ``type_names``."""

    ids: np.ndarray
    type: np.ndarray
    type_names: list[str]
    self_size: np.ndarray
    retained_size: np.ndarray


def _pair(old: ObjectColumns, new: ObjectColumns) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each object of ``new``: the index in ``old`` of the object with its id (any index where
    there is none), whether there is one, and whether that one has the same type. Ids are unique
    within a snapshot, so a search in the sorted ids pairs them."""
    if old.ids.size == 0:
        nothing = np.zeros(new.ids.size, dtype=bool)
        return np.zeros(new.ids.size, dtype=np.int64), nothing, nothing
    order = np.argsort(old.ids, kind="stable")
    candidate = order[np.minimum(np.searchsorted(old.ids[order], new.ids), old.ids.size - 1)]
    same_id = old.ids[candidate] == new.ids
    same_type = same_id & (np.array(old.type_names, dtype=object)[old.type[candidate]] == np.array(new.type_names, dtype=object)[new.type])
    return candidate, same_id, same_type


@dataclass
class ObjectDiff:
    """A diff by object: per type, what is new, what survived, what was freed (ids must be stable)."""

    before: str
    after: str
    by: str  # "object"
    types: list[Turnover]
    total: Turnover  # over all types, not only those listed
    check: IdCheck
    warnings: list[str]  # why the comparison may be unsafe; empty when ids look stable


@dataclass
class Growth:
    """A type or retainer path that grew at every step; one value per snapshot in each series."""

    label: str  # the type, or the path as text
    hops: list[str]
    counts: list[int]
    sizes: list[int]  # self sizes
    retained: list[int]
    size_growth: int  # last minus first
    count_growth: int
    signature: int | None = None  # by path: the path's signature


@dataclass
class GrowthReport:
    tags: list[str]
    by: str  # "type" or "path"
    rows: list[Growth]


@dataclass
class AccumulationPoint:
    """Where a suspect's retained size piles up: no dominated child holds ``ratio`` of it."""

    object: ObjectInfo
    depth: int  # steps down the dominator tree from the suspect
    children: int  # objects it dominates directly
    largest_child: int  # the largest child's retained size
    largest_child_share: float  # largest_child / the point's retained size
    why: str


@dataclass
class SuspectObject:
    object: ObjectInfo
    share: float  # retained size / the snapshot's reachable size
    why: str
    accumulation: AccumulationPoint


@dataclass
class SuspectType:
    type: str
    count: int
    self_size: int
    retained_size: int
    share: float


@dataclass
class Suspects:
    """MAT-style leak suspects of one snapshot: big single objects and big types."""

    tag: str
    share: float  # the threshold, a share of reachable_size
    ratio: float  # the accumulation point's descent threshold
    reachable_size: int  # summed self sizes of the objects the root reaches (the 100%)
    min_retained: int  # the threshold in bytes
    objects: list[SuspectObject]
    types: list[SuspectType]


@dataclass
class Neighbour:
    reference: Reference
    object: ObjectInfo


@dataclass
class ObjectDetails:
    tag: str
    object: ObjectInfo
    incoming: list[Neighbour]
    outgoing: list[Neighbour]
    incoming_count: int
    outgoing_count: int


def why_link(tag: str, object_id: int) -> str:
    """The REST permalink to why-alive for an object (add ``?format=dot`` or ``svg`` for a drawing)."""
    return f"/api/snapshots/{quote(tag, safe='')}/objects/{object_id}/why"


def _runtime(snapshot: dict[str, Any]) -> str:
    return " ".join(x for x in (snapshot.get("format"), snapshot.get("runtime")) if x) or "unknown"


def to_json(answer: Any) -> Any:
    """A dataclass answer (or a list of them) as plain JSON-ready data."""
    if isinstance(answer, list):
        return [to_json(item) for item in answer]
    return asdict(answer)


class AnswerCache:
    """A small thread-safe LRU of answers, keyed by snapshot load (sid) and question.

    A load never changes once it is ``ready`` (``--replace`` makes a new sid), so answers keyed by sid
    never go stale. A service gets the same questions again and again (a why-alive permalink pasted
    in a bug report, the top of the snapshot everyone opens first), so top, types and why-alive
    answers are kept. Concurrent requests for an answer not yet known wait for one computation
    instead of each starting the same one.
    """

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self._items: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
        self._pending: dict[tuple[Any, ...], threading.Lock] = {}
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...], compute: Callable[[], Any]) -> Any:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
            flight = self._pending.setdefault(key, threading.Lock())
        # Outside the cache's lock: a slow scan holds up only the requests waiting for the same answer.
        with flight:
            with self._lock:
                if key in self._items:
                    return self._items[key]
            try:
                value = compute()
            finally:
                with self._lock:
                    self._pending.pop(key, None)
            with self._lock:
                self._items[key] = value
                while len(self._items) > self.size:
                    self._items.popitem(last=False)
        return value


class Questions:
    """The questions, bound to one database and a per-query timeout."""

    def __init__(self, database: Database, timeout: float | None = DEFAULT_TIMEOUT, cache: AnswerCache | None = None) -> None:
        self.database = database
        self.timeout = timeout
        self.cache = cache

    def _run(self, name: str, **parameters: Any) -> list[dict[str, Any]]:
        return catalog.run(self.database, name, parameters, timeout=self.timeout)

    # --- lookups ------------------------------------------------------------------------------

    def snapshots(self) -> list[dict[str, Any]]:
        """The ready snapshots, oldest first."""
        return self._run("snapshots")

    def snapshot(self, tag: str) -> dict[str, Any]:
        """The ready snapshot with this tag, or :class:`NotFound`."""
        rows = self._run("snapshot", tag=tag)
        if not rows:
            raise NotFound(f"no snapshot tagged {tag!r} (see `heapdb snapshots`)")
        if rows[0]["store_version"] < STORE_VERSION:
            raise OutdatedSnapshot(
                f"snapshot {tag!r} was stored by an older heapdb (store version {rows[0]['store_version']}, now {STORE_VERSION}): "
                f"load it again with `heapdb load FILE --tag {tag} --replace`"
            )
        return rows[0]

    def _cached(self, tag: str, key: tuple[Any, ...], compute: Callable[[], Any]) -> Any:
        """``compute()``, remembered per snapshot load when a cache is set (see :class:`AnswerCache`).

        The snapshot is looked up first either way, so an unknown or outdated one is refused before
        anything reads what its load stored.
        """
        sid = self.snapshot(tag)["sid"]
        if self.cache is None:
            return compute()
        return self.cache.get((sid, *key), compute)

    def object(self, tag: str, object_id: int, *, limit: int = 50) -> ObjectDetails:
        """An object with (at most ``limit`` of) its incoming and outgoing references."""
        rows = self._run("object", tag=tag, id=object_id, limit=limit)
        if not rows:
            self._not_found(tag, object_id)
        row = rows[0]

        def neighbours(items: list[dict[str, Any]]) -> list[Neighbour]:
            return [Neighbour(Reference.from_row(item["reference"]), ObjectInfo.from_row(item["object"])) for item in items]

        return ObjectDetails(
            tag=tag,
            object=ObjectInfo.from_row(row["object"]),
            incoming=neighbours(row["incoming"]),
            outgoing=neighbours(row["outgoing"]),
            incoming_count=row["incoming_count"],
            outgoing_count=row["outgoing_count"],
        )

    def find(self, tag: str, type_name: str, name_contains: str = "", *, limit: int = 10) -> list[ObjectInfo]:
        """Objects of ``type_name`` whose name contains ``name_contains``, largest retained first."""
        rows = self._run("find", tag=tag, type=type_name, name_contains=name_contains, limit=limit)
        if not rows:
            self.snapshot(tag)
        return [ObjectInfo.from_row(r["object"]) for r in rows]

    def resolve(self, tag: str, type_name: str, name_contains: str = "") -> int:
        """The id of the largest-retaining object of a type whose name contains a text."""
        found = self.find(tag, type_name, name_contains, limit=1)
        if not found:
            condition = f" whose name contains {name_contains!r}" if name_contains else ""
            raise NotFound(f"no object of type {type_name!r}{condition} in snapshot {tag!r}")
        return found[0].id

    # --- the questions ------------------------------------------------------------------------

    def why_alive(
        self,
        tag: str,
        object_id: int,
        *,
        k: int = 1,
        ignore_names: list[str] | tuple[str, ...] = (),
        ignore_types: list[str] | tuple[str, ...] = (),
        ignore_ids: list[int] | tuple[int, ...] = (),
    ) -> WhyAlive:
        """Retaining paths from the root to the object, over :REF only.

        The first path is a shortest one: without ignore lists, the object's first path as the
        loader's breadth-first search found it, read back along :FIRST (stored query
        ``why-alive``); with them, one breadth-first
        search from the root that avoids the ignored reference names, object types and ids
        (``why-alive-avoiding``). With ``k > 1`` the further paths each end with a
        different retaining reference into the object: for each of the other direct retainers,
        nearest to the root first, the shortest path to that retainer that does not pass through the
        object, plus its reference. So the paths are distinct in their last hop, like the rows of
        DevTools' retainers view; an object with one retainer has one path whatever ``k`` is.
        """
        if not 1 <= k <= MAX_K:
            raise ParameterError(f"k must be between 1 and {MAX_K}, got {k}")
        ignored = {"names": list(ignore_names), "types": list(ignore_types), "ids": list(ignore_ids)}
        key = ("why", object_id, k, *(tuple(v) for v in ignored.values()))
        return self._cached(tag, key, lambda: self._why_alive(tag, object_id, k, ignored))

    def _why_alive(self, tag: str, object_id: int, k: int, ignored: dict[str, list[Any]]) -> WhyAlive:
        paths: list[RetainerPath] = []
        first = self._shortest_path(tag, object_id, ignored)
        if first is not None:
            paths.append(first)
            target = first.objects[-1]
        else:  # no path: tell an unknown tag or object from an unreachable or fenced-off one
            target = self._object(tag, object_id)
        if k > 1 and first is not None and first.length > 0:
            # Room for parallel references (the same holder, kind and name twice), which count once.
            holders = self._run(
                "retainers", tag=tag, id=object_id, limit=min(MAX_LIMIT, 4 * k),
                ignore_names=ignored["names"], ignore_types=ignored["types"], ignore_ids=ignored["ids"],
            )
            used = {(first.objects[-2].id, first.references[-1].kind, first.references[-1].name)}
            for row in holders:
                if len(paths) >= k:
                    break
                holder, reference = ObjectInfo.from_row(row["holder"]), Reference.from_row(row["reference"])
                if (holder.id, reference.kind, reference.name) in used:
                    continue
                used.add((holder.id, reference.kind, reference.name))
                # The path to the holder must not run through the target: that would be circular. The
                # plain search usually avoids it anyway, and is about twice as fast as the filtered one.
                prefix = self._shortest_path(tag, holder.id, ignored)
                if prefix is not None and any(o.id == object_id for o in prefix.objects):
                    prefix = self._shortest_path(tag, holder.id, {**ignored, "ids": [*ignored["ids"], object_id]})
                if prefix is not None:
                    paths.append(RetainerPath(prefix.objects + [target], prefix.references + [reference]))
        paths.sort(key=lambda p: p.length)
        return WhyAlive(tag=tag, target=target, paths=paths, ignored=ignored)

    def _shortest_path(self, tag: str, object_id: int, ignored: dict[str, list[Any]]) -> RetainerPath | None:
        if any(ignored.values()):
            rows = self._run(
                "why-alive-avoiding", tag=tag, id=object_id,
                ignore_names=ignored["names"], ignore_types=ignored["types"], ignore_ids=ignored["ids"],
            )
        else:
            rows = self._run("why-alive", tag=tag, id=object_id)
        if not rows:
            return None
        objects = [ObjectInfo.from_row(o) for o in rows[0]["objects"]]
        objects[0].root = True
        return RetainerPath(objects, [Reference.from_row(r) for r in rows[0]["references"]])

    def dominators(self, tag: str, object_id: int) -> DominatorChain:
        """The dominator chain from the root to the object: each one's removal would free it."""
        rows = self._run("dominators", tag=tag, id=object_id)
        if not rows:
            target = self._object(tag, object_id)
            return DominatorChain(tag=tag, target=target, chain=[])
        chain = [ObjectInfo.from_row(o) for o in rows[0]["objects"]]
        chain[0].root = True
        return DominatorChain(tag=tag, target=chain[-1], chain=chain)

    def retains(self, tag: str, object_id: int, *, depth: int = 3, limit: int = 50) -> Retains:
        """What the object keeps alive: its dominated subtree, largest first, bounded.

        Level by level: each level lists the children (in the dominator tree) of the objects listed
        on the level above, largest retained size first, until ``limit`` objects are listed in all or
        ``depth`` levels are done. A child's retained size never exceeds its parent's, so the biggest
        parts of the subtree come first.
        """
        if not 1 <= depth <= MAX_DEPTH:
            raise ParameterError(f"depth must be between 1 and {MAX_DEPTH}, got {depth}")
        if not 1 <= limit <= MAX_LIMIT:
            raise ParameterError(f"limit must be between 1 and {MAX_LIMIT}, got {limit}")
        target = self._object(tag, object_id)
        objects, edges = [target], []
        frontier = [target.id] if target.retained_count > 1 else []
        truncated = False
        for _level in range(depth):
            if not frontier:
                break
            room = limit - len(objects) + 1  # the target does not count against the limit
            if room <= 0:
                truncated = True
                break
            # One row more than there is room for tells whether the level was cut.
            rows = self._run("dominated", tag=tag, ids=frontier, limit=min(MAX_LIMIT, room + 1))
            if len(rows) > room:
                truncated, rows = True, rows[:room]
            frontier = []
            for row in rows:
                child = ObjectInfo.from_row(row["child"])
                objects.append(child)
                edges.append((row["parent"], child.id))
                if child.retained_count > 1:
                    frontier.append(child.id)
        else:
            truncated = truncated or bool(frontier)
        return Retains(tag=tag, target=target, objects=objects, edges=edges, depth=depth, limit=limit, truncated=truncated)

    def top(self, tag: str, *, type_name: str | None = None, limit: int = 20) -> list[ObjectInfo]:
        """The objects with the largest retained size (not the root or its synthetic root kinds)."""
        def compute() -> list[ObjectInfo]:
            rows = self._run("top", tag=tag, type=type_name, limit=limit)
            if not rows:
                self.snapshot(tag)
            return [ObjectInfo.from_row(r["object"]) for r in rows]

        return self._cached(tag, ("top", type_name, limit), compute)

    def types(self, tag: str, *, sort: str = "self_size", limit: int = 50) -> list[TypeRow]:
        """Count, shallow size and retained size per type, as stored at load (see :class:`TypeRow`)."""
        def compute() -> list[TypeRow]:
            rows = self._run("types", tag=tag, sort=sort, limit=limit)
            if not rows:
                self.snapshot(tag)
            return [TypeRow(**row) for row in rows]

        return self._cached(tag, ("types", sort, limit), compute)

    # --- across snapshots ----------------------------------------------------------------------

    def diff(self, before: str, after: str, *, by: str = "type", limit: int = 50, samples: int = 3) -> Diff | ObjectDiff:
        """What changed between two snapshots, largest growth first.

        By ``type`` or ``path``: the stored per-group totals, before and after (a :class:`Diff`); safe
        whatever the ids are. By ``object``: objects matched by id and type, per type new / survived /
        freed with the ``samples`` largest new objects (an :class:`ObjectDiff`, see :meth:`diff_objects`).
        """
        if by not in ("type", "path", "object"):
            raise ParameterError(f"by must be 'type', 'path' or 'object', not {by!r}")
        if by == "object":
            return self.diff_objects(before, after, limit=limit, samples=samples)
        for tag in (before, after):
            self.snapshot(tag)
        rows = self._run(f"diff-{by}s", before=before, after=after, limit=limit)
        changes = [
            Change(
                label=r["type"] if by == "type" else r["path"],
                hops=[r["type"]] if by == "type" else list(r["hops"] or []),
                count_before=r["count_before" if by == "type" else "objects_before"],
                count_after=r["count_after" if by == "type" else "objects_after"],
                size_before=r["size_before"],
                size_after=r["size_after"],
                retained_before=r["retained_before"],
                retained_after=r["retained_after"],
            )
            for r in rows
        ]
        return Diff(before=before, after=after, by=by, changes=changes)

    def diff_objects(self, before: str, after: str, *, limit: int = 50, samples: int = 3) -> ObjectDiff:
        """Per type, the objects new in ``after``, those that survived from ``before``, those freed.

        Objects are matched by id and type, among those the root reaches (the root and synthetic
        root kinds aside); an id found with another type counts as a new object and a freed one.
        That is only right when ids are stable between the two snapshots, so the answer carries
        ``warnings`` when the formats say ids are addresses, when the snapshots come from different
        runtimes, or when many ids both have name objects of different types (see :meth:`id_check`).
        Both snapshots are read once as columns (stored query ``object-columns``) and joined here.
        """
        old, new = self._both_columns(before, after)
        check, warnings = self._id_warnings(before, after, old, new)
        candidate, _same_id, survived = _pair(old, new)
        matched = np.zeros(old.ids.size, dtype=bool)
        matched[candidate[survived]] = True
        names = sorted(set(old.type_names) | set(new.type_names))
        code = {name: i for i, name in enumerate(names)}
        new_type = np.array([code[t] for t in new.type_names], dtype=np.int64)[new.type]
        old_type = np.array([code[t] for t in old.type_names], dtype=np.int64)[old.type]

        def per_type(types: np.ndarray, mask: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            counts = np.bincount(types[mask], minlength=len(names))
            return counts, np.bincount(types[mask], weights=sizes[mask], minlength=len(names)).astype(np.int64)

        figures = np.stack([
            *per_type(new_type, ~survived, new.self_size),
            *per_type(new_type, survived, new.self_size),
            *per_type(old_type, ~matched, old.self_size),
        ])  # rows: new count, new size, survived count, survived size, freed count, freed size
        present = np.flatnonzero(figures[[0, 2, 4]].sum(axis=0) > 0)
        order = present[np.lexsort((np.array(names, dtype=object)[present], -figures[5, present], -figures[0, present], -figures[1, present]))]
        # The largest new objects of each type: new objects sorted by type, then retained size, then id.
        fresh = np.flatnonzero(~survived)
        fresh = fresh[np.lexsort((new.ids[fresh], -new.retained_size[fresh], new_type[fresh]))]
        first = np.searchsorted(new_type[fresh], np.arange(len(names)))

        def turnover(t: int) -> Turnover:
            picked = fresh[first[t] : first[t] + min(samples, int(figures[0, t]))]
            return Turnover(
                names[t], *(int(x) for x in figures[:, t]),
                samples=[Sample(int(new.ids[i]), names[t], int(new.self_size[i]), int(new.retained_size[i]), why_link(after, int(new.ids[i]))) for i in picked],
            )

        total = Turnover("(all types)", *(int(x) for x in figures.sum(axis=1)))
        return ObjectDiff(before=before, after=after, by="object", types=[turnover(int(t)) for t in order[:limit]], total=total, check=check, warnings=warnings)

    def id_check(self, before: str, after: str) -> tuple[IdCheck, list[str]]:
        """Whether ids name the same objects in both snapshots: the figures, and a warning for each doubt.

        Doubts: a format whose ids are addresses (:data:`ADDRESS_ID_FORMATS`), different formats or
        runtimes, no id in common, or more than :data:`RETYPED_SHARE` of the shared ids with a
        different type (ids reused, or two processes). Counted are the objects the root reaches in
        each snapshot, the root and synthetic root kinds aside.
        """
        return self._id_warnings(before, after, *self._both_columns(before, after))

    def _both_columns(self, before: str, after: str) -> tuple[ObjectColumns, ObjectColumns]:
        """Both snapshots' columns, read at the same time: Neo4j builds one list while the other is
        decoded here."""
        with ThreadPoolExecutor(2) as pool:
            old, new = pool.map(self._columns, (before, after))
        return old, new

    def _columns(self, tag: str) -> ObjectColumns:
        self.snapshot(tag)
        objects = self._run("object-columns", tag=tag)[0]["objects"]
        ids, types, self_sizes, retained_sizes = zip(*objects) if objects else ((), (), (), ())
        type_code: dict[str, int] = {}
        return ObjectColumns(
            ids=np.array(ids, dtype=np.int64),
            type=np.fromiter((type_code.setdefault(t, len(type_code)) for t in types), dtype=np.int64, count=len(types)),
            type_names=list(type_code),
            self_size=np.array(self_sizes, dtype=np.int64),
            retained_size=np.array(retained_sizes, dtype=np.int64),
        )

    def _id_warnings(self, before: str, after: str, old: ObjectColumns, new: ObjectColumns) -> tuple[IdCheck, list[str]]:
        snapshots = {tag: self.snapshot(tag) for tag in (before, after)}
        _candidate, shared, same_type = _pair(old, new)
        check = IdCheck(after_objects=int(new.ids.size), shared=int(shared.sum()), retyped=int((shared & ~same_type).sum()))
        warnings = []
        for tag, s in snapshots.items():
            if s.get("format") in ADDRESS_ID_FORMATS:
                warnings.append(f"snapshot {tag!r} is a {s['format']} snapshot: its ids are addresses, which a later object may reuse")
        a, b = snapshots[before], snapshots[after]
        if (a.get("format"), a.get("runtime")) != (b.get("format"), b.get("runtime")):
            warnings.append(
                f"the snapshots come from different runtimes ({_runtime(a)} and {_runtime(b)}): their ids are unrelated"
            )
        if check.after_objects and not check.shared:
            warnings.append(f"no id of {after!r} is in {before!r}: the snapshots do not come from one process")
        elif check.shared and check.retyped > RETYPED_SHARE * check.shared:
            warnings.append(
                f"{check.retyped:,} of the {check.shared:,} ids both snapshots have ({check.retyped / check.shared:.1%}) name objects "
                "of a different type: ids were reused, or the snapshots come from different processes"
            )
        if warnings:
            warnings.append("matching by id may be wrong: compare by type or by path instead (they need no stable ids)")
        return check, warnings

    def leaks(self, baseline: str, target: str, final: str, *, by: str = "id", limit: int = 20) -> Leaks:
        """memlab's three-snapshot leak candidates: allocated after ``baseline``, still alive in ``final``.

        By ``id`` (memlab's own rule): objects whose id is absent from baseline, present in target and
        in final, clustered by retainer path in final and ranked by retained size; ids must be stable,
        so the answer carries the warnings of :meth:`id_check` (baseline against final). By ``path``:
        retainer paths that gained objects from baseline to target and did not give them back in
        final (count in final >= count in target), ranked by the growth of their retained size from
        baseline to final; needs no stable ids.
        """
        if by not in ("id", "path"):
            raise ParameterError(f"by must be 'id' or 'path', not {by!r}")
        for tag in (baseline, target, final):
            self.snapshot(tag)
        warnings: list[str] = []
        if by == "id":
            _check, warnings = self.id_check(baseline, final)
            rows = self._run("leaks", baseline=baseline, target=target, final=final, limit=limit)
        else:
            rows = self._run("leaks-paths", baseline=baseline, target=target, final=final, limit=limit)
        clusters = [
            LeakCluster(
                signature=r["sig"],
                path=r["path"],
                hops=list(r["hops"] or []),
                type=r["type"],
                objects=r["objects"],
                self_size=r["self_size"],
                retained_size=r["retained_size"],
                sample_ids=r["sample_ids"],
                why=why_link(final, r["sample_ids"][0]),
                counts=r.get("counts"),
            )
            for r in rows
        ]
        return Leaks(baseline=baseline, target=target, final=final, clusters=clusters, by=by, warnings=warnings)

    def growth(self, tags: list[str] | tuple[str, ...], *, by: str = "type", limit: int = 50) -> GrowthReport:
        """Types or retainer paths whose shallow size grew at every step across three or more snapshots.

        Their object count must never shrink either. Ranked by the growth from the first snapshot to
        the last; reads the stored per-group totals only, so it is fast at any heap size.
        """
        if by not in ("type", "path"):
            raise ParameterError(f"by must be 'type' or 'path', not {by!r}")
        tags = list(tags)
        if len(tags) < 3:
            raise ParameterError(f"growth needs at least three snapshots, got {len(tags)}")
        if len(set(tags)) != len(tags):
            raise ParameterError("growth needs distinct snapshots: a tag is given twice")
        for tag in tags:
            self.snapshot(tag)
        rows = self._run(f"growth-{by}s", tags=tags, limit=limit)
        return GrowthReport(
            tags=tags,
            by=by,
            rows=[
                Growth(
                    label=r["type"] if by == "type" else r["path"],
                    hops=[r["type"]] if by == "type" else list(r["hops"] or []),
                    counts=r["counts"], sizes=r["sizes"], retained=r["retained"],
                    size_growth=r["size_growth"], count_growth=r["count_growth"],
                    signature=r.get("sig"),
                )
                for r in rows
            ],
        )

    def suspects(self, tag: str, *, share: float = 0.1, ratio: float = 0.8, limit: int = 20) -> Suspects:
        """Eclipse MAT-style leak suspects in one snapshot.

        The 100% is the snapshot's reachable size (summed self sizes of the objects the root reaches).
        Objects: the topmost objects (immediately dominated by the root or a synthetic root-kind node)
        retaining at least ``share`` of it, each with its accumulation point, found by descending the
        dominator tree through the child holding at least ``ratio`` of its parent's retained size.
        Types: those whose objects together retain at least ``share`` of it.
        """
        if not 0 < share <= 1:
            raise ParameterError(f"share must be above 0 and at most 1, got {share}")
        if not 0.5 < ratio <= 1:
            raise ParameterError(f"ratio must be above 0.5 and at most 1, got {ratio}")
        reachable = int(self.snapshot(tag)["reachable_size"])
        min_retained = max(1, math.ceil(share * reachable))
        percent = max(51, round(ratio * 100))
        rows = self._run("suspects", tag=tag, min_retained=min_retained, ratio=percent, limit=limit)
        objects = []
        for r in rows:
            o, point = ObjectInfo.from_row(r["object"]), ObjectInfo.from_row(r["point"])
            accumulation = AccumulationPoint(
                object=point, depth=r["depth"], children=r["children"], largest_child=r["largest_child"],
                largest_child_share=r["largest_child"] / point.retained_size if point.retained_size else 0.0,
                why=why_link(tag, point.id),
            )
            objects.append(SuspectObject(object=o, share=o.retained_size / reachable, why=why_link(tag, o.id), accumulation=accumulation))
        types = [
            SuspectType(type=r["type"], count=r["count"], self_size=r["self_size"], retained_size=r["retained_size"], share=r["retained_size"] / reachable)
            for r in self._run("suspect-types", tag=tag, min_retained=min_retained, limit=limit)
        ]
        return Suspects(tag=tag, share=share, ratio=percent / 100, reachable_size=reachable, min_retained=min_retained, objects=objects, types=types)

    # --- helpers ------------------------------------------------------------------------------

    def _object(self, tag: str, object_id: int) -> ObjectInfo:
        rows = self._run("object", tag=tag, id=object_id, limit=0)
        if not rows:
            self._not_found(tag, object_id)
        return ObjectInfo.from_row(rows[0]["object"])

    def _not_found(self, tag: str, object_id: int) -> None:
        self.snapshot(tag)
        raise NotFound(f"no object with id {object_id} in snapshot {tag!r}")
