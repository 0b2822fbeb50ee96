"""Memory by React component, with each component's hooks: memlab's ``react-hooks`` analysis
(``memlab analyze react-hooks``).

Per component (the fibers' ``type``, named as memlab names it: a host component's tag, else the
type's ``__debugModuleSource`` or ``displayName`` text) over its ``FiberNode`` objects:

- ``instances``: its fibers; ``self_size``: their shallow sizes summed;
- ``retained_size``: what its fibers retain, counting only those no other of its fibers dominates
  (memlab's aggregateDominatorMetrics: each byte once); ``state_size`` and ``props_size`` the
  same over the objects its fibers' ``memoizedState`` and ``memoizedProps`` reference;
- ``children_size`` and ``sibling_size``: the retained sizes of its fibers' ``child`` and
  ``sibling`` fibers, summed (a fiber reached twice counts twice, as memlab sums them);
- ``hooks``: the hook list of one of its fibers, the one whose list retains most, each hook the
  bytes it retains beyond the rest of the list (its retained size less its ``next`` hook's), named
  by the fiber's ``_debugHookTypes`` where a development build keeps them.

heapdb differs from memlab on purpose (docs/analysis.md, "Memory by React component and hook"):

- memlab counts only the fibers its own marking left unprefixed by ``Detached``, which on a
  Chromium page is none of them (the root-group flaw the unmounted-fiber inspection corrects), so
  it finds no component at all; heapdb counts every fiber;
- memlab skips a component whose type has no ``displayName`` (most function components); heapdb
  names it as the unmounted-fiber inspection does, by its function's name (or ``(Object)`` for a
  memo, forwardRef or context type);
- memlab lists the hooks of the component's last fiber in the snapshot's order (a current fiber or
  its alternate, as it happens); heapdb those of the fiber whose hook list retains most;
- a reference to V8's ``null`` or ``undefined`` is no value: memlab walks into it as a hook.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from heapdb.loader.graph import NUMERIC_NAME_KINDS, EdgeKind, HeapGraph
from heapdb.loader.inspections.common import first_targets, string_indexes
from heapdb.loader.inspections.dom import shows_dom
from heapdb.loader.inspections.react import FIBER_NAMES, NO_COMPONENT, components, fibers
from heapdb.units import human_bytes, short_name

if TYPE_CHECKING:
    from heapdb.loader.analysis import Analysis

KEPT = 100  # components a load stores, largest retained first: the stored question's largest limit
UNKNOWN_HOOK = "(unnamed)"  # a hook a production build does not name (no _debugHookTypes)
MAX_HOOKS = 1000  # hooks followed along one list (memlab reads at most 1,000 hook names)
_EMPTY_NAMES = ("null", "undefined")
# The references memlab reads by name (`type` is read as the unmounted-fiber inspection reads it).
_NAMES = (
    "memoizedState",
    "memoizedProps",
    "child",
    "sibling",
    "_debugHookTypes",
    "next",
    "__debugModuleSource",
    "displayName",
)


@dataclass(frozen=True)
class Hook:
    """One hook of a component's fiber: its kind (``useState``…) and the bytes it alone retains."""

    type: str
    size: int


@dataclass(frozen=True)
class ComponentMemory:
    """The fibers of one component, what they hold, and the hooks of one of them."""

    component: str
    instances: int  # its fibers
    retained_size: int  # its fibers' retained sizes, each byte once
    self_size: int
    children_size: int  # its fibers' `child` fibers' retained sizes, summed
    sibling_size: int  # its fibers' `sibling` fibers' retained sizes, summed
    props_size: int  # what its fibers' memoizedProps retain, each byte once
    state_size: int  # what its fibers' memoizedState (the hook lists) retain, each byte once
    hooks_size: int  # the hooks below, summed: one fiber's
    example_id: int  # the fiber whose hooks are listed (0 and no hooks: none has a memoizedState)
    hooks: tuple[Hook, ...]


@dataclass(frozen=True)
class ComponentHooks:
    """Memory by React component in one snapshot: the components whose fibers retain most."""

    source: str
    fibers: int  # fibers of a named component (those without a type, like the root's, are left out)
    components: int  # distinct components (before any limit)
    rows: tuple[ComponentMemory, ...]


# The figures of ComponentHooks over all components (a load stores them, and the rows, on the :Snapshot).
HOOKS_TOTALS = ("fibers", "components")


def component_hooks(graph: HeapGraph, result: Analysis, *, source: str, limit: int = KEPT) -> ComponentHooks | None:
    """Memory by React component in ``graph``, its ``limit`` largest components; None where the
    format has no DOM (no page, so no React)."""
    if not shows_dom(graph.meta.get("format")):
        return None
    from heapdb.loader.inspections import kernels

    # Most snapshots have no React at all: one scan of the string table (in C) says so.
    if not any(name in graph.strings for name in FIBER_NAMES):
        return ComponentHooks(source, 0, 0, ())
    nodes = np.flatnonzero(fibers(graph))
    if not nodes.size:
        return ComponentHooks(source, 0, 0, ())
    at = string_indexes(graph, (*_NAMES, "type", *_EMPTY_NAMES))  # one pass over the string table
    named = ~np.isin(graph.edge_kind, np.array(sorted(NUMERIC_NAME_KINDS), dtype=graph.edge_kind.dtype))
    kind = first_targets(graph, nodes, at["type"], graph.edge_kind == EdgeKind.PROPERTY)[nodes]
    nodes, kind = nodes[kind >= 0], kind[kind >= 0]  # memlab reads no component off a fiber without a type
    types, first, of_type = np.unique(kind, return_index=True, return_inverse=True)
    name_of_type = _type_names(graph, types, nodes[first], at, named)
    known = np.array([n is not None for n in name_of_type], dtype=np.bool_)[of_type]
    nodes, of_type = nodes[known], of_type[known]
    if not nodes.size:
        return ComponentHooks(source, 0, 0, ())
    distinct = sorted({n for n in name_of_type if n is not None})
    position = {n: i for i, n in enumerate(distinct)}
    number = np.array([-1 if n is None else position[n] for n in name_of_type], dtype=np.int64)
    group = number[of_type]
    count = len(distinct)
    retained = result.retained_size

    empty = _empty_values(graph, at)

    def targets(name: str) -> np.ndarray:
        found = first_targets(graph, nodes, at[name], named)[nodes]
        return np.where((found >= 0) & ~empty[np.maximum(found, 0)], found, -1)

    def summed(values: np.ndarray, where: np.ndarray) -> np.ndarray:
        return np.bincount(group[where], weights=values[where], minlength=count).astype(np.int64)

    def each_once(members: np.ndarray, where: np.ndarray) -> np.ndarray:
        """Per component, the retained sizes of ``members`` (where ``where``) no other member of
        the component dominates, summed; each member once."""
        pairs = np.unique(np.stack([group[where], members[where].astype(np.int64)]), axis=1)
        outer = kernels.outermost_pairs(result.idom, pairs[0], pairs[1])
        return np.bincount(pairs[0][outer], weights=retained[pairs[1][outer]], minlength=count).astype(np.int64)

    everywhere = np.ones(nodes.size, dtype=np.bool_)
    state, props, child, sibling = (
        targets("memoizedState"),
        targets("memoizedProps"),
        targets("child"),
        targets("sibling"),
    )
    hook_types = targets("_debugHookTypes")
    instances = np.bincount(group, minlength=count)
    self_size = summed(graph.self_size[nodes], everywhere)
    children = summed(retained[np.maximum(child, 0)], child >= 0)
    siblings = summed(retained[np.maximum(sibling, 0)], sibling >= 0)
    fiber_size, state_size, props_size = (
        each_once(nodes, everywhere),
        each_once(state, state >= 0),
        each_once(props, props >= 0),
    )
    # The fiber whose hooks are listed: the one whose hook list retains most, lowest id on ties
    # (memlab's is the last in the snapshot's order, which a snapshot read back from the store changes).
    stateful = np.flatnonzero(state >= 0)
    ranked = stateful[np.lexsort((graph.ids[nodes[stateful]], -retained[state[stateful]], group[stateful]))]
    listed = np.full(count, -1, dtype=np.int64)
    heads = np.r_[True, group[ranked][1:] != group[ranked][:-1]] if ranked.size else np.zeros(0, dtype=np.bool_)
    listed[group[ranked[heads]]] = ranked[heads]
    rows = []
    for g in range(count):
        hooks: tuple[Hook, ...] = ()
        example = 0
        if listed[g] >= 0:
            i = int(listed[g])
            example = int(graph.ids[nodes[i]])
            names = _hook_names(graph, int(hook_types[i]))
            hooks = _hook_list(graph, retained, int(state[i]), names, at["next"], named, empty)
        rows.append(
            ComponentMemory(
                component=distinct[g],
                instances=int(instances[g]),
                retained_size=int(fiber_size[g]),
                self_size=int(self_size[g]),
                children_size=int(children[g]),
                sibling_size=int(siblings[g]),
                props_size=int(props_size[g]),
                state_size=int(state_size[g]),
                hooks_size=sum(h.size for h in hooks),
                example_id=example,
                hooks=hooks,
            )
        )
    first_fiber = np.full(count, nodes.size, dtype=np.int64)
    np.minimum.at(first_fiber, group, np.arange(nodes.size))
    # memlab's order: most retained first, then the component met first in the snapshot.
    rows.sort(key=lambda r: (-r.retained_size, int(first_fiber[position[r.component]])))
    return ComponentHooks(source=source, fibers=int(nodes.size), components=count, rows=tuple(rows[:limit]))


def _type_names(
    graph: HeapGraph, types: np.ndarray, examples: np.ndarray, at: dict[str, np.ndarray], named: np.ndarray
) -> list[str | None]:
    """Each fiber type's component name (``examples``: one fiber of each): a host component's tag,
    else the type's ``__debugModuleSource`` or ``displayName`` text (memlab's), else its function's
    name as :func:`~heapdb.loader.inspections.react.components` gives it; None for a type that
    names no component."""
    base = components(graph, examples)
    module = first_targets(graph, types, at["__debugModuleSource"], named)
    display = first_targets(graph, types, at["displayName"], named)

    def text(v: int) -> str | None:
        return graph.node_name(v) if v >= 0 and graph.node_kinds[graph.kind[v]] == "string" else None

    found: list[str | None] = []
    for t, fallback in zip(types.tolist(), base, strict=True):
        given = text(t)
        if given is None:
            given = text(int(module[t]))
        if given is None:
            given = text(int(display[t]))
        found.append(given if given is not None else None if fallback == NO_COMPONENT else fallback)
    return found


def _empty_values(graph: HeapGraph, at: dict[str, np.ndarray]) -> np.ndarray:
    """bool[n]: V8's ``null`` and ``undefined`` values, which a Chromium snapshot references: a
    reference to one is no value. (memlab follows it, and lists a hook of 0 bytes for it: one for
    each host component's empty state, one at the end of each hook list.)"""
    names = np.zeros(len(graph.strings), dtype=np.bool_)
    for name in _EMPTY_NAMES:
        names[at[name]] = True
    kinds = np.array([k in ("native", "hidden") for k in graph.node_kinds], dtype=np.bool_)
    empty: np.ndarray = names[graph.name] & kinds[graph.kind]
    return empty


def _hook_names(graph: HeapGraph, array: int) -> list[str]:
    """The names in a fiber's ``_debugHookTypes`` array, by index (empty: none kept)."""
    if array < 0:
        return []
    span = slice(int(graph.edge_start[array]), int(graph.edge_start[array + 1]))
    numeric = np.isin(graph.edge_kind[span], np.array(sorted(NUMERIC_NAME_KINDS), dtype=graph.edge_kind.dtype))
    by_index: dict[int, int] = {}
    for index, target in zip(
        graph.edge_name[span][numeric].tolist(), graph.edge_to[span][numeric].tolist(), strict=True
    ):
        by_index.setdefault(int(index), int(target))  # the first reference with that index, as memlab reads it
    names: list[str] = []
    while len(names) < MAX_HOOKS and len(names) in by_index:
        names.append(graph.node_name(by_index[len(names)]))
    return names


def _hook_list(
    graph: HeapGraph,
    retained: np.ndarray,
    head: int,
    names: list[str],
    next_at: np.ndarray,
    named: np.ndarray,
    empty: np.ndarray,
) -> tuple[Hook, ...]:
    """The hooks from ``head`` along their ``next`` references, each its retained size less the
    next one's; a list that comes round again ends there (memlab's would not end)."""
    chain: list[int] = []
    seen: set[int] = set()
    v = head
    while v >= 0 and v not in seen and len(chain) < MAX_HOOKS:
        seen.add(v)
        chain.append(v)
        span = slice(int(graph.edge_start[v]), int(graph.edge_start[v + 1]))
        hits = np.flatnonzero(named[span] & np.isin(graph.edge_name[span], next_at))
        v = int(graph.edge_to[span][hits[0]]) if hits.size else -1
        v = -1 if v >= 0 and empty[v] else v
    sizes = [int(retained[h]) for h in chain] + [0]
    return tuple(
        Hook(type=names[i] if i < len(names) else UNKNOWN_HOOK, size=sizes[i] - sizes[i + 1]) for i in range(len(chain))
    )


def component_hooks_text(answer: ComponentHooks) -> str:
    """The report as ``heapdb analyze --react-hooks`` and ``heapdb react-hooks`` print it."""
    if not answer.rows:
        return f"React components by memory in {answer.source}: none (no fiber of a named component)"
    lines = [
        f"React components by memory in {answer.source}: {answer.fibers:,} fibers of {answer.components:,} components",
        f"  {'retained':>10}  {'fibers':>7}  {'state':>10}  {'props':>10}  {'hooks':>10}  component: hooks of one fiber",
    ]
    for r in answer.rows:
        hooks = ", ".join(f"{h.type} {human_bytes(h.size)}" for h in r.hooks)
        lines.append(
            f"  {human_bytes(r.retained_size):>10}  {r.instances:>7,}  {human_bytes(r.state_size):>10}  "
            f"{human_bytes(r.props_size):>10}  {human_bytes(r.hooks_size):>10}  {short_name(r.component, 40)}"
            + (f": {hooks} (@{r.example_id})" if r.hooks else "")
        )
    if answer.components > len(answer.rows):
        lines.append(f"  … {answer.components - len(answer.rows):,} more components")
    return "\n".join(lines)
