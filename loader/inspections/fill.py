"""Empty, sparse and low-fill collections: how much room collections keep that nothing uses (Eclipse
MAT's collection fill ratio, empty collections and array fill ratio queries).

Each collection has a *size* (what it holds) and a *capacity* (what its backing array or table has
room for); its fill ratio is size over capacity and the bytes its unused capacity takes are
``max(capacity - size, 0)`` times the bytes of one entry's slots. Where they come from is a trait
of the format (``Format.collections``):

- Java (hprof): an instance of a class in :data:`JAVA_COLLECTIONS`, or of a subclass, reads its
  size from an ``int`` (or ``long``) field and its capacity from the length of the array a reference
  field holds (no array: capacity 0), as MAT's collection extractors do. An ``ArrayDeque`` has no
  size field: its size is its array's non-null slots. A class in :data:`JAVA_WRAPPERS` (``HashSet``,
  JDK 9's ``Properties``) keeps its entries in the collection one field references: it takes that
  collection's figures, and the wrapped collection is not counted again. Object arrays that back
  no counted collection are counted by type (``java.lang.Object[]``), size being their non-null
  slots (MAT's array fill ratio). A slot is a reference: the dump's reference size (4 bytes with
  compressed oops), the size the array's shallow size counts per element.
- V8: objects named ``Map`` and ``Set`` hold their entries in an ordered hash table (their
  ``table`` reference), whose capacity follows from its bytes; their size is the entries that
  reference at least one object. An ``Array`` with no ``elements`` store of its own has none; an
  ``Array``'s capacity is its store's slots and its size the elements that reference objects; an
  Array whose store references nothing (numbers only) has no size heapdb can tell (``unknown``).
  docs/analysis.md ("Empty and low-fill collections") says what a V8 snapshot shows and what not.

Only the collections the roots reach count. A load keeps the totals per type (count, empty,
a histogram of fill ratios, bytes of unused capacity) and the :data:`KEPT` collections with the
most unused bytes, with their holder paths.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from heapdb.loader.formats import Collections, named
from heapdb.loader.graph import EdgeKind, HeapGraph
from heapdb.loader.inspections.common import first_targets, string_indexes, tail
from heapdb.units import human_bytes

if TYPE_CHECKING:
    from heapdb.loader.analysis import Analysis
    from heapdb.loader.paths import FirstPaths

KEPT = 100  # collections a load stores, most unused bytes first: the stored question's largest limit
PATH_CHARS = 100
# The fill-ratio histogram: bucket 0 holds the collections with room and nothing in it, bucket i
# (1..10) those filled more than (i - 1) tenths and at most i tenths (above capacity counts as full).
BUCKETS = 11
BUCKET_LABELS = ("0%", *(f"≤{10 * i}%" for i in range(1, BUCKETS)))


@dataclass(frozen=True)
class JavaCollection:
    """A Java collection class (and its subclasses): where its size and its capacity are."""

    name: str
    size: str | None  # the int or long field holding its size; None: its array's non-null slots
    array: str  # the reference field holding its backing array
    slots_per_entry: int = 1  # array slots one entry takes (IdentityHashMap keeps key and value side by side)


@dataclass(frozen=True)
class JavaWrapper:
    """A Java collection class whose entries are in the collection its ``field`` references."""

    name: str
    field: str


# MAT's known collections (its KnownCollectionInfo) whose capacity is an array's length.
JAVA_COLLECTIONS = (
    JavaCollection("java.util.ArrayList", "size", "elementData"),
    JavaCollection("java.util.Vector", "elementCount", "elementData"),
    JavaCollection("java.util.PriorityQueue", "size", "queue"),
    JavaCollection("java.util.ArrayDeque", None, "elements"),
    JavaCollection("java.util.HashMap", "size", "table"),  # LinkedHashMap is one
    JavaCollection("java.util.Hashtable", "count", "table"),
    JavaCollection("java.util.WeakHashMap", "size", "table"),
    JavaCollection("java.util.IdentityHashMap", "size", "table", slots_per_entry=2),
    # baseCount alone, as MAT reads it: the counter cells a contended map adds to it are not read.
    JavaCollection("java.util.concurrent.ConcurrentHashMap", "baseCount", "table"),
    JavaCollection("java.lang.ThreadLocal$ThreadLocalMap", "size", "table"),
)
JAVA_WRAPPERS = (
    JavaWrapper("java.util.HashSet", "map"),  # LinkedHashSet is one
    JavaWrapper("java.util.Properties", "map"),  # JDK 9 on; before, a Properties is a Hashtable
)


@dataclass(frozen=True)
class FillType:
    """The collections of one type."""

    type: str
    count: int
    empty: int  # holding nothing
    unknown: int  # size not shown (V8: an Array whose store references no object)
    no_capacity: int  # no backing array or table of their own
    histogram: tuple[int, ...]  # BUCKETS counts by fill ratio, of those with capacity and a known size
    size: int  # entries, summed
    capacity: int  # entries they have room for, summed
    wasted: int  # bytes of unused capacity, summed


@dataclass(frozen=True)
class FillRow:
    """One collection with unused capacity."""

    id: int
    type: str
    size: int
    capacity: int
    wasted: int  # bytes of its unused capacity
    retained_size: int
    path: str  # its first retainer path


@dataclass(frozen=True)
class CollectionFill:
    """The collections of one snapshot by fill: per type, most unused bytes first, and the rows
    with the most unused bytes."""

    source: str
    slot_size: int  # bytes of one reference slot (Java's reference size, V8's tagged slot)
    collections: int
    empty: int
    wasted: int
    types: tuple[FillType, ...]
    rows: tuple[FillRow, ...]


# The figures of CollectionFill over every collection (a load stores them with the rows).
FILL_TOTALS = ("slot_size", "collections", "empty", "wasted")


@dataclass(frozen=True)
class Measured:
    """Per counted collection (node order): its size (-1: unknown), capacity, bytes per entry."""

    nodes: np.ndarray  # int64[k]
    size: np.ndarray  # int64[k]
    capacity: np.ndarray  # int64[k]
    entry_bytes: np.ndarray  # int64[k]
    slot_size: int


def shows_fill(format_name: object) -> bool:
    """Whether snapshots of the format ``format_name`` show collections' capacities."""
    declared = named(format_name)
    return declared is not None and declared.collections is not None


def collection_fill(
    graph: HeapGraph, result: Analysis, paths: FirstPaths, *, source: str, limit: int = KEPT
) -> CollectionFill | None:
    """The fill of ``graph``'s collections (see the module docstring); None where its format does
    not show capacities, or where its Java field values are not at hand (a graph read back from the
    store)."""
    declared = named(graph.meta.get("format"))
    if declared is None or declared.collections is None:
        return None
    if declared.collections is Collections.JAVA:
        if graph.values is None:
            return None
        found = java_collections(graph, result.reachable)
    else:
        from heapdb.loader.inspections.fill_v8 import v8_collections

        found = v8_collections(graph, result.reachable)
    return summarize(graph, result, paths, found, source=source, limit=limit)


def summarize(
    graph: HeapGraph, result: Analysis, paths: FirstPaths, found: Measured, *, source: str, limit: int = KEPT
) -> CollectionFill:
    """The totals per type and the ``limit`` collections with the most unused bytes (then the
    largest retained, then the lowest id) of the collections ``found``."""
    from heapdb.loader.paths import path_hops

    nodes, size, capacity = found.nodes, found.size, found.capacity
    known = size >= 0
    unused = np.where(known, np.maximum(capacity - size, 0), 0)
    wasted = unused * found.entry_bytes
    held = known & (capacity > 0)
    bucket = np.where(size > 0, np.minimum(-(-10 * size // np.maximum(capacity, 1)), 10), 0)
    types, of_type = np.unique(graph.type[nodes], return_inverse=True)
    t = types.size

    def per_type(values: np.ndarray) -> np.ndarray:
        return np.bincount(of_type, weights=values, minlength=t).astype(np.int64)

    histogram = np.zeros((t, BUCKETS), dtype=np.int64)
    np.add.at(histogram, (of_type[held], bucket[held]), 1)
    count, empty = per_type(np.ones(nodes.size)), per_type((size == 0).astype(np.float64))
    rows_of_type = zip(
        [graph.strings[int(s)] for s in types.tolist()],
        count.tolist(),
        empty.tolist(),
        per_type((~known).astype(np.float64)).tolist(),
        per_type((capacity == 0).astype(np.float64)).tolist(),
        histogram.tolist(),
        per_type(np.where(known, size, 0).astype(np.float64)).tolist(),
        per_type(capacity.astype(np.float64)).tolist(),
        per_type(wasted.astype(np.float64)).tolist(),
        strict=True,
    )
    by_type = sorted(
        (FillType(name, c, e, u, z, tuple(h), s, cap, w) for name, c, e, u, z, h, s, cap, w in rows_of_type),
        key=lambda r: (-r.wasted, -r.count, r.type),
    )
    listed = np.flatnonzero(wasted > 0)
    order = listed[np.lexsort((graph.ids[nodes[listed]], -result.retained_size[nodes[listed]], -wasted[listed]))]
    synthetic = graph.synthetic_nodes()
    rows = tuple(
        FillRow(
            id=int(graph.ids[nodes[i]]),
            type=graph.type_name(int(nodes[i])),
            size=int(size[i]),
            capacity=int(capacity[i]),
            wasted=int(wasted[i]),
            retained_size=int(result.retained_size[nodes[i]]),
            path=" / ".join(path_hops(graph, paths, int(nodes[i]), synthetic)),
        )
        for i in order[:limit].tolist()
    )
    return CollectionFill(
        source=source,
        slot_size=found.slot_size,
        collections=int(nodes.size),
        empty=int((size == 0).sum()),
        wasted=int(wasted.sum()),
        types=tuple(by_type),
        rows=rows,
    )


def element_counts(graph: HeapGraph, nodes: np.ndarray) -> np.ndarray:
    """int64[len(nodes)]: each node's element references (an array's non-null slots)."""
    from heapdb.loader.inspections import fill_kernels

    return fill_kernels.edges_of_kind(
        graph.edge_start, graph.edge_kind, nodes.astype(np.int64), np.uint8(EdgeKind.ELEMENT)
    )


def java_collections(graph: HeapGraph, reachable: np.ndarray) -> Measured:
    """The Java collections and object arrays the roots reach, measured (see the module docstring)."""
    values = graph.values
    assert values is not None
    slot = int(graph.meta.get("oop_size") or graph.meta.get("id_size") or 8)
    spec, wrapper = _java_classes(graph)
    candidates = np.flatnonzero(reachable & ((spec[graph.type] >= 0) | (wrapper[graph.type] >= 0)))
    kinds = graph.kind[candidates]
    instance = np.array([k == "instance" for k in graph.node_kinds], dtype=np.bool_)
    candidates = candidates[instance[kinds]]
    at = string_indexes(graph, {c.array for c in JAVA_COLLECTIONS} | {w.field for w in JAVA_WRAPPERS})
    n = graph.node_count
    size = np.full(n, -1, dtype=np.int64)  # by node: filled for the collections measured
    capacity = np.zeros(n, dtype=np.int64)
    entry = np.zeros(n, dtype=np.int64)
    backing = np.full(n, -1, dtype=np.int64)
    measured = np.zeros(n, dtype=np.bool_)
    kind_of = spec[graph.type[candidates]]
    for k, known in enumerate(JAVA_COLLECTIONS):
        members = candidates[kind_of == k]
        if not members.size:
            continue
        array = first_targets(graph, members, at[known.array])[members].astype(np.int64)
        has = array >= 0
        length = np.zeros(members.size, dtype=np.int64)
        length[has] = _array_lengths(graph, array[has])
        capacity[members] = length // known.slots_per_entry
        entry[members] = slot * known.slots_per_entry
        backing[members] = array
        if known.size is None:
            counted = np.zeros(members.size, dtype=np.int64)
            counted[has] = element_counts(graph, array[has])
            size[members] = counted
        else:
            size[members] = _int_field(graph, members, known.name, known.size)
        measured[members] = True
    # A wrapper takes the figures of the collection it wraps, which is then not counted on its own.
    wrapping = candidates[wrapper[graph.type[candidates]] >= 0]
    wrapped = np.zeros(n, dtype=np.bool_)
    for w, wrap in enumerate(JAVA_WRAPPERS):
        members = wrapping[wrapper[graph.type[wrapping]] == w]
        if not members.size:
            continue
        inner = first_targets(graph, members, at[wrap.field])[members].astype(np.int64)
        ok = inner >= 0
        ok[ok] = measured[inner[ok]]
        members, inner = members[ok], inner[ok]
        size[members], capacity[members] = size[inner], capacity[inner]
        entry[members], backing[members] = entry[inner], backing[inner]
        measured[members] = True
        wrapped[inner] = True
    measured &= ~wrapped
    # Object arrays backing no counted collection: size is their non-null slots.
    backs = backing[measured]
    is_array = np.array([k == "object array" for k in graph.node_kinds], dtype=np.bool_)[graph.kind] & reachable
    is_array[backs[backs >= 0]] = False
    arrays = np.flatnonzero(is_array)
    capacity[arrays] = _array_lengths(graph, arrays)
    size[arrays] = element_counts(graph, arrays)
    entry[arrays] = slot
    measured[arrays] = True
    nodes = np.flatnonzero(measured)
    return Measured(nodes, size[nodes], capacity[nodes], entry[nodes], slot)


def _java_classes(graph: HeapGraph) -> tuple[np.ndarray, np.ndarray]:
    """Per string (int32[len(strings)]): for a class name, the index in JAVA_COLLECTIONS and in
    JAVA_WRAPPERS of the nearest class it is or extends (-1: none). A wrapper that extends a
    collection (Properties, a Hashtable) has both: it is measured as the collection where its field
    holds no measured collection (before JDK 9)."""
    spec = np.full(len(graph.strings), -1, dtype=np.int32)
    wrapper = np.full(len(graph.strings), -1, dtype=np.int32)
    classes = np.flatnonzero(np.array([k == "class" for k in graph.node_kinds], dtype=np.bool_)[graph.kind])
    if not classes.size:
        return spec, wrapper
    supers = first_targets(graph, classes, string_indexes(graph, ["<super>"])["<super>"])
    by_name = {c.name: i for i, c in enumerate(JAVA_COLLECTIONS)}
    wrapped_by = {w.name: i for i, w in enumerate(JAVA_WRAPPERS)}
    for c in classes.tolist():
        found_spec = found_wrapper = -1
        v, steps = c, 0
        while v >= 0 and steps < 64 and (found_spec < 0 or found_wrapper < 0):  # a chain, never a cycle
            name = graph.node_name(v)
            if found_spec < 0:
                found_spec = by_name.get(name, -1)
            if found_wrapper < 0:
                found_wrapper = wrapped_by.get(name, -1)
            v, steps = int(supers[v]), steps + 1
        spec[graph.name[c]] = found_spec
        wrapper[graph.name[c]] = found_wrapper
    return spec, wrapper


def _array_lengths(graph: HeapGraph, arrays: np.ndarray) -> np.ndarray:
    """int64[k]: the element counts of ``arrays`` (nodes with field values: hprof arrays)."""
    values = graph.values
    assert values is not None
    k = arrays.astype(np.int64) - values.first
    inside = (k >= 0) & (k < values.length.shape[0])
    found = np.zeros(arrays.size, dtype=np.int64)
    found[inside] = values.length[k[inside]]
    return found


def _int_field(graph: HeapGraph, nodes: np.ndarray, declared_by: str, field: str) -> np.ndarray:
    """int64[k]: the ``field`` (int or long) that class ``declared_by`` declares, in each of ``nodes``
    (its instances or its subclasses'); -1 where an instance does not hold it."""
    from heapdb.loader.values import TYPES

    values = graph.values
    assert values is not None
    found = np.full(nodes.size, -1, dtype=np.int64)
    k = nodes.astype(np.int64) - values.first
    layouts = values.layout[k]
    declaring = _class_layout(graph, declared_by)
    if declaring is None:
        return found
    # The declaring class's fields come last in a subclass's layout (an instance holds its own
    # fields first, then its super class's): the field is found at the same place from the end.
    own = values.layouts[declaring]
    position = next((i - len(own) for i, f in enumerate(own) if f.name == field), None)
    if position is None:
        return found
    for layout in np.unique(layouts[layouts >= 0]).tolist():
        fields = values.layouts[layout]
        if len(fields) < len(own) or fields[position].name != field:
            continue
        chosen = fields[position]
        width = np.dtype(TYPES[chosen.code][1]).itemsize
        if chosen.code not in (10, 11):  # an int or a long
            continue
        rows = np.flatnonzero(layouts == layout)
        raw = values.buf[(values.offset[k[rows]] + chosen.offset)[:, None] + np.arange(width)]
        found[rows] = raw.copy().view(f">i{width}").reshape(-1).astype(np.int64)
    return found


def _class_layout(graph: HeapGraph, name: str) -> int | None:
    """The layout index of the class object named ``name`` (its instances' primitive fields)."""
    values = graph.values
    assert values is not None
    at = string_indexes(graph, [name])[name]
    nodes = np.arange(values.first_class, values.first_class + values.class_layout.shape[0])
    hits = nodes[np.isin(graph.name[nodes], at)]
    for c in hits.tolist():
        layout = int(values.class_layout[c - values.first_class])
        if layout >= 0:
            return layout
    return None


def collection_fill_text(answer: CollectionFill) -> str:
    """The report as ``heapdb analyze --fill`` and ``heapdb fill`` print it: per type, then the
    collections with the most unused bytes."""
    if not answer.collections:
        return f"Collections by fill in {answer.source}: none"
    lines = [
        f"Collections by fill in {answer.source}: {answer.collections:,} collections, {answer.empty:,} empty; "
        f"unused capacity takes {human_bytes(answer.wasted)} ({answer.slot_size}-byte slots)",
        f"  {'unused':>10}  {'count':>9}  {'empty':>9}  {''.join(f'{b:>6}' for b in BUCKET_LABELS)}  type",
    ]
    for t in answer.types:
        lines.append(
            f"  {human_bytes(t.wasted):>10}  {t.count:>9,}  {t.empty:>9,}  {''.join(f'{h:>6,}' for h in t.histogram)}  "
            f"{t.type}"
        )
    if answer.rows:
        lines.append("  The collections with the most unused bytes:")
        lines.append(f"  {'unused':>10}  {'size':>17}  {'collection':>30}  held by")
    for r in answer.rows:
        lines.append(
            f"  {human_bytes(r.wasted):>10}  {f'{r.size:,} of {r.capacity:,}':>17}  {f'{r.type} @{r.id}':>30}  "
            f"{tail(r.path, PATH_CHARS)}"
        )
    return "\n".join(lines)
