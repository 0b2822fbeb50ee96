"""Questions about one snapshot: an object and its neighbours, why it is alive, what dominates it,
what it retains, what retains most, and totals per type.

Why this module is long: it also reads back every inspection a load stores (duplicate strings and
objects, detached DOM, React, collections), each a few lines of turning stored rows into the
inspection's own result, with the one message per inspection that says why one is missing; apart,
those would be many small modules repeating the same reading of a snapshot.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

from heapdb.errors import NotComputed, NotFound, ParameterError
from heapdb.loader.graph import SYNTHETIC_KIND
from heapdb.loader.inspections.collections import STALE_TOTALS, StaleCollection, StaleCollections
from heapdb.loader.inspections.common import ObjectRow
from heapdb.loader.inspections.dom import DOM_TOTALS, DetachedDom, DetachedGroup
from heapdb.loader.inspections.fill import FILL_TOTALS, CollectionFill, FillRow, FillType
from heapdb.loader.inspections.held import Held, held_from_stored
from heapdb.loader.inspections.objects import OBJECT_TOTALS, DuplicateObject, DuplicateObjects
from heapdb.loader.inspections.react import REACT_TOTALS, UnmountedComponent, UnmountedFibers
from heapdb.loader.inspections.react_hooks import HOOKS_TOTALS, ComponentHooks, ComponentMemory, Hook
from heapdb.loader.inspections.strings import STRING_TOTALS, DuplicateString, DuplicateStrings, StringOwner
from heapdb.loader.owners.table import OwnerTable
from heapdb.loader.store import DroppedReferences, Snapshot
from heapdb.loader.values import decode
from heapdb.queries import catalog, ignoring, missing, params
from heapdb.queries.base import Asking, SnapshotRef
from heapdb.queries.lifecycle import path_labels
from heapdb.queries.params import MAX_LIMIT
from heapdb.queries.results import (
    DominatorChain,
    Neighbour,
    ObjectDetails,
    ObjectInfo,
    PrimitiveValue,
    Reference,
    ReferenceLevel,
    RetainerPath,
    Retains,
    TypeRow,
    WhyAlive,
)

T = TypeVar("T")
# One level of an object's retainers tree ("in") and of its containment tree ("out").
LEVEL_QUERIES = {"in": "retainer-level", "out": "containment-level"}


class SnapshotQuestions(Asking):
    def strings(self, ref: SnapshotRef, p: params.Strings = params.Strings()) -> DuplicateStrings:
        """The duplicated string contents the load stored, first by ``p.sort`` (stored query
        ``duplicate-strings``), as :func:`heapdb.loader.inspections.strings.duplicate_strings` lists a
        file's; :class:`NotComputed` where the load did not compute them."""

        def answer(tag: str, totals: dict[str, Any], rows: list[dict[str, Any]]) -> DuplicateStrings:
            shown = ("key", "value", "length", "count", "retained_size", "wasted", "example_id")
            found = tuple(DuplicateString(**{k: r[k] for k in shown}, owners=_owners(r)) for r in rows)
            return DuplicateStrings(source=tag, **{f: int(totals[f]) for f in STRING_TOTALS}, sort=p.sort, rows=found)

        return self._inspection(ref, "strings", missing.STRINGS, p, answer)

    def dup_objects(self, ref: SnapshotRef, p: params.DupObjects = params.DupObjects()) -> DuplicateObjects:
        """The duplicated object contents the load stored, first by ``p.sort`` (stored query
        ``duplicate-objects``), as :func:`heapdb.loader.inspections.objects.duplicate_objects` lists a
        file's; :class:`NotComputed` where the load did not compute them."""

        def answer(tag: str, totals: dict[str, Any], rows: list[dict[str, Any]]) -> DuplicateObjects:
            shown = ("key", "type", "value", "size", "count", "retained_size", "wasted", "example_id")
            found = tuple(DuplicateObject(**{k: r[k] for k in shown}, owners=_owners(r)) for r in rows)
            figures = {f: int(totals[f]) for f in OBJECT_TOTALS if f != "rule"}
            return DuplicateObjects(source=tag, rule=str(totals["rule"]), **figures, sort=p.sort, rows=found)

        return self._inspection(ref, "objects", missing.OBJECTS, p, answer)

    def dom(self, ref: SnapshotRef, p: params.Dom = params.Dom()) -> DetachedDom:
        """The detached DOM the load stored, its largest holder paths first (stored query
        ``detached-dom``), as :func:`heapdb.loader.inspections.dom.detached_dom` lists a file's;
        :class:`NotComputed` where the load did not compute it."""

        def answer(tag: str, stored: dict[str, Any], rows: list[dict[str, Any]]) -> DetachedDom:
            totals = {f: int(stored[f]) for f in DOM_TOTALS}
            groups = tuple(DetachedGroup(**r) for r in rows)
            return DetachedDom(source=tag, **totals, groups=groups, largest=_objects(stored["largest"]))

        return self._inspection(ref, "dom", missing.DOM, p, answer)

    def react(self, ref: SnapshotRef, p: params.React = params.React()) -> UnmountedFibers:
        """The unmounted React components the load stored, those retaining most first (stored query
        ``unmounted-components``), as :func:`heapdb.loader.inspections.react.unmounted_fibers` lists
        a file's; :class:`NotComputed` where the load did not compute them."""

        def answer(tag: str, stored: dict[str, Any], rows: list[dict[str, Any]]) -> UnmountedFibers:
            totals = {f: int(stored[f]) for f in REACT_TOTALS}
            components = tuple(UnmountedComponent(**r) for r in rows)
            return UnmountedFibers(source=tag, **totals, rows=components, largest=_objects(stored["largest"]))

        return self._inspection(ref, "react", missing.REACT, p, answer)

    def react_hooks(self, ref: SnapshotRef, p: params.ReactHooks = params.ReactHooks()) -> ComponentHooks:
        """Memory by React component and hook that the load stored, the components whose fibers
        retain most first, as :func:`heapdb.loader.inspections.react_hooks.component_hooks` lists a
        file's; :class:`NotComputed` where the load did not compute it."""
        snapshot, stored = self.stored(ref, "hooks", missing.REACT_HOOKS)
        rows = tuple(
            ComponentMemory(**{**r, "hooks": tuple(Hook(**h) for h in r["hooks"])}) for r in stored["rows"][: p.limit]
        )
        return ComponentHooks(source=snapshot.tag, **{f: int(stored[f]) for f in HOOKS_TOTALS}, rows=rows)

    def stale(self, ref: SnapshotRef, p: params.Stale = params.Stale()) -> StaleCollections:
        """The collections holding detached DOM or unmounted fibers that the load stored, the most
        stale bytes first, as :func:`heapdb.loader.inspections.collections.stale_collections` lists a
        file's; :class:`NotComputed` where the load did not compute them."""
        snapshot, stored = self.stored(ref, "stale", missing.STALE)
        rows = tuple(StaleCollection(**{**r, "stale_ids": tuple(r["stale_ids"])}) for r in stored["rows"])
        return StaleCollections(source=snapshot.tag, **{f: int(stored[f]) for f in STALE_TOTALS}, rows=rows[: p.limit])

    def held(self, ref: SnapshotRef, p: params.Held = params.Held()) -> Held:
        """What event listeners, the console and closures alone keep alive, and the global
        variables the program added, as the load stored them (:func:`heapdb.loader.inspections.held.held`
        lists a file's); :class:`NotComputed` where the load did not compute them."""
        snapshot, stored = self.stored(ref, "held", missing.HELD)
        return held_from_stored(stored, source=snapshot.tag, limit=p.limit)

    def owners(self, ref: SnapshotRef, p: params.Owners = params.Owners()) -> OwnerTable:
        """Memory by owner (package, file, category...) as the load stored it, each level's
        largest first (:func:`heapdb.loader.owners.table.owner_table` lists a file's);
        :class:`NotComputed` where the load did not compute them."""
        snapshot, stored = self.stored(ref, "owners", missing.OWNERS)
        table = OwnerTable.from_stored(snapshot.tag, stored)
        if p.level is not None and table.level(p.level) is None:
            have = ", ".join(lv.level for lv in table.levels) or "none"
            raise ParameterError(f"snapshot {snapshot.tag!r} has no owner level {p.level!r} (it has: {have})")
        return table.limited(p.level, p.limit)

    def fill(self, ref: SnapshotRef, p: params.Fill = params.Fill()) -> CollectionFill:
        """The collections by fill that the load stored: per type, and the collections whose unused
        capacity takes most bytes, as :func:`heapdb.loader.inspections.fill.collection_fill` lists a
        file's; :class:`NotComputed` where the load did not compute them."""
        snapshot, stored = self.stored(ref, "fill", missing.FILL)
        types = tuple(FillType(**{**t, "histogram": tuple(t["histogram"])}) for t in stored["types"])
        rows = tuple(FillRow(**r) for r in stored["rows"])
        totals = {f: int(stored[f]) for f in FILL_TOTALS}
        return CollectionFill(source=snapshot.tag, **totals, types=types, rows=rows[: p.limit])

    def _inspection(
        self,
        ref: SnapshotRef,
        stored_as: str,
        missing: Callable[[Snapshot], NotComputed],
        p: params.Strings | params.Dom | params.React,
        answer: Callable[[str, dict[str, Any], list[dict[str, Any]]], T],
    ) -> T:
        """An inspection as its load stored it: ``answer(tag, totals, rows)`` from the totals in the
        ``:Snapshot``'s ``stored_as`` property and the rows of ``p``'s stored query, run with ``p``'s
        values; ``missing(snapshot)`` where the load did not compute it (:meth:`stored`)."""
        snapshot, stored = self.stored(ref, stored_as, missing)

        def compute() -> T:
            return answer(snapshot.tag, stored, self._run(p.stored[0], tag=snapshot.tag, **p.model_dump()))

        found: T = self._cached(snapshot, (stored_as, p), compute)
        return found

    def object(
        self, ref: SnapshotRef, object_id: int, p: params.ObjectDetails = params.ObjectDetails()
    ) -> ObjectDetails:
        """An object with (at most ``p.limit`` of) its incoming and outgoing references.

        Read as the first level of each of its trees (stored queries ``retainer-level`` and
        ``containment-level``), which page a hub's references from the order its load wrote; the
        stored query ``object`` gives the same rows in one call, but sorts every reference of a hub.
        """
        snapshot = self.snapshot(ref, objects=True)
        level = {"tag": snapshot.tag, "id": object_id, "offset": 0, "limit": p.limit}
        held_by, holds, values = self._reading(
            lambda ask: [
                ask(LEVEL_QUERIES["in"], level),
                ask(LEVEL_QUERIES["out"], level),
                ask("object-values", {"tag": snapshot.tag, "id": object_id}),
            ]
        )
        incoming = self._as_level(snapshot, object_id, "in", 0, held_by)
        outgoing = self._as_level(snapshot, object_id, "out", 0, holds)
        return ObjectDetails(
            tag=snapshot.tag,
            object=incoming.object,
            incoming=incoming.references,
            outgoing=outgoing.references,
            incoming_count=incoming.total,
            outgoing_count=outgoing.total,
            values=_values(values[0]) if values else [],
        )

    def _level(self, snapshot: Snapshot, object_id: int, direction: str, offset: int, limit: int) -> ReferenceLevel:
        """One level of the object's retainers (``direction`` "in") or containment ("out") tree: a
        page of its references, weak ones listed and marked (stored queries :data:`LEVEL_QUERIES`)."""
        rows = self._run(LEVEL_QUERIES[direction], tag=snapshot.tag, id=object_id, offset=offset, limit=limit)
        return self._as_level(snapshot, object_id, direction, offset, rows)

    def _as_level(
        self, snapshot: Snapshot, object_id: int, direction: str, offset: int, rows: list[dict[str, Any]]
    ) -> ReferenceLevel:
        """The rows of a level's stored query as the level (:class:`NotFound` when there are none)."""
        if not rows:
            raise self._not_found(snapshot, object_id)
        this = ObjectInfo.from_row(rows[0]["object"])
        found = self._neighbours(snapshot, this, rows[0]["rows"], incoming=direction == "in")
        return ReferenceLevel(snapshot.tag, this, direction, offset, rows[0]["total"], found)

    def _neighbours(
        self, snapshot: Snapshot, this: ObjectInfo, items: list[dict[str, Any]], incoming: bool
    ) -> list[Neighbour]:
        """``this`` object's references as rows give them (``reference``, ``object``), each marked
        ``dropped`` where the snapshot's rules keep it from retaining."""
        dropped = self._dropped(snapshot)
        found = []
        for item in items:
            reference, other = Reference.from_row(item["reference"]), ObjectInfo.from_row(item["object"])
            holder, target = (other, this) if incoming else (this, other)
            if dropped is not None and not reference.weak and dropped.contains(holder.id, target.id):
                reference = replace(reference, dropped=True)
            found.append(Neighbour(reference, other))
        return found

    def find(self, ref: SnapshotRef, p: params.Find) -> list[ObjectInfo]:
        """Objects of ``p.type`` whose name contains ``p.name_contains``, largest retained first.

        Searches the type's listing stored at load (:class:`~heapdb.loader.store.TypeListing`), kept
        by the service's cache once read, then reads the objects found by id; a type without a
        listing (only root, synthetic or unreachable objects have it) is searched object by object
        (stored query ``find``), with the same answer.
        """
        snapshot = self.snapshot(ref, all_objects=True)
        listing = self._listing(snapshot, p.type)
        if listing is None:
            rows = self._run("find", tag=snapshot.tag, type=p.type, name_contains=p.name_contains, limit=p.limit)
        else:
            ids = listing.matching(p.name_contains, p.limit).tolist()
            rows = self._run("objects-brief", tag=snapshot.tag, ids=ids) if ids else []
        return [ObjectInfo.from_row(r["object"]) for r in rows]

    def resolve(self, ref: SnapshotRef, type_name: str, name_contains: str = "") -> int:
        """The id of the largest-retaining object of a type whose name contains a text."""
        snapshot = self.snapshot(ref, all_objects=True)
        found = self.find(snapshot, params.Find(type=type_name, name_contains=name_contains, limit=1))
        if not found:
            condition = f" whose name contains {name_contains!r}" if name_contains else ""
            raise NotFound(f"no object of type {type_name!r}{condition} in snapshot {snapshot.tag!r}")
        return found[0].id

    def why_alive(self, ref: SnapshotRef, object_id: int, p: params.Why = params.Why()) -> WhyAlive:
        """Retaining paths from the root to the object, over :REF only.

        The first path is a shortest one: without ignore lists, the object's first path as the
        loader's breadth-first search found it, read back along ``via`` (stored query
        ``why-alive``); with them, one breadth-first search from the root that avoids the ignored
        reference names, object types and ids (``why-alive-avoiding``). ``--ignore`` selectors
        (:mod:`heapdb.queries.ignoring`) are checked on each path found, and the search asked again
        without the references they name, until a path uses none.

        With ``k > 1``, further paths that differ in more than their last hop, most different
        first: each *independent* path shares no object with the paths before it but the root, the
        runtime's root groups and the object's dominators (which every path passes through); then,
        when no further independent path exists, one path through each of the object's other
        direct holders, nearest to the root first: the shortest path to that holder that does not
        pass through the object, plus its reference (shortest first). A second reference from a
        holder already on a path adds nothing, so an object with one holder has one path.
        """
        snapshot = self.snapshot(ref, objects=True)
        return self._cached(snapshot, ("why", object_id, p), lambda: self._why_alive(snapshot, object_id, p))

    def _dropped(self, snapshot: Snapshot) -> DroppedReferences | None:
        """The references the snapshot's rules keep from retaining (stored query ``dropped-references``)."""
        if snapshot.rules is None and snapshot.default_rules is None:
            return None

        def read() -> DroppedReferences | None:
            rows = self._run("dropped-references", tag=snapshot.tag)
            if not rows or rows[0]["holders"] is None:
                return None
            return DroppedReferences.from_properties(rows[0]["holders"], rows[0]["targets"])

        return self._cached(
            snapshot, ("dropped references",), read, weigh=lambda found: 0 if found is None else found.nbytes
        )

    def _why_alive(self, snapshot: Snapshot, object_id: int, p: params.Why) -> WhyAlive:
        avoid = ignoring.avoiding(p.ignore_name, p.ignore_type, p.ignore_id, p.ignore, self._dropped(snapshot))
        ignored: dict[str, list[Any]] = {
            "names": list(p.ignore_name),
            "types": list(p.ignore_type),
            "ids": list(p.ignore_id),
            "selectors": list(p.ignore),
        }
        paths: list[RetainerPath] = []
        first = self._shortest_path(snapshot, object_id, avoid)
        if first is not None:
            paths.append(first)
            target = first.objects[-1]
        else:  # no path: an unknown object raises here; an unreachable or fenced-off one has none
            target = self._object(snapshot, object_id)
        if p.k > 1 and first is not None and first.length > 0:
            paths += self._independent_paths(snapshot, object_id, avoid, first, p.k - 1)
            if len(paths) < p.k:
                paths += self._paths_via_other_holders(snapshot, target, avoid, paths, p.k - len(paths))
        labels = path_labels(self, snapshot, paths)  # Java snapshots only: others' answers stay as they were
        return WhyAlive(tag=snapshot.tag, target=target, paths=paths, ignored=ignored, leak_status=labels)

    def _independent_paths(
        self, snapshot: Snapshot, object_id: int, avoid: ignoring.Avoiding, first: RetainerPath, wanted: int
    ) -> list[RetainerPath]:
        """Up to ``wanted`` paths, each sharing nothing with ``first`` and those found before it but
        the root, root groups and the object's dominators."""
        rows = self._run("dominators", tag=snapshot.tag, id=object_id)
        shared = {o["id"] for o in rows[0]["objects"]} if rows else set()
        found: list[RetainerPath] = []
        fenced: set[int] = set()
        last = first
        while len(found) < wanted:
            more = {o.id for o in last.objects[1:-1] if o.kind != SYNTHETIC_KIND} - shared - fenced
            if not more:  # the last path ran through nothing but what every path must pass
                break
            fenced |= more
            last_or_none = self._shortest_path(snapshot, object_id, avoid.with_ids(sorted(fenced)))
            if last_or_none is None:
                break
            last = last_or_none
            found.append(last)
        return found

    def _paths_via_other_holders(
        self, snapshot: Snapshot, target: ObjectInfo, avoid: ignoring.Avoiding, paths: list[RetainerPath], wanted: int
    ) -> list[RetainerPath]:
        """Up to ``wanted`` paths through the object's direct holders that no path in ``paths`` ends at."""
        rows = self._run(
            "retainers",
            tag=snapshot.tag,
            id=target.id,
            # Room for holders the selectors leave out and for those already ending a path.
            limit=min(MAX_LIMIT, 4 * (wanted + len(paths))),
            **avoid.query_parameters(),
        )
        used = {path.objects[-2].id for path in paths}
        found: list[RetainerPath] = []
        for row in rows:
            if len(found) >= wanted:
                break
            holder, reference = ObjectInfo.from_row(row["holder"]), Reference.from_row(row["reference"])
            if holder.id in used or avoid.lists(reference) or avoid.skips(holder, reference, target):
                continue
            used.add(holder.id)
            # The path to the holder must not run through the target: that would be circular. The
            # plain search usually avoids it anyway, and is about twice as fast as the filtered one.
            prefix = self._shortest_path(snapshot, holder.id, avoid)
            if prefix is not None and any(o.id == target.id for o in prefix.objects):
                prefix = self._shortest_path(snapshot, holder.id, avoid.with_ids([target.id]))
            if prefix is not None:
                found.append(RetainerPath(prefix.objects + [target], prefix.references + [reference]))
        # Shortest first: one through a transient V8 root group (a handle scope) may be shorter than
        # the first path, which follows those last.
        return sorted(found, key=lambda path: path.length)

    def _shortest_path(self, snapshot: Snapshot, object_id: int, avoid: ignoring.Avoiding) -> RetainerPath | None:
        """A shortest retaining path from the root to the object that avoids ``avoid``."""
        if not avoid.searched:
            # The stored first path is a shortest one under the snapshot's rules (it uses no
            # reference they drop); when no selector names one of its references, it is the answer.
            stored = self._path_rows(self._run("why-alive", tag=snapshot.tag, id=object_id))
            if stored is not None and len(stored.objects) != (stored.objects[-1].distance or 0) + 1:
                # A holder on the way is not written yet: the load is still writing objects.
                unwritten = self._unwritten(snapshot, object_id)
                if unwritten is not None:
                    raise unwritten
            if stored is None or not avoid.selectors or not self._ignored_hops(stored, avoid):
                return stored
        excluded: list[str] = []
        for _round in range(ignoring.MAX_ROUNDS):
            rows = self._run(
                "why-alive-avoiding", tag=snapshot.tag, id=object_id, ignore_refs=excluded, **avoid.search_parameters()
            )
            path = self._path_rows(rows)
            if path is None:
                return None
            if path.objects[-1].type in avoid.cut_types and path.length > 0:
                return None  # every reference into the object is ignored
            hops = self._ignored_hops(path, avoid)
            if not hops:
                return path
            learned = avoid.learn(path.objects, path.references, hops)
            if learned.cut:
                return None
            avoid = learned.avoiding
            excluded += [rows[0]["references"][i]["ref"] for i in learned.single]
        raise ParameterError(
            f"the shortest paths still used references that {ignoring.OPTION} selectors or the snapshot's "
            f"rules leave out after {ignoring.MAX_ROUNDS} searches; select them more broadly (for example "
            "by `to.type`, `edge.name` or `edge.kind` alone, which the search checks itself)"
        )

    @staticmethod
    def _ignored_hops(path: RetainerPath, avoid: ignoring.Avoiding) -> list[int]:
        objects = path.objects
        return [i for i, reference in enumerate(path.references) if avoid.skips(objects[i], reference, objects[i + 1])]

    @staticmethod
    def _path_rows(rows: list[dict[str, Any]]) -> RetainerPath | None:
        if not rows:
            return None
        objects = [ObjectInfo.from_row(o) for o in rows[0]["objects"]]
        objects[0] = replace(objects[0], root=True)
        return RetainerPath(objects, [Reference.from_row(r) for r in rows[0]["references"]])

    def dominators(self, ref: SnapshotRef, object_id: int) -> DominatorChain:
        """The dominator chain from the root to the object: each one's removal would free it."""
        snapshot = self.snapshot(ref, objects=True)
        rows = self._run("dominators", tag=snapshot.tag, id=object_id)
        if not rows:
            return DominatorChain(tag=snapshot.tag, target=self._object(snapshot, object_id), chain=[])
        chain = [ObjectInfo.from_row(o) for o in rows[0]["objects"]]
        if snapshot.root_id is not None and chain[0].id != snapshot.root_id:
            # A dominator on the way is not written yet: the load is still writing objects.
            unwritten = self._unwritten(snapshot, object_id)
            if unwritten is not None:
                raise unwritten
        chain[0] = replace(chain[0], root=True)
        return DominatorChain(tag=snapshot.tag, target=chain[-1], chain=chain)

    def retains(self, ref: SnapshotRef, object_id: int, p: params.Retains = params.Retains()) -> Retains:
        """What the object keeps alive: its dominated subtree, largest first, bounded.

        Level by level: each level lists the children (in the dominator tree) of the objects listed
        on the level above, largest retained size first, until ``p.limit`` objects are listed in all
        or ``p.depth`` levels are done. A child's retained size never exceeds its parent's, so the
        biggest parts of the subtree come first.
        """
        snapshot = self.snapshot(ref, objects=True)

        def walk(ask: catalog.Ask) -> tuple[list[ObjectInfo], list[tuple[int, int]], bool]:
            found = ask("object-brief", {"tag": snapshot.tag, "id": object_id})
            if not found:
                return [], [], False  # said outside the transaction (telling why reads afresh)
            target = ObjectInfo.from_row(found[0]["object"])
            objects, edges = [target], []
            frontier = [target.id] if target.retained_count > 1 else []
            truncated = False
            for _level in range(p.depth):
                if not frontier:
                    break
                room = p.limit - len(objects) + 1  # the target does not count against the limit
                if room <= 0:
                    truncated = True
                    break
                # One row more than there is room for tells whether the level was cut.
                rows = ask("dominated", {"tag": snapshot.tag, "ids": frontier, "limit": min(MAX_LIMIT, room + 1)})
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
            return objects, edges, truncated

        objects, edges, truncated = self._reading(walk)
        if not objects:
            raise self._not_found(snapshot, object_id)
        target = objects[0]
        return Retains(
            tag=snapshot.tag,
            target=target,
            objects=objects,
            edges=edges,
            depth=p.depth,
            limit=p.limit,
            truncated=truncated,
        )

    def top(self, ref: SnapshotRef, p: params.Top = params.Top()) -> list[ObjectInfo]:
        """The objects with the largest retained size (not the root or its synthetic root kinds)."""
        snapshot = self.snapshot(ref, objects=True)

        def compute() -> list[ObjectInfo]:
            rows = self._run("top", tag=snapshot.tag, type=p.type, limit=p.limit)
            return [ObjectInfo.from_row(r["object"]) for r in rows]

        return self._cached(snapshot, ("top", p), compute)

    def types(self, ref: SnapshotRef, p: params.Types = params.Types()) -> list[TypeRow]:
        """Count, shallow size and retained size per type, as stored at load (see :class:`TypeRow`)."""
        snapshot = self.snapshot(ref)

        def compute() -> list[TypeRow]:
            return [TypeRow(**row) for row in self._run("types", tag=snapshot.tag, sort=p.sort, limit=p.limit)]

        return self._cached(snapshot, ("types", p), compute)


def _values(row: dict[str, Any]) -> list[PrimitiveValue]:
    """An object's stored primitive values (stored query ``object-values``), decoded."""
    if row["values"] is None:
        return []
    array = row["type"] if row["type"].endswith("[]") else None
    return [PrimitiveValue(*value) for value in decode(row["values"], row["layout"], array)]


def _owners(row: dict[str, Any]) -> tuple[StringOwner, ...]:
    """A stored duplicates row's owner types (``owner_types``, ``owner_copies``, ``owner_example_ids``)."""
    return tuple(
        StringOwner(type=t, copies=c, example_id=e)
        for t, c, e in zip(row["owner_types"], row["owner_copies"], row["owner_example_ids"], strict=True)
    )


def _objects(stored: list[list[Any]]) -> tuple[ObjectRow, ...]:
    """An inspection's largest objects from the ``[id, type, self_size, retained_size]`` rows a load stores."""
    return tuple(ObjectRow(id=i, type=t, self_size=s, retained_size=r) for i, t, s, r in stored)
