"""What event listeners, the console and closures hold, and the global variables a program added.

The first three are Chrome DevTools' heap-snapshot filters ("Objects retained by event handlers",
"by the DevTools console", "by contexts"), with their rule (``createNamedFilter``): walk the graph
breadth-first from the root over every reference but weak ones, refusing one kind of holder; what
the root still reaches without it is held otherwise, and every other reachable object is held by
that kind alone, so that dropping those holders frees exactly these objects:

- **event listeners**: the walk never enters an event handler. A handler is the callback of one of
  Blink's ``V8EventListener`` objects (DevTools' rule, see :func:`.held_kernels.dom_handlers`), or,
  heapdb's addition for Node, a function a Node ``EventEmitter`` keeps in its ``_events``;
- **the console**: the walk never follows a reference from a synthetic root group named
  ``… / DevTools console``: the arguments V8's inspector keeps for a console message once a
  debugger client (DevTools, or any inspector session) has enabled the Runtime domain. Node's
  console keeps nothing without one;
- **closures**: the walk never enters a closure's context (``system / Context`` objects).

The global variables are memlab's ``global-variable`` analysis, narrowed to what a program adds
(docs/analysis.md says how and why): the named properties of the global objects (browser ``Window``
objects, Node's ``global``) whose names the runtime does not define itself (``globals.toml``).

Each category is reported as detached DOM is (:mod:`.dom`): the held objects that no other held
object dominates are grouped by their first retainer path's signature, largest retained first, each
group with an example to ask ``why`` about.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from heapdb.loader.formats import named
from heapdb.loader.formats.protocol import Semantics
from heapdb.loader.graph import NUMERIC_NAME_KINDS, EdgeKind, HeapGraph
from heapdb.loader.inspections.common import tail
from heapdb.units import human_bytes, short_name

if TYPE_CHECKING:
    from heapdb.loader.analysis import Analysis
    from heapdb.loader.paths import FirstPaths

BUILTIN_GLOBALS = Path(__file__).with_name("globals.toml")
CATEGORIES = ("listeners", "console", "closures")  # the fields of Held, in the order reports show them
TITLES = {"listeners": "event listeners", "console": "the console", "closures": "closures"}
CONSOLE_SUFFIX = " / DevTools console"  # how V8 names the console's references (DevTools' rule)
CONTEXT = "system / Context"  # a closure's context; DevTools' rule: this name or "system / Context / …"
V8_EVENT_LISTENER = "V8EventListener"  # Blink's listener object; its reference "1" is the callback
EMITTER_EVENTS = "_events"  # a Node EventEmitter's listeners by event name
BROWSER_GLOBAL = "Window "  # memlab's rule: every object named "Window …" is a browser global object
SYMBOL = "<symbol"  # how V8 names a symbol-keyed property: never a variable
ACCESSORS = ("get ", "set ")  # a global accessor's functions: the property is the name after the prefix
LEFT_OUT_KINDS = ("hidden", "array", "number")  # memlab's rule: values that are no program's variable
KEPT = 100  # groups per category and global variables a load stores: the stored question's limit
PATH_CHARS = 100  # of a holder path the text report prints: its end, nearest the held objects
SHOWN = 5  # groups per category and global variables the text report prints (--json has them all)
UNREACHABLE_PATH = "(not reachable from the roots)"
T = TypeVar("T")


@dataclass(frozen=True)
class HeldGroup:
    """Held objects reached the same way: by the same first retainer path."""

    signature: int  # the first-path signature of the outermost held objects (as on :PathGroup)
    path: str  # that path, root first (hops joined by " / ")
    type: str  # the type of the example
    outermost: int  # held objects reached this way that no other held object dominates
    objects: int  # held objects they alone keep alive, themselves included
    retained_size: int  # the outermost objects' retained sizes summed
    example_id: int  # the largest of them: ask `why` about it


@dataclass(frozen=True)
class HeldBy:
    """What one kind of holder alone keeps alive."""

    holders: int  # event handlers, objects the console references, or closure contexts found
    objects: int  # objects the root reaches only through them (the holders found themselves included)
    self_size: int  # those objects' self sizes summed: what dropping every such holder frees
    retained_size: int  # the retained sizes of those no other held object dominates, summed
    paths: int  # distinct first paths to those outermost objects (the groups, before any limit)
    groups: tuple[HeldGroup, ...]


@dataclass(frozen=True)
class GlobalVariable:
    """A property the program added to a global object."""

    name: str
    id: int  # the value's object id
    type: str
    self_size: int
    retained_size: int


@dataclass(frozen=True)
class Held:
    """What event listeners, the console and closures hold in one snapshot, and its added globals."""

    source: str
    listeners: HeldBy
    console: HeldBy
    closures: HeldBy
    global_count: int  # global variables the program added (before any limit)
    global_retained: int  # their values' retained sizes summed (a value two globals hold counts twice)
    globals: tuple[GlobalVariable, ...]  # the largest retained first, then by name


# The figures of HeldBy over all its objects (a load stores them with its groups).
HELD_TOTALS = ("holders", "objects", "self_size", "retained_size", "paths")


def shows_held(format_name: object) -> bool:
    """Whether snapshots of ``format_name`` are V8's, whose closures, listeners and globals the
    inspection knows."""
    declared = named(format_name)
    return declared is not None and declared.semantics is Semantics.V8


@cache
def builtin_globals() -> dict[str, frozenset[str]]:
    """The global names each runtime (``node``, ``browser``) defines itself (``globals.toml``)."""
    declared = tomllib.loads(BUILTIN_GLOBALS.read_text(encoding="utf-8"))
    return {runtime: frozenset(table["names"]) for runtime, table in declared.items()}


def _nodes_named(graph: HeapGraph, among: np.ndarray, test: Callable[[str], bool]) -> np.ndarray:
    """bool[n]: the objects ``among`` marks whose name ``test`` accepts. Only their distinct names
    are tested: a pass over the whole string table (strings' contents included) takes a second on
    a large snapshot."""
    names = np.unique(graph.name[among])
    accepted = names[np.fromiter((test(graph.strings[i]) for i in names.tolist()), dtype=np.bool_, count=names.size)]
    return among & np.isin(graph.name, accepted)


def _string_index(graph: HeapGraph, text: str) -> int:
    """Where ``text`` stands in the string table (V8 writes each string once); -1 if absent."""
    try:
        return graph.strings.index(text)
    except ValueError:
        return -1


def _kind(graph: HeapGraph, name: str) -> np.ndarray:
    """bool[n]: the objects of V8 node kind ``name``."""
    index = graph.node_kinds.index(name) if name in graph.node_kinds else -1
    return graph.kind == index


def holders(graph: HeapGraph) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """For each category, (bool[m], bool[n]): the references the walk never follows and the objects
    it never enters."""
    from heapdb.loader.inspections import held_kernels

    n, m = graph.node_count, graph.edge_count
    numeric = np.zeros(256, dtype=np.bool_)
    numeric[[int(k) for k in NUMERIC_NAME_KINDS]] = True
    objects = _kind(graph, "object") | _kind(graph, "native") | _kind(graph, "hidden")
    listeners = np.flatnonzero(_nodes_named(graph, objects, lambda s: s == V8_EVENT_LISTENER)).astype(np.int32)
    handlers = held_kernels.dom_handlers(
        graph.edge_start, graph.edge_to, graph.edge_kind, graph.edge_name, listeners, numeric,
        _string_index(graph, "1"), _string_index(graph, "code"),
    )  # fmt: skip
    array = _nodes_named(graph, _kind(graph, "object"), lambda s: s == "Array")
    handlers |= held_kernels.emitter_handlers(
        graph.edge_start, graph.edge_to, graph.edge_kind, graph.edge_name, _string_index(graph, EMITTER_EVENTS),
        int(EdgeKind.PROPERTY), int(EdgeKind.ELEMENT), _kind(graph, "closure"), array,
    )  # fmt: skip

    # The console's references leave synthetic root groups: only their references' names are tested.
    console = np.zeros(m, dtype=np.bool_)
    for v in np.flatnonzero(graph.synthetic_nodes()).tolist():
        for e in graph.out_edges(v):
            if not numeric[graph.edge_kind[e]] and graph.strings[int(graph.edge_name[e])].endswith(CONSOLE_SUFFIX):
                console[e] = True
    contexts = _nodes_named(graph, objects, lambda s: s == CONTEXT or s.startswith(CONTEXT + " / "))
    none_m, none_n = np.zeros(m, dtype=np.bool_), np.zeros(n, dtype=np.bool_)
    return {
        "listeners": (none_m, handlers),
        "console": (console, none_n),
        "closures": (none_m, contexts),
    }


def held_objects(graph: HeapGraph, found: dict[str, tuple[np.ndarray, np.ndarray]]) -> dict[str, np.ndarray]:
    """bool[n] per category: the objects the root reaches (over every reference but weak ones) only
    through that category's holders (``found``, what :func:`holders` found)."""
    from heapdb.loader.inspections import held_kernels

    strong = graph.edge_kind != EdgeKind.WEAK
    everything = np.ones(graph.node_count, dtype=np.bool_)
    reachable = held_kernels.reached(graph.edge_start, graph.edge_to, strong, everything, graph.root)
    masks = {}
    for category, (refused, never) in found.items():
        if not refused.any() and not never.any():  # nothing to avoid: the walk would reach everything
            masks[category] = np.zeros(graph.node_count, dtype=np.bool_)
            continue
        kept = held_kernels.reached(graph.edge_start, graph.edge_to, strong & ~refused, ~never, graph.root)
        masks[category] = reachable & ~kept
    return masks


def _held_by(
    graph: HeapGraph,
    result: Analysis,
    paths: FirstPaths,
    mask: np.ndarray,
    holders_found: int,
    limit: int,
    synthetic: np.ndarray,
) -> HeldBy:
    """One category's totals and its ``limit`` largest groups of outermost held objects
    (``synthetic``: ``graph.synthetic_nodes()``, computed once for every category's paths)."""
    from heapdb.loader.analysis import spread_down
    from heapdb.loader.paths import path_hops

    if not mask.any():
        return HeldBy(holders_found, 0, 0, 0, 0, ())
    n = graph.node_count
    # The outermost held objects: those whose dominator neither is held nor has a held dominator.
    # Two O(n) passes down the dominator tree, where outermost_members would sort it by dominator.
    at_or_below = spread_down(result, np.where(mask, 0, -1).astype(np.int32)) >= 0
    idom = result.idom
    above = np.zeros(n, dtype=np.bool_)
    has_dominator = idom >= 0
    above[has_dominator] = at_or_below[idom[has_dominator]]
    outer = np.flatnonzero(mask & ~above)
    seed = np.full(n, -1, dtype=np.int32)
    seed[outer] = np.arange(outer.size, dtype=np.int32)
    under = spread_down(result, seed)  # each object's outermost held dominator (its index in outer), -1: none
    per_outer = np.bincount(under[mask & (under >= 0)], minlength=outer.size)

    # Group the outermost objects by signature; a group's example is its largest (lowest id on ties).
    signatures, group = np.unique(paths.signature[outer], return_inverse=True)
    retained = result.retained_size[outer]
    sizes = np.bincount(group, weights=retained, minlength=signatures.size).astype(np.int64)
    counts = np.bincount(group, minlength=signatures.size)
    objects = np.bincount(group, weights=per_outer, minlength=signatures.size).astype(np.int64)
    best = np.lexsort((graph.ids[outer], -retained, group))  # by group, largest first
    firsts = best[np.r_[True, group[best][1:] != group[best][:-1]]]
    examples = outer[firsts]
    ranked = np.lexsort((graph.ids[examples], -sizes))[:limit]
    groups = []
    for g in ranked.tolist():
        example = int(examples[g])
        hops = path_hops(graph, paths, example, synthetic)
        groups.append(
            HeldGroup(
                signature=int(signatures[g]),
                path=" / ".join(hops) if hops else UNREACHABLE_PATH,
                type=graph.type_name(example),
                outermost=int(counts[g]),
                objects=int(objects[g]),
                retained_size=int(sizes[g]),
                example_id=int(graph.ids[example]),
            )
        )
    return HeldBy(
        holders=holders_found,
        objects=int(np.count_nonzero(mask)),
        self_size=int(graph.self_size[mask].sum()),
        retained_size=int(retained.sum()),
        paths=int(signatures.size),
        groups=tuple(groups),
    )


def global_objects(graph: HeapGraph) -> list[tuple[int, str]]:
    """The global objects and their runtime (a key of :func:`builtin_globals`): every object named
    ``Window …`` (memlab's rule), and the objects the root's shortcut references point at (V8's
    global objects where the runtime declares them, as Node does)."""
    texts = _kind(graph, "string") | _kind(graph, "concatenated string") | _kind(graph, "sliced string")
    browser = _nodes_named(graph, ~texts, lambda s: s.startswith(BROWSER_GLOBAL))  # a string's name is its text
    found = [(int(v), "browser") for v in np.flatnonzero(browser)]
    for e in graph.out_edges(graph.root):
        target = int(graph.edge_to[e])
        if graph.edge_kind[e] == EdgeKind.SHORTCUT and not browser[target]:
            found.append((target, "node"))
    return found


def global_variables(graph: HeapGraph, result: Analysis) -> list[GlobalVariable]:
    """The properties the program added to the global objects, largest retained first, then by name."""
    builtin = builtin_globals()
    left_out = {graph.node_kinds.index(k) for k in LEFT_OUT_KINDS if k in graph.node_kinds}
    found = []
    for holder, runtime in global_objects(graph):
        for e in graph.out_edges(holder):
            if graph.edge_kind[e] != EdgeKind.PROPERTY:
                continue
            name = graph.strings[int(graph.edge_name[e])]
            variable = name[4:] if name.startswith(ACCESSORS) else name
            target = int(graph.edge_to[e])
            if name.startswith(SYMBOL) or variable in builtin[runtime] or int(graph.kind[target]) in left_out:
                continue
            found.append(
                GlobalVariable(
                    name=name,
                    id=int(graph.ids[target]),
                    type=graph.type_name(target),
                    self_size=int(graph.self_size[target]),
                    retained_size=int(result.retained_size[target]),
                )
            )
    return sorted(found, key=lambda g: (-g.retained_size, g.name, g.id))


def held(graph: HeapGraph, result: Analysis, paths: FirstPaths, *, source: str, limit: int = KEPT) -> Held | None:
    """What listeners, the console and closures hold in ``graph``, with its ``limit`` largest groups
    each and ``limit`` largest added globals; None where the format is not V8's. ``paths`` are the
    first paths of ``result``."""
    if not shows_held(graph.meta.get("format")):
        return None
    found = holders(graph)
    masks = held_objects(graph, found)
    count = {
        "listeners": int(np.count_nonzero(found["listeners"][1])),
        "console": int(np.unique(graph.edge_to[found["console"][0]]).size),  # the objects, not the references
        "closures": int(np.count_nonzero(found["closures"][1])),
    }
    synthetic = graph.synthetic_nodes()
    by = {c: _held_by(graph, result, paths, masks[c], count[c], limit, synthetic) for c in CATEGORIES}
    variables = global_variables(graph, result)
    return Held(
        source=source,
        listeners=by["listeners"],
        console=by["console"],
        closures=by["closures"],
        global_count=len(variables),
        global_retained=sum(g.retained_size for g in variables),
        globals=tuple(variables[:limit]),
    )


def stored_held(answer: Held) -> dict[str, Any]:
    """``answer`` as a load stores it on the ``:Snapshot`` (JSON): each category's totals, the global
    totals, and the groups (with their category) and globals as lists, which a snapshot listing
    leaves out."""
    return {
        **{c: {f: getattr(getattr(answer, c), f) for f in HELD_TOTALS} for c in CATEGORIES},
        "global_count": answer.global_count,
        "global_retained": answer.global_retained,
        "groups": [{"category": c, **asdict(g)} for c in CATEGORIES for g in getattr(answer, c).groups],
        "globals": [asdict(g) for g in answer.globals],
    }


def held_from_stored(stored: Mapping[str, Any], *, source: str, limit: int) -> Held:
    """What :func:`stored_held` stored, with at most ``limit`` groups per category and globals."""
    groups: dict[str, list[HeldGroup]] = {c: [] for c in CATEGORIES}
    for row in stored["groups"]:
        fields = dict(row)
        groups[fields.pop("category")].append(HeldGroup(**fields))
    by = {c: HeldBy(**{f: int(stored[c][f]) for f in HELD_TOTALS}, groups=tuple(groups[c][:limit])) for c in CATEGORIES}
    return Held(
        source=source,
        listeners=by["listeners"],
        console=by["console"],
        closures=by["closures"],
        global_count=int(stored["global_count"]),
        global_retained=int(stored["global_retained"]),
        globals=tuple(GlobalVariable(**g) for g in stored["globals"][:limit]),
    )


def held_text(answer: Held) -> str:
    """The report as ``heapdb analyze --held`` and ``heapdb held`` print it."""
    lines = [f"Held in {answer.source}:"]
    for category in CATEGORIES:
        by: HeldBy = getattr(answer, category)
        found = f"By {TITLES[category]} ({by.holders:,} found)"
        if not by.objects:
            lines.append(f"  {found}: nothing")
            continue
        lines.append(
            f"  {found}: {by.objects:,} objects ({human_bytes(by.self_size)}) only they keep alive, retaining "
            f"{human_bytes(by.retained_size)}, reached by {by.paths:,} paths"
        )
        _listed(lines, by.groups, by.paths, "paths", lambda r: (
            f"{human_bytes(r.retained_size):>10}  {r.objects:>8,} objects  {'@' + str(r.example_id):>10}  "
            f"{tail(r.path, PATH_CHARS)}"
        ))  # fmt: skip
    if not answer.global_count:
        lines.append("  Global variables the program added: none")
        return "\n".join(lines)
    lines.append(
        f"  Global variables the program added: {answer.global_count:,}, retaining "
        f"{human_bytes(answer.global_retained)}"
    )
    _listed(lines, answer.globals, answer.global_count, "globals", lambda v: (
        f"{human_bytes(v.retained_size):>10}  {'@' + str(v.id):>10}  {short_name(v.name, 40)} ({short_name(v.type, 40)})"
    ))  # fmt: skip
    return "\n".join(lines)


def _listed(lines: list[str], rows: Sequence[T], total: int, noun: str, line: Callable[[T], str]) -> None:
    """The first :data:`SHOWN` of ``rows`` as ``line`` writes each, and how many of ``total`` are left."""
    shown = min(SHOWN, len(rows))
    lines.extend(f"    {line(r)}" for r in rows[:shown])
    if total > shown:
        lines.append(f"    … {total - shown:,} more {noun}")
