"""Eclipse MAT-style leak suspects in one snapshot: big single objects with the point inside each
where the memory accumulates, and big types."""

from __future__ import annotations

import math

from heapdb.loader.store import Snapshot
from heapdb.loader.store.order import EARLY_SUSPECT_SHARE, MIN_DESCENT_PERCENT, early_suspect_floor
from heapdb.queries import catalog, params
from heapdb.queries.base import Asking, SnapshotRef
from heapdb.queries.results import AccumulationPoint, ObjectInfo, ObjectRef, SuspectObject, Suspects, SuspectType


class SuspectQuestions(Asking):
    def suspects(self, ref: SnapshotRef, p: params.Suspects = params.Suspects()) -> Suspects:
        """Eclipse MAT-style leak suspects in one snapshot.

        The 100% is the snapshot's reachable size (summed self sizes of the objects the root reaches).
        Objects: the topmost objects (immediately dominated by the root or a synthetic root-kind node)
        retaining at least ``p.share`` of it, each with its accumulation point, found by descending the
        dominator tree through the child holding at least ``p.ratio`` of its parent's retained size.
        Types: those whose objects together retain at least ``p.share`` of it.
        """
        snapshot = self.snapshot(ref, objects=True)
        return self._cached(snapshot, ("suspects", p), lambda: self._suspects(snapshot, p))

    def _suspects(self, snapshot: Snapshot, p: params.Suspects) -> Suspects:
        tag, reachable = snapshot.tag, int(snapshot.reachable_size or 0)
        min_retained = max(1, math.ceil(p.share * reachable))
        if min_retained < early_suspect_floor(reachable) and not snapshot.objects_ready:
            # A load writes first the objects retaining at least that floor (and their descents).
            refusal = catalog.still_loading(
                self.database.read,
                tag,
                "objects",
                f"suspects below {EARLY_SUSPECT_SHARE:.1%} of the heap read them all",
            )
            if refusal is not None:
                raise refusal
        percent = max(MIN_DESCENT_PERCENT, round(p.ratio * 100))  # the stored query takes a whole percentage
        rows = self._run("suspects", tag=tag, min_retained=min_retained, ratio=percent, limit=p.limit)
        objects = []
        for r in rows:
            o, point = ObjectInfo.from_row(r["object"]), ObjectInfo.from_row(r["point"])
            accumulation = AccumulationPoint(
                object=point,
                depth=r["depth"],
                children=r["children"],
                largest_child=r["largest_child"],
                largest_child_share=r["largest_child"] / point.retained_size if point.retained_size else 0.0,
                why=ObjectRef(tag, point.id),
            )
            share = o.retained_size / reachable if reachable else 0.0
            objects.append(SuspectObject(object=o, share=share, why=ObjectRef(tag, o.id), accumulation=accumulation))
        types = [
            SuspectType(
                type=r["type"],
                count=r["count"],
                self_size=r["self_size"],
                retained_size=r["retained_size"],
                share=r["retained_size"] / reachable if reachable else 0.0,
            )
            for r in self._run("suspect-types", tag=tag, min_retained=min_retained, limit=p.limit)
        ]
        return Suspects(
            tag=tag,
            share=p.share,
            ratio=percent / 100,
            reachable_size=reachable,
            min_retained=min_retained,
            objects=objects,
            types=types,
        )
