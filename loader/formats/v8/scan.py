"""The V8 reader's numba kernels: scanning the ``nodes`` and ``edges`` integer arrays straight into
:class:`~heapdb.loader.graph.HeapGraph` arrays, skipping sections without parsing them, and
DevTools' detachedness propagation.

Each scanner takes ``buf[pos:end]``, updates a small int64 ``state`` array (carried across the
reader's chunks, so a number or a string may straddle two reads) and returns where it stopped. The
reader (:mod:`heapdb.loader.formats.v8`) drives them and turns recorded errors into messages.
"""

from __future__ import annotations

import numba
import numpy as np

from heapdb.loader.graph import NUMERIC_NAME_KINDS, EdgeKind

# Edge kinds the kernels single out (numba reads module-level integers as compile-time constants).
_ELEMENT, _HIDDEN, _WEAK = int(EdgeKind.ELEMENT), int(EdgeKind.HIDDEN), int(EdgeKind.WEAK)
assert {EdgeKind.ELEMENT, EdgeKind.HIDDEN} == NUMERIC_NAME_KINDS  # first_bad_edge_name tests these two

# Node field roles understood by the node kernel; everything else is read and dropped.
ROLE_SKIP, _ROLE_TYPE, _ROLE_NAME, _ROLE_ID, _ROLE_SELF, _ROLE_EDGES, _ROLE_DETACHED = range(7)
NODE_ROLES = {
    "type": _ROLE_TYPE,
    "name": _ROLE_NAME,
    "id": _ROLE_ID,
    "self_size": _ROLE_SELF,
    "edge_count": _ROLE_EDGES,
    "detachedness": _ROLE_DETACHED,
}

# Array-scan state (an int64 array carried across chunks).
S_COUNT, S_VALUE, S_IN_NUMBER, S_EXPECT, S_ERROR, S_ERROR_AT, S_DONE = range(7)
_EXPECT_FIRST, _EXPECT_SEPARATOR, _EXPECT_VALUE = 0, 1, 2
ERRORS = {
    1: "expected a comma or ']' between numbers",
    2: "expected a number",
    3: "unexpected character in an integer array (V8 writes only non-negative integers)",
    4: "a number is too large",
    5: "more values than the declared count",
    6: "a node type is not one of meta.node_types",
    7: "a detachedness value is not 0, 1 or 2",
    8: "an edge type is not one of meta.edge_types",
    9: "an edge name or index does not fit in 32 bits",
    10: "an edge's to_node is not a multiple of the node field count",
    11: "an edge's to_node points past the last node",
    12: "a node's edge_count, name or self_size is out of range",
}
_MAX_VALUE = 1 << 53  # JSON numbers beyond this are not exact in JavaScript either

# Numba kernels. Each scans buf[pos:end], updates `state` and returns the position it stopped at.


@numba.njit(cache=True, nogil=True, inline="always")
def _fail(state, code, at):
    """Record error ``code`` at byte ``at`` in the scanner state; returns ``at`` for the caller to return."""
    state[S_ERROR] = code
    state[S_ERROR_AT] = at
    return at


@numba.njit(cache=True, nogil=True)
def _int_array_step(buf, pos, end, state):
    """Advance the JSON integer-array grammar by one byte-run; returns (pos, value_ready, value).

    Shared by both array kernels: stops after each complete number so the caller can store it.
    """
    expect = state[S_EXPECT]
    in_number = state[S_IN_NUMBER]
    value = state[S_VALUE]
    i = pos
    while i < end:
        c = buf[i]
        if 48 <= c <= 57:
            if not in_number:
                if expect == _EXPECT_SEPARATOR:
                    return _fail(state, 1, i), False, 0
                in_number = 1
                value = 0
            value = value * 10 + (c - 48)
            if value > _MAX_VALUE:
                return _fail(state, 4, i), False, 0
            i += 1
            continue
        if in_number:
            # The number ended at this byte; hand it out and look at the byte again next call.
            state[S_IN_NUMBER] = 0
            state[S_EXPECT] = _EXPECT_SEPARATOR
            state[S_VALUE] = 0
            return i, True, value
        if c == 44:  # ,
            if expect != _EXPECT_SEPARATOR:
                return _fail(state, 2, i), False, 0
            expect = _EXPECT_VALUE
        elif c == 93:  # ]
            if expect == _EXPECT_VALUE:
                return _fail(state, 2, i), False, 0
            state[S_DONE] = 1
            state[S_EXPECT] = expect
            return i + 1, False, 0
        elif c == 32 or c == 10 or c == 13 or c == 9:
            pass
        else:
            return _fail(state, 3, i), False, 0
        i += 1
    state[S_EXPECT] = expect
    state[S_IN_NUMBER] = in_number
    state[S_VALUE] = value
    return i, False, 0


@numba.njit(cache=True, nogil=True, inline="always")
def _next_value(buf, pos, end, final, state, capacity):
    """The next integer of an array and its position in it; ``ready`` is False when none is complete
    yet, or on an error (recorded in ``state``). Shared by both array kernels."""
    if pos >= end and final and state[S_IN_NUMBER]:
        # A number running into the end of the file still counts; the missing ']' is reported.
        pos, ready, value = end, True, state[S_VALUE]
        state[S_IN_NUMBER] = 0
        state[S_EXPECT] = _EXPECT_SEPARATOR
    else:
        pos, ready, value = _int_array_step(buf, pos, end, state)
    count = state[S_COUNT]
    if ready and count >= capacity:
        state[S_ERROR] = 5
        state[S_ERROR_AT] = pos
        ready = False
    return pos, ready, value, count


@numba.njit(cache=True, nogil=True)
def scan_nodes(
    buf, pos, end, final, state, roles, node_type_count, max_edges, ids, kind, name, self_size, edge_counts, detached
):
    """Store the ``nodes`` array's values into per-field output arrays. ``final``: no more input."""
    nf = roles.shape[0]
    capacity = ids.shape[0] * nf
    while True:
        pos, ready, value, count = _next_value(buf, pos, end, final, state, capacity)
        if not ready:
            return pos
        node = count // nf
        role = roles[count - node * nf]
        if role == _ROLE_TYPE:
            if value >= node_type_count:
                return _fail(state, 6, pos)
            kind[node] = value
        elif role == _ROLE_NAME:
            if value > 0x7FFFFFFF:
                return _fail(state, 12, pos)
            name[node] = value
        elif role == _ROLE_ID:
            ids[node] = value
        elif role == _ROLE_SELF:
            self_size[node] = value
        elif role == _ROLE_EDGES:
            if value > max_edges:
                return _fail(state, 12, pos)
            edge_counts[node + 1] = value
        elif role == _ROLE_DETACHED:
            if value > 2:
                return _fail(state, 7, pos)
            detached[node] = value
        state[S_COUNT] = count + 1
        if pos >= end:
            return pos


@numba.njit(cache=True, nogil=True)
def scan_edges(
    buf,
    pos,
    end,
    final,
    state,
    nf_edge,
    type_at,
    name_at,
    to_at,
    kind_map,
    node_fields,
    node_count,
    edge_to,
    edge_kind,
    edge_name,
):
    """Store the ``edges`` array's values, mapping types to EdgeKind and to_node to node indexes."""
    capacity = edge_to.shape[0] * nf_edge
    while True:
        pos, ready, value, count = _next_value(buf, pos, end, final, state, capacity)
        if not ready:
            return pos
        edge = count // nf_edge
        field = count - edge * nf_edge
        if field == type_at:
            if value >= kind_map.shape[0]:
                return _fail(state, 8, pos)
            edge_kind[edge] = kind_map[value]
        elif field == name_at:
            if value > 0xFFFFFFFF:
                return _fail(state, 9, pos)
            edge_name[edge] = value
        elif field == to_at:
            target = value // node_fields
            if target * node_fields != value:
                return _fail(state, 10, pos)
            if target >= node_count:
                return _fail(state, 11, pos)
            edge_to[edge] = target
        state[S_COUNT] = count + 1
        if pos >= end:
            return pos


# Skip-scan state: nesting depth, inside a string, after a backslash, value started, error.
K_DEPTH, K_IN_STRING, K_ESCAPE, K_STARTED, K_ERROR, K_ERROR_AT, K_DONE = range(7)


@numba.njit(cache=True, nogil=True)
def skip_value(buf, pos, end, state):
    """Find the end of one JSON value (balanced brackets, strings with escapes) without parsing it.

    Stops after a closing bracket or string at depth 0, or *before* the ',' / '}' ending a scalar.
    """
    depth = state[K_DEPTH]
    in_string = state[K_IN_STRING]
    escape = state[K_ESCAPE]
    started = state[K_STARTED]
    i = pos
    while i < end:
        c = buf[i]
        if in_string:
            if escape:
                escape = 0
            elif c == 92:  # backslash
                escape = 1
            elif c == 34:  # "
                in_string = 0
                if depth == 0:
                    state[K_DONE] = 1
                    state[K_IN_STRING] = 0
                    return i + 1
            elif c < 32:
                state[K_ERROR] = 1
                state[K_ERROR_AT] = i
                return i
        elif c == 34:
            in_string = 1
            started = 1
        elif c == 91 or c == 123:  # [ {
            depth += 1
            started = 1
        elif c == 93 or c == 125:  # ] }
            if depth == 0:
                if started:
                    state[K_DONE] = 1
                    return i
                state[K_ERROR] = 2
                state[K_ERROR_AT] = i
                return i
            depth -= 1
            if depth == 0:
                state[K_DONE] = 1
                state[K_DEPTH] = 0
                return i + 1
        elif c == 44 and depth == 0:  # ,
            if started:
                state[K_DONE] = 1
                return i
            state[K_ERROR] = 2
            state[K_ERROR_AT] = i
            return i
        elif not (c == 32 or c == 10 or c == 13 or c == 9):
            started = 1
        i += 1
    state[K_DEPTH] = depth
    state[K_IN_STRING] = in_string
    state[K_ESCAPE] = escape
    state[K_STARTED] = started
    return i


@numba.njit(cache=True, nogil=True)
def first_bad_edge_name(edge_kind, edge_name, string_count):
    """The first edge whose name should index ``strings`` but does not, or -1 (no temporaries)."""
    for e in range(edge_kind.shape[0]):
        k = edge_kind[e]
        if k != _ELEMENT and k != _HIDDEN and edge_name[e] >= string_count:  # their names are numbers
            return e
    return -1


@numba.njit(cache=True, nogil=True)
def propagate_detachedness(state, kind, native_kind, edge_start, edge_to, edge_kind):
    """DevTools' DOM-state propagation over native nodes; updates ``state`` in place."""
    n = kind.shape[0]
    visited = np.zeros(n, dtype=np.uint8)
    attached = np.empty(n, dtype=np.int32)
    detached = np.empty(n, dtype=np.int32)
    na = 0
    nd = 0
    for v in range(n):
        s = state[v]
        if s == 0 or visited[v]:
            continue
        visited[v] = 1
        if kind[v] != native_kind:
            continue
        if s == 1:
            attached[na] = v
            na += 1
        else:
            detached[nd] = v
            nd += 1
    for phase in range(2):
        new_state = 1 if phase == 0 else 2
        while True:
            if phase == 0:
                if na == 0:
                    break
                na -= 1
                v = attached[na]
            else:
                if nd == 0:
                    break
                nd -= 1
                v = detached[nd]
                if state[v] == 1:
                    continue
            for e in range(edge_start[v], edge_start[v + 1]):
                k = edge_kind[e]
                # (V8's invisible edges are mapped to weak.) Two compares, as numba cannot type
                # `in` over a tuple of mixed integer types.
                if k == _HIDDEN or k == _WEAK:  # noqa: SIM109
                    continue
                w = edge_to[e]
                if visited[w]:
                    continue
                visited[w] = 1
                if kind[w] != native_kind:
                    continue
                state[w] = new_state
                if new_state == 1:
                    attached[na] = w
                    na += 1
                else:
                    detached[nd] = w
                    nd += 1
