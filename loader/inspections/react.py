"""Unmounted React components: fiber nodes still alive after React unmounted them.

Which fibers count is memlab's ``unmounted-fiber-node`` analysis (``memlab analyze
unmounted-fiber-node``) with one correction (below; ``tests/test_inspections_react.py`` checks
both). A ``FiberNode`` object is unmounted when

- following its ``return`` references from fiber to fiber never reaches the ``HostRoot`` fiber (the
  one whose ``stateNode`` is the ``FiberRootNode``): React cuts an unmounted fiber off its tree; or
- its immediate dominator is neither the snapshot's root (or one of its root groups) nor another
  fiber, nor a DOM element still attached to a document: whatever keeps it alive is not React's own
  tree.

memlab exempts the root alone, so in Chromium's snapshots, where a mounted tree hangs below a root
group, it lists every mounted fiber too; heapdb exempts the root groups as well. That is the one
difference, and the tests replay both rules (docs/analysis.md, "Unmounted React components").

The report groups them by component (the fiber's ``type``: a function or class component's name, a
host component's tag), each component's retained size counting its outermost unmounted fibers
once (DevTools' rule for a constructor), with its largest fiber as an example and that fiber's
first retainer path, which names what still holds the component.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from heapdb.loader.graph import SYNTHETIC_KIND, EdgeKind, HeapGraph
from heapdb.loader.inspections.common import LARGEST, ObjectRow, first_targets, largest, string_indexes, tail
from heapdb.loader.inspections.dom import DETACHED_PREFIX, detached, shows_dom
from heapdb.units import human_bytes, short_name

if TYPE_CHECKING:
    from heapdb.loader.analysis import Analysis
    from heapdb.loader.paths import FirstPaths

FIBER_NAMES = ("FiberNode", "Detached FiberNode")
FIBER_ROOT = "FiberRootNode"  # what a HostRoot fiber's stateNode is
KEPT = 100  # components a load stores, largest retained first: the stored question's largest limit
PATH_CHARS = 100  # of a holder path the text report prints
NO_COMPONENT = "(no type)"  # a fiber whose `type` is not a function or a string (the HostRoot's is null)
# memlab's names of DOM objects (its isDOMNodeIncomplete): an attached one dominating a fiber is
# React's own holding.
_DOM_NAMES = re.compile(r"^(HTML.*Element|SVG.*Element|HTML.*Collection|CSS.*|.*StyleSheet.*|<[a-zA-Z]+.*>)$")
_DOM_SPECIAL = frozenset({"DOMTokenList", "HTMLDocument", "InternalNode", "Text", "XMLDocument"})


@dataclass(frozen=True)
class UnmountedComponent:
    """The unmounted fibers of one component."""

    component: str
    fibers: int
    retained_size: int  # its outermost unmounted fibers' retained sizes summed
    example_id: int  # its largest unmounted fiber
    path: str  # that fiber's first retainer path: what holds the component


@dataclass(frozen=True)
class UnmountedFibers:
    """The unmounted React fibers of one snapshot: totals, components, and the largest fibers."""

    source: str
    fibers: int  # unmounted fibers (memlab's count)
    self_size: int
    retained_size: int  # what all unmounted fibers retain, each byte once
    mounted: int  # fibers still in a mounted tree
    components: int  # distinct components among the unmounted (before any limit)
    rows: tuple[UnmountedComponent, ...]
    largest: tuple[ObjectRow, ...]  # memlab's list: the LARGEST largest retained, lowest id on ties


# The figures of UnmountedFibers over all fibers (a load stores them on the :Snapshot).
REACT_TOTALS = ("fibers", "self_size", "retained_size", "mounted", "components")


def fibers(graph: HeapGraph) -> np.ndarray:
    """bool[n]: React's fiber nodes (objects named ``FiberNode``)."""
    named = np.array([s in FIBER_NAMES for s in graph.strings], dtype=np.bool_)
    kinds = np.array([k == "object" for k in graph.node_kinds], dtype=np.bool_)
    return named[graph.name] & kinds[graph.kind]


def unmounted(graph: HeapGraph, result: Analysis) -> np.ndarray | None:
    """bool[n]: the unmounted fibers, as memlab marks them; None where the format has no DOM."""
    dom = detached(graph)
    if dom is None:
        return None
    from heapdb.loader.inspections import kernels

    fiber = fibers(graph)
    sources = np.flatnonzero(fiber)
    if not sources.size:  # most snapshots: no React at all
        return fiber
    at = string_indexes(graph, ("return", "stateNode"))
    properties = graph.edge_kind == EdgeKind.PROPERTY
    parent = first_targets(graph, sources, at["return"], properties)
    parent = np.where((parent >= 0) & fiber[np.maximum(parent, 0)], parent, -1).astype(np.int32)
    state = first_targets(graph, sources, at["stateNode"], properties)
    root_names = np.array([s == FIBER_ROOT for s in graph.strings], dtype=np.bool_)
    host = fiber & (state >= 0) & root_names[graph.name[np.maximum(state, 0)]]
    cut_off = fiber & ~kernels.reaches_flagged(parent, host, fiber)

    idom = result.idom
    held = idom >= 0
    holder = np.where(held, idom, 0)
    # Only the fibers' holders' names are matched against memlab's DOM names, each name once.
    names = np.unique(graph.name[holder[sources]])
    dom_names = np.zeros(len(graph.strings), dtype=np.bool_)
    dom_names[names] = [_is_dom_name(graph.strings[i]) for i in names.tolist()]
    native = np.array([k == "native" for k in graph.node_kinds], dtype=np.bool_)
    holders = holder[sources]
    attached_dom = native[graph.kind[holders]] & dom_names[graph.name[holders]] & ~dom[holders]
    # memlab exempts only the root (id 1); a mounted tree hangs below a root group ((GC roots)), so
    # any synthetic holder is exempt here (docs/analysis.md, "Unmounted React components").
    synthetic = np.array([k == SYNTHETIC_KIND for k in graph.node_kinds], dtype=np.bool_)[graph.kind[holders]]
    foreign = np.zeros(graph.node_count, dtype=np.bool_)
    foreign[sources] = held[sources] & ~synthetic & ~fiber[holders] & ~attached_dom
    mask: np.ndarray = cut_off | (fiber & foreign)
    return mask


def _is_dom_name(name: str) -> bool:
    bare = name[len(DETACHED_PREFIX) :] if name.startswith(DETACHED_PREFIX) else name
    bare = bare.strip()
    return bare in _DOM_SPECIAL or _DOM_NAMES.match(bare) is not None


def components(graph: HeapGraph, nodes: np.ndarray) -> list[str]:
    """Each fiber's component: its ``type`` reference's function name or tag."""
    at = string_indexes(graph, ("type",))
    target = first_targets(graph, nodes, at["type"], graph.edge_kind == EdgeKind.PROPERTY)
    named = {"closure", "string", "object"}
    found = []
    for v in nodes.tolist():
        t = int(target[v])
        if t < 0 or graph.node_kinds[graph.kind[t]] not in named:
            found.append(NO_COMPONENT)
        elif graph.node_kinds[graph.kind[t]] == "object":  # memo, forwardRef, a context: its constructor
            found.append(f"({graph.type_name(t)})")
        else:
            found.append(graph.node_name(t) or "(anonymous)")
    return found


def unmounted_fibers(
    graph: HeapGraph, result: Analysis, paths: FirstPaths, *, source: str, limit: int = KEPT
) -> UnmountedFibers | None:
    """The unmounted fibers of ``graph``: its ``limit`` largest components and :data:`LARGEST`
    largest fibers; None where the format has no DOM. ``paths`` are the first paths of ``result``."""
    if not shows_dom(graph.meta.get("format")):
        return None
    mask = unmounted(graph, result)
    assert mask is not None
    from heapdb.loader.analysis import outermost_members
    from heapdb.loader.paths import path_hops

    nodes = np.flatnonzero(mask)
    fiber = fibers(graph)
    if not nodes.size:  # nothing to group: the dominator-tree passes below are skipped
        mounted = int(np.count_nonzero(fiber))
        return UnmountedFibers(source, 0, 0, 0, mounted, 0, (), ())
    names = components(graph, nodes)
    distinct = sorted(set(names))
    number = np.zeros(graph.node_count, dtype=np.int64)
    number[nodes] = np.searchsorted(np.array(distinct, dtype=object), np.array(names, dtype=object))
    outer = outermost_members(result.idom, result.root, np.zeros(graph.node_count, dtype=np.int64), mask, 1)
    per_component = outermost_members(result.idom, result.root, number, mask, max(len(distinct), 1))
    # Fibers by component, the largest (lowest id on ties) first within each.
    order = nodes[np.lexsort((graph.ids[nodes], -result.retained_size[nodes], number[nodes]))]
    starts = np.flatnonzero(np.r_[True, np.diff(number[order]) != 0]) if order.size else order
    ends = np.append(starts[1:], order.size)[: starts.size]
    synthetic = graph.synthetic_nodes()
    rows = []
    for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
        members = order[start:end]
        example = int(members[0])
        rows.append(
            UnmountedComponent(
                component=distinct[int(number[example])],
                fibers=int(members.size),
                retained_size=int(result.retained_size[members[per_component[members]]].sum()),
                example_id=int(graph.ids[example]),
                path=" / ".join(path_hops(graph, paths, example, synthetic)),
            )
        )
    rows.sort(key=lambda r: (-r.retained_size, -r.fibers, r.component))
    return UnmountedFibers(
        source=source,
        fibers=int(nodes.size),
        self_size=int(graph.self_size[mask].sum()),
        retained_size=int(result.retained_size[outer].sum()),
        mounted=int(np.count_nonzero(fiber & ~mask)),
        components=len(distinct),
        rows=tuple(rows[:limit]),
        largest=largest(graph, result, mask, LARGEST),
    )


def unmounted_fibers_text(answer: UnmountedFibers) -> str:
    """The report as ``heapdb analyze --react`` and ``heapdb react`` print it."""
    if not answer.fibers:
        return f"Unmounted React components in {answer.source}: none ({answer.mounted:,} fibers, all in a mounted tree)"
    lines = [
        f"Unmounted React components in {answer.source}: {answer.fibers:,} fibers of {answer.components:,} "
        f"components retain {human_bytes(answer.retained_size)} ({answer.mounted:,} fibers still mounted)",
        f"  {'retained':>10}  {'fibers':>7}  {'example':>10}  {'component':<24}  held by",
    ]
    for r in answer.rows:
        lines.append(
            f"  {human_bytes(r.retained_size):>10}  {r.fibers:>7,}  {'@' + str(r.example_id):>10}  "
            f"{short_name(r.component, 24):<24}  {tail(r.path, PATH_CHARS)}"
        )
    if answer.components > len(answer.rows):
        lines.append(f"  … {answer.components - len(answer.rows):,} more components")
    return "\n".join(lines)
