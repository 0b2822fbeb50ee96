"""What every question needs: the database, a time limit, the snapshot looked up once, a cache.

The questions themselves live beside this module, grouped by what they look at (one snapshot,
several, suspects); :class:`heapdb.queries.questions.Questions` puts them together.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from heapdb.db import Database
from heapdb.errors import (
    HeapdbError,
    InspectionsLoading,
    NotComputed,
    NotFound,
    ObjectsLoading,
    OutdatedSnapshot,
    StillLoading,
)
from heapdb.loader.store import OLDEST_ANSWERED_VERSION, STORE_VERSION, Snapshot
from heapdb.loader.store.listings import TypeListing
from heapdb.loader.store.prune import summary_only
from heapdb.queries import catalog
from heapdb.queries.cache import AnswerCache
from heapdb.queries.params import DEFAULT_TIMEOUT
from heapdb.queries.results import ObjectInfo
from heapdb.scopes import EVERYTHING, Scope, no_snapshot

T = TypeVar("T")

# A snapshot as callers name it: the record when they looked it up already, else its tag.
SnapshotRef = Snapshot | str

# With a cache (the service), a tag is looked up at most this often: most requests then make one
# round trip to Neo4j instead of two. The price: for up to this long after `load --replace` or
# `drop`, a request may still be answered from the tag's previous load.
TAG_LOOKUP_SECONDS = 1.0


class Asking:
    """Questions bound to one database, a per-query timeout, and optionally a cache of answers.

    Every question takes its snapshots as :class:`~heapdb.loader.store.Snapshot` records or as tags;
    a tag is looked up (and refused when unknown or stored by an older heapdb) once, on the way in.
    ``scope`` is what the caller may read (:mod:`heapdb.scopes`): :meth:`snapshot` is where every
    question meets it, so a tag outside it is refused as unknown whatever asks.
    """

    def __init__(
        self,
        database: Database,
        timeout: float | None = DEFAULT_TIMEOUT,
        cache: AnswerCache | None = None,
        scope: Scope = EVERYTHING,
    ) -> None:
        self.database = database
        self.timeout = timeout
        self.cache = cache
        self.scope = scope

    def _run(self, name: str, **parameters: Any) -> list[dict[str, Any]]:
        return catalog.run(self.database, name, parameters, timeout=self.timeout)

    def _reading(self, work: Callable[[catalog.Ask], T]) -> T:
        """``work(ask)`` with ``ask(name, parameters)`` running stored queries in one transaction
        (:func:`heapdb.queries.catalog.reading`): for a question that needs several."""
        return catalog.reading(self.database, work, timeout=self.timeout)

    def snapshots(self) -> list[Snapshot]:
        """The ready snapshots the caller may read, oldest first."""
        found = [Snapshot.from_properties(row["snapshot"]) for row in self._run("snapshots")]
        return [s for s in found if self.scope.reads(s.tag)]

    def snapshot(self, ref: SnapshotRef, *, objects: bool = False, all_objects: bool = False) -> Snapshot:
        """The ready snapshot with this tag, or :class:`NotFound` / :class:`OutdatedSnapshot`.

        A question that reads objects (not only the stored type and path groups) says ``objects=True``:
        a pruned snapshot (``heapdb prune``) then raises :class:`SummaryOnly`, whether it was named by
        tag or by record. This is the one place that check is made. One that reads every object
        (a search, say) also says ``all_objects=True``: while a load still writes its objects, it
        raises :class:`~heapdb.errors.ObjectsLoading`. A tag outside the caller's scope is refused
        first, as an unknown one, before anything is read.
        """
        tag = ref.tag if isinstance(ref, Snapshot) else ref
        if not self.scope.reads(tag):
            raise no_snapshot(tag)
        if isinstance(ref, Snapshot):
            found = ref
        elif self.cache is not None:
            found = self.cache.recent(("snapshot", ref), TAG_LOOKUP_SECONDS, lambda: self._look_up(ref))
        else:
            found = self._look_up(ref)
        if (objects or all_objects) and found.summary:
            raise summary_only(found)
        if all_objects and not found.objects_ready:
            refusal = catalog.still_loading(self.database.read, found.tag, "objects", "this question reads them all")
            if refusal is not None:
                raise refusal
        return found

    def stored(
        self, ref: SnapshotRef, name: str, missing: Callable[[Snapshot], NotComputed], *, objects: bool = False
    ) -> tuple[Snapshot, Any]:
        """The snapshot and what its load stored of the inspection ``name`` (the :class:`Snapshot`
        field of that name). Where it has none: :class:`InspectionsLoading` while its load has yet
        to write its inspections (within seconds of its first answer), else ``missing(snapshot)``,
        which says why and what to do. ``objects``: as :meth:`snapshot`'s."""
        snapshot = self.snapshot(ref, objects=objects)
        stored = getattr(snapshot, name)
        if stored is None and not snapshot.objects_ready:
            snapshot = self._look_up(snapshot.tag)  # read afresh: the record may predate them
            stored = getattr(snapshot, name)
            if stored is None and not snapshot.objects_ready:
                raise InspectionsLoading(
                    f"snapshot {snapshot.tag!r} answers, but its load is still working out its inspections; "
                    "ask again in a moment"
                )
        if stored is None:
            raise missing(snapshot)
        return snapshot, stored

    def _look_up(self, ref: str) -> Snapshot:
        rows = self._run("snapshot", tag=ref)
        if not rows:
            raise no_snapshot(ref)
        found = Snapshot.from_properties(rows[0]["snapshot"])
        if found.store_version < OLDEST_ANSWERED_VERSION:
            raise OutdatedSnapshot(
                f"snapshot {ref!r} was stored by an older heapdb (store version {found.store_version}, now {STORE_VERSION}): "
                f"load it again with `heapdb load FILE --tag {ref} --replace`"
            )
        return found

    def _cached(
        self,
        snapshot: Snapshot,
        key: tuple[Any, ...],
        compute: Callable[[], T],
        weigh: Callable[[T], int] | None = None,
    ) -> T:
        """``compute()``, remembered per snapshot load when a cache is set (see :class:`AnswerCache`)."""
        if self.cache is None:
            return compute()
        return self.cache.get((snapshot.sid, *key), compute, weigh)

    def _listing(self, snapshot: Snapshot, type_name: str) -> TypeListing | None:
        """The type's listing stored at load (every reachable object of it, largest retained first),
        kept by the cache once read; None for a type without one (the root's, synthetic root kinds')."""

        def read() -> TypeListing | None:
            rows = self._run("type-listing", tag=snapshot.tag, type=type_name)
            if not rows or rows[0]["ids"] is None:
                return None
            row = rows[0]
            return TypeListing.from_properties(
                snapshot.store_version,
                row["ids"],
                row["names"],
                row["ends"],
                row["self_sizes"],
                row["distances"],
                row["path_sigs"],
            )

        return self._cached(
            snapshot, ("type listing", type_name), read, weigh=lambda found: 0 if found is None else found.nbytes
        )

    def _object(self, snapshot: Snapshot, object_id: int) -> ObjectInfo:
        rows = self._run("object-brief", tag=snapshot.tag, id=object_id)
        if not rows:
            raise self._not_found(snapshot, object_id)
        return ObjectInfo.from_row(rows[0]["object"])

    def _not_found(self, snapshot: Snapshot, object_id: int) -> HeapdbError:
        """No such object: :class:`NotFound`, or :class:`ObjectsLoading` while the load may still write it.

        Also when the load finished writing its objects while the question was asked (``snapshot``,
        looked up as it came in or up to a second before, said they were not all written): the object may have been written
        after the question looked for it, and only asking again tells."""
        unwritten = self._unwritten(snapshot, object_id)
        if unwritten is None and not snapshot.objects_ready:
            unwritten = ObjectsLoading(
                f"snapshot {snapshot.tag!r} finished loading its objects while this question was asked, and object "
                f"{object_id} or one on its way from the root may have come in meanwhile; ask again"
            )
        return unwritten or NotFound(f"no object with id {object_id} in snapshot {snapshot.tag!r}")

    def _unwritten(self, snapshot: Snapshot, object_id: int) -> StillLoading | None:
        """:class:`ObjectsLoading` if the snapshot's load is still writing objects (read afresh): an
        answer about ``object_id`` missing the object or one on its way from the root is not final."""
        return catalog.still_loading(
            self.database.read,
            snapshot.tag,
            "objects",
            f"object {object_id} or one on its way from the root is not in yet",
        )
