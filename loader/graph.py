"""The in-memory heap graph: compact numpy arrays shared by every reader, the analysis and the loader.

A reader turns a snapshot file into one :class:`HeapGraph`; everything downstream (dominators,
retained sizes, the Neo4j writer, the Chrome exporter) works on these arrays and never holds a Python
object per heap object.

Conventions every reader follows:

- Nodes are numbered ``0..n-1`` (their *index*); ``ids`` holds the snapshot's own object id (a V8 node
  id, a Luau address, a snap.bin object id). Ids are unique within a graph.
- There is exactly one root node, ``graph.root``. Every GC root of the runtime hangs below it through
  edges. For V8 it is the snapshot's own synthetic root (node 0). Other readers add a synthetic node of
  kind ``"synthetic"`` named ``"(root)"``, with one synthetic ``"(<kind> roots)"`` node per root kind
  below it (mirroring V8's ``(GC roots)`` layout), so a retainer path always starts with its root kind.
- Edges are stored CSR by source: the out-edges of node ``i`` are ``edge_start[i]:edge_start[i+1]``.
- ``edge_name`` is an index into ``strings``, except for the kinds in :data:`NUMERIC_NAME_KINDS`
  (array elements, V8 hidden edges) where it is the integer index itself.
- ``type`` is the class a person groups objects by (a JavaScript constructor name, ``"(closure)"``,
  ``"table"``), ``name`` the object's own name or value (a function name, a string's contents);
  both index ``strings``. ``kind`` indexes ``node_kinds``, the runtime's own coarse node types.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

import numpy as np

from heapdb.loader.sources import AllocationTraces, SourceLocations
from heapdb.loader.values import FieldValues


class EdgeKind(IntEnum):
    """What a reference is. V8's edge types, plus plain strong references for runtimes without them."""

    CONTEXT = 0  # a variable captured in a closure's context
    ELEMENT = 1  # an array element; the name is the index
    PROPERTY = 2  # a named property
    INTERNAL = 3  # a VM-internal strong reference
    HIDDEN = 4  # V8 hidden reference; the name is an index
    SHORTCUT = 5  # V8 shortcut: a summary edge that duplicates a longer path (retains only from the root)
    WEAK = 6  # never retains, never on a retainer path
    REFERENCE = 7  # a strong reference from a runtime that has no finer kinds (Luau, Python, snap.bin)


NUMERIC_NAME_KINDS = frozenset({EdgeKind.ELEMENT, EdgeKind.HIDDEN})

# Per-reference weights that rules assign and the analysis takes (int8, one per edge, indexed like
# ``edge_to``; "Rule weights" in docs/analysis.md). Declared with the graph, which both the rules
# and the analysis import, so that parsing a rule file does not import the analysis kernels.
NO_RULE = 0  # a reference no rule names
WEAK_WEIGHT = -1  # rule "weak": yields to any other reference into the same object
IGNORED = -128  # rule "ignore": never retains, never on a retainer path
MAX_OWNS_WEIGHT = 127  # rule "owns(weight)" takes 1..127; a bare "owns" is 1

# The graph meta key that says a graph's names are cut (to heapdb.units.NAME_LIMIT characters): a
# graph read back from the store (heapdb reanalyze). Inspections that compare whole names skip it.
NAMES_CUT = "names_cut"
# The graph meta key that says what a redaction replaced (heapdb.loader.redaction); snap.bin keeps it.
REDACTED = "redacted"

# The most bytes a graph's self sizes may add up to (2^62): every retained size is such a sum, and
# stays exact in int64 (and in Neo4j's integers).
MAX_TOTAL_SIZE = 1 << 62

# The synthetic root layout (see the module docstring). V8 names its own bookkeeping nodes' kind
# "synthetic" too, so one test (``kind == SYNTHETIC_KIND``) finds them in every format. The stored
# Cypher queries repeat this value; a test ties them to it.
ROOT_NAME = "(root)"
SYNTHETIC_KIND = "synthetic"
# V8's root groups whose references record the moment a snapshot was taken, not the program: a
# compiler's handles, the handle scopes of the code running. Breadth-first searches from the root
# (distances, first paths) follow their references only after every other reference, so the same
# program keeps the same retainer paths from build to build (see heapdb.loader.paths). This set
# always applies, with rules or without; `[[transient]]` rules (docs/rules.md) add objects to it,
# and V8's default rules list it as the group `v8-transient-roots` for a team to see and extend.
TRANSIENT_ROOT_GROUPS = frozenset(
    {
        "(Handle scope)",
        "(Strong roots)",
        "(Relocatable)",
        "(Compilation cache)",
        "(Write barrier)",
        "(Debugger)",
        # .NET's objects waiting for their finalizer (snap.bin root kind "finalizer queue"): already
        # unreachable from the program, alive only until the finalizer thread gets to them.
        "(finalizer queue roots)",
    }
)
# snap.bin root kinds whose roots do not keep their objects alive: read as weak edges from their
# "(<kind> roots)" node (.NET's weak GC handles, which heapdb's Mono profiler module writes).
WEAK_ROOT_KINDS = frozenset({"weak handle"})


def root_kind_node_name(kind: str) -> str:
    """The name of the synthetic node that holds every root of one kind: ``"(<kind> roots)"``."""
    return f"({kind} roots)"


def root_kind_from_node_name(name: str) -> str | None:
    """The root kind a :func:`root_kind_node_name` names, or None when ``name`` is not one."""
    if name.startswith("(") and name.endswith(" roots)"):
        return name[1 : -len(" roots)")]
    return None


EDGE_KIND_NAMES: tuple[str, ...] = tuple(k.name.lower() for k in EdgeKind)


class Detachedness(IntEnum):
    """Whether a DOM-backed object is attached to a live document (V8's node field)."""

    UNKNOWN = 0
    ATTACHED = 1
    DETACHED = 2


@dataclass
class HeapGraph:
    """A heap snapshot as arrays. See the module docstring for the conventions."""

    ids: np.ndarray  # int64[n]
    kind: np.ndarray  # uint8[n], index into node_kinds
    type: np.ndarray  # int32[n], index into strings
    name: np.ndarray  # int32[n], index into strings
    self_size: np.ndarray  # int64[n]
    edge_start: np.ndarray  # int64[n + 1]
    edge_to: np.ndarray  # int32[m]
    edge_kind: np.ndarray  # uint8[m], an EdgeKind
    edge_name: np.ndarray  # uint32[m]
    strings: list[str]
    node_kinds: list[str]
    root: int = 0
    detachedness: np.ndarray | None = None  # uint8[n], a Detachedness, when the format records it
    meta: dict[str, Any] = field(default_factory=dict)
    # Where objects come from, when the format records it (heapdb.loader.sources); None: unknown.
    locations: SourceLocations | None = None
    allocations: AllocationTraces | None = None
    # The primitive values objects hold, when the format has them (heapdb.loader.values); None: none.
    values: FieldValues | None = None

    @property
    def node_count(self) -> int:
        return int(self.ids.shape[0])

    @property
    def edge_count(self) -> int:
        return int(self.edge_to.shape[0])

    def out_edges(self, node: int) -> range:
        """The edge positions of ``node``'s references."""
        return range(int(self.edge_start[node]), int(self.edge_start[node + 1]))

    def edge_label(self, edge: int) -> str:
        """The edge's name as text: a property name, or an element index."""
        kind = EdgeKind(int(self.edge_kind[edge]))
        value = int(self.edge_name[edge])
        return str(value) if kind in NUMERIC_NAME_KINDS else self.strings[value]

    def type_name(self, node: int) -> str:
        return self.strings[int(self.type[node])]

    def node_name(self, node: int) -> str:
        return self.strings[int(self.name[node])]

    def synthetic_nodes(self) -> np.ndarray:
        """bool[n]: the nodes of kind :data:`SYNTHETIC_KIND` (the root layout, V8's root groups)."""
        # A lookup table by kind: the result's size and no more (np.isin widens the kinds first).
        return np.array([name == SYNTHETIC_KIND for name in self.node_kinds], dtype=bool)[self.kind]

    def transient_root_groups(self) -> np.ndarray:
        """bool[n]: the synthetic nodes named in :data:`TRANSIENT_ROOT_GROUPS`."""
        names = string_positions(self.strings, TRANSIENT_ROOT_GROUPS)
        return self.synthetic_nodes() & np.isin(self.name, names)

    def transient_nodes(self, extra: np.ndarray | None = None) -> np.ndarray:
        """bool[n]: what breadth-first searches from the root (first paths, distances) follow last:
        :meth:`transient_root_groups`, and the objects ``extra`` (bool[n], what ``[[transient]]``
        rules select) marks besides."""
        deferred = self.transient_root_groups()
        if extra is not None:
            if extra.shape != (self.node_count,):
                raise ValueError(f"transient must be bool[{self.node_count}], not {extra.dtype}{extra.shape}")
            deferred |= extra.astype(np.bool_, copy=False)
        return deferred

    def edge_sources(self) -> np.ndarray:
        """The source node of every edge (int32[m]), expanded from the CSR offsets."""
        counts = np.diff(self.edge_start)
        return np.repeat(np.arange(self.node_count, dtype=np.int32), counts)

    def validate(self, ids_checked: bool = False) -> None:
        """Check shapes, dtypes and index ranges; raise ValueError naming the first problem.

        Readers call this before returning, so analysis kernels can index without bounds checks.
        ``ids_checked``: the reader has found every id once already (hprof's id table does), so the
        check for a repeated id, whose temporaries cost two more id columns, is not run again.
        """
        n, m = self.node_count, self.edge_count
        expect = {
            "ids": (self.ids, np.int64, n),
            "kind": (self.kind, np.uint8, n),
            "type": (self.type, np.int32, n),
            "name": (self.name, np.int32, n),
            "self_size": (self.self_size, np.int64, n),
            "edge_start": (self.edge_start, np.int64, n + 1),
            "edge_to": (self.edge_to, np.int32, m),
            "edge_kind": (self.edge_kind, np.uint8, m),
            "edge_name": (self.edge_name, np.uint32, m),
        }
        if self.detachedness is not None:
            expect["detachedness"] = (self.detachedness, np.uint8, n)
        for label, (array, dtype, length) in expect.items():
            if array.dtype != dtype or array.ndim != 1 or array.shape[0] != length:
                raise ValueError(f"{label}: expected {dtype.__name__}[{length}], got {array.dtype}{list(array.shape)}")
        if n == 0:
            raise ValueError("the graph has no nodes")
        if not 0 <= self.root < n:
            raise ValueError(f"root {self.root} is not a node index")
        # The checks over whole arrays run in slices: on a large snapshot their temporaries would
        # otherwise set the reader's peak memory.
        if (
            self.edge_start[0] != 0
            or self.edge_start[-1] != m
            or any(bool((self.edge_start[lo + 1 : hi + 1] < self.edge_start[lo:hi]).any()) for lo, hi in _slices(n))
        ):
            raise ValueError("edge_start is not a monotone CSR offset array ending at the edge count")
        if m and (self.edge_to.min() < 0 or self.edge_to.max() >= n):
            raise ValueError("an edge points outside the node range")
        if m and self.edge_kind.max() > max(EdgeKind):
            raise ValueError("an edge has an unknown kind")
        strings = len(self.strings)
        for label, array in (("type", self.type), ("name", self.name)):
            if n and (array.min() < 0 or array.max() >= strings):
                raise ValueError(f"a node's {label} is not a string index")
        if n and self.kind.max() >= len(self.node_kinds):
            raise ValueError("a node's kind is not an index into node_kinds")
        # Every retained size is a sum of self sizes: the total must fit int64 (summed as floats,
        # which cannot overflow, with a margin for their rounding).
        if n and (self.self_size.min() < 0 or float(self.self_size.sum(dtype=np.float64)) >= MAX_TOTAL_SIZE):
            raise ValueError(f"self sizes must be non-negative and add up to less than {MAX_TOTAL_SIZE} bytes")
        numeric = [int(k) for k in NUMERIC_NAME_KINDS]
        for lo, hi in _slices(m):
            named = ~np.isin(self.edge_kind[lo:hi], numeric)
            if named.any() and self.edge_name[lo:hi][named].max() >= strings:
                raise ValueError("an edge's name is not a string index")
        if not ids_checked and _has_duplicates(self.ids):
            raise ValueError("object ids are not unique")
        if self.locations is not None:
            self.locations.validate(n, strings)
        if self.allocations is not None:
            self.allocations.validate(n, strings)
        if self.values is not None:
            self.values.validate(n)


_SLICE = 1 << 20


def string_positions(strings: list[str], texts: Collection[str]) -> list[int]:
    """The positions in ``strings`` of every string equal to one of ``texts``, ascending.

    One set lookup per string, run in C (a snapshot has up to millions of strings): tens of times
    faster than comparing them in a Python loop.
    """
    wanted = texts if isinstance(texts, (set, frozenset)) else frozenset(texts)
    return list(itertools.compress(range(len(strings)), map(wanted.__contains__, strings)))


def _has_duplicates(ids: np.ndarray) -> bool:
    """Whether two of ``ids`` are equal.

    Runtimes number objects in allocation order and write them nearly in that order (V8: all but a
    handful of millions), so most ids are a new running maximum, which no earlier id can equal. Only
    the others (``late``) are looked up: among themselves, and in the running maximum, which is
    sorted. A shuffled array falls back to a sort (numpy's hash-based unique is slower on millions).
    """
    if ids.shape[0] < 2:
        return False
    running_max = np.maximum.accumulate(ids)
    late = ids[1:][ids[1:] <= running_max[:-1]]
    if late.shape[0] > ids.shape[0] // 8:
        ordered = np.sort(ids)
        return bool((ordered[1:] == ordered[:-1]).any())
    late.sort()
    if bool((late[1:] == late[:-1]).any()):
        return True
    # The first position where the running maximum reaches a late id holds that id if any does.
    at = np.searchsorted(running_max, late)
    return bool((running_max[np.minimum(at, ids.shape[0] - 1)] == late).any())


def _slices(length: int) -> list[tuple[int, int]]:
    return [(lo, min(length, lo + _SLICE)) for lo in range(0, length, _SLICE)]


def csr_from_coo(
    node_count: int,
    src: np.ndarray,
    dst: np.ndarray,
    kind: np.ndarray,
    name: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Sort edges given as parallel arrays into CSR order, keeping each node's edge order.

    Returns ``(edge_start, edge_to, edge_kind, edge_name)`` with the dtypes :class:`HeapGraph` wants.
    """
    src = np.asarray(src, dtype=np.int64)
    order = np.argsort(src, kind="stable")
    counts = np.bincount(src, minlength=node_count)
    edge_start = np.zeros(node_count + 1, dtype=np.int64)
    np.cumsum(counts, out=edge_start[1:])
    return (
        edge_start,
        np.asarray(dst, dtype=np.int32)[order],
        np.asarray(kind, dtype=np.uint8)[order],
        np.asarray(name, dtype=np.uint32)[order],
    )


class StringTable:
    """Interns strings into the ``strings`` list of a graph being built."""

    def __init__(self, initial: list[str] | None = None) -> None:
        self.strings: list[str] = []
        self._index: dict[str, int] = {}
        for s in initial or [""]:
            self.intern(s)

    def intern(self, s: str) -> int:
        index = self._index.get(s)
        if index is None:
            index = len(self.strings)
            self.strings.append(s)
            self._index[s] = index
        return index
