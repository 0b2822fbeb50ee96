"""Write any :class:`HeapGraph` as a Chrome ``.heapsnapshot`` that DevTools and memlab can load.

The JSON is streamed: the node and edge arrays are formatted a block at a time by a numba kernel
and the strings a block at a time, so memory stays proportional to one block, not to the file.
The file is written beside ``path`` and renamed into place when complete.

What the snapshot holds:

- Nodes in graph order, except that the graph's root becomes node 0 (V8 tools take node 0 as the
  root); every GC root is reachable from it because readers hang all roots below ``graph.root``.
- Edges with their kinds: context, element, property, internal, hidden, shortcut and weak map to the
  V8 edge types of the same name (weak edges stay weak, so nothing they point to is retained by
  them); plain strong references (:attr:`EdgeKind.REFERENCE`, from Luau or snap.bin) become
  ``property`` edges.
- Node types: a graph whose node kinds are all V8 node types (a V8 snapshot read by heapdb) keeps
  its kinds and names as they are, so reading the export gives back identical arrays. Other
  runtimes' kinds are mapped onto V8 types: functions become ``closure``, prototypes ``code``,
  strings ``string``, synthetic nodes ``synthetic``, everything else ``object``; because DevTools
  groups ``object`` nodes by their name, such nodes are written with the graph's ``type`` (``table``,
  a userdata's ``__type``) as their name.
- Ids: kept when every id fits in 32 bits (always true for V8 ids). JSON would carry any id up to
  2^53 exactly, but DevTools and memlab hold node fields in ``Uint32Array``s and silently truncate
  larger values (a 48-bit Luau address loses its top bits), so otherwise all ids are replaced by
  ``2 * index + 1`` (odd, as V8 numbers JavaScript objects) in the written node order; the original
  ids are not carried over. Self sizes above 2^32 - 1 are likewise beyond those tools.
- ``detachedness`` from the graph, 0 (unknown) when it has none.
- ``locations`` from the graph's source locations (script id, 0-based line and column), so DevTools
  links closures to their source. Allocation traces are not written (``trace_tree`` stays empty).
"""

from __future__ import annotations

import json
import os
from typing import TextIO

import numba
import numpy as np

from heapdb.loader.graph import SYNTHETIC_KIND, EdgeKind, HeapGraph

V8_NODE_TYPES = [
    "hidden",
    "array",
    "string",
    "object",
    "code",
    "closure",
    "regexp",
    "number",
    "native",
    "synthetic",
    "concatenated string",
    "sliced string",
    "symbol",
    "bigint",
    "object shape",
    "wasm object",
]
V8_EDGE_TYPES = ["context", "element", "property", "internal", "hidden", "shortcut", "weak"]
NODE_FIELDS = ["type", "name", "id", "self_size", "edge_count", "trace_node_id", "detachedness"]
EDGE_FIELDS = ["type", "name_or_index", "to_node"]

# Kinds of other runtimes that have a V8 counterpart; any other kind is written as "object".
_FOREIGN_KIND_TO_V8 = {
    "function": "closure",
    "closure": "closure",
    "proto": "code",
    "string": "string",
    SYNTHETIC_KIND: "synthetic",
}
# EdgeKind value -> V8 edge type index; REFERENCE is written as a property.
_EDGE_TYPE_OF_KIND = np.array(
    [
        V8_EDGE_TYPES.index(k.name.lower()) if k != EdgeKind.REFERENCE else V8_EDGE_TYPES.index("property")
        for k in EdgeKind
    ],
    dtype=np.int64,
)
# Largest id DevTools and memlab keep intact (they store node fields as uint32).
MAX_TOOL_ID = (1 << 32) - 1
BLOCK_ROWS = 1 << 16


def write_heapsnapshot(graph: HeapGraph, path: str | os.PathLike[str]) -> None:
    """Write ``graph`` to ``path`` as a V8 heap snapshot (see the module docstring)."""
    graph.validate()
    n, m = graph.node_count, graph.edge_count
    order = _node_order(n, graph.root)
    position = np.empty(n, dtype=np.int64)
    position[order] = np.arange(n, dtype=np.int64)

    node_types, type_of_kind, named_by_type = _node_types(graph.node_kinds)
    names = np.where(named_by_type[graph.kind], graph.type, graph.name).astype(np.int64)
    ids = graph.ids
    if n and (ids.min() < 0 or ids.max() > MAX_TOOL_ID):
        ids = np.empty(n, dtype=np.int64)
        ids[order] = 2 * np.arange(n, dtype=np.int64) + 1
    detachedness = graph.detachedness if graph.detachedness is not None else np.zeros(n, dtype=np.uint8)
    nf = len(NODE_FIELDS)

    header = {
        "meta": {
            "node_fields": NODE_FIELDS,
            "node_types": [node_types, "string", "number", "number", "number", "number", "number"],
            "edge_fields": EDGE_FIELDS,
            "edge_types": [V8_EDGE_TYPES, "string_or_number", "node"],
            "trace_function_info_fields": ["function_id", "name", "script_name", "script_id", "line", "column"],
            "trace_node_fields": ["id", "function_info_index", "count", "size", "children"],
            "sample_fields": ["timestamp_us", "last_assigned_id"],
            "location_fields": ["object_index", "script_id", "line", "column"],
        },
        "node_count": n,
        "edge_count": m,
        "trace_function_count": 0,
    }
    path = os.fspath(path)
    partial = path + ".partial"
    try:
        with open(partial, "w", encoding="ascii", newline="\n") as out:
            out.write('{"snapshot":' + json.dumps(header, separators=(",", ":")) + ',\n"nodes":[')
            for lo in range(0, n, BLOCK_ROWS):
                rows = order[lo : lo + BLOCK_ROWS]
                block = np.empty((rows.shape[0], nf), dtype=np.int64)
                block[:, 0] = type_of_kind[graph.kind[rows]]
                block[:, 1] = names[rows]
                block[:, 2] = ids[rows]
                block[:, 3] = graph.self_size[rows]
                block[:, 4] = graph.edge_start[rows + 1] - graph.edge_start[rows]
                block[:, 5] = 0
                block[:, 6] = detachedness[rows]
                _write_block(out, block, lo == 0)
            out.write('],\n"edges":[')
            first = True
            for lo in range(0, n, BLOCK_ROWS):
                rows = order[lo : lo + BLOCK_ROWS]
                edges = _edge_positions(graph.edge_start, rows)
                if edges.shape[0] == 0:
                    continue
                block = np.empty((edges.shape[0], 3), dtype=np.int64)
                block[:, 0] = _EDGE_TYPE_OF_KIND[graph.edge_kind[edges]]
                block[:, 1] = graph.edge_name[edges]
                block[:, 2] = position[graph.edge_to[edges]] * nf
                _write_block(out, block, first)
                first = False
            out.write('],\n"trace_function_infos":[],\n"trace_tree":[],\n"samples":[],\n"locations":[')
            if graph.locations is not None and graph.locations.node.shape[0]:
                located = graph.locations
                block = np.empty((located.node.shape[0], 4), dtype=np.int64)
                block[:, 0] = position[located.node] * nf
                # V8 numbers are non-negative: an unknown script id, line or column (-1) becomes 0.
                block[:, 1] = np.maximum(located.script_id, 0)
                block[:, 2] = np.maximum(located.line, 0)
                block[:, 3] = np.maximum(located.column, 0)
                _write_block(out, block, True)
            out.write('],\n"strings":[')
            _write_strings(out, graph.strings)
            out.write("]}\n")
        os.replace(partial, path)
    except BaseException:
        if os.path.exists(partial):
            os.unlink(partial)
        raise


def _node_order(n: int, root: int) -> np.ndarray:
    """Graph order with the root moved to the front."""
    order = np.arange(n, dtype=np.int64)
    if root:
        order[1 : root + 1] = np.arange(root, dtype=np.int64)
        order[0] = root
    return order


def _node_types(node_kinds: list[str]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The V8 node type list, each graph kind's index in it, and which kinds are written by class."""
    if all(k in V8_NODE_TYPES for k in node_kinds):
        # A V8 graph: keep its own type list (in its order) so a re-read gives identical kinds.
        return list(node_kinds), np.arange(len(node_kinds), dtype=np.int64), np.zeros(len(node_kinds), dtype=bool)
    mapped = [_FOREIGN_KIND_TO_V8.get(k, "object") for k in node_kinds]
    type_of_kind = np.array([V8_NODE_TYPES.index(t) for t in mapped], dtype=np.int64)
    named_by_type = np.array([t == "object" for t in mapped], dtype=bool)
    return list(V8_NODE_TYPES), type_of_kind, named_by_type


def _edge_positions(edge_start: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The edge positions of ``rows``' out-edges, node after node."""
    starts = edge_start[rows]
    counts = edge_start[rows + 1] - starts
    total = int(counts.sum())
    offsets = np.repeat(starts - (np.cumsum(counts) - counts), counts)
    return offsets + np.arange(total, dtype=np.int64)


@numba.njit(cache=True, nogil=True)
def _format_rows(block, leading_comma, out):
    """Decimal text of ``block``'s rows, comma separated, one row per line; returns the length."""
    k = 0
    digits = np.empty(20, dtype=np.uint8)
    rows, cols = block.shape
    for r in range(rows):
        if r > 0 or leading_comma:
            out[k] = 44  # ,
            out[k + 1] = 10  # newline
            k += 2
        for c in range(cols):
            if c > 0:
                out[k] = 44
                k += 1
            v = block[r, c]
            if v < 0:
                out[k] = 45  # -
                k += 1
                v = -v
            d = 0
            while True:
                digits[d] = 48 + v % 10
                d += 1
                v //= 10
                if v == 0:
                    break
            while d > 0:
                d -= 1
                out[k] = digits[d]
                k += 1
    return k


def _write_block(out: TextIO, block: np.ndarray, first: bool) -> None:
    buffer = np.empty(block.size * 21 + 2 * block.shape[0] + 2, dtype=np.uint8)
    length = _format_rows(block, not first, buffer)
    out.write(buffer[:length].tobytes().decode("ascii"))


def _write_strings(out: TextIO, strings: list[str]) -> None:
    # ensure_ascii escapes everything, lone surrogates from V8 included, so the file stays valid.
    for lo in range(0, len(strings), BLOCK_ROWS):
        chunk = ",\n".join(json.dumps(s) for s in strings[lo : lo + BLOCK_ROWS])
        out.write(chunk if lo == 0 else ",\n" + chunk)
