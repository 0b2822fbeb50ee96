"""The questions behind browsing one snapshot as DevTools' Memory panel and MAT are browsed: a type's
objects a page at a time, an object's retainers and containment trees a level at a time, and a search.

Each answers one page of rows and how many there are in all, so a page, a tree level or a CLI
listing can go on where it stopped (``offset``). A type's objects come from its listing stored at
load (:class:`~heapdb.loader.store.listings.TypeListing`), so the commonest view, largest retained
first, is a slice of an array; the other orders and the filters look the type's objects up by id.
"""

from __future__ import annotations

import re

import numpy as np

from heapdb.loader.formats import named
from heapdb.loader.store import Snapshot
from heapdb.queries import params
from heapdb.queries.base import SnapshotRef
from heapdb.queries.results import Instances, ObjectInfo, ReferenceLevel, SearchResults, TypeRow
from heapdb.queries.single import SnapshotQuestions

# A search, or a type's objects filtered by name, counts its matches up to this many past its page,
# then says "or more".
COUNT_MATCHES = 10_000


class BrowseQuestions(SnapshotQuestions):
    def instances(self, ref: SnapshotRef, p: params.Instances) -> Instances:
        """A page of the objects of ``p.type``, sorted by ``p.sort`` and filtered, with how many pass
        the filters: from the type's stored listing in process where it can (every order, the name
        and what is new since another snapshot), else looked up object by object (stored query
        ``instances``: detachedness, buckets and owners, and loads without the listing's figures)."""
        snapshot = self.snapshot(ref, all_objects=True)
        before = None if p.since is None else self.snapshot(p.since)  # an unknown tag: NotFound
        listing = self._listing(snapshot, p.type)
        in_process = (
            listing is not None
            and p.detached is None
            and p.bucket is None
            and p.owner is None
            and (p.sort == "retained_size" or listing.self_sizes is not None)
            and (p.path is None or listing.path_sigs is not None)
        )
        earlier = None if before is None or not in_process else self._listing(before, p.type)
        if listing is not None and in_process and (before is None or earlier is not None):
            # In the listing's order a name filter needs only the page and a count up to a bound.
            bounded = p.name_contains and p.sort == "retained_size" and earlier is None and p.path is None
            counted_to = p.offset + p.limit + COUNT_MATCHES if bounded else None
            places = listing.places(p.name_contains, counted_to or listing.ids.size)
            if p.path is not None:
                assert listing.path_sigs is not None
                places = places[listing.path_sigs[places] == p.path]
            if earlier is not None:  # objects of the same id and type in the earlier snapshot are not new
                places = places[~np.isin(listing.ids[places], earlier.ids)]
            page = listing.ordered(places, p.sort)[p.offset : p.offset + p.limit]
            found = self.briefs(snapshot, listing.ids[page].tolist())
            path = self._path_text(snapshot, p.path)
            return Instances(snapshot.tag, p.type, p.sort, p.offset, int(places.size), found, counted_to, path)
        ids = (
            listing.ids.tolist()
            if listing is not None
            else [r["id"] for r in self._run("type-ids", tag=snapshot.tag, type=p.type)]
        )
        values = p.model_dump(exclude={"type"})
        row = self._run("instances", tag=snapshot.tag, ids=ids, **values)[0]
        objects = [ObjectInfo.from_row(o) for o in row["objects"]]
        return Instances(
            snapshot.tag, p.type, p.sort, p.offset, row["total"], objects, None, path=self._path_text(snapshot, p.path)
        )

    def _path_text(self, snapshot: Snapshot, signature: int | None) -> str | None:
        """The retainer path a signature names in a snapshot, as text (None for none, or no such path)."""
        if signature is None:
            return None
        rows = self._run("path-groups", tag=snapshot.tag, sigs=[signature])
        return rows[0]["path"] if rows else None

    def type_row(self, ref: SnapshotRef, type_name: str) -> TypeRow | None:
        """The totals of one type (as ``types`` lists them); None for a type the snapshot has none of."""
        snapshot = self.snapshot(ref)
        rows = self._run("type-search", tag=snapshot.tag, text=type_name, mode="exact", limit=1000)[0]["types"]
        return next((TypeRow(**r) for r in rows if r["type"] == type_name), None)  # the search ignores case

    def references(
        self, ref: SnapshotRef, object_id: int, p: params.References = params.References()
    ) -> ReferenceLevel:
        """A page of what references an object (``p.direction`` "in": one level of its retainers
        tree, holders nearest the root first) or of what it references ("out": its containment
        tree, largest first); weak references listed and marked."""
        return self._level(self.snapshot(ref, objects=True), object_id, p.direction, p.offset, p.limit)

    def search(self, ref: SnapshotRef, p: params.Search) -> SearchResults:
        """Types whose name matches ``p.text`` (ignoring case), the object whose id it is, and strings
        whose content matches it, a page of each."""
        snapshot = self.snapshot(ref, all_objects=True)
        types = self._run("type-search", tag=snapshot.tag, text=p.text, mode=p.mode, offset=p.offset, limit=p.limit)[0]
        end = p.offset + p.limit
        counted_to = end + COUNT_MATCHES
        ids: list[int] = []  # the strings found, every string type's in turn, each largest retained first
        for type_name in self._string_types(snapshot):
            listing = self._listing(snapshot, type_name)
            if listing is not None and len(ids) < counted_to:
                ids += listing.matching(p.text, counted_to - len(ids), p.mode).tolist()
        strings = self.briefs(snapshot, ids[p.offset : end])
        return SearchResults(
            tag=snapshot.tag,
            text=p.text,
            mode=p.mode,
            offset=p.offset,
            object=self._by_id(snapshot, p.text),
            types=[TypeRow(**row) for row in types["types"]],
            type_total=types["total"],
            strings=strings,
            string_total=len(ids),
            counted_to=counted_to,
        )

    def _string_types(self, snapshot: Snapshot) -> list[str]:
        """The types whose objects are strings whose name is their content (the format's plain strings)."""
        declared = named(snapshot.format)
        if declared is None or declared.strings is None:
            return []
        kinds = sorted(declared.strings.plain)
        rows = self._cached(
            snapshot, ("string types",), lambda: self._run("string-types", tag=snapshot.tag, kinds=kinds)
        )
        return [r["type"] for r in rows]

    def _by_id(self, snapshot: Snapshot, text: str) -> ObjectInfo | None:
        """The object ``text`` names by id (``123`` or ``@123``), if the snapshot has it."""
        digits = text.strip().removeprefix("@")
        if not re.fullmatch(r"-?[0-9]{1,19}", digits) or not -(2**63) <= int(digits) < 2**63:
            return None
        found = self.briefs(snapshot, [int(digits)])
        return found[0] if found else None

    def briefs(self, ref: SnapshotRef, ids: list[int]) -> list[ObjectInfo]:
        """The objects with these ids, in their order, without their references (ids the snapshot
        has not are left out)."""
        snapshot = self.snapshot(ref, objects=True)
        rows = self._run("objects-brief", tag=snapshot.tag, ids=ids) if ids else []
        return [ObjectInfo.from_row(r["object"]) for r in rows]
