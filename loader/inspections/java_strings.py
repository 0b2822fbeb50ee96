"""Java strings for the duplicate-strings inspection (:mod:`.strings`): a ``java.lang.String``'s
content is not its name but the elements of its ``value`` array, which the hprof reader keeps
readable (:class:`~heapdb.loader.values.FieldValues`).

- a ``char[]`` (JDK 8 and before): UTF-16 code units, which the dump writes big-endian;
- a ``byte[]`` with the string's ``coder`` field (JDK 9 and later, compact strings): ``0`` LATIN1,
  one byte a character; ``1`` UTF16, two bytes a character in the JVM's own byte order, which on
  every platform HotSpot dumps from in practice (x86-64, AArch64) is little-endian. A byte[] without
  a ``coder`` field reads as LATIN1.

A content is hashed over its UTF-16 code units, whichever coding holds them, so that a LATIN1 and a
UTF16 string of the same text are one content, and its length is Java's ``length()``. Strings whose
``value`` is missing, or not a char[] or byte[] whose elements the reader kept, are not counted.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from heapdb.loader.formats import StringKinds
from heapdb.loader.graph import EdgeKind, HeapGraph
from heapdb.loader.inspections.common import first_targets, string_indexes
from heapdb.loader.inspections.strings import OTHER, PLAIN, Contents
from heapdb.loader.values import TYPES, FieldValues

VALUE_FIELD = "value"  # the reference to the characters
CODER_FIELD = "coder"  # JDK 9+: how value's bytes code the characters
LATIN1, UTF16 = 0, 1  # the coder's values
INSTANCE_KIND = "instance"
_CHAR = next(code for code, (name, _) in TYPES.items() if name == "char")
_BYTE = next(code for code, (name, _) in TYPES.items() if name == "byte")


def java_contents(graph: HeapGraph, kinds: StringKinds) -> Contents:
    """The content hashes and lengths of ``graph``'s Java strings (role PLAIN; every other object,
    and a string whose characters are not readable, OTHER)."""
    from heapdb.loader.inspections import kernels  # numba: only when a graph is inspected

    n = graph.node_count
    role = np.full(n, OTHER, dtype=np.int8)
    h1, h2, length = (np.zeros(n, dtype=np.int64) for _ in range(3))
    nodes, start, count, wide, little = _characters(graph, kinds)
    if nodes.size and graph.values is not None:
        h1[nodes], h2[nodes], length[nodes] = kernels.java_string_hashes(graph.values.buf, start, count, wide, little)
        role[nodes] = PLAIN
    return Contents(role, h1, h2, length)


def java_texts(graph: HeapGraph, kinds: StringKinds, nodes: Sequence[int], cuts: Sequence[int]) -> list[str]:
    """The contents of the Java strings ``nodes``, each cut to its number of ``cuts`` characters
    (empty for an object that is not a readable string)."""
    asked = np.unique(np.asarray(nodes, dtype=np.int64))
    found, start, count, wide, little = _characters(graph, kinds, asked)
    values = graph.values
    texts = []
    for v, cut in zip(nodes, cuts, strict=True):
        i = int(np.searchsorted(found, int(v)))
        if i == found.size or found[i] != int(v) or values is None:
            texts.append("")
            continue
        units = min(int(count[i]), int(cut))
        if wide[i]:
            raw = values.buf[int(start[i]) : int(start[i]) + 2 * units].tobytes()
            # Lone surrogates (half a pair, or a pair cut in two) pass as themselves.
            texts.append(raw.decode("utf-16-le" if little[i] else "utf-16-be", "surrogatepass"))
        else:
            texts.append(values.buf[int(start[i]) : int(start[i]) + units].tobytes().decode("latin-1"))
    return texts


def _characters(
    graph: HeapGraph, kinds: StringKinds, among: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The readable Java strings (nodes, ascending; of ``among``, ascending, when given) and, per
    string, where its characters start in the dump, how many there are, whether each takes two
    bytes, and whether those are low first."""
    empty = np.zeros(0, dtype=np.int64)
    values = graph.values
    if values is None or INSTANCE_KIND not in graph.node_kinds:
        return empty, empty, empty, empty.astype(np.bool_), empty.astype(np.bool_)
    types = string_indexes(graph, sorted(kinds.instances))
    type_at = np.concatenate([empty, *types.values()])
    instance = graph.node_kinds.index(INSTANCE_KIND)
    if among is None:
        nodes = np.flatnonzero(np.isin(graph.type, type_at) & (graph.kind == instance))
    else:
        nodes = among[np.isin(graph.type[among], type_at) & (graph.kind[among] == instance)]
    value_at = string_indexes(graph, [VALUE_FIELD])[VALUE_FIELD]
    target = first_targets(graph, nodes, value_at, graph.edge_kind == EdgeKind.PROPERTY)[nodes].astype(np.int64)
    array = target - values.first
    k = values.offset.shape[0]
    inside = (target >= 0) & (array >= 0) & (array < k) & (nodes >= values.first) & (nodes < values.first + k)
    code = np.zeros(nodes.size, dtype=np.uint8)
    code[inside] = values.element[array[inside]]
    readable = inside & ((code == _CHAR) | (code == _BYTE))
    nodes, array, code = nodes[readable], array[readable], code[readable]
    coder = _coders(values, nodes - values.first)
    wide = (code == _CHAR) | (coder == UTF16)
    little = (code == _BYTE) & wide
    elements = values.length[array].astype(np.int64)
    count = np.where(code == _BYTE, np.where(wide, elements // 2, elements), elements)
    return nodes.astype(np.int64), values.offset[array], count.astype(np.int64), wide, little


def _coders(values: FieldValues, objects: np.ndarray) -> np.ndarray:
    """int64[k]: each string object's ``coder`` (LATIN1 where its class has none: JDK 8)."""
    coder = np.full(objects.size, LATIN1, dtype=np.int64)
    layouts = values.layout[objects]
    for layout in np.unique(layouts[layouts >= 0]).tolist():
        field = next((f for f in values.layouts[layout] if f.name == CODER_FIELD and f.code == _BYTE), None)
        if field is None:
            continue
        rows = np.flatnonzero(layouts == layout)
        coder[rows] = values.buf[values.offset[objects[rows]] + field.offset]
    return coder
