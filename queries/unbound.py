"""Unbound growth across loaded snapshots: the collections, objects and shapes that grew at every
step (memlab's ``unbound-collection``, ``unbound-object`` and ``unbound-shape``), by the rule of
:mod:`heapdb.loader.inspections.unbound`.

Its own question rather than a ``--by`` of ``growth``: growth compares the per-type and per-path
totals stored at load and needs no stable ids, while this one follows single objects by id (V8 ids
of one process) and answers three lists with figures of their own.

What it reads: the shapes each load stored (``:ShapeGroup``), and from the objects, starting from
the last snapshot, the objects retaining at least ``min_retained`` (``unbound-objects``) and the
collections (their ids from the type listings), then the same ids in the earlier snapshots
(``objects-brief``, ``unbound-collections``): seeks by id, not a read of every object.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from heapdb.errors import NotComputed, ParameterError
from heapdb.loader.inspections import unbound
from heapdb.loader.inspections.unbound import SeriesPoint, ShapeTable, Tracked, UnboundGrowth
from heapdb.loader.store import Snapshot
from heapdb.queries import leaks_by_id, missing, params
from heapdb.queries.base import Asking, SnapshotRef
from heapdb.queries.compare import MIN_SERIES

COLLECTION_TYPES = (*unbound.BY_TABLE, *unbound.BY_OWN)


def _tracked(rows: Sequence[dict[str, Any]], figure: str) -> Tracked:
    ids = np.array([r["id"] for r in rows], dtype=np.int64)
    values = np.array([r[figure] for r in rows], dtype=np.int64)
    return Tracked.of(ids, [f"{r['type']}\t{r['kind']}" for r in rows], values)


class UnboundQuestions(Asking):
    def unbound(self, refs: Sequence[SnapshotRef], p: params.Unbound = params.Unbound()) -> UnboundGrowth:
        """Collections whose fan-out, objects whose retained size and shapes whose population grew
        across three or more snapshots of one process (oldest first), by ``p.rule``."""
        if len(refs) < MIN_SERIES:
            raise ParameterError(f"unbound needs at least {MIN_SERIES} snapshots, got {len(refs)}")
        # Every tag is looked up before any is asked for its shapes: one the caller may not read
        # answers as unknown whatever the others hold.
        snapshots = [self.snapshot(ref, objects=True) for ref in refs]
        if len({s.tag for s in snapshots}) != len(snapshots):
            raise ParameterError("unbound needs distinct snapshots: a tag is given twice")
        snapshots = [self.stored(s, "shapes", missing.SHAPES, objects=True)[0] for s in snapshots]
        return self._cached(
            snapshots[0], ("unbound", tuple(s.sid for s in snapshots[1:]), p), lambda: self._unbound(snapshots, p)
        )

    def _unbound(self, snapshots: list[Snapshot], p: params.Unbound) -> UnboundGrowth:
        last = snapshots[-1]
        listed = leaks_by_id.listed_objects(self._run, last)
        if listed is None:
            raise NotComputed(f"snapshot {last.tag!r} was stored without type listings: heapdb reanalyze {last.tag}")
        names = np.array(listed.type_names, dtype=object)
        collection_ids = listed.ids[np.isin(names, COLLECTION_TYPES)[listed.type]].tolist()
        latest = self._run("unbound-objects", tag=last.tag, min_retained=p.min_retained)
        object_ids = [r["id"] for r in latest]

        def point(snapshot: Snapshot) -> SeriesPoint:
            brief = (
                latest
                if snapshot is last
                else [r["object"] for r in self._run("objects-brief", tag=snapshot.tag, ids=object_ids)]
            )
            shapes = self._run("shape-groups", tag=snapshot.tag)
            found = self._run("unbound-collections", tag=snapshot.tag, ids=collection_ids)
            return SeriesPoint(
                snapshot.tag,
                _tracked([r for r in found if r["kind"] == "object"], "fanout"),
                _tracked(brief, "retained_size"),
                ShapeTable.from_rows([r["shape"], r["objects"], r["retained_size"], r["example_id"]] for r in shapes),
            )

        with ThreadPoolExecutor(2) as pool:
            points = list(pool.map(point, snapshots))
        return unbound.unbound(
            points, rule=p.rule, limit=p.limit, min_retained=p.min_retained, min_objects=p.min_objects
        )
