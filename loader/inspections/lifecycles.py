"""Objects past their lifecycle: the Java and Android objects the lifecycle rules find leaking
(destroyed Activities, detached Views, Fragments no manager holds...), each with its labelled
retainer path, grouped by the references suspected of the leak.

The rules and how a status and a path's labels are worked out are :mod:`.leak_status`'s; this module
reads the facts from a graph (:class:`GraphFacts`) and makes the leak list, as LeakCanary's Shark
makes its leak traces:

- **which objects**: the instances, reachable from the roots, of the classes some rule can find
  leaking, whose leaking tests hold (the not-leaking side is weighed too; a conflict is reported
  in the reason, and the object counts as leaking, as Shark's leaking-object filters decide);
- **their traces**: each one's first retainer path (:mod:`heapdb.loader.paths`: the shortest, the
  same every time), every object on it labelled. A leaking object whose path runs through another
  leaking object is that one's leak too (Shark's path finder stops at leaking objects): it is
  counted (``nested``) but has no trace of its own. So no listed object dominates another, and the
  listed retained sizes add up without counting a byte twice;
- **groups**: traces whose suspect references (between the last NOT_LEAKING object and the first
  LEAKING one) are the same, by each reference's holder class and normalized name: Shark's leak
  signature, so that one fix in the code frees the whole group.

Why a Python loop per candidate, where the other inspections stay in numpy: the rules are data of
any shape (references followed, class ancestry) and the labels of a stored path must come from the
same code at question time. The candidates are the instances of lifecycle classes only (Activities,
Views...), a small part of a heap; each costs tens of microseconds (docs/analysis.md has figures).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from heapdb.loader.formats import named
from heapdb.loader.graph import EDGE_KIND_NAMES, NUMERIC_NAME_KINDS, HeapGraph
from heapdb.loader.inspections.common import first_targets, string_indexes
from heapdb.loader.inspections.leak_status import (
    CLASS_REFERENCE,
    LEAKING,
    SUPER_REFERENCE,
    Evaluation,
    Inspectors,
    LibraryLeak,
    ObjectFacts,
    PathStep,
    known_leaks_on_path,
    label_path,
    short_name,
)
from heapdb.units import human_bytes

if TYPE_CHECKING:
    from heapdb.loader.analysis import Analysis
    from heapdb.loader.paths import FirstPaths

KEPT = 50  # groups a load stores (JSON on the :Snapshot), largest retained first: the question's largest limit
SUSPECT_SEPARATOR = " → "
_MASK63 = (1 << 63) - 1


@dataclass(frozen=True)
class LabelledObject:
    """One object of a leak trace: how it is held and how it is labelled."""

    id: int
    type: str
    name: str  # a class object's class name, a root group's name; "" for other objects
    reference: str  # the reference from the object before it ("" for the first)
    status: str  # LEAKING, NOT_LEAKING, UNKNOWN; "" for a root group
    reason: str
    suspect: bool  # the reference from it to the next object is suspected of the leak


@dataclass(frozen=True)
class LifecycleLeak:
    """Leaking objects whose traces share their suspect references: one bug, one fix."""

    signature: int  # a hash of the suspect references (holder class and normalized name each)
    suspects: str  # those references, ``Holder.field`` joined by " → "
    types: tuple[str, ...]  # the leaking objects' types, most frequent first
    objects: int  # leaking objects held this way
    retained_size: int  # their retained sizes summed
    example_id: int  # the largest of them: ask `why` about it
    reason: str  # why the example is leaking
    trace: tuple[LabelledObject, ...]  # the example's first path, labelled, root group first
    # The known library leak the example's trace runs through ([[library_leak]]): why, and where
    # (``Holder.field``); "" for a leak of the app's own. Library leaks are listed after the app's.
    library_leak: str = ""
    library_reference: str = ""


@dataclass(frozen=True)
class LifecycleLeaks:
    """The objects of one snapshot past their lifecycle, grouped by their suspect references."""

    source: str
    leaking: int  # reachable objects the rules find leaking
    nested: int  # of which held through another leaking object (in that one's trace, not their own)
    retained_size: int  # what the others retain, each byte once
    signatures: int  # distinct suspect signatures (the groups, before any limit)
    groups: tuple[LifecycleLeak, ...]


# The figures of LifecycleLeaks over every leaking object (a load stores them with the groups).
LIFECYCLE_TOTALS = ("leaking", "nested", "retained_size", "signatures")


def shows_lifecycles(format_name: str | None) -> bool:
    """Whether snapshots of ``format_name`` show classes and field values for lifecycle rules."""
    declared = named(format_name)
    return declared is not None and declared.lifecycles


class GraphFacts:
    """The facts of a graph's nodes (keys are node indexes), read from its arrays and field values."""

    def __init__(self, graph: HeapGraph, names: frozenset[str]) -> None:
        self.graph = graph
        self._wanted = np.zeros(len(graph.strings), dtype=np.bool_)
        for at in string_indexes(graph, names).values():
            self._wanted[at] = True
        self._numeric = np.array(sorted(int(k) for k in NUMERIC_NAME_KINDS), dtype=graph.edge_kind.dtype)

    def facts(self, objects: Sequence[int]) -> Mapping[int, ObjectFacts]:
        g = self.graph
        nodes = np.unique(np.asarray(objects, dtype=np.int64))
        values: dict[int, str] = {}
        layouts: dict[int, str] = {}
        if g.values is not None:
            at, found = g.values.stored_of(nodes)
            values = dict(zip(nodes[at].tolist(), found, strict=True))
            at, found = g.values.layouts_of(nodes)
            layouts = dict(zip(nodes[at].tolist(), found, strict=True))
        # Every named reference of every node at once (an element's "name" is its index, not a
        # string: left out), then only those the rules name: a few per node, the rest in numpy.
        counts = (g.edge_start[nodes + 1] - g.edge_start[nodes]).astype(np.int64)
        owner = np.repeat(np.arange(nodes.size), counts)
        edges = np.arange(int(counts.sum()), dtype=np.int64) + np.repeat(
            g.edge_start[nodes] - np.cumsum(counts) + counts, counts
        )
        named = ~np.isin(g.edge_kind[edges], self._numeric)
        edges, owner = edges[named], owner[named]
        wanted = self._wanted[g.edge_name[edges]]
        edges, owner = edges[wanted], owner[wanted]
        references: list[dict[str, int]] = [{} for _ in range(nodes.size)]
        for i, e in zip(owner.tolist(), edges.tolist(), strict=True):
            references[i].setdefault(g.strings[int(g.edge_name[e])], int(g.edge_to[e]))
        out: dict[int, ObjectFacts] = {}
        for i, v in enumerate(nodes.tolist()):
            out[v] = ObjectFacts(g.type_name(v), g.node_name(v), values.get(v), layouts.get(v), references[i])
        return out


def class_chains(graph: HeapGraph) -> dict[int, tuple[str, ...]]:
    """Per class object of a Java graph (node index), its class name and its super classes' names,
    nearest first; empty for a graph that shows no classes. A walk up per class, memoized."""
    values = graph.values
    if values is None or not values.class_layout.shape[0]:
        return {}
    first_class = values.first_class
    class_nodes = np.arange(first_class, first_class + values.class_layout.shape[0], dtype=np.int64)
    at = string_indexes(graph, (SUPER_REFERENCE,))
    super_of = first_targets(graph, class_nodes, at[SUPER_REFERENCE])
    chains: dict[int, tuple[str, ...]] = {}
    for c in class_nodes.tolist():
        walk: list[int] = []
        v = c
        while v >= 0 and v not in chains and len(walk) <= len(class_nodes):
            walk.append(v)
            chains[v] = ()  # a cycle in a malformed dump ends here
            v = int(super_of[v])
        above = chains.get(v, ()) if v >= 0 else ()
        for u in reversed(walk):
            above = chains[u] = (graph.node_name(u), *above)
    return chains


def leaking_candidates(graph: HeapGraph, result: Analysis, inspectors: Inspectors) -> np.ndarray:
    """The reachable instances of the classes some rule can find leaking (node indexes, ascending)."""
    values = graph.values
    classes = inspectors.leaking_classes
    if values is None or not classes:
        return np.zeros(0, dtype=np.int64)
    chains = class_chains(graph)
    wanted = np.array([c for c, chain in chains.items() if not classes.isdisjoint(chain)], dtype=np.int64)
    if not wanted.size:
        return wanted
    instances = np.arange(values.first, values.first + values.offset.shape[0], dtype=np.int64)
    class_of = first_targets(graph, instances, string_indexes(graph, (CLASS_REFERENCE,))[CLASS_REFERENCE])
    return instances[np.isin(class_of[instances], wanted) & result.reachable[instances]]


def lifecycle_leaks(
    graph: HeapGraph,
    result: Analysis,
    paths: FirstPaths,
    *,
    source: str,
    inspectors: Inspectors | None = None,
    limit: int = KEPT,
) -> LifecycleLeaks | None:
    """The objects of ``graph`` past their lifecycle, in their ``limit`` largest groups, by the
    lifecycle rules and known leaks of ``inspectors`` (default: heapdb's own); None where the format
    shows no classes and fields (or a redacting load dropped the values)."""
    if not shows_lifecycles(graph.meta.get("format")) or graph.values is None:
        return None
    inspectors = inspectors if inspectors is not None else Inspectors.of(None)
    evaluation = Evaluation(inspectors, GraphFacts(graph, inspectors.names))
    candidates = leaking_candidates(graph, result, inspectors).tolist()
    evaluation.prefetch(candidates)
    leaking = [v for v in candidates if evaluation.status(v, leaking_wins=True).status == LEAKING]
    if not leaking:
        return LifecycleLeaks(source, 0, 0, 0, 0, ())
    is_leaking = set(leaking)
    synthetic = graph.synthetic_nodes()
    traces: dict[int, list[int]] = {}  # each outermost leaking object's first path, its root group first
    for v in leaking:
        path = [v]
        while paths.holder[path[-1]] >= 0:
            path.append(int(paths.holder[path[-1]]))
        path.reverse()
        if not any(u in is_leaking for u in path[:-1]):
            traces[v] = [u for u in path if u != graph.root]
    evaluation.prefetch(u for path in traces.values() for u in path)
    groups: dict[int, list[tuple[int, tuple[LabelledObject, ...], str, LibraryLeak | None]]] = {}
    for v, path in traces.items():
        trace, signature, suspects = _trace(graph, paths, evaluation, path, synthetic)
        library = _known_leak(graph, paths, evaluation, path, synthetic)
        groups.setdefault(signature, []).append((v, trace, suspects, library))
    size = result.retained_size
    rows = []
    for signature, members in groups.items():
        nodes = [v for v, *_ in members]
        example = max(members, key=lambda m: (int(size[m[0]]), -int(graph.ids[m[0]])))
        types: dict[str, int] = {}
        for v in nodes:
            types[graph.type_name(v)] = types.get(graph.type_name(v), 0) + 1
        rows.append(
            LifecycleLeak(
                signature=signature,
                suspects=example[2],
                types=tuple(sorted(types, key=lambda t: (-types[t], t))),
                objects=len(nodes),
                retained_size=int(size[nodes].sum()),
                example_id=int(graph.ids[example[0]]),
                reason=example[1][-1].reason,
                trace=example[1],
                library_leak="" if example[3] is None else example[3].reason,
                library_reference="" if example[3] is None else example[3].reference,
            )
        )
    # The app's own leaks first, then the libraries' (Shark reports them apart).
    rows.sort(key=lambda r: (bool(r.library_leak), -r.retained_size, -r.objects, r.example_id))
    return LifecycleLeaks(
        source=source,
        leaking=len(leaking),
        nested=len(leaking) - len(traces),
        retained_size=sum(r.retained_size for r in rows),
        signatures=len(rows),
        groups=tuple(rows[:limit]),
    )


def _trace(
    graph: HeapGraph, paths: FirstPaths, evaluation: Evaluation, path: list[int], synthetic: np.ndarray
) -> tuple[tuple[LabelledObject, ...], int, str]:
    """One leaking object's labelled trace, its suspects' signature and their text."""
    statuses = [
        None if synthetic[u] else evaluation.status(u, leaking_wins=i == len(path) - 1) for i, u in enumerate(path)
    ]
    names = [short_name(_holder_name(graph, u)) for u in path]
    labels = label_path(statuses, names, leak_trace=True)
    references = [""] + [reference_name(graph, int(paths.parent_edge[u])) for u in path[1:]]
    suspect = set(labels.suspects)
    trace = tuple(
        LabelledObject(
            id=int(graph.ids[u]),
            type=graph.type_name(u),
            name=graph.node_name(u) if _is_class(graph, u) or synthetic[u] else "",
            reference=references[i],
            status=labels.objects[i].status,
            reason=labels.objects[i].reason,
            suspect=i in suspect,
        )
        for i, u in enumerate(path)
    )
    hops = [(_holder_name(graph, path[i]), references[i + 1]) for i in labels.suspects]
    return trace, suspect_signature(hops), suspect_text(hops)


def _known_leak(
    graph: HeapGraph, paths: FirstPaths, evaluation: Evaluation, path: list[int], synthetic: np.ndarray
) -> LibraryLeak | None:
    """The known leak (a ``[[known_leak]]`` chain) the trace ``path`` runs through first, if any."""
    steps = []
    for u in path[1:]:
        edge = int(paths.parent_edge[u])
        kind = int(graph.edge_kind[edge])
        name = graph.strings[int(graph.edge_name[edge])] if kind not in _NUMERIC else str(int(graph.edge_name[edge]))
        steps.append(PathStep(name, EDGE_KIND_NAMES[kind], graph.node_kinds[int(graph.kind[u])]))
    objects = [None if synthetic[u] else u for u in path]
    names = [_holder_name(graph, u) for u in path]
    found = known_leaks_on_path(evaluation, objects, graph.node_kinds[int(graph.kind[path[0]])], steps, names)
    return next((leak for _, leak in found), None)


_NUMERIC = frozenset(int(k) for k in NUMERIC_NAME_KINDS)


def reference_name(graph: HeapGraph, edge: int) -> str:
    """A reference as a trace names it: a field's name, an element's index in brackets."""
    if int(graph.edge_kind[edge]) in {int(k) for k in NUMERIC_NAME_KINDS}:
        return f"[{int(graph.edge_name[edge])}]"
    return graph.strings[int(graph.edge_name[edge])]


def suspect_signature(hops: Sequence[tuple[str, str]]) -> int:
    """The signature of suspect references, each ``(holder class, reference name)``: element indexes
    and the digits in names do not count (``[3]`` and ``[4]`` are one reference)."""
    from heapdb.loader.paths import normalize_name

    text = "\n".join(f"{holder}.{_generic(name, normalize_name)}" for holder, name in hops)
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little") & _MASK63


def suspect_text(hops: Sequence[tuple[str, str]]) -> str:
    return SUSPECT_SEPARATOR.join(f"{holder}{name if name.startswith('[') else '.' + name}" for holder, name in hops)


def _generic(name: str, normalize: Any) -> str:
    return "[]" if name.startswith("[") and name.endswith("]") else str(normalize(name))


def _is_class(graph: HeapGraph, node: int) -> bool:
    values = graph.values
    return values is not None and 0 <= node - values.first_class < values.class_layout.shape[0]


def _holder_name(graph: HeapGraph, node: int) -> str:
    """How a trace names an object's class: a class object by its class (a static field's holder)."""
    return graph.node_name(node) if _is_class(graph, node) else graph.type_name(node)


def from_stored(source: str, stored: Mapping[str, Any], limit: int) -> LifecycleLeaks:
    """The answer from what a load stored on the ``:Snapshot`` (``lifecycles``: the totals and groups)."""
    groups = tuple(
        LifecycleLeak(
            **{
                **g,
                "types": tuple(g["types"]),
                "trace": tuple(LabelledObject(**o) for o in g["trace"]),
            }
        )
        for g in stored["groups"][:limit]
    )
    return LifecycleLeaks(source=source, **{f: int(stored[f]) for f in LIFECYCLE_TOTALS}, groups=groups)


def lifecycle_leaks_text(answer: LifecycleLeaks) -> str:
    """The report as ``heapdb analyze --lifecycles`` and ``heapdb lifecycles`` print it: each group
    with its example's trace, Shark's way (``~~~`` under the suspect references)."""
    if not answer.leaking:
        return f"Objects past their lifecycle in {answer.source}: none"
    nested = f" ({answer.nested:,} of them held through another)" if answer.nested else ""
    lines = [
        f"Objects past their lifecycle in {answer.source}: {answer.leaking:,} leaking{nested}, retaining "
        f"{human_bytes(answer.retained_size)}, in {answer.signatures:,} groups by suspect references"
    ]
    for g in answer.groups:
        lines.append("")
        lines.append(
            f"{human_bytes(g.retained_size)} in {g.objects:,} × {', '.join(g.types)}: {g.reason} "
            f"(example @{g.example_id})"
        )
        if g.library_leak:
            lines.append(f"  known library leak, through {g.library_reference}: {g.library_leak}")
        lines.append(f"  suspects: {g.suspects or '(none)'}")
        for o in g.trace:
            shown = o.name if o.name and not o.status else f"{o.name} (class)" if o.name else o.type
            status = f"  {o.status}" + (f" ({o.reason})" if o.reason else "") if o.status else ""
            via = f".{o.reference} → " if o.reference and not o.reference.startswith("[") else f"{o.reference} → "
            lines.append(f"    {via if o.reference else ''}{shown} @{o.id}{status}")
            if o.suspect:
                lines.append("      ~~~")
    if answer.signatures > len(answer.groups):
        lines.append(f"… {answer.signatures - len(answer.groups):,} more groups")
    return "\n".join(lines)
