"""Questions about one snapshot: an object and its neighbours, why it is alive, what dominates it,
what it retains, what retains most, and totals per type."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from heapdb.errors import NotFound
from heapdb.loader.store import Snapshot, TypeListing
from heapdb.queries import params
from heapdb.queries.base import Asking, SnapshotRef
from heapdb.queries.params import MAX_LIMIT
from heapdb.queries.results import (
    DominatorChain,
    Neighbour,
    ObjectDetails,
    ObjectInfo,
    Reference,
    RetainerPath,
    Retains,
    TypeRow,
    WhyAlive,
)


class SnapshotQuestions(Asking):
    def object(
        self, ref: SnapshotRef, object_id: int, p: params.ObjectDetails = params.ObjectDetails()
    ) -> ObjectDetails:
        """An object with (at most ``p.limit`` of) its incoming and outgoing references."""
        snapshot = self.snapshot(ref, objects=True)
        rows = self._run("object", tag=snapshot.tag, id=object_id, limit=p.limit)
        if not rows:
            raise self._not_found(snapshot, object_id)
        row = rows[0]

        def neighbours(items: list[dict[str, Any]]) -> list[Neighbour]:
            return [
                Neighbour(Reference.from_row(item["reference"]), ObjectInfo.from_row(item["object"])) for item in items
            ]

        return ObjectDetails(
            tag=snapshot.tag,
            object=ObjectInfo.from_row(row["object"]),
            incoming=neighbours(row["incoming"]),
            outgoing=neighbours(row["outgoing"]),
            incoming_count=row["incoming_count"],
            outgoing_count=row["outgoing_count"],
        )

    def find(self, ref: SnapshotRef, p: params.Find) -> list[ObjectInfo]:
        """Objects of ``p.type`` whose name contains ``p.name_contains``, largest retained first.

        Searches the type's listing stored at load (:class:`~heapdb.loader.store.TypeListing`), kept
        by the service's cache once read, then reads the objects found by id; a type without a
        listing (only root, synthetic or unreachable objects have it) is searched object by object
        (stored query ``find``), with the same answer.
        """
        snapshot = self.snapshot(ref, objects=True)
        listing = self._cached(
            snapshot,
            ("type listing", p.type),
            lambda: self._type_listing(snapshot, p.type),
            weigh=lambda found: 0 if found is None else found.nbytes,
        )
        if listing is None:
            rows = self._run("find", tag=snapshot.tag, type=p.type, name_contains=p.name_contains, limit=p.limit)
        else:
            ids = listing.matching(p.name_contains, p.limit).tolist()
            rows = self._run("objects-brief", tag=snapshot.tag, ids=ids) if ids else []
        return [ObjectInfo.from_row(r["object"]) for r in rows]

    def _type_listing(self, snapshot: Snapshot, type_name: str) -> TypeListing | None:
        rows = self._run("type-listing", tag=snapshot.tag, type=type_name)
        if not rows or rows[0]["ids"] is None:
            return None
        return TypeListing.from_properties(rows[0]["ids"], rows[0]["names"], rows[0]["ends"])

    def resolve(self, ref: SnapshotRef, type_name: str, name_contains: str = "") -> int:
        """The id of the largest-retaining object of a type whose name contains a text."""
        snapshot = self.snapshot(ref, objects=True)
        found = self.find(snapshot, params.Find(type=type_name, name_contains=name_contains, limit=1))
        if not found:
            condition = f" whose name contains {name_contains!r}" if name_contains else ""
            raise NotFound(f"no object of type {type_name!r}{condition} in snapshot {snapshot.tag!r}")
        return found[0].id

    def why_alive(self, ref: SnapshotRef, object_id: int, p: params.Why = params.Why()) -> WhyAlive:
        """Retaining paths from the root to the object, over :REF only.

        The first path is a shortest one: without ignore lists, the object's first path as the
        loader's breadth-first search found it, read back along :FIRST (stored query ``why-alive``);
        with them, one breadth-first search from the root that avoids the ignored reference names,
        object types and ids (``why-alive-avoiding``). With ``k > 1`` the further paths each end with
        a different retaining reference into the object: for each of the other direct retainers,
        nearest to the root first, the shortest path to that retainer that does not pass through the
        object, plus its reference. So the paths are distinct in their last hop, like the rows of
        DevTools' retainers view; an object with one retainer has one path whatever ``k`` is.
        """
        snapshot = self.snapshot(ref, objects=True)
        return self._cached(snapshot, ("why", object_id, p), lambda: self._why_alive(snapshot, object_id, p))

    def _why_alive(self, snapshot: Snapshot, object_id: int, p: params.Why) -> WhyAlive:
        ignored: dict[str, list[Any]] = {
            "names": list(p.ignore_name),
            "types": list(p.ignore_type),
            "ids": list(p.ignore_id),
        }
        paths: list[RetainerPath] = []
        first = self._shortest_path(snapshot, object_id, p)
        if first is not None:
            paths.append(first)
            target = first.objects[-1]
        else:  # no path: an unknown object raises here; an unreachable or fenced-off one has none
            target = self._object(snapshot, object_id)
        if p.k > 1 and first is not None and first.length > 0:
            # Room for parallel references (the same holder, kind and name twice), which count once.
            holders = self._run(
                "retainers",
                tag=snapshot.tag,
                id=object_id,
                limit=min(MAX_LIMIT, 4 * p.k),
                ignore_names=ignored["names"],
                ignore_types=ignored["types"],
                ignore_ids=ignored["ids"],
            )
            used = {(first.objects[-2].id, first.references[-1].kind, first.references[-1].name)}
            for row in holders:
                if len(paths) >= p.k:
                    break
                holder, reference = ObjectInfo.from_row(row["holder"]), Reference.from_row(row["reference"])
                if (holder.id, reference.kind, reference.name) in used:
                    continue
                used.add((holder.id, reference.kind, reference.name))
                # The path to the holder must not run through the target: that would be circular. The
                # plain search usually avoids it anyway, and is about twice as fast as the filtered one.
                prefix = self._shortest_path(snapshot, holder.id, p)
                if prefix is not None and any(o.id == object_id for o in prefix.objects):
                    fenced = p.model_copy(update={"ignore_id": (*p.ignore_id, object_id)})
                    prefix = self._shortest_path(snapshot, holder.id, fenced)
                if prefix is not None:
                    paths.append(RetainerPath(prefix.objects + [target], prefix.references + [reference]))
        # The first path first, then the others shortest first: one through a transient V8 root
        # group (a handle scope) may be shorter than the first path, which follows those last.
        paths[1:] = sorted(paths[1:], key=lambda path: path.length)
        return WhyAlive(tag=snapshot.tag, target=target, paths=paths, ignored=ignored)

    def _shortest_path(self, snapshot: Snapshot, object_id: int, p: params.Why) -> RetainerPath | None:
        if p.ignores:
            rows = self._run(
                "why-alive-avoiding",
                tag=snapshot.tag,
                id=object_id,
                ignore_names=list(p.ignore_name),
                ignore_types=list(p.ignore_type),
                ignore_ids=list(p.ignore_id),
            )
        else:
            rows = self._run("why-alive", tag=snapshot.tag, id=object_id)
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
        target = self._object(snapshot, object_id)
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
            rows = self._run("dominated", tag=snapshot.tag, ids=frontier, limit=min(MAX_LIMIT, room + 1))
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
