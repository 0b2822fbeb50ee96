"""Unbound growth across a series of snapshots of one process: the collections whose fan-out, the
objects whose retained size and the shapes whose population grew at every step (memlab's
``unbound-collection``, ``unbound-object`` and ``unbound-shape`` analyses).

What one snapshot contributes is a :class:`SeriesPoint`: its collections' fan-outs and its objects'
retained sizes by id (ids are stable across the snapshots of one V8 process), and its shape table.
:func:`series_point` makes one from a graph and its analysis (``heapdb analyze FILE --unbound
LATER``; a load stores the shape table, and the questions read the rest from the objects), and
:func:`unbound` compares the points of a series, oldest first.

Which objects count is memlab's:

- a **collection** is an object named ``Map``, ``Set``, ``WeakMap`` or ``WeakSet``, whose fan-out is
  the number of references of its first ``table`` reference's target (about two a Map entry, one a
  Set entry; references to small integers are not recorded), and, beyond memlab's list, an
  ``Array`` or a plain ``Object``, whose fan-out is its own number of references (memlab's
  ``getCollectionFanout`` counts them so, but its analysis tracks Maps and Sets only);
- an **object** is one of kind ``object``, ``closure`` or ``regexp``, measured by its retained size;
- a **shape** groups objects of kind ``object`` and strings: every string is ``string``, a plain
  ``Object`` is ``Object { a, b }`` (its references' names, sorted as text, internal ones and
  ``__proto__`` and ``map`` left out), any other object its name; a few engine names are left out.
  A shape's size is what its outermost members retain (no member dominates them).

An object is the same object in two snapshots when it has the same id and the same type and kind;
one that changes type is no longer followed (memlab's rule). Two rules say what grew:

- ``every-step`` (the default): present in every snapshot and larger at each step than at the one
  before;
- ``memlab``: memlab's own, step for step: for collections and objects, present in the first and
  last snapshots and not of one value throughout (a collection that shrank counts too); for shapes,
  never smaller than at the snapshot before and larger at least once. Snapshots an object or shape
  is absent from are skipped, so its series may be shorter than the series of snapshots.

Objects must retain at least ``min_retained`` in the last snapshot and shapes count at least
``min_objects`` there (memlab's 10 KiB and 1,000). docs/analysis.md ("Unbound growth") says where
heapdb's answer differs from memlab's and why.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from heapdb.loader.graph import NUMERIC_NAME_KINDS, EdgeKind, HeapGraph
from heapdb.units import human_bytes

if TYPE_CHECKING:
    from heapdb.loader.analysis import Analysis

Rule = Literal["every-step", "memlab"]

BY_TABLE = ("Map", "Set", "WeakMap", "WeakSet")  # collections measured by their backing table
BY_OWN = ("Array", "Object")  # collections measured by their own references
TABLE = "table"
OBJECT_KINDS = ("object", "closure", "regexp")  # what memlab's unbound-object follows
STRING_KINDS = ("string", "sliced string", "concatenated string")  # one shape, "string"
PLAIN = "Object"  # the name whose shape is its references' names
# memlab's Config.nodeIgnoreSetInShape and edgeIgnoreSetInShape.
SHAPE_IGNORED_NAMES = ("(closure)", "(array)", "(number)", "(system)", "system / Context", "system / Oddball")
SHAPE_IGNORED_REFERENCES = ("__proto__", "map")
MIN_RETAINED = 10 * 1024  # memlab's unboundSizeThreshold
MIN_OBJECTS = 1000  # memlab's least population of a shape in the last snapshot
SHOWN = 20  # rows a list shows by default: memlab's
ABSENT = -1  # in a series: the object or shape is not in that snapshot


@dataclass(frozen=True)
class Tracked:
    """Objects of one snapshot with one figure each, sorted by id; ``label`` indexes ``labels``, the
    objects' type and kind (``"Map object"``), which must stay the same for an object to be followed."""

    ids: np.ndarray  # int64[k], ascending
    label: np.ndarray  # int64[k]
    labels: tuple[str, ...]
    values: np.ndarray  # int64[k]

    @classmethod
    def of(cls, ids: np.ndarray, labels: Sequence[str], values: np.ndarray) -> Tracked:
        """From unsorted ids with one label text each."""
        names: Any = ()
        code: Any = np.zeros(0, dtype=np.int64)
        if len(labels):
            names, code = np.unique(np.array(labels, dtype=object), return_inverse=True)
        order = np.argsort(ids, kind="stable")
        return cls(
            np.asarray(ids, dtype=np.int64)[order],
            np.asarray(code, dtype=np.int64).reshape(-1)[order],
            tuple(str(n) for n in names),
            np.asarray(values, dtype=np.int64)[order],
        )


@dataclass(frozen=True)
class ShapeTable:
    """One snapshot's shapes: how many objects each has, what its outermost members retain, and its
    first object's id (in snapshot order)."""

    shapes: tuple[str, ...]
    counts: np.ndarray  # int64[s]
    sizes: np.ndarray  # int64[s]
    examples: np.ndarray  # int64[s]

    def rows(self) -> list[list[object]]:
        """As stored: ``[shape, objects, retained_size, example_id]`` rows."""
        return [
            [s, int(c), int(z), int(e)]
            for s, c, z, e in zip(self.shapes, self.counts.tolist(), self.sizes.tolist(), self.examples.tolist())
        ]

    @classmethod
    def from_rows(cls, rows: Iterable[Sequence[object]]) -> ShapeTable:
        found = list(rows)
        column = [np.array([r[i] for r in found], dtype=np.int64) for i in (1, 2, 3)]
        return cls(tuple(str(r[0]) for r in found), *column)


@dataclass(frozen=True)
class SeriesPoint:
    """What one snapshot of a series contributes."""

    name: str  # its tag or file
    collections: Tracked  # fan-outs
    objects: Tracked  # retained sizes
    shapes: ShapeTable


@dataclass(frozen=True)
class Grown:
    """One collection or object that grew: its series, one figure per snapshot (:data:`ABSENT`
    where it was not there)."""

    id: int
    type: str
    kind: str
    series: tuple[int, ...]


@dataclass(frozen=True)
class GrownShape:
    """One shape that grew: objects and retained bytes per snapshot (:data:`ABSENT` where it had
    none), and its first object in each."""

    shape: str
    counts: tuple[int, ...]
    sizes: tuple[int, ...]
    examples: tuple[int, ...]


@dataclass(frozen=True)
class UnboundGrowth:
    """What grew across a series of snapshots, largest in the last first."""

    snapshots: tuple[str, ...]
    rule: str
    collections: int  # how many grew (rows lists the first ``limit``)
    objects: int
    shapes: int
    collection_rows: tuple[Grown, ...]
    object_rows: tuple[Grown, ...]
    shape_rows: tuple[GrownShape, ...]


def _labelled(graph: HeapGraph, nodes: np.ndarray, values: np.ndarray) -> Tracked:
    """``nodes`` with their values, labelled by type and kind; the labels made once per pair."""
    kinds = len(graph.node_kinds)
    pairs, inverse = np.unique(graph.type[nodes].astype(np.int64) * kinds + graph.kind[nodes], return_inverse=True)
    texts = tuple(f"{graph.strings[p // kinds]}\t{graph.node_kinds[p % kinds]}" for p in pairs.tolist())
    order = np.argsort(graph.ids[nodes], kind="stable")
    return Tracked(
        graph.ids[nodes][order].astype(np.int64),
        inverse.reshape(-1)[order].astype(np.int64),
        texts,
        np.asarray(values, dtype=np.int64)[order],
    )


def _names_at(graph: HeapGraph, names: Sequence[str], at: dict[str, np.ndarray] | None = None) -> np.ndarray:
    """bool[len(strings)]: which string-table entries are one of ``names``; ``at`` is where each name
    stands (:func:`_where`), found in one pass over the string table for all of them."""
    found = np.zeros(len(graph.strings), dtype=bool)
    where = _where(graph) if at is None else at
    for name in names:
        found[where[name]] = True
    return found


def _where(graph: HeapGraph) -> dict[str, np.ndarray]:
    """Where each name the rules here look for stands in the string table (one pass over it)."""
    from heapdb.loader.inspections.common import string_indexes

    return string_indexes(graph, (*BY_TABLE, *BY_OWN, TABLE, PLAIN, *SHAPE_IGNORED_NAMES, *SHAPE_IGNORED_REFERENCES))


def _kinds_at(graph: HeapGraph, kinds: Sequence[str]) -> np.ndarray:
    return np.array([k in kinds for k in graph.node_kinds], dtype=bool)


def collections_of(graph: HeapGraph) -> Tracked:
    """Every collection of ``graph`` (reachable or not, as memlab counts) with its fan-out."""
    from heapdb.loader.inspections.common import first_targets

    at = _where(graph)
    objects = _kinds_at(graph, ("object",))[graph.kind]
    by_table = np.flatnonzero(objects & _names_at(graph, BY_TABLE, at)[graph.name])
    by_own = np.flatnonzero(objects & _names_at(graph, BY_OWN, at)[graph.name])
    degree = np.diff(graph.edge_start)
    table = first_targets(graph, by_table, at[TABLE])[by_table]
    fanout = np.where(table >= 0, degree[np.maximum(table, 0)], 0)
    nodes = np.concatenate([by_table, by_own])
    return _labelled(graph, nodes, np.concatenate([fanout, degree[by_own]]))


def objects_of(graph: HeapGraph, result: Analysis) -> Tracked:
    """Every object of a kind memlab follows, with its retained size."""
    nodes = np.flatnonzero(_kinds_at(graph, OBJECT_KINDS)[graph.kind])
    return _labelled(graph, nodes, result.retained_size[nodes])


def shapes_of(graph: HeapGraph, result: Analysis) -> ShapeTable:
    """Every shape of ``graph`` with its population, outermost members' retained size and first object."""
    from heapdb.loader.analysis import outermost_members

    n = graph.node_count
    at = _where(graph)
    is_string = _kinds_at(graph, STRING_KINDS)[graph.kind]
    # The names memlab leaves out are left out of strings too (a string "(closure)" counts in none).
    counted = (_kinds_at(graph, ("object",))[graph.kind] | is_string) & ~_names_at(graph, SHAPE_IGNORED_NAMES, at)[
        graph.name
    ]
    plain = counted & ~is_string & _names_at(graph, (PLAIN,), at)[graph.name]
    # A shape code per object: strings one code, other non-plain objects their name, plain objects
    # the sorted names of their references (codes above the string table's).
    code = np.where(is_string, -1, graph.name.astype(np.int64))
    keys: list[str] = []
    plain_nodes = np.flatnonzero(plain)
    if plain_nodes.size:
        plain_code, keys = _plain_shapes(graph, plain_nodes, at)
        code[plain_nodes] = len(graph.strings) + plain_code
    members = np.flatnonzero(counted)
    if not members.size:
        return ShapeTable((), np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64))
    # Codes are small integers: numbered by a table of those in use, not by sorting millions of them.
    shifted = code[members] + 1
    used = np.zeros(int(shifted.max()) + 1, dtype=bool)
    used[shifted] = True
    distinct = np.flatnonzero(used) - 1
    group = (np.cumsum(used) - 1)[shifted]
    first = np.full(distinct.size, members.size, dtype=np.int64)
    np.minimum.at(first, group, np.arange(members.size, dtype=np.int64))
    member_group = np.zeros(n, dtype=np.int64)
    member_group[members] = group
    member = np.zeros(n, dtype=bool)
    member[members] = True
    member[result.root] = False
    outer = outermost_members(result.idom, result.root, member_group, member, distinct.size)
    sizes = np.zeros(distinct.size, dtype=np.int64)
    np.add.at(sizes, member_group[outer], result.retained_size[outer])
    texts = tuple(
        "string" if c < 0 else graph.strings[c] if c < len(graph.strings) else keys[c - len(graph.strings)]
        for c in distinct.tolist()
    )
    counts = np.bincount(group, minlength=distinct.size).astype(np.int64)
    return ShapeTable(texts, counts, sizes, graph.ids[members[first]].astype(np.int64))


def _plain_shapes(graph: HeapGraph, nodes: np.ndarray, at: dict[str, np.ndarray]) -> tuple[np.ndarray, list[str]]:
    """For plain objects ``nodes`` (ascending), a shape number each and each number's text: the names
    of their references (internal ones, ``__proto__`` and ``map`` aside) sorted as text, as
    memlab's ``summarizeObjectShape`` lists them."""
    starts, ends = graph.edge_start[nodes], graph.edge_start[nodes + 1]
    lengths = ends - starts
    owner = np.repeat(np.arange(nodes.size, dtype=np.int64), lengths)
    edges = np.repeat(starts - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths) + np.arange(
        int(lengths.sum()), dtype=np.int64
    )
    kinds = graph.edge_kind[edges].astype(np.int64)
    names = graph.edge_name[edges].astype(np.int64)
    numeric = np.isin(kinds, [int(k) for k in NUMERIC_NAME_KINDS])
    ignored = ~numeric & _names_at(graph, SHAPE_IGNORED_REFERENCES, at)[np.where(numeric, 0, names)]
    keep = (kinds != int(EdgeKind.INTERNAL)) & ~ignored
    owner, names, numeric = owner[keep], names[keep], numeric[keep]
    # Each distinct name as text, ranked as JavaScript sorts them (numbers sort as their digits).
    pairs, which = np.unique(np.stack([numeric.astype(np.int64), names]), axis=1, return_inverse=True)
    which = which.reshape(-1)
    texts = [str(v) if is_number else graph.strings[v] for is_number, v in zip(pairs[0].tolist(), pairs[1].tolist())]
    text_order = sorted(range(len(texts)), key=lambda i: _js_order(texts[i]))
    rank = np.empty(len(texts), dtype=np.int64)
    rank[text_order] = np.arange(len(texts))
    ranked = rank[which] if which.size else np.zeros(0, np.int64)
    order = np.lexsort((ranked, owner))
    owner, ranked = owner[order], ranked[order]
    # Two polynomial hashes of each object's ranked names (and their number) tell the shapes apart.
    counts = np.bincount(owner, minlength=nodes.size)
    place = np.arange(owner.size, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    hashes = []
    with np.errstate(over="ignore"):
        for base in (np.uint64(1_000_003), np.uint64(0x9E3779B97F4A7C15)):
            powers = np.cumprod(np.full(int(counts.max(initial=0)) + 1, base, dtype=np.uint64))
            terms = (ranked.astype(np.uint64) + np.uint64(1)) * powers[place]
            total = np.zeros(nodes.size, dtype=np.uint64)
            np.add.at(total, owner, terms)
            hashes.append(total)
    key = np.stack([hashes[0], hashes[1], counts.astype(np.uint64)], axis=1)
    _distinct, first, shape = np.unique(key, axis=0, return_index=True, return_inverse=True)
    shape = shape.reshape(-1)
    group_start = np.concatenate([[0], np.cumsum(counts)])
    keys = []
    for i in first.tolist():
        props = [texts[text_order[r]] for r in ranked[group_start[i] : group_start[i + 1]].tolist()]
        keys.append(f"{PLAIN} {{ {', '.join(props)} }}")
    return shape, keys


def _js_order(text: str) -> list[int]:
    """A sort key that orders texts as JavaScript's default sort does: by UTF-16 code units."""
    data = text.encode("utf-16-be", "surrogatepass")
    return [int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2)]


def series_point(name: str, graph: HeapGraph, result: Analysis) -> SeriesPoint:
    """What snapshot ``graph`` (analysed as ``result``) contributes to a series."""
    return SeriesPoint(name, collections_of(graph), objects_of(graph, result), shapes_of(graph, result))


def _series(points: Sequence[Tracked]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The first point's objects followed through the others: ids, type-and-kind labels, values
    (int64[k, s], :data:`ABSENT` where absent) and whether each is still followed (not retyped)."""
    first = points[0]
    ids = first.ids
    label = np.array(first.labels, dtype=object)[first.label] if ids.size else np.zeros(0, dtype=object)
    values = np.full((ids.size, len(points)), ABSENT, dtype=np.int64)
    values[:, 0] = first.values
    followed = np.ones(ids.size, dtype=bool)
    for s, point in enumerate(points[1:], start=1):
        at = np.searchsorted(point.ids, ids)
        inside = at < point.ids.size
        there = np.zeros(ids.size, dtype=bool)
        there[inside] = point.ids[at[inside]] == ids[inside]
        same = there.copy()
        if there.any():
            theirs = np.array(point.labels, dtype=object)[point.label[at[there]]]
            same[there] = theirs == label[there]
        followed &= ~(there & ~same)
        values[same, s] = point.values[at[same]]
    return ids, label, values, followed


def grown(points: Sequence[Tracked], rule: Rule, least: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The followed objects whose values grew under ``rule`` and reach ``least`` in the last point:
    their ids, labels and series, largest last value first (ties: the lower id)."""
    ids, label, values, followed = _series(points)
    present = values != ABSENT
    last = values[:, -1]
    if rule == "every-step":
        found = followed & present.all(axis=1) & (np.diff(values, axis=1) > 0).all(axis=1)
    else:
        high = np.where(present, values, np.iinfo(np.int64).min).max(axis=1)
        low = np.where(present, values, np.iinfo(np.int64).max).min(axis=1)
        found = followed & present[:, -1] & (high != low)
    found &= last >= least
    at = np.flatnonzero(found)
    at = at[np.lexsort((ids[at], -last[at]))]
    return ids[at], label[at], values[at]


def grown_shapes(tables: Sequence[ShapeTable], rule: Rule, least: int) -> list[GrownShape]:
    """The shapes whose population grew under ``rule`` and counts at least ``least`` in the last
    table, largest last count first (ties: the shape met first, as memlab orders them)."""
    order: dict[str, int] = {}
    for table in tables:
        for shape in table.shapes:
            order.setdefault(shape, len(order))
    counts = np.full((len(order), len(tables)), ABSENT, dtype=np.int64)
    sizes = counts.copy()
    examples = counts.copy()
    for s, table in enumerate(tables):
        rows = np.array([order[shape] for shape in table.shapes], dtype=np.int64)
        counts[rows, s], sizes[rows, s], examples[rows, s] = table.counts, table.sizes, table.examples
    present = counts != ABSENT
    found = []
    for i in range(len(order)):
        row = counts[i][present[i]]
        if rule == "every-step":
            ok = bool(present[i].all()) and bool((np.diff(row) > 0).all())
        else:
            # memlab stops following a shape at its first drop; one that never drops and grew counts.
            ok = row.size > 1 and bool((np.diff(row) >= 0).all()) and bool((np.diff(row) > 0).any())
        if ok and row[-1] >= least:
            found.append(i)
    found.sort(key=lambda i: (-int(counts[i][present[i]][-1]), i))
    shapes = list(order)
    return [
        GrownShape(
            shapes[i],
            tuple(counts[i].tolist()),
            tuple(sizes[i].tolist()),
            tuple(examples[i].tolist()),
        )
        for i in found
    ]


def _rows(found: tuple[np.ndarray, np.ndarray, np.ndarray], limit: int) -> tuple[Grown, ...]:
    ids, label, values = found
    rows = []
    for i in range(min(limit, ids.size)):
        type_, _, kind = str(label[i]).partition("\t")
        rows.append(Grown(int(ids[i]), type_, kind, tuple(int(v) for v in values[i])))
    return tuple(rows)


def unbound(
    points: Sequence[SeriesPoint],
    *,
    rule: Rule = "every-step",
    limit: int = SHOWN,
    min_retained: int = MIN_RETAINED,
    min_objects: int = MIN_OBJECTS,
) -> UnboundGrowth:
    """What grew across ``points`` (oldest first) under ``rule``: the first ``limit`` of each list."""
    collections = grown([p.collections for p in points], rule, 0)
    objects = grown([p.objects for p in points], rule, min_retained)
    shapes = grown_shapes([p.shapes for p in points], rule, min_objects)
    return UnboundGrowth(
        snapshots=tuple(p.name for p in points),
        rule=rule,
        collections=int(collections[0].size),
        objects=int(objects[0].size),
        shapes=len(shapes),
        collection_rows=_rows(collections, limit),
        object_rows=_rows(objects, limit),
        shape_rows=tuple(shapes[:limit]),
    )


def _figures(series: Sequence[int], show: type[str] | object = str) -> str:
    return " > ".join("-" if v == ABSENT else (human_bytes(v) if show is bytes else f"{v:,}") for v in series)


def unbound_growth_text(answer: UnboundGrowth) -> str:
    """The report as ``heapdb unbound`` and ``heapdb analyze --unbound`` print it."""
    steps = " > ".join(answer.snapshots)
    rule = "at every step" if answer.rule == "every-step" else "by memlab's rule"
    lines = [f"Unbound growth across {steps} ({rule}):"]
    sections = (
        ("collections", answer.collections, answer.collection_rows, "fan-out", str),
        ("objects", answer.objects, answer.object_rows, "retained size", bytes),
    )
    for title, count, rows, figure, show in sections:
        lines.append(f"  {count:,} {title} grew{':' if rows else ''}" + ("" if rows else f" (by {figure})"))
        for r in rows:
            lines.append(f"    {f'{r.type} @{r.id}':>28}  {_figures(r.series, show)}")
        if count > len(rows):
            lines.append(f"    … {count - len(rows):,} more")
    lines.append(f"  {answer.shapes:,} shapes grew{':' if answer.shape_rows else ''}")
    for s in answer.shape_rows:
        pairs = " > ".join("-" if c == ABSENT else f"{c:,} ({human_bytes(z)})" for c, z in zip(s.counts, s.sizes))
        lines.append(f"    {s.shape}: {pairs}")
    if answer.shapes > len(answer.shape_rows):
        lines.append(f"    … {answer.shapes - len(answer.shape_rows):,} more")
    return "\n".join(lines)
