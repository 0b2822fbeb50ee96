"""Duplicate objects: objects whose visible contents are equal, grouped by content.

Which objects count, and what their content is, is what the format shows
(:class:`~heapdb.loader.formats.protocol.Duplicates`):

- ``SHALLOW`` (V8): memlab's ``object-shallow`` analysis (``memlab analyze object-shallow``), so that
  its answers are ours number for number. Every object of V8's kind ``object`` counts but those
  named ``Array``, ``ArrayBuffer``, ``Set`` or ``Map``, or starting ``Window`` or ``system /``, and
  those a ``hidden`` reference points to. Its content is its name (the class) and its ``property``
  references but ``__proto__``, in JavaScript's key order (a name twice keeps its first place and
  its last value), each value shallow: a string's whole content, a number's text (``null`` where V8
  wrote no value, as it does unless numeric values were captured), and for any other object the
  text ``REFERENCE_`` and its id (so that a string holding that text equals the reference, as in
  memlab's JSON).
- ``ARRAYS`` (hprof): the primitive arrays (``int[]``, ``byte[]``...) whose elements the reader
  keeps, by element type, length and elements, byte for byte.

A group's figures are the duplicate strings' (:mod:`.strings`): its copies' retained sizes summed
(memlab's size), what all copies but one retain (memlab's ``dupSize``), an example copy (the
largest) and the types that own the copies (their immediate dominators). Contents are compared by
two hashes (:mod:`.object_kernels`), one object at a time in numba, never built; only the reported
groups get a text.
"""

from __future__ import annotations

import dataclasses
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from heapdb.loader.formats import Duplicates, named
from heapdb.loader.graph import NAMES_CUT, EdgeKind, HeapGraph
from heapdb.loader.inspections import strings
from heapdb.loader.inspections.common import first_targets
from heapdb.loader.inspections.strings import SORTS, Contents, StringGroups, StringOwner
from heapdb.loader.values import TYPES, decode
from heapdb.units import human_bytes, short_name

if TYPE_CHECKING:
    from heapdb.loader.analysis import Analysis

KEPT = strings.KEPT  # contents a load stores of each ranking: the stored question's largest limit
VALUE_CHARS = strings.VALUE_CHARS  # characters of a content's text a report shows (and a load stores)
PART_CHARS = 40  # characters of one string value inside a content's text

# memlab's object-shallow: the objects of V8's kind "object" it leaves out, by name.
OBJECT_KIND, NUMBER_KIND, BOOLEAN_KIND = "object", "number", "boolean"
SKIPPED_NAMES = frozenset({"Array", "ArrayBuffer", "Set", "Map"})
SKIPPED_PREFIXES = ("Window", "system /")
PROTO = "__proto__"  # the one property reference it does not read
REFERENCE_TEXT = "REFERENCE_"  # what it writes for a value that is another object, before the id
VALUE_EDGE = "value"  # a number's (or Hermes boolean's) internal reference to its value's text
# JavaScript's number syntax, for the text of a number's value (anything else reads as NaN: null).
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_MAX_INDEX = 2**32 - 2  # the largest array index: such keys come first in JavaScript's key order
# Bytes per element, by hprof type code (0: not a primitive type).
_WIDTHS = np.array([struct.calcsize(TYPES[c][1]) if c in TYPES else 0 for c in range(256)], dtype=np.int64)


@dataclass(frozen=True)
class DuplicateObject:
    """One content held by more than one object."""

    key: str  # the content's hashes and size: the same in every snapshot that holds this content
    type: str  # the copies' class (V8: the constructor's name; hprof: the array's type)
    value: str  # the content as text, cut to VALUE_CHARS characters
    size: int  # V8: properties read; hprof: elements
    count: int
    retained_size: int  # the copies' retained sizes summed
    wasted: int  # what all copies but one retain (count - 1 of count shares, rounded)
    example_id: int  # the largest copy: ask `why` about it
    owners: tuple[StringOwner, ...]  # the types of the objects that own most copies


@dataclass(frozen=True)
class DuplicateObjects:
    """The duplicate objects of one snapshot: the totals over every object counted, and the most
    wasteful duplicated contents."""

    source: str
    rule: str  # which objects were compared (a Duplicates value)
    objects: int  # objects counted
    object_bytes: int  # what they retain
    duplicated: int  # copies beyond the first of each content
    wasted: int  # what those copies retain
    contents: int  # distinct contents held more than once
    sort: str
    rows: tuple[DuplicateObject, ...]


# The figures of DuplicateObjects over all objects (a load stores them on the :Snapshot).
OBJECT_TOTALS = ("rule", "objects", "object_bytes", "duplicated", "wasted", "contents")


def shows_objects(format_name: object) -> bool:
    """Whether snapshots of the format called ``format_name`` show objects' contents to compare."""
    declared = named(format_name)
    return declared is not None and declared.duplicates is not None


def rule_of(graph: HeapGraph) -> Duplicates | None:
    """Which objects ``graph``'s format shows the contents of; None for none, and for a graph read
    back from the store (names cut, no array's elements beyond its first: contents unknown)."""
    declared = named(graph.meta.get("format"))
    return None if declared is None or graph.meta.get(NAMES_CUT) else declared.duplicates


def object_groups(graph: HeapGraph, result: Analysis, found: Contents | None = None) -> StringGroups | None:
    """Group ``graph``'s objects by content (see the module docstring); None when its format shows
    no object's content. ``found``: its strings' contents (:func:`.strings.string_contents`), when
    the duplicate strings computed them already."""
    rule = rule_of(graph)
    if rule is None:
        return None
    # Only what the root reaches: the rest is garbage, not waste (V8's analysis hangs every object
    # below the root, so memlab's rule, which reads every object, counts the same ones).
    if rule is Duplicates.SHALLOW:
        counted, hashes = _shallow(graph, result.reachable, found or strings.string_contents(graph))
    else:
        counted, hashes = _arrays(graph, result.reachable)
    return strings.content_groups(counted, hashes[:, 0], hashes[:, 1], hashes[:, 2], result)


def duplicate_objects(
    graph: HeapGraph, result: Analysis, *, source: str, limit: int, sort: str = SORTS[0], found: Contents | None = None
) -> DuplicateObjects | None:
    """The ``limit`` duplicated contents first by ``sort`` (one of :data:`SORTS`), then by what they
    waste, then by example id; None when the format shows no object's content (``found``: as
    :func:`object_groups`)."""
    grouped = object_groups(graph, result, found)
    if grouped is None:
        return None
    return _report(graph, result, grouped, strings.ranked(grouped, result.ids, sort)[:limit], source, sort)


def stored_objects(graph: HeapGraph, result: Analysis, found: Contents | None = None) -> DuplicateObjects | None:
    """What a load stores (:func:`reranked` answers from it): the totals, and the :data:`KEPT`
    first contents of every ranking, most wasted first (``found``: as :func:`object_groups`)."""
    grouped = object_groups(graph, result, found)
    if grouped is None:
        return None
    return _report(graph, result, grouped, strings.kept_groups(grouped, result.ids), "", SORTS[0])


def reranked(stored: DuplicateObjects, *, source: str, limit: int, sort: str) -> DuplicateObjects:
    """A stored answer's first ``limit`` rows by ``sort``, in the order :func:`duplicate_objects`
    gives a file's (exact for a ``limit`` up to :data:`KEPT`)."""
    rows = strings.reranked_rows(stored.rows, limit, sort)
    return dataclasses.replace(stored, source=source, sort=sort, rows=rows)


def shown_as(answer: DuplicateObjects, graph: HeapGraph, key: Callable[[str], str]) -> DuplicateObjects:
    """``answer`` (worked out from a graph's whole contents) with each row's text read from
    ``graph`` instead (a redacted copy of it: the same nodes, other names and values) and its key
    passed through ``key`` (a keyed hash: a short secret cannot be found by hashing guesses)."""
    nodes = _nodes_of(graph, [r.example_id for r in answer.rows])
    texts = content_texts(graph, nodes)
    rows = tuple(dataclasses.replace(r, value=text, key=key(r.key)) for r, text in zip(answer.rows, texts, strict=True))
    return dataclasses.replace(answer, rows=rows)


def _report(
    graph: HeapGraph, result: Analysis, grouped: StringGroups, order: np.ndarray, source: str, sort: str
) -> DuplicateObjects:
    rule = rule_of(graph)
    assert rule is not None  # object_groups found a rule
    wasted = grouped.wasted()
    owners = strings.owners_of(grouped, result, graph, order)
    examples = grouped.first[order]
    texts = content_texts(graph, examples)
    rows = tuple(
        DuplicateObject(
            key=grouped.key(int(g)),
            type=_class_of(graph, rule, int(v)),
            value=texts[i],
            size=int(grouped.length[g]),
            count=int(grouped.count[g]),
            retained_size=int(grouped.retained_size[g]),
            wasted=round(float(wasted[g])),
            example_id=int(graph.ids[v]),
            owners=owners[i],
        )
        for i, (g, v) in enumerate(zip(order.tolist(), examples.tolist(), strict=True))
    )
    duplicated = grouped.count > 1
    return DuplicateObjects(
        source=source,
        rule=rule.value,
        objects=int(grouped.count.sum()),
        object_bytes=int(grouped.retained_size.sum()),
        duplicated=int((grouped.count - 1).sum()),
        wasted=round(float(wasted[duplicated].sum())),
        contents=int(np.count_nonzero(duplicated)),
        sort=sort,
        rows=rows,
    )


def duplicate_objects_text(answer: DuplicateObjects) -> str:
    """The report as ``heapdb analyze --dup-objects`` and ``heapdb dup-objects`` print it."""
    share = answer.wasted / answer.object_bytes if answer.object_bytes else 0.0
    counted = "objects" if answer.rule == Duplicates.SHALLOW else "primitive arrays"
    lines = [
        f"Duplicate objects in {answer.source}: {answer.duplicated:,} of {answer.objects:,} {counted} are copies "
        f"of {answer.contents:,} contents, wasting {human_bytes(answer.wasted)} ({share:.1%} of "
        f"{human_bytes(answer.object_bytes)} they retain)",
        f"  {'wasted':>10}  {'copies':>8}  {'example':>10}  type content; owners",
    ]
    for r in answer.rows:
        lines.append(
            f"  {human_bytes(r.wasted):>10}  {r.count:>8,}  {'@' + str(r.example_id):>10}  "
            f"{short_name(r.type, 30)} {short_name(r.value, 60)}; {strings.owners_text(r.owners)}"
        )
    if answer.contents > len(answer.rows):
        lines.append(f"  … {answer.contents - len(answer.rows):,} more duplicated contents")
    return "\n".join(lines)


# --- V8: memlab's object-shallow ----------------------------------------------------------------


def _shallow(graph: HeapGraph, reached: np.ndarray, found: Contents | None) -> tuple[np.ndarray, np.ndarray]:
    """The objects memlab's object-shallow counts (of those ``reached``) and, per object, its
    content's two hashes and its number of properties (int64[k, 3]); ``found``, the strings'
    contents, is left as it is."""
    from heapdb.loader.inspections import object_kernels

    counted = _shallow_objects(graph)
    counted = counted[reached[counted]]
    assert found is not None  # a format with this rule declares its strings
    tag = np.where(found.role != strings.OTHER, 0, object_kernels.REFERENCE).astype(np.int8)
    # Numbers and booleans: their values' texts, hashed apart (the strings' hashes stay as they are).
    texts: list[str] = []
    literals = []
    for kind, text in ((NUMBER_KIND, _number_text), (BOOLEAN_KIND, _boolean_text)):
        nodes = _of_kind(graph, kind)
        texts.extend(text(value) for value in _values_of(graph, nodes))
        literals.append(nodes)
    literal_nodes = np.concatenate(literals).astype(np.int64)
    order = np.argsort(literal_nodes)
    literal_nodes = literal_nodes[order]
    literal_hashes = np.stack(strings.text_hashes(texts), axis=1).reshape(-1, 3)[order]
    tag[literal_nodes] = object_kernels.LITERAL
    key_of, key_index, key_hashes = _keys(graph)
    classes = np.stack(_name_hashes(graph, counted), axis=1)
    prefix = np.stack(strings.text_hashes([REFERENCE_TEXT]), axis=1)[0]
    hashes: np.ndarray = object_kernels.shallow_hashes(
        counted.astype(np.int64),
        classes,
        graph.edge_start,
        graph.edge_to,
        graph.edge_kind,
        graph.edge_name,
        int(EdgeKind.PROPERTY),
        key_of,
        key_index,
        key_hashes,
        tag,
        found.h1,
        found.h2,
        found.length,
        literal_nodes,
        literal_hashes,
        graph.ids,
        prefix,
    )
    return counted, hashes


def _shallow_objects(graph: HeapGraph) -> np.ndarray:
    """The objects of V8's kind ``object`` that memlab's object-shallow reads (see the module docstring)."""
    objects = _of_kind(graph, OBJECT_KIND)
    names = np.unique(graph.name[objects])
    skipped = names[
        [graph.strings[i] in SKIPPED_NAMES or graph.strings[i].startswith(SKIPPED_PREFIXES) for i in names.tolist()]
    ]
    hidden = np.zeros(graph.node_count, dtype=np.bool_)
    hidden[graph.edge_to[graph.edge_kind == EdgeKind.HIDDEN]] = True
    return objects[~np.isin(graph.name[objects], skipped) & ~hidden[objects]]


def _of_kind(graph: HeapGraph, kind: str) -> np.ndarray:
    if kind not in graph.node_kinds:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(graph.kind == graph.node_kinds.index(kind))


def _values_of(graph: HeapGraph, nodes: np.ndarray) -> list[str | None]:
    """The name of each node's first internal ``value`` reference's target (None: it has none):
    where V8 writes a number's text when numeric values are captured."""
    if not nodes.size:
        return []
    # Their references (one range each), and the names of the internal ones that say "value".
    counts = graph.edge_start[nodes + 1] - graph.edge_start[nodes]
    edges = np.arange(int(counts.sum())) + np.repeat(graph.edge_start[nodes] - np.cumsum(counts) + counts, counts)
    names = np.unique(graph.edge_name[edges[graph.edge_kind[edges] == EdgeKind.INTERNAL]])
    at = names[[graph.strings[i] == VALUE_EDGE for i in names.tolist()]].astype(np.int64)
    targets = first_targets(graph, nodes, at, graph.edge_kind == EdgeKind.INTERNAL)[nodes]
    return [None if t < 0 else graph.strings[int(graph.name[t])] for t in targets.tolist()]


def _number_text(value: str | None) -> str:
    """A number's value as memlab's JSON writes it: ``+text``, and null for NaN and the infinities
    (V8 writes numbers as JavaScript prints them, so a finite one is its own text, but for -0)."""
    if value is None or not _NUMBER.fullmatch(value.strip()):
        return "null"
    number = float(value)
    if number != number or number in (float("inf"), float("-inf")):
        return "null"
    return "0" if number == 0 else value.strip().lstrip("+")


def _boolean_text(value: str | None) -> str:
    """A boolean's value as memlab's JSON writes it (only Hermes snapshots have the kind)."""
    return "null" if value is None else str(value == "true").lower()


def _keys(graph: HeapGraph) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per string index, the key a property reference of that name is (-1: none, ``__proto__``);
    per key, its array index (-1: a named key) and its hashes and length (int64[k, 3])."""
    names = np.unique(graph.edge_name[graph.edge_kind == EdgeKind.PROPERTY])
    texts = [graph.strings[i] for i in names.tolist()]
    distinct = sorted(set(texts) - {PROTO})  # one key per text, whichever entries hold it
    number = {text: k for k, text in enumerate(distinct)}
    key_of = np.full(len(graph.strings), -1, dtype=np.int64)
    key_of[names] = [number.get(text, -1) for text in texts]
    key_index = np.array([_array_index(text) for text in distinct], dtype=np.int64)
    key_hashes = np.stack(strings.text_hashes(distinct), axis=1).reshape(-1, 3)
    return key_of, key_index, key_hashes


def _array_index(text: str) -> int:
    """The array index ``text`` is (JavaScript lists such keys first, in order), else -1."""
    if text.isascii() and text.isdigit() and (text == "0" or text[0] != "0") and int(text) <= _MAX_INDEX:
        return int(text)
    return -1


def _name_hashes(graph: HeapGraph, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each of ``nodes``' names' hashes and length, each distinct name hashed once."""
    names, which = np.unique(graph.name[nodes], return_inverse=True)
    n1, n2, lengths = strings.text_hashes([graph.strings[i] for i in names.tolist()])
    return n1[which], n2[which], lengths[which]


# --- hprof: primitive arrays --------------------------------------------------------------------


def _arrays(graph: HeapGraph, reached: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The primitive arrays whose elements the reader kept (of those ``reached``) and, per array,
    its elements' two hashes and its length (int64[k, 3]). Only arrays that share their type and
    length with another can have a copy: the others are not read, and get a hash no other array has."""
    from heapdb.loader.inspections import object_kernels

    values = graph.values
    if values is None:
        return np.zeros(0, dtype=np.int64), np.zeros((0, 3), dtype=np.int64)
    arrays = np.flatnonzero((values.element != 0) & reached[values.first : values.first + values.element.size])
    code = values.element[arrays].astype(np.int64)
    count = values.length[arrays].astype(np.int64)
    # One sort finds the arrays whose type and length another array shares.
    shape = code * (1 << 40) + count
    order = np.argsort(shape, kind="stable")
    shared_sorted = np.zeros(arrays.size, dtype=np.bool_)
    same = shape[order][1:] == shape[order][:-1]
    shared_sorted[1:] |= same
    shared_sorted[:-1] |= same
    shared = np.zeros(arrays.size, dtype=np.bool_)
    shared[order] = shared_sorted
    hashes = np.zeros((arrays.size, 3), dtype=np.int64)
    hashes[:, 2] = count
    lone = np.flatnonzero(~shared)
    hashes[lone, 0] = -1 - lone  # no hash is negative: each lone array is a group of its own
    read = np.flatnonzero(shared)
    hashes[read, :2] = object_kernels.array_hashes(
        values.buf, values.offset[arrays[read]], count[read] * _WIDTHS[code[read]], code[read]
    )
    return (values.first + arrays).astype(np.int64), hashes


# --- the texts of the reported contents ---------------------------------------------------------


def content_texts(graph: HeapGraph, nodes: np.ndarray) -> list[str]:
    """Each of ``nodes``' content as text, cut to :data:`VALUE_CHARS`: a V8 object's properties
    ``{name: "text", other: @id}``, an array's first elements (empty where the graph keeps none)."""
    declared = named(graph.meta.get("format"))
    if declared is not None and declared.duplicates is Duplicates.ARRAYS:
        return _array_texts(graph, nodes)
    return [_object_text(graph, int(v))[:VALUE_CHARS] for v in nodes.tolist()]


def _object_text(graph: HeapGraph, v: int) -> str:
    """A V8 object's properties as text, in the order memlab's JSON has them (a dict keeps a key's
    first place and its last value, as a JavaScript object does; array indexes first)."""
    entries: dict[str, int] = {}
    for e in graph.out_edges(v):
        if graph.edge_kind[e] == EdgeKind.PROPERTY and graph.strings[int(graph.edge_name[e])] != PROTO:
            entries[graph.strings[int(graph.edge_name[e])]] = int(graph.edge_to[e])
    kinds = named(graph.meta.get("format"))
    string_kinds = kinds.strings if kinds is not None else None
    ordered = sorted(entries.items(), key=lambda kv: (_array_index(kv[0]) < 0, max(_array_index(kv[0]), 0)))
    parts = []
    for key, target in ordered:
        kind = graph.node_kinds[int(graph.kind[target])]
        if string_kinds is not None and kind in string_kinds.plain | string_kinds.concatenated | string_kinds.sliced:
            text = strings.text_of(graph, [target], PART_CHARS + 1, string_kinds)[0]
            shown = repr(text[:PART_CHARS]) + ("…" if len(text) > PART_CHARS else "")
        elif kind in (NUMBER_KIND, BOOLEAN_KIND):
            value = _values_of(graph, np.array([target]))[0]
            shown = _number_text(value) if kind == NUMBER_KIND else _boolean_text(value)
        else:
            shown = f"@{int(graph.ids[target])}"
        parts.append(f"{key}: {shown}")
        if sum(len(p) + 2 for p in parts) > VALUE_CHARS:
            break
    return "{" + ", ".join(parts) + "}"


def _array_texts(graph: HeapGraph, nodes: np.ndarray) -> list[str]:
    values = graph.values
    if values is None:
        return [""] * nodes.size
    order = np.argsort(nodes, kind="stable")
    at, stored = values.stored_of(nodes[order])
    texts = [""] * nodes.size
    for i, hex_text in zip(at.tolist(), stored, strict=True):
        v = int(nodes[order[i]])
        found = decode(hex_text, None, graph.type_name(v))
        texts[int(order[i])] = found[0][2][:VALUE_CHARS] if found else ""
    return texts


def _class_of(graph: HeapGraph, rule: Duplicates, v: int) -> str:
    """A copy's class: memlab's (the object's own name) for V8, the array's type for hprof."""
    return graph.node_name(v) if rule is Duplicates.SHALLOW else graph.type_name(v)


def _nodes_of(graph: HeapGraph, ids: list[int]) -> np.ndarray:
    """The nodes of objects ``ids``, in that order."""
    at = np.flatnonzero(np.isin(graph.ids, ids))
    node_of = dict(zip(graph.ids[at].tolist(), at.tolist(), strict=True))
    return np.array([node_of[i] for i in ids], dtype=np.int64)
