"""Java and Android leak status in a stored snapshot: the objects past their lifecycle a load found
(``heapdb lifecycles``), and the labels of a why-alive path's objects (``heapdb why``).

Why the labels of a why-alive path are worked out at question time, not at load: a path is
whatever the question asked for (``--k`` more paths, ``--ignore`` lists), and its labels depend on
the whole path (a label propagates from the last object in use and from the first one past its
life), so no per-object figure stored at load would give them. A path is short, and the rules read
little: the path's objects, their classes and super classes, and a field or two (stored query
``object-facts``, a level of classes per call), decoded as ``heapdb object`` decodes an object's
primitive values. The leak list, which looks at every instance of the lifecycle classes, is
computed at load from the graph (:mod:`heapdb.loader.inspections.lifecycles`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from heapdb.loader.graph import SYNTHETIC_KIND
from heapdb.loader.inspections.leak_status import (
    Evaluation,
    Inspectors,
    ObjectFacts,
    PathLabels,
    PathStep,
    known_leaks_on_path,
    label_path,
    library_note,
    short_name,
)
from heapdb.loader.inspections.lifecycles import LifecycleLeaks, from_stored, shows_lifecycles
from heapdb.loader.store import Snapshot
from heapdb.queries import catalog, missing, params
from heapdb.queries.base import Asking, SnapshotRef
from heapdb.queries.results import RetainerPath

JAVA_CLASS = "java.lang.Class"  # a class object's type: a trace names it by its class instead


class StoredFacts:
    """Objects' facts from a stored snapshot, keyed by object id (stored query ``object-facts``),
    read with ``ask`` (the queries of one transaction, :func:`heapdb.queries.catalog.reading`)."""

    def __init__(self, ask: catalog.Ask, tag: str, names: frozenset[str]) -> None:
        self.ask, self.tag, self.names = ask, tag, sorted(names)

    def facts(self, objects: Sequence[int]) -> Mapping[int, ObjectFacts]:
        rows = self.ask("object-facts", {"tag": self.tag, "ids": list(objects), "names": self.names})
        found: dict[int, ObjectFacts] = {}
        for row in rows:
            references: dict[str, int] = {}
            for name, target in sorted(row["refs"], key=lambda r: (r[0], r[1])):
                references.setdefault(name, target)
            found[row["id"]] = ObjectFacts(row["type"], row["name"] or "", row["values"], row["layout"], references)
        return found


def path_labels(
    asking: Asking, snapshot: Snapshot, paths: Sequence[RetainerPath], inspectors: Inspectors | None = None
) -> tuple[PathLabels, ...] | None:
    """The labels of each of ``paths`` (why-alive paths of ``snapshot``); None where the format shows
    no classes and fields, so that other snapshots' answers stay as they were."""
    if not shows_lifecycles(snapshot.format):
        return None
    chosen = inspectors if inspectors is not None else snapshot_inspectors(asking, snapshot)
    # A level of classes per query, all in one transaction: a path's labels cost one round trip to
    # begin and one to commit, not one each.
    return asking._reading(lambda ask: _labels(Evaluation(chosen, StoredFacts(ask, snapshot.tag, chosen.names)), paths))


def snapshot_inspectors(asking: Asking, snapshot: Snapshot) -> Inspectors:
    """The lifecycle rules and known leaks ``snapshot`` was loaded with: its team's rules (when they
    can still be read as they were) followed by its runtime's default rules, the groups its load
    switched off left out. A snapshot without default rules (stored before heapdb's lifecycle rules
    were rules, or loaded with ``--rules none``) gets heapdb's own, as its load did."""
    from heapdb.loader.rules.defaults import RUNTIMES, default_rules
    from heapdb.loader.store.rulesets import rules_of_snapshot

    runtime = snapshot.default_rules
    if runtime is None or runtime not in RUNTIMES:
        return Inspectors.of(None)
    team, _, _ = rules_of_snapshot(asking.database, snapshot)
    defaults = default_rules(runtime)
    rules = defaults if team is None else team.followed_by(defaults)
    present = set(rules.group_names)
    off = [g for g in snapshot.rules_disabled_groups or () if g == "*" or g in present]
    return Inspectors.of(rules.with_groups(disable=off) if off else rules)


def _labels(evaluation: Evaluation, paths: Sequence[RetainerPath]) -> tuple[PathLabels, ...]:
    evaluation.prefetch(o.id for path in paths for o in path.objects if o.kind != SYNTHETIC_KIND)
    found = []
    for path in paths:
        objects = path.objects
        statuses = [None if o.kind == SYNTHETIC_KIND else evaluation.status(o.id) for o in objects]
        names = [o.name if o.type == JAVA_CLASS and o.name else o.type for o in objects]
        steps = [PathStep(r.name, r.kind, o.kind) for r, o in zip(path.references, objects[1:], strict=True)]
        ids = [None if o.kind == SYNTHETIC_KIND else o.id for o in objects]
        for i, leak in known_leaks_on_path(evaluation, ids, objects[0].kind, steps, names):
            own = statuses[i]  # a known library leak: a note on the holder where its references start
            if own is not None:
                statuses[i] = replace(own, labels=(*own.labels, library_note(leak)))
        found.append(label_path(statuses, [short_name(n) for n in names]))
    return tuple(found)


class LifecycleQuestions(Asking):
    def lifecycles(self, ref: SnapshotRef, p: params.Lifecycles = params.Lifecycles()) -> LifecycleLeaks:
        """The objects past their lifecycle the load stored, grouped by suspect references, as
        :func:`heapdb.loader.inspections.lifecycles.lifecycle_leaks` lists a file's;
        :class:`NotComputed` where the load did not compute them."""
        snapshot, stored = self.stored(ref, "lifecycles", missing.LIFECYCLES)
        return from_stored(snapshot.tag, stored, p.limit)
