"""The questions heapdb answers, one typed method each, shared by the CLI and the REST service.

Each method takes its snapshots (records or tags), the subject's ids, and the question's
parameters (:mod:`heapdb.queries.params`); it runs stored queries (:mod:`heapdb.queries.catalog`)
and returns frozen results (:mod:`heapdb.queries.results`). Callers only parse input and render
output. An unknown tag or object raises :class:`~heapdb.errors.NotFound`; a bad parameter
:class:`~heapdb.errors.ParameterError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from heapdb.loader import views
from heapdb.queries import params
from heapdb.queries.base import SnapshotRef
from heapdb.queries.browse import BrowseQuestions
from heapdb.queries.compare import CompareQuestions
from heapdb.queries.gate import GateQuestions
from heapdb.queries.gate_runs import GateRunQuestions
from heapdb.queries.lifecycle import LifecycleQuestions
from heapdb.queries.params import MAX_LIMIT
from heapdb.queries.results import ObjectInfo
from heapdb.queries.suspects import SuspectQuestions
from heapdb.queries.unbound import UnboundQuestions


class DominatedLargest(NamedTuple):
    """One parent's direct children in the dominator tree: how many, and the largest of them."""

    children: int
    largest: list[ObjectInfo]  # largest retained size first


class Questions(
    BrowseQuestions,
    CompareQuestions,
    GateQuestions,
    GateRunQuestions,
    LifecycleQuestions,
    SuspectQuestions,
    UnboundQuestions,
):
    """Every question, bound to one database, a per-query timeout and optionally a cache:
    ``Questions(database).why_alive("build123", 4711)``."""

    def dominated_largest(
        self, ref: SnapshotRef, ids: Sequence[int], width: int, min_sizes: Sequence[int] = ()
    ) -> dict[int, DominatedLargest]:
        """For each parent id, its number of direct children in the dominator tree and the ``width``
        largest of those retaining at least its ``min_sizes`` entry: one level of a treemap, in one
        round trip (stored query ``dominated-largest``). What is not listed retains the parent's
        retained size less its self size less the listed children's."""
        snapshot = self.snapshot(ref, objects=True)
        if not ids:
            return {}

        def compute() -> dict[int, DominatedLargest]:
            rows = self._run(
                "dominated-largest",
                tag=snapshot.tag,
                ids=list(ids),
                min_sizes=list(min_sizes),
                width=max(1, min(width, MAX_LIMIT)),
            )
            return {
                row["parent"]: DominatedLargest(row["children"], [ObjectInfo.from_row(o) for o in row["largest"]])
                for row in rows
            }

        return self._cached(snapshot, ("dominated largest", tuple(ids), width, tuple(min_sizes)), compute)

    def lifelines(self, ref: SnapshotRef, p: params.Lifelines) -> views.Lifelines:
        """The first retainer paths of the objects of ``p.type`` merged from the root down, with
        counts per step: the stored ``path_sig`` grouped per path (stored query ``lifelines``, over
        the type's stored listing when there is one), merged as :func:`heapdb.loader.views.lifelines`
        merges a file's, so the two answers are equal."""
        snapshot = self.snapshot(ref, objects=True)

        def compute() -> views.Lifelines:
            listing = self._listing(snapshot, p.type)
            ids = None if listing is None else listing.ids.tolist()
            rows = self._run("lifelines", tag=snapshot.tag, type=p.type, name_contains=p.name_contains, ids=ids)
            return views.lifelines(
                ((r["hops"], r["retained_size"], r["objects"]) for r in rows),
                source=snapshot.tag,
                type_name=p.type,
                name_contains=p.name_contains,
                limit=p.limit,
            )

        return self._cached(snapshot, ("lifelines", p), compute)

    def heapdomstats(self, ref: SnapshotRef, p: params.HeapDomStats) -> views.HeapDomStats:
        """Per type, the objects whose immediate dominator is the root or a root group (stored query
        ``heapdomstats``), as :func:`heapdb.loader.views.heapdomstats` lists a file's."""
        snapshot = self.snapshot(ref, objects=True)

        def compute() -> views.HeapDomStats:
            rows = self._run("heapdomstats", tag=snapshot.tag, limit=p.limit)
            row: dict[str, Any] = rows[0] if rows else {"rows": [], "types": 0, "objects": 0, "retained_size": 0}
            return views.HeapDomStats(
                source=snapshot.tag,
                reachable_size=snapshot.reachable_size or 0,
                objects=row["objects"],
                retained_size=row["retained_size"],
                types=row["types"],
                rows=tuple(views.FloatingType(**r) for r in row["rows"]),
            )

        return self._cached(snapshot, ("heapdomstats", p), compute)
