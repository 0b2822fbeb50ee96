"""The V8 reader's source sections: ``locations``, ``trace_function_infos`` and ``trace_tree``, turned
into :class:`~heapdb.loader.sources.SourceLocations` and :class:`~heapdb.loader.sources.AllocationTraces`.

Their layouts come from ``snapshot.meta`` (``location_fields``, ``trace_function_info_fields``,
``trace_node_fields``); V8 writes:

- ``locations``: ``[object_index, script_id, line, column]`` per located object, ``object_index`` a
  position in ``nodes`` (node index * node field count), line and column 0-based;
- ``trace_function_infos``: ``[function_id, name, script_name, script_id, line, column]`` per function,
  names as indexes into ``strings``, line and column 1-based (0: unknown);
- ``trace_tree``: ``[id, function_info_index, count, size, [children...]]``, nested as deep as the
  deepest allocation stack, so it is read by a kernel with its own stack, never by :mod:`json`.

The snapshot has no script table: a script id is named from the function infos that mention it, else
by following a located closure to its script (``shared`` -> ``script_or_debug_info``, whose node V8
names after the script, as DevTools' own views of a closure's script do).

Every problem is a :class:`FormatError` naming the section, the value and the byte offset.
"""

from __future__ import annotations

import os
from typing import Any

import numba
import numpy as np

from heapdb.errors import FormatError
from heapdb.loader.formats.v8.scan import count_commas
from heapdb.loader.graph import HeapGraph
from heapdb.loader.sources import AllocationTraces, SourceLocations

LOCATION_FIELDS = ("object_index", "script_id", "line", "column")
FUNCTION_INFO_FIELDS = ("name", "script_name", "script_id", "line", "column")
TRACE_NODE_FIELDS = ("id", "function_info_index", "children")
# The edges from a closure to its script, by the names V8 versions have given them.
_SHARED_EDGE = "shared"
_SCRIPT_EDGES = ("script_or_debug_info", "script")
# Located closures tried per unnamed script id before giving up on naming it.
_SCRIPT_PROBES = 8
# Script ids below this are grouped through a table by id (4 bytes an entry); others by a sort.
_SCRIPT_ID_TABLE = 1 << 20
_MAX_INT32 = 0x7FFFFFFF

_INT_ERRORS = {
    1: "expected '[' opening the array",
    2: "expected a comma or ']' between numbers",
    3: "expected a number",
    4: "unexpected character (only non-negative integers belong here)",
    5: "a number does not fit in 31 bits",
    6: "data after the closing ']'",
}
_TREE_ERRORS = {
    **_INT_ERRORS,
    7: "a trace node's children must be an array",
    8: "an array where a trace node's number was expected",
    9: "a trace node list ends in the middle of a node",
    10: "the tree is not closed",
}


@numba.njit(cache=True, nogil=True)
def parse_int_array(buf):
    """A flat JSON array of non-negative integers: (values int64[k], error code, error position)."""
    n = buf.shape[0]
    # Sized by the commas (at most one value more), not by the bytes: a location section of tens of
    # MB would otherwise take four times its size in a temporary array.
    out = np.empty(count_commas(buf, 0, n) + 1, dtype=np.int64)
    k = 0
    i = 0
    while i < n and (buf[i] == 32 or buf[i] == 9 or buf[i] == 10 or buf[i] == 13):
        i += 1
    if i == n or buf[i] != 91:
        return out[:0], 1, i
    i += 1
    expect_value = True  # after '[' or ','
    first = True
    while i < n:
        c = buf[i]
        if 48 <= c <= 57:
            if not expect_value:
                return out[:0], 2, i
            value = 0
            while i < n and 48 <= buf[i] <= 57:
                value = value * 10 + (buf[i] - 48)
                if value > _MAX_INT32:
                    return out[:0], 5, i
                i += 1
            out[k] = value
            k += 1
            expect_value = False
            first = False
            continue
        if c == 44:
            if expect_value:
                return out[:0], 3, i
            expect_value = True
        elif c == 93:
            if expect_value and not first:
                return out[:0], 3, i
            i += 1
            while i < n:
                if not (buf[i] == 32 or buf[i] == 9 or buf[i] == 10 or buf[i] == 13):
                    return out[:0], 6, i
                i += 1
            return out[:k], 0, i
        elif not (c == 32 or c == 9 or c == 10 or c == 13):
            return out[:0], 4, i
        i += 1
    return out[:0], 2, n


@numba.njit(cache=True, nogil=True)
def parse_trace_tree(buf, field_count, id_at, function_at, children_at):
    """V8's nested ``trace_tree``: (ids, function indexes, parents (-1 at the top), error code, error
    position). Each node is ``field_count`` values, the one at ``children_at`` a nested list of nodes."""
    n = buf.shape[0]
    capacity = 1
    for i in range(n):
        if buf[i] == 91:
            capacity += 1
    ids = np.empty(capacity, dtype=np.int32)
    functions = np.empty(capacity, dtype=np.int32)
    parents = np.empty(capacity, dtype=np.int32)
    # Per open list: the node whose children it holds (-1 for the top), the node being read, and
    # the field of that node the next value fills.
    owner = np.empty(capacity, dtype=np.int64)
    current = np.empty(capacity, dtype=np.int64)
    fieldpos = np.empty(capacity, dtype=np.int64)
    depth = 0
    t = 0
    expect_value = True
    i = 0
    while i < n and (buf[i] == 32 or buf[i] == 9 or buf[i] == 10 or buf[i] == 13):
        i += 1
    if i == n or buf[i] != 91:
        return ids[:0], functions[:0], parents[:0], 1, i
    owner[0] = -1
    current[0] = -1
    fieldpos[0] = 0
    depth = 1
    i += 1
    just_opened = True
    while i < n:
        c = buf[i]
        if c == 32 or c == 9 or c == 10 or c == 13:
            i += 1
            continue
        if depth == 0:
            return ids[:0], functions[:0], parents[:0], 6, i
        d = depth - 1
        if c == 44:
            if expect_value:
                return ids[:0], functions[:0], parents[:0], 3, i
            expect_value = True
            i += 1
            continue
        if c == 93:
            if expect_value and not just_opened:
                return ids[:0], functions[:0], parents[:0], 3, i
            if fieldpos[d] != 0:
                return ids[:0], functions[:0], parents[:0], 9, i
            depth -= 1
            if depth > 0:  # the children list was the parent node's field at children_at
                p = depth - 1
                fieldpos[p] += 1
                if fieldpos[p] == field_count:
                    fieldpos[p] = 0
            expect_value = False
            just_opened = False
            i += 1
            continue
        if not expect_value:
            return ids[:0], functions[:0], parents[:0], 2, i
        just_opened = False
        f = fieldpos[d]
        if c == 91:
            if f != children_at:
                return ids[:0], functions[:0], parents[:0], 8, i
            owner[depth] = current[d]
            current[depth] = -1
            fieldpos[depth] = 0
            depth += 1
            just_opened = True
            i += 1
            continue
        if not 48 <= c <= 57:
            return ids[:0], functions[:0], parents[:0], 4, i
        if f == children_at:
            return ids[:0], functions[:0], parents[:0], 7, i
        value = 0
        while i < n and 48 <= buf[i] <= 57:
            value = value * 10 + (buf[i] - 48)
            if value > _MAX_INT32:
                return ids[:0], functions[:0], parents[:0], 5, i
            i += 1
        if f == 0:
            if t >= capacity:  # more nodes than lists: each node has a children list
                return ids[:0], functions[:0], parents[:0], 7, i
            current[d] = t
            parents[t] = owner[d]
            ids[t] = -1
            functions[t] = -1
            t += 1
        if f == id_at:
            ids[current[d]] = value
        elif f == function_at:
            functions[current[d]] = value
        fieldpos[d] = f + 1
        if fieldpos[d] == field_count:
            fieldpos[d] = 0
        expect_value = False
    if depth != 0:
        return ids[:0], functions[:0], parents[:0], 10, n
    return ids[:t], functions[:t], parents[:t], 0, i


def _positions(path: str | os.PathLike[str], meta: dict[str, Any], key: str, wanted: tuple[str, ...]) -> list[int]:
    fields = meta.get(key)
    if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields) or len(set(fields)) != len(fields):
        raise FormatError(path, f"meta.{key} must be a list of distinct names", record="snapshot")
    missing = [f for f in wanted if f not in fields]
    if missing:
        raise FormatError(path, f"meta.{key} lacks {missing}", record="snapshot")
    return [len(fields), *(fields.index(f) for f in wanted)]


def int_rows(
    path: str | os.PathLike[str],
    raw: bytes,
    offset: int,
    key: str,
    meta: dict[str, Any],
    fields_key: str,
    wanted: tuple[str, ...],
) -> np.ndarray | None:
    """Section ``key`` (its bytes ``raw`` started at file ``offset``) as an int64[rows, len(wanted)]
    array of the ``wanted`` fields of its ``fields_key`` layout; None when it has values but the
    header declares no layout for them (nothing says what they mean)."""
    values, error, where = parse_int_array(np.frombuffer(raw, dtype=np.uint8))
    if error:
        raise FormatError(path, f"in {key!r}: {_INT_ERRORS[int(error)]}", offset=offset + int(where))
    if values.shape[0] == 0:
        return np.zeros((0, len(wanted)), dtype=np.int64)
    if fields_key not in meta:
        return None
    width, *at = _positions(path, meta, fields_key, wanted)
    if values.shape[0] % width:
        raise FormatError(
            path, f"{key!r} holds {values.shape[0]} values, not a multiple of its {width} fields", offset=offset
        )
    return values.reshape(-1, width)[:, at]


def trace_tree(
    path: str | os.PathLike[str], raw: bytes, offset: int, meta: dict[str, Any]
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``trace_tree`` as (ids, function indexes, parents), call-tree nodes in file order; None when
    the header declares no ``trace_node_fields``."""
    if "trace_node_fields" not in meta:
        return None
    width, id_at, function_at, children_at = _positions(path, meta, "trace_node_fields", TRACE_NODE_FIELDS)
    ids, functions, parents, error, where = parse_trace_tree(
        np.frombuffer(raw, dtype=np.uint8), width, id_at, function_at, children_at
    )
    if error:
        raise FormatError(path, f"in 'trace_tree': {_TREE_ERRORS[int(error)]}", offset=offset + int(where))
    return ids, functions, parents


def read_sources(
    path: str | os.PathLike[str],
    graph: HeapGraph,
    meta: dict[str, Any],
    node_fields: int,
    sections: dict[str, tuple[bytes, int]],
    trace_ids: np.ndarray | None,
) -> None:
    """Read the source sections a file has (``sections``: each one's bytes and file offset) into
    ``graph``, by the layouts ``meta`` (the header's ``meta``) declares; ``trace_ids`` is the nodes'
    ``trace_node_id`` field, None when the file has none."""
    locations = functions = tree = None
    if "locations" in sections:
        raw, offset = sections["locations"]
        locations = int_rows(path, raw, offset, "locations", meta, "location_fields", LOCATION_FIELDS)
    if "trace_function_infos" in sections:
        raw, offset = sections["trace_function_infos"]
        functions = int_rows(
            path, raw, offset, "trace_function_infos", meta, "trace_function_info_fields", FUNCTION_INFO_FIELDS
        )
    if "trace_tree" in sections and functions is not None and trace_ids is not None and trace_ids.any():
        raw, offset = sections["trace_tree"]
        tree = trace_tree(path, raw, offset, meta)
    attach_sources(path, graph, node_fields, locations, functions, tree, trace_ids)


def attach_sources(
    path: str | os.PathLike[str],
    graph: HeapGraph,
    node_fields: int,
    locations: np.ndarray | None,
    functions: np.ndarray | None,
    tree: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
    trace_ids: np.ndarray | None,
) -> None:
    """Set ``graph.locations`` and ``graph.allocations`` from the parsed sections (None: absent)."""
    strings = graph.strings
    n = graph.node_count
    script_names: dict[int, int] = {}
    if functions is not None and functions.shape[0]:
        if int(functions[:, :2].max()) >= len(strings):
            bad = int(np.argmax((functions[:, :2] >= len(strings)).any(axis=1)))
            raise FormatError(
                path, f"trace function {bad}'s name is not an index into 'strings'", record="trace_function_infos"
            )
        for script, script_id in zip(functions[:, 1].tolist(), functions[:, 2].tolist()):
            if strings[script]:
                script_names.setdefault(script_id, script)
    if locations is not None and locations.shape[0]:
        graph.locations = _locations(path, graph, node_fields, locations, script_names)
    if tree is not None and trace_ids is not None and trace_ids.any():
        assert functions is not None
        graph.allocations = _allocations(path, n, functions, tree, trace_ids)


def _locations(
    path: str | os.PathLike[str], graph: HeapGraph, node_fields: int, rows: np.ndarray, script_names: dict[int, int]
) -> SourceLocations:
    position = rows[:, 0]
    node = position // node_fields
    bad = (position % node_fields != 0) | (node >= graph.node_count)
    if bad.any():
        k = int(np.argmax(bad))
        raise FormatError(
            path, f"location {k}'s object_index {int(position[k])} is not a node position", record="locations"
        )
    # V8 writes one location per object, in node order; should one appear twice (or out of order),
    # the first is kept. In order, as always seen, there is nothing to sort.
    if node.shape[0] > 1 and not bool((node[1:] > node[:-1]).all()):
        node, first = np.unique(node, return_index=True)
        rows = rows[first]
    script_ids = rows[:, 1].astype(np.int32)
    # Scripts are few (tens), located objects many: name each distinct script id once, then spread.
    # V8 numbers scripts from 0 up, so a table by id finds each row's script without a sort.
    if script_ids.min() >= 0 and script_ids.max() < _SCRIPT_ID_TABLE:
        seen = np.bincount(script_ids)
        distinct = np.flatnonzero(seen).astype(np.int32)
        slot = np.zeros(seen.shape[0], dtype=np.int64)
        slot[distinct] = np.arange(distinct.shape[0])
        which = slot[script_ids]
    else:
        distinct = np.unique(script_ids)
        which = np.searchsorted(distinct, script_ids)
    by_script = np.argsort(which, kind="stable")  # each script's objects, in node order
    bounds = np.searchsorted(which[by_script], np.arange(distinct.shape[0] + 1)).tolist()
    names = np.full(distinct.shape[0], -1, dtype=np.int32)
    # Only a closure leads to its script: an object located by its constructor has no ``shared``
    # reference, and a script's first located objects may all be instances (a class's, made by the
    # thousand before anything else of that script is numbered).
    closure_kind = graph.node_kinds.index("closure") if "closure" in graph.node_kinds else -1
    for d, script_id in enumerate(distinct.tolist()):
        name = script_names.get(script_id)
        if name is None:
            members = by_script[bounds[d] : bounds[d + 1]]
            probes = members[graph.kind[node[members]] == closure_kind][:_SCRIPT_PROBES].tolist()
            name = next((n for k in probes if (n := _script_of_closure(graph, int(node[k]))) is not None), None)
        if name is not None:
            names[d] = name
    script = names[which]
    return SourceLocations(
        node=node.astype(np.int32),
        script_id=script_ids,
        script=script,
        line=rows[:, 2].astype(np.int32),
        column=rows[:, 3].astype(np.int32),
    )


def _script_of_closure(graph: HeapGraph, node: int) -> int | None:
    """The name (a string index) of the script a closure's shared function info points to, if any."""
    for shared in _edges_named(graph, node, (_SHARED_EDGE,)):
        for script in _edges_named(graph, shared, _SCRIPT_EDGES):
            name = int(graph.name[script])
            if graph.strings[name]:
                return name
    return None


def _edges_named(graph: HeapGraph, node: int, names: tuple[str, ...]) -> list[int]:
    out = []
    for e in graph.out_edges(node):
        label = graph.edge_label(e)
        if label in names:
            out.append(int(graph.edge_to[e]))
    return out


def _allocations(
    path: str | os.PathLike[str],
    node_count: int,
    functions: np.ndarray,
    tree: tuple[np.ndarray, np.ndarray, np.ndarray],
    trace_ids: np.ndarray,
) -> AllocationTraces:
    ids, function, parent = tree
    if function.shape[0] and (function.max() >= functions.shape[0] or function.min() < 0):
        bad = int(np.argmax((function >= functions.shape[0]) | (function < 0)))
        raise FormatError(
            path,
            f"trace node {int(ids[bad])}'s function_info_index is not one of the {functions.shape[0]} trace functions",
            record="trace_tree",
        )
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    if sorted_ids.shape[0] > 1 and bool((sorted_ids[1:] == sorted_ids[:-1]).any()):
        raise FormatError(path, "two trace nodes share an id", record="trace_tree")
    trace = np.full(node_count, -1, dtype=np.int32)
    has = np.flatnonzero(trace_ids)  # 0: no recorded allocation
    at = np.searchsorted(sorted_ids, trace_ids[has])
    missing = at >= sorted_ids.shape[0]  # past the largest id (every one, when the tree is empty)
    missing[~missing] = sorted_ids[at[~missing]] != trace_ids[has][~missing]
    if missing.any():
        k = int(has[int(np.argmax(missing))])
        raise FormatError(
            path, f"node {k}'s trace_node_id {int(trace_ids[k])} is not a node of 'trace_tree'", record="nodes"
        )
    trace[has] = order[at].astype(np.int32)
    # V8 writes function lines and columns 1-based, 0 when unknown: kept 0-based, -1 when unknown.
    return AllocationTraces(
        trace=trace,
        parent=parent.astype(np.int32),
        function=function.astype(np.int32),
        function_name=functions[:, 0].astype(np.int32),
        function_script=functions[:, 1].astype(np.int32),
        function_script_id=functions[:, 2].astype(np.int32),
        function_line=(functions[:, 3] - 1).astype(np.int32),
        function_column=(functions[:, 4] - 1).astype(np.int32),
    )
