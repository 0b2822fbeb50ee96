"""The questions heapdb answers, one typed function each, shared by the CLI and the REST service.

Every function takes a :class:`~heapdb.db.Database`, a snapshot tag and the question's parameters,
runs stored queries (:mod:`heapdb.queries.catalog`) and returns dataclasses. Callers only parse input
and render output (:mod:`heapdb.render`, the CLI, the service). An unknown tag or object raises
:class:`NotFound`; a bad parameter raises :class:`~heapdb.queries.catalog.ParameterError`.

Limits (the ``MAX_*`` constants) bound every answer, so no request can ask for the whole heap.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import quote

from heapdb.db import Database
from heapdb.errors import NotFound
from heapdb.queries import catalog
from heapdb.queries.catalog import ParameterError

MAX_K = 10  # retainer paths per why-alive answer
MAX_DEPTH = 20  # levels of a dominated subtree
MAX_LIMIT = 1000  # rows of a list, nodes of a subtree
DEFAULT_TIMEOUT = 30.0  # seconds per query


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
    type: str
    count: int
    self_size: int
    retained_size: int  # summed over the type's objects: nested ones count more than once
    max_retained_size: int


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


@dataclass
class Leaks:
    baseline: str
    target: str
    final: str
    clusters: list[LeakCluster]


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


def to_json(answer: Any) -> Any:
    """A dataclass answer (or a list of them) as plain JSON-ready data."""
    if isinstance(answer, list):
        return [to_json(item) for item in answer]
    return asdict(answer)


class AnswerCache:
    """A small thread-safe LRU of answers, keyed by snapshot load (sid) and question.

    A load never changes once it is ``ready`` (``--replace`` makes a new sid), so answers keyed by sid
    never go stale. Only the questions that scan a whole snapshot (top, types) use it: on millions of
    objects they take seconds, and a service gets the same ones again and again. Concurrent requests
    for an answer not yet known wait for one computation instead of each starting the same scan.
    """

    def __init__(self, size: int = 256) -> None:
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
        return rows[0]

    def _cached(self, tag: str, key: tuple[Any, ...], compute: Callable[[], Any]) -> Any:
        """``compute()``, remembered per snapshot load when a cache is set (see :class:`AnswerCache`)."""
        if self.cache is None:
            return compute()
        sid = self.snapshot(tag)["sid"]
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

        The first path is a shortest one: without ignore lists, shortest paths between consecutive
        dominators joined end to end (stored query ``why-alive``); with them, one breadth-first
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
        """Count, shallow size and retained size per type (see :class:`TypeRow` on double counting)."""
        def compute() -> list[TypeRow]:
            rows = self._run("types", tag=tag, sort=sort, limit=limit)
            if not rows:
                self.snapshot(tag)
            return [TypeRow(**row) for row in rows]

        return self._cached(tag, ("types", sort, limit), compute)

    # --- across snapshots ----------------------------------------------------------------------

    def diff(self, before: str, after: str, *, by: str = "type", limit: int = 50) -> Diff:
        """What changed between two snapshots, per type or per retainer path, largest growth first."""
        if by not in ("type", "path"):
            raise ParameterError(f"by must be 'type' or 'path', not {by!r}")
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

    def leaks(self, baseline: str, target: str, final: str, *, limit: int = 20) -> Leaks:
        """memlab's three-snapshot leak candidates, clustered by retainer path (object ids must be stable)."""
        for tag in (baseline, target, final):
            self.snapshot(tag)
        rows = self._run("leaks", baseline=baseline, target=target, final=final, limit=limit)
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
                why=f"/api/snapshots/{quote(final, safe='')}/objects/{r['sample_ids'][0]}/why",
            )
            for r in rows
        ]
        return Leaks(baseline=baseline, target=target, final=final, clusters=clusters)

    # --- helpers ------------------------------------------------------------------------------

    def _object(self, tag: str, object_id: int) -> ObjectInfo:
        rows = self._run("object", tag=tag, id=object_id, limit=0)
        if not rows:
            self._not_found(tag, object_id)
        return ObjectInfo.from_row(rows[0]["object"])

    def _not_found(self, tag: str, object_id: int) -> None:
        self.snapshot(tag)
        raise NotFound(f"no object with id {object_id} in snapshot {tag!r}")
