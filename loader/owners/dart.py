"""Dart snapshot profiles (``gen_snapshot --write-v8-snapshot-profile-to``): owners from the program's structure.

A profile is V8's ``.heapsnapshot`` layout with the Dart VM's own node types (``Library``, ``Class``,
``Function``, ``Code``, ``Instructions``...), an ``ArtificialRoot`` as its root and property edges
named by the VM's fields (``owner_``, ``library_``...). The Dart SDK's size analysis
(``vm_snapshot_analysis``, ``v8_profile.dart``) names the owners of the program-structure objects,
and heapdb takes the same ones, at two levels, coarse first:

- ``package``: a library's package, as the SDK names it (``package:foo`` for
  ``package:foo/src/bar.dart``; ``dart:core``, ``file:///...`` are their own);
- ``library``: the library's URI.

The program-structure objects and whose they are:

- a ``Library`` is its own;
- a ``Class`` is its ``library_``'s; a ``PatchClass`` its ``patched_class_``'s;
- a ``Function`` is its ``owner_``'s (a class, a patch class or a library), except a closure, whose
  ``data_`` is a ``ClosureData``: it is its ``parent_function_``'s (``<anonymous signature>``
  functions are not program structure);
- a ``Field`` is its ``owner_``'s;
- a ``Code`` is its ``owner_``'s (a function, a class...); one owned by ``Null`` is a stub:
  :data:`STUBS` at every level; one owned by a ``Type`` (type-testing code) is not program structure;
- frozen to their owner like them: a code's ``<instructions>`` and the ``Script`` objects of a
  library's ``owned_scripts_``. Claimed by two owners at one level (instructions two functions'
  code shares, deduplicated), such an object is left to reachability there.

Everything else is attributed by :func:`heapdb.loader.owners.attribution.attribute`'s rule. Where that differs
from the SDK's (the lowest common ancestor, in the program tree, of every owner reaching an object):
an object gets the owner of its nearest owned dominator, which the SDK ignores (for it, an object
two owners reach is shared whatever dominates it), and only objects no owned object dominates are
decided by who reaches them; and each level is decided alone, so what two libraries of one package
share is ``@shared`` at the library level and the package's at the package level (for the SDK, it
belongs to the package node, above both libraries).

All of it is array work over the graph and two compiled passes: one over the references for the
fields followed, one along the owner chains (code -> function -> class -> library), each object once.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from heapdb.loader.graph import EdgeKind, HeapGraph, string_positions
from heapdb.loader.owners.attribution import DirectOwners

STUBS = "@stubs"  # the VM's own machine code (stubs: code owned by null), named as the SDK does
ROOT_KIND = "ArtificialRoot"  # the root type the Dart VM's profile writer gives its root, and V8 never
_DART_KINDS = frozenset({"Library", "Class", "Function", "Code"})
_ANONYMOUS_SIGNATURE = "<anonymous signature>"  # a function type's signature, not program structure
# The property references followed: Dart's ``node[name]``, a node's first property edge so named.
_FIELDS = ("owner_", "library_", "patched_class_", "data_", "parent_function_", "<instructions>", "owned_scripts_")


def is_dart(graph: HeapGraph) -> bool:
    """Whether a V8-format graph is a Dart snapshot profile: its root is Dart's ``ArtificialRoot``,
    or its node types are Dart's."""
    kinds = graph.node_kinds
    root_kind = int(graph.kind[graph.root])
    return (root_kind < len(kinds) and kinds[root_kind] == ROOT_KIND) or set(kinds) >= _DART_KINDS


def package_of(library: str) -> str:
    """A library's package as the Dart SDK names it: ``package:foo`` for ``package:foo/bar.dart``;
    any other library (``dart:core``, ``file:///app/main.dart``) is its own."""
    if library.startswith("package:"):
        slash = library.find("/")
        return library[:slash] if slash > 0 else library
    return library


def dart_owners(graph: HeapGraph) -> tuple[DirectOwners, ...]:
    """The program structure's owners at the ``package`` and ``library`` levels (see the module
    docstring), each object's an index into its level's names, -1 for the objects it says nothing of."""
    n = graph.node_count
    kinds = graph.node_kinds

    def of_kind(name: str) -> np.ndarray:
        return graph.kind == kinds.index(name) if name in kinds else np.zeros(n, dtype=bool)

    # Every string looked up at once: one pass over a table of up to millions.
    found: dict[str, list[int]] = {name: [] for name in (*_FIELDS, _ANONYMOUS_SIGNATURE)}
    for at in string_positions(graph.strings, found.keys()):
        found[graph.strings[at]].append(at)
    field = _property_targets(graph, {name: found[name] for name in _FIELDS})

    library = of_kind("Library")
    stubs = n  # one more "node" standing for @stubs, the end of a stub's chain
    # up[v]: the object v's owner is read from; a library (and @stubs) ends its own chain.
    up = np.full(n + 1, -1, dtype=np.int64)
    up[np.flatnonzero(library)] = np.flatnonzero(library)
    up[stubs] = stubs
    chain = up[:n]  # the objects' own entries (a view)

    cls = of_kind("Class")
    chain[cls] = field["library_"][cls]
    patch = of_kind("PatchClass")
    chain[patch] = field["patched_class_"][patch]
    field_object = of_kind("Field")
    owner = field["owner_"]
    chain[field_object] = owner[field_object]

    function = of_kind("Function") & ~np.isin(graph.name, found[_ANONYMOUS_SIGNATURE])
    data = field["data_"]
    closure = function & (data >= 0)
    closure[closure] = of_kind("ClosureData")[data[closure]]
    chain[function] = owner[function]
    chain[closure] = field["parent_function_"][data[closure]]

    # A code object's owner is its owner_'s, and a stub's (owner_ null) @stubs; code owned by what is
    # not program structure (a Type: type-testing code) names none, its chain ending there.
    code = of_kind("Code") & (owner >= 0)
    chain[code] = owner[code]
    chain[code & of_kind("Null")[np.maximum(owner, 0)]] = stubs

    structure = library | cls | patch | field_object | function | code
    chain[~structure] = -1  # a chain through anything else names no owner
    end = _chain_ends(up)[:n]
    # Only a library or @stubs ends a chain that names an owner (not a class naming itself its library).
    named = structure & ((end == stubs) | ((end >= 0) & library[np.clip(end, 0, n - 1)]))

    # Frozen objects: a code's instructions, a library's owned scripts; claimed -> the claimer's chain end.
    scripts, script_library = _owned_scripts(graph, library, field["owned_scripts_"])
    claimed = np.concatenate([field["<instructions>"][code & named], scripts])
    claimer = np.concatenate([end[code & named], script_library])
    keep = (claimed >= 0) & ~structure[np.maximum(claimed, 0)]
    claimed, claimer = claimed[keep], claimer[keep]

    libraries = np.flatnonzero(library)
    library_names = [graph.strings[int(s)] for s in graph.name[libraries].tolist()]
    has_stubs = bool((end[named] == stubs).any())
    levels = []
    for level, name_of in (("package", package_of), ("library", str)):
        names = sorted({name_of(lib) for lib in library_names}) + ([STUBS] if has_stubs else [])
        position = {name: i for i, name in enumerate(names)}
        code_of = np.full(n + 1, -1, dtype=np.int32)  # a chain end's owner at this level
        code_of[libraries] = [position[name_of(lib)] for lib in library_names]
        if has_stubs:
            code_of[stubs] = position[STUBS]
        result = np.full(n, -1, dtype=np.int32)
        result[named] = code_of[end[named]]
        targets, agreed = _agreed(claimed, code_of[claimer])
        result[targets] = agreed
        levels.append(DirectOwners(level, result, tuple(names)))
    return tuple(levels)


def _property_targets(graph: HeapGraph, names: dict[str, list[int]]) -> dict[str, np.ndarray]:
    """Per field name (with its positions in ``strings``): each object's first property reference
    so named (-1: none), as Dart's ``node[name]``. One pass over the references finds them all."""
    slot = np.full(len(graph.strings), -1, dtype=np.int8)
    for k, positions in enumerate(names.values()):
        slot[positions] = k
    found = _first_named_targets(
        graph.edge_start, graph.edge_to, graph.edge_name, graph.edge_kind, slot, int(EdgeKind.PROPERTY), len(names)
    )
    return dict(zip(names, found, strict=True))


@njit(cache=True)
def _first_named_targets(edge_start, edge_to, edge_name, edge_kind, slot, kind, count):
    """int32[count, n]: per field slot, each node's first reference of ``kind`` whose name's slot
    (``slot[name]``, -1 for a name not looked for) it is; -1 where there is none."""
    n = edge_start.shape[0] - 1
    out = np.full((count, n), -1, dtype=np.int32)
    for v in range(n):
        for e in range(edge_start[v], edge_start[v + 1]):
            if edge_kind[e] != kind or edge_name[e] >= slot.shape[0]:
                continue
            k = slot[edge_name[e]]
            if k >= 0 and out[k, v] < 0:
                out[k, v] = edge_to[e]
    return out


@njit(cache=True)
def _chain_ends(up):
    """Where each chain of ``up`` ends (at a node pointing at itself); -1 for a chain that reaches
    -1 or goes round a cycle. Each node is walked once: a walk stops at the first node already
    settled and settles every node it passed."""
    m = up.shape[0]
    unknown, walking = -2, -3
    end = np.full(m, unknown, dtype=np.int64)
    path = np.empty(m, dtype=np.int64)
    for v in range(m):
        depth = 0
        u = v
        while True:
            if u < 0 or end[u] == walking:  # nothing, or round a cycle
                found = -1
                break
            if end[u] != unknown:
                found = end[u]
                break
            if up[u] == u:
                end[u] = u
                found = u
                break
            end[u] = walking
            path[depth] = u
            depth += 1
            u = up[u]
        for k in range(depth):
            end[path[k]] = found
    return end


def _owned_scripts(graph: HeapGraph, library: np.ndarray, owned: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ``Script`` objects of every library's ``owned_scripts_`` array (``owned``), and the library
    owning each."""
    libraries = np.flatnonzero(library & (owned >= 0))
    arrays = owned[libraries]
    starts, stops = graph.edge_start[arrays], graph.edge_start[arrays + 1]
    counts = stops - starts
    edges = np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
    scripts = graph.edge_to[edges].astype(np.int64)
    owners = np.repeat(libraries, counts)
    script_kind = graph.node_kinds.index("Script") if "Script" in graph.node_kinds else -1
    is_script = graph.kind[scripts] == script_kind
    return scripts[is_script], owners[is_script]


def _agreed(targets: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per distinct target: the one code its claims agree on, -1 where they disagree."""
    if not targets.shape[0]:
        return targets.astype(np.int64), codes.astype(np.int32)
    order = np.lexsort((codes, targets))
    targets, codes = targets[order], codes[order]
    first = np.flatnonzero(np.r_[True, targets[1:] != targets[:-1]])
    low, high = np.minimum.reduceat(codes, first), np.maximum.reduceat(codes, first)
    return targets[first], np.where(low == high, low, -1).astype(np.int32)
