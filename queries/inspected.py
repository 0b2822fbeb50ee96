"""The inspections across builds: each stored inspection the CI gate checks, read back for a snapshot
(:meth:`InspectedQuestions.stored_inspection`), and what changed in them between two snapshots
(``heapdb diff --by inspection``, :meth:`InspectedQuestions.diff_inspections`).

Both the gate and the diff compare the same rows, by the same signature
(:func:`heapdb.queries.gate_inspections.rows`): a string or object content by its key, detached DOM
by its holder path, a component by its name, a collection type by its name, a lifecycle leak group
by its suspect references, what a kind of holder alone keeps alive by that kind and its path, a
global variable by its name, a component's memory by the component's name. The diff lists every row that changed, either way; the gate only what
grew past its thresholds.
"""

from __future__ import annotations

from typing import Any

from heapdb.errors import NotComputed
from heapdb.loader.store import Snapshot
from heapdb.queries.gate_inspections import CHECKS, rows
from heapdb.queries.lifecycle import LifecycleQuestions
from heapdb.queries.results import Change, Diff
from heapdb.queries.single import SnapshotQuestions


class InspectedQuestions(SnapshotQuestions, LifecycleQuestions):
    def stored_inspection(self, check: str, snapshot: Snapshot) -> Any:
        """The stored answer of the inspection behind the gate's ``check`` (every row its load
        kept); :class:`NotComputed` where the load did not compute it."""
        check_ = CHECKS[check]
        return getattr(self, check_.question)(snapshot, check_.asked)

    def diff_inspections(self, old: Snapshot, new: Snapshot, limit: int) -> Diff:
        """Per inspection row (a duplicated content, a detached-DOM path, a component, a collection
        type, a lifecycle leak group, a group of what a kind of holder alone keeps alive, a global
        variable, a component's memory), what changed from ``old`` to ``new``, largest growth
        first. The size is what the gate compares (bytes wasted by copies, retained by detached
        trees, unmounted fibers, leaking objects, held groups, globals' values and components'
        fibers, unused by collections' capacity); the count, the copies, trees, fibers,
        collections, leaking objects, outermost held objects or globals of the name. An inspection either load did not
        compute is named in the notes."""
        changes: list[Change] = []
        notes: list[str] = []
        for check in CHECKS:
            try:
                answers = (self.stored_inspection(check, old), self.stored_inspection(check, new))
            except NotComputed as e:
                notes.append(f"{check} not compared: {e}")
                continue
            before, after = rows(check, answers[0]), rows(check, answers[1])
            for sig in [*after, *(s for s in before if s not in after)]:
                a, b = after.get(sig), before.get(sig)
                shown = a if a is not None else b
                assert shown is not None
                count = (b.objects if b else 0, a.objects if a else 0)
                size = (b.size if b else 0, a.size if a else 0)
                if count[0] == count[1] and size[0] == size[1]:
                    continue
                changes.append(
                    Change(
                        label=shown.path,
                        hops=list(shown.hops or (shown.path,)),
                        count_before=count[0],
                        count_after=count[1],
                        size_before=size[0],
                        size_after=size[1],
                        retained_before=size[0],
                        retained_after=size[1],
                        signature=sig,
                        type=shown.type,
                        known_leak=shown.known_leak,
                        inspection=check,
                    )
                )
        changes.sort(key=lambda c: (-c.size_delta, -c.count_delta, c.inspection or "", c.label))
        return Diff(before=old.tag, after=new.tag, by="inspection", changes=changes[:limit], notes=notes)
