"""Every inspection a load stores, computed together and turned into what the store keeps.

:class:`Inspections` is the one list of them: each field is one inspection's answer (None where the
snapshot's format does not show what it needs), :meth:`Inspections.compute` works them all out from
a graph, its analysis and its first paths, :meth:`Inspections.properties` gives the ``:Snapshot``
properties (JSON text: totals, and the rows of the small ones) and :meth:`Inspections.group_rows`
the group nodes of the large ones.

A load computes them after the snapshot first answers (loader/store/writer.py): none is needed for
the first questions, and together they take seconds on a large snapshot (docs/benchmarks.md,
"Every inspection a load computes, together"). Only the two that read contents, the duplicate
strings and objects, are worked out before redaction when a load redacts, since the redacted graph
no longer has what they compare (:func:`contents`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from heapdb.loader.analysis import Analysis
from heapdb.loader.graph import HeapGraph
from heapdb.loader.inspections.collections import STALE_TOTALS, StaleCollections, stale_collections, stale_objects
from heapdb.loader.inspections.common import ObjectRow
from heapdb.loader.inspections.dom import DOM_TOTALS, DetachedDom, detached_dom, shows_dom
from heapdb.loader.inspections.fill import FILL_TOTALS, CollectionFill, collection_fill
from heapdb.loader.inspections.held import Held, held, stored_held
from heapdb.loader.inspections.leak_status import Inspectors
from heapdb.loader.inspections.lifecycles import LIFECYCLE_TOTALS, LifecycleLeaks, lifecycle_leaks
from heapdb.loader.inspections.objects import OBJECT_TOTALS, DuplicateObjects, stored_objects
from heapdb.loader.inspections.react import REACT_TOTALS, UnmountedFibers, unmounted_fibers
from heapdb.loader.inspections.react_hooks import HOOKS_TOTALS, ComponentHooks, component_hooks
from heapdb.loader.inspections.strings import STRING_TOTALS, DuplicateStrings, stored_strings, string_contents
from heapdb.loader.inspections.unbound import ShapeTable, shapes_of
from heapdb.loader.paths import FirstPaths
from heapdb.loader.redaction import Redaction, redact_graph, redacted_objects, redacted_strings


@dataclass(frozen=True)
class Contents:
    """The inspections that compare contents (strings' texts, objects' values), worked out from the
    whole graph before a redaction replaces them; see :func:`contents`."""

    strings: DuplicateStrings | None
    objects: DuplicateObjects | None


def contents(graph: HeapGraph, result: Analysis, redaction: Redaction | None) -> tuple[HeapGraph, Contents]:
    """The duplicate strings and objects of ``graph`` (both read the strings' contents, once), and
    the graph the load stores: ``graph`` redacted by ``redaction`` if one is given. The answers are
    redacted the same way, so what a load keeps holds no text the redaction hides."""
    found = string_contents(graph)
    strings = stored_strings(graph, result, found)
    objects = stored_objects(graph, result, found)
    if redaction is None:
        return graph, Contents(strings, objects)
    strings = None if strings is None else redacted_strings(strings, graph, redaction)
    graph = redact_graph(graph, redaction)
    objects = None if objects is None else redacted_objects(objects, graph, redaction)
    return graph, Contents(strings, objects)


@dataclass(frozen=True)
class Inspections:
    """What a load stores of each inspection; None where the format does not show what it needs."""

    # The duplicate strings (heapdb.loader.inspections.strings.stored_strings): totals on the
    # :Snapshot, rows as :StringGroup nodes.
    strings: DuplicateStrings | None = None
    # The duplicate objects (heapdb.loader.inspections.objects.stored_objects): totals on the
    # :Snapshot, rows as :ObjectGroup nodes.
    objects: DuplicateObjects | None = None
    # The detached DOM (heapdb.loader.inspections.dom.detached_dom): totals and largest objects on
    # the :Snapshot, holder paths as :DetachedGroup nodes.
    dom: DetachedDom | None = None
    # The unmounted React components (heapdb.loader.inspections.react.unmounted_fibers): totals and
    # largest objects on the :Snapshot, components as :FiberGroup nodes.
    react: UnmountedFibers | None = None
    # Memory by React component and hook (heapdb.loader.inspections.react_hooks.component_hooks):
    # kept whole on the :Snapshot (at most react_hooks.KEPT components, each with one fiber's hooks).
    hooks: ComponentHooks | None = None
    # The collections holding detached DOM or unmounted fibers
    # (heapdb.loader.inspections.collections.stale_collections): kept whole on the :Snapshot.
    stale: StaleCollections | None = None
    # The Java objects past their lifecycle (heapdb.loader.inspections.lifecycles.lifecycle_leaks):
    # kept whole on the :Snapshot (at most lifecycles.KEPT groups, each with its trace).
    lifecycles: LifecycleLeaks | None = None
    # The collections by fill (heapdb.loader.inspections.fill.collection_fill): kept whole on the
    # :Snapshot (a few hundred types and rows at most).
    fill: CollectionFill | None = None
    # What event listeners, the console and closures alone keep alive, and the globals the program
    # added (heapdb.loader.inspections.held.held): kept whole on the :Snapshot (at most held.KEPT
    # groups per kind of holder and held.KEPT globals).
    held: Held | None = None
    # Every shape of a V8 snapshot, for `heapdb unbound` (heapdb.loader.inspections.unbound.shapes_of):
    # their number on the :Snapshot, the shapes as :ShapeGroup nodes.
    shapes: ShapeTable | None = None

    @classmethod
    def compute(
        cls,
        graph: HeapGraph,
        result: Analysis,
        paths: FirstPaths,
        found: Contents | None = None,
        lifecycle_rules: Inspectors | None = None,
    ) -> Inspections:
        """Every inspection of ``graph``; the content ones from ``found`` when given (a redacting
        load works them out before it redacts the graph), else from ``graph``; the objects past their
        lifecycle by ``lifecycle_rules`` (the load's rules; default heapdb's own)."""
        if found is None:
            _graph, found = contents(graph, result, None)
        stale = stale_objects(graph, result)
        return cls(
            strings=found.strings,
            objects=found.objects,
            dom=detached_dom(graph, result, paths, source=""),
            react=unmounted_fibers(graph, result, paths, source=""),
            hooks=component_hooks(graph, result, source=""),
            stale=None if stale is None else stale_collections(graph, result, paths, stale, source=""),
            lifecycles=lifecycle_leaks(graph, result, paths, source="", inspectors=lifecycle_rules),
            fill=collection_fill(graph, result, paths, source=""),
            held=held(graph, result, paths, source=""),
            shapes=shapes_of(graph, result) if shows_dom(graph.meta.get("format")) else None,  # V8's kinds
        )

    def properties(self) -> dict[str, str]:
        """The ``:Snapshot`` properties, one per inspection computed (JSON text): its totals, and
        the rows of those kept whole; nothing for one not computed."""
        found: dict[str, str] = {}
        if self.strings is not None:
            found["strings"] = json.dumps({f: getattr(self.strings, f) for f in STRING_TOTALS})
        if self.objects is not None:
            found["objects"] = json.dumps({f: getattr(self.objects, f) for f in OBJECT_TOTALS})
        for name, answer, totals in (("dom", self.dom, DOM_TOTALS), ("react", self.react, REACT_TOTALS)):
            if answer is not None:
                found[name] = json.dumps({**{f: getattr(answer, f) for f in totals}, "largest": _rows(answer.largest)})
        if self.hooks is not None:
            rows = [asdict(r) for r in self.hooks.rows]
            found["hooks"] = json.dumps({**{f: getattr(self.hooks, f) for f in HOOKS_TOTALS}, "rows": rows})
        if self.stale is not None:
            rows = [asdict(r) for r in self.stale.rows]
            found["stale"] = json.dumps({**{f: getattr(self.stale, f) for f in STALE_TOTALS}, "rows": rows})
        if self.lifecycles is not None:
            groups = [asdict(g) for g in self.lifecycles.groups]
            found["lifecycles"] = json.dumps(
                {**{f: getattr(self.lifecycles, f) for f in LIFECYCLE_TOTALS}, "groups": groups}
            )
        if self.fill is not None:
            kept = {"types": [asdict(t) for t in self.fill.types], "rows": [asdict(r) for r in self.fill.rows]}
            found["fill"] = json.dumps({**{f: getattr(self.fill, f) for f in FILL_TOTALS}, **kept})
        if self.held is not None:
            found["held"] = json.dumps(stored_held(self.held))
        if self.shapes is not None:
            found["shapes"] = json.dumps({"shapes": len(self.shapes.shapes)})
        return found

    def group_rows(self) -> dict[str, list[list[Any]]]:
        """The rows of the inspections' group nodes, by label (groups.GROUP_KINDS)."""
        return {
            "StringGroup": self._string_groups(),
            "ObjectGroup": self._object_groups(),
            "DetachedGroup": self._detached_groups(),
            "FiberGroup": self._fiber_groups(),
            "ShapeGroup": [] if self.shapes is None else self.shapes.rows(),
        }

    def _string_groups(self) -> list[list[Any]]:
        """One row per duplicated content kept (``:StringGroup``; see groups.CREATE_STRING_GROUPS)."""
        if self.strings is None:
            return []
        shown = ("key", "value", "length", "count", "retained_size", "wasted", "example_id")
        return [[*(getattr(r, f) for f in shown), *_owner_columns(r.owners)] for r in self.strings.rows]

    def _object_groups(self) -> list[list[Any]]:
        """One row per duplicated object content kept (``:ObjectGroup``; see groups.CREATE_OBJECT_GROUPS)."""
        if self.objects is None:
            return []
        shown = ("key", "type", "value", "size", "count", "retained_size", "wasted", "example_id")
        return [[*(getattr(r, f) for f in shown), *_owner_columns(r.owners)] for r in self.objects.rows]

    def _detached_groups(self) -> list[list[Any]]:
        """One row per holder path of detached trees kept (``:DetachedGroup``; see groups.CREATE_DETACHED_GROUPS)."""
        if self.dom is None:
            return []
        return [
            [r.signature, r.path, r.type, r.trees, r.objects, r.attached, r.retained_size, r.example_id]
            for r in self.dom.groups
        ]

    def _fiber_groups(self) -> list[list[Any]]:
        """One row per component with unmounted fibers kept (``:FiberGroup``; see groups.CREATE_FIBER_GROUPS)."""
        if self.react is None:
            return []
        return [[r.component, r.fibers, r.retained_size, r.example_id, r.path] for r in self.react.rows]


def _owner_columns(owners: Any) -> list[list[Any]]:
    """A duplicate group's owners as the three columns its group node stores: types, copies, examples."""
    return [[o.type for o in owners], [o.copies for o in owners], [o.example_id for o in owners]]


def _rows(objects: tuple[ObjectRow, ...]) -> list[list[Any]]:
    """An inspection's largest objects as stored: ``[id, type, self_size, retained_size]`` each."""
    return [[o.id, o.type, o.self_size, o.retained_size] for o in objects]
