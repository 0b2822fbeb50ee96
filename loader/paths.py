"""Retainer-path signatures: which way each object is held, as a number comparable across snapshots.

Object ids are not stable between snapshots of every runtime (Luau and snap.bin ids are addresses,
reused after a collection), but *how* an object is held usually is: ``(GC roots) → global → cache →
Map → (table) → [] → LeakedItem``. Grouping objects by that path lets two builds be compared without
stable ids.

For every object reachable over retaining references, its **first path** is the one breadth-first
search from the root finds first, following each object's references in the snapshot's order
(so it is a shortest path, and the same one every time), with one exception: the references of the
root groups in :data:`~heapdb.loader.graph.TRANSIENT_ROOT_GROUPS` (what the VM happened to be doing when the snapshot was
taken: a compiler's handles, the handle scopes of running code), and of the objects ``[[transient]]``
rules select (docs/rules.md), are followed only after every other path is exhausted. A module's array that an optimising compiler held a handle to at that moment is
then still named by the variable that holds it (``(GC roots) / … / auditTrail → Array``), not by
``(Handle scope) → Array`` in one build and the variable in the next: the paths of the same program
stay the same from build to build, as leak signatures need. (memlab postpones V8's root groups in
its retainer traces for the same reason.) An object only such a group reaches keeps its path
through it. The analysis' distances follow the same rule, so an object's distance is the length of
its first path. Its **signature** hashes the path's hops,
each hop being the reference's normalized name and the type of the object it reaches (the kind of
reference is left out: a context variable and a property of the same name read the same in a path):

- element indexes and names that are numbers or addresses become ``[]`` and ``*``, so ``items[17]``
  and ``items[18]`` are the same hop, and digits inside names become ``#`` (``k1001`` → ``k#``);
- a hop equal to the one before it adds nothing, so every node of a linked list, however deep,
  shares one signature (``next → Node`` repeated is one hop);
- a synthetic node (the root, a root group like ``(GC roots)``) is its own name, whatever reference
  leads to it, and a root group below another root group adds nothing: V8 files what a program
  holds under ``(Stack roots)`` in one snapshot and ``(Handle scope)`` in the next, depending on
  what was running when the snapshot was taken, and the path ``(GC roots) / … / cache → Map`` is
  what stays the same;
- the hash depends on the text of names and types, not on string-table positions, so equal paths
  in different snapshots get equal signatures.

Unreachable objects get signature 0. Signatures are 63-bit, so they fit Neo4j's integers.

Path texts are bounded: each hop's name and type are cut to
:data:`~heapdb.units.NAME_LIMIT` characters and a whole path (:func:`describe_path`,
and the hops :func:`path_hops` returns) to :data:`~heapdb.loader.formats.text.MAX_PATH_CHARS`, the
middle hops giving way to one ``…`` hop. Signatures hash the full texts.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

import numba
import numpy as np

from heapdb.loader.analysis.kernels import first_search
from heapdb.loader.formats.text import MAX_PATH_CHARS
from heapdb.loader.graph import NUMERIC_NAME_KINDS, ROOT_NAME, HeapGraph
from heapdb.units import ELLIPSIS, shorten

_VOLATILE = re.compile(r"^(-?\d+(\.\d+)?|0x[0-9a-fA-F]+|[0-9a-fA-F]{8,})$")
_DIGITS = re.compile(r"\d+")
_MASK63 = np.uint64(0x7FFF_FFFF_FFFF_FFFF)


def normalize_name(name: str) -> str:
    """The part of a reference name that is the same in every build.

    Numbers and addresses become ``*``; digits inside names become ``#``, so the keys of a cache
    (``k1001``, ``session-17``) are one hop, not one per entry.
    """
    return "*" if _VOLATILE.match(name) else _DIGITS.sub("#", name)


def _text_hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")


@dataclass
class FirstPaths:
    """Per object: the object and the reference its first path arrives from and by (-1 for the root
    and the unreachable), and that path's signature (0 for the unreachable)."""

    parent_edge: np.ndarray  # int64[n]
    signature: np.ndarray  # int64[n]
    # Kept from the search rather than found from parent_edge later: a binary search per object in
    # the offsets took 27 s at 20 million objects, each a cache miss.
    holder: np.ndarray  # int32[n]


def first_paths(graph: HeapGraph, retaining: np.ndarray, transient: np.ndarray | None = None) -> FirstPaths:
    """Breadth-first first paths over the retaining references, and their signatures.

    ``transient`` (bool[n], what ``[[transient]]`` rules select; an analysis keeps it as
    ``Analysis.transient``) adds objects to V8's transient root groups, whose references the search
    follows last."""
    n = graph.node_count
    numeric = np.array(sorted(int(k) for k in NUMERIC_NAME_KINDS), dtype=np.uint8)
    named = ~np.isin(graph.edge_kind, numeric)
    # Hash each distinct string once, and only the strings that serve as names or types.
    synthetic = graph.synthetic_nodes()
    used = np.unique(
        np.concatenate(
            [
                graph.edge_name[named].astype(np.int64),
                graph.type.astype(np.int64),
                graph.name[synthetic].astype(np.int64),
            ]
        )
    )
    string_hash = np.zeros(len(graph.strings), dtype=np.uint64)
    string_hash[used] = np.array([_text_hash(normalize_name(graph.strings[i])) for i in used.tolist()], dtype=np.uint64)
    element_hash = np.uint64(_text_hash("[]"))
    root_hash = (
        string_hash[graph.name[graph.root]]
        if synthetic[graph.root]
        else np.uint64(_text_hash(graph.type_name(graph.root)))
    )

    order, parent, parent_edge, _ = first_search(
        graph.root, graph.edge_start, graph.edge_to, retaining, graph.transient_nodes(transient), True
    )
    signature = np.zeros(n, dtype=np.uint64)
    _signatures(
        order,
        parent,
        parent_edge,
        graph.root,
        graph.edge_name,
        graph.type,
        graph.name,
        synthetic,
        named,
        string_hash,
        element_hash,
        root_hash,
        signature,
    )
    return FirstPaths(parent_edge=parent_edge, signature=(signature & _MASK63).astype(np.int64), holder=parent)


@numba.njit(cache=True, inline="always")
def _mix(a, b):
    # splitmix64's finaliser over a combination: cheap, well spread, order-sensitive.
    x = (a ^ (b + np.uint64(0x9E3779B97F4A7C15) + (a << np.uint64(6)) + (a >> np.uint64(2)))) & np.uint64(
        0xFFFFFFFFFFFFFFFF
    )
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


@numba.njit(cache=True)
def _signatures(
    order,
    parent,
    parent_edge,
    root,
    edge_name,
    node_type,
    node_name,
    synthetic,
    named,
    string_hash,
    element_hash,
    root_hash,
    signature,
):
    """Each reached object's path signature, in the order the search reached them (holders first)."""
    hop = np.zeros(signature.shape[0], dtype=np.uint64)  # the hop that reached each object, to fold repeats
    signature[root] = root_hash
    for i in range(1, order.shape[0]):
        v = order[i]
        u = parent[v]
        e = parent_edge[v]
        if synthetic[v] and synthetic[u] and u != root:
            hop[v] = hop[u]  # a root group within a root group: folded into it
            signature[v] = signature[u]
            continue
        if synthetic[v]:
            h = _mix(element_hash, string_hash[node_name[v]])
        else:
            label = string_hash[edge_name[e]] if named[e] else element_hash
            h = _mix(label, string_hash[node_type[v]])
        hop[v] = h
        # A hop equal to the previous one (a list's next → Node) does not lengthen the path.
        signature[v] = signature[u] if hop[u] == h else _mix(signature[u], h)


def path_hops(graph: HeapGraph, paths: FirstPaths, node: int, synthetic: np.ndarray | None = None) -> list[str]:
    """The first path to ``node`` as labels, root first, repeats folded as in the signature.

    Empty for an object the root does not reach. ``synthetic`` is ``graph.synthetic_nodes()``, which
    a caller asking for many paths computes once (it costs a pass over every node).
    """
    numeric = {int(k) for k in NUMERIC_NAME_KINDS}
    if synthetic is None:
        synthetic = graph.synthetic_nodes()
    hops: list[str] = []
    v = node
    while paths.parent_edge[v] >= 0:
        e = int(paths.parent_edge[v])
        kind = int(graph.edge_kind[e])
        source = int(paths.holder[v])
        if synthetic[v] and synthetic[source] and source != graph.root:
            v = source  # a root group within a root group: folded, as in the signature
            continue
        if synthetic[v]:
            hop = shorten(graph.node_name(v) or "(synthetic)")
        else:
            label = "[]" if kind in numeric else normalize_name(shorten(graph.strings[int(graph.edge_name[e])]))
            hop = f"{shorten(label)} → {shorten(graph.type_name(v))}"
        if not hops or hops[-1] != hop:
            hops.append(hop)
        v = source
    if v != graph.root:
        return []
    root = (graph.node_name(graph.root) or ROOT_NAME) if synthetic[graph.root] else graph.type_name(graph.root)
    return _bounded_path([shorten(root), *reversed(hops)])


_SEPARATOR = " / "


def _bounded_path(hops: list[str]) -> list[str]:
    """``hops`` whose text joined by `` / `` fits MAX_PATH_CHARS: the middle ones become one ``…`` hop.

    The first hop (the root) and as many of the last hops (nearest the object) as fit are kept.
    """
    if sum(map(len, hops)) + len(_SEPARATOR) * (len(hops) - 1) <= MAX_PATH_CHARS:
        return hops
    # Each hop is at most 2 * NAME_LIMIT + 3 characters, so the root, the marker and one last hop fit.
    budget = MAX_PATH_CHARS - len(hops[0]) - 2 * len(_SEPARATOR) - len(ELLIPSIS)
    tail: list[str] = []
    for hop in reversed(hops[1:]):
        cost = len(hop) + (len(_SEPARATOR) if tail else 0)
        if cost > budget:
            break
        budget -= cost
        tail.append(hop)
    return [hops[0], ELLIPSIS, *reversed(tail)]


def describe_path(graph: HeapGraph, paths: FirstPaths, node: int) -> str:
    """:func:`path_hops` as one line, hops separated by `` / ``."""
    return " / ".join(path_hops(graph, paths, node))
