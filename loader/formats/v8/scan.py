"""The V8 reader's numba kernels: scanning the ``nodes`` and ``edges`` integer arrays straight into
:class:`~heapdb.loader.graph.HeapGraph` arrays, skipping sections without parsing them, and
DevTools' detachedness propagation.

Each scanner takes ``buf[pos:end]``, updates a small int64 ``state`` array (carried across the
reader's chunks, so a number or a string may straddle two reads) and returns where it stopped. The
reader (:mod:`heapdb.loader.formats.v8`) drives them and turns recorded errors into messages.

:func:`scan_nodes` and :func:`scan_edges` share their tokenizing loop line for line, on purpose:
it is the reader's whole hot path (hundreds of MB per second), and kept inside each kernel the
digit run stays in registers with the store that follows it. A shared kernel returning each number
would hand ``value``, ``i`` and the state back and forth for every one of the file's integers. A
change to the tokenizer must be made in both (``tests/fuzz`` and ``tests/test_v8_reader.py`` read
both arrays). One difference: the edge kernel also takes a '-' before an edge's ``name_or_index``,
for Dart's snapshot profiles (``gen_snapshot --write-v8-snapshot-profile-to``), which put the
replacement of a dropped weak reference at the negated element offset; it is stored as the offset
itself (the slot the replacement fills). V8 writes no negative number anywhere.

Why this module is long: the two scanners each hold the whole tokenizer, for the reason above, and
the error table and skipping of the other sections stay beside them, where a reader of one finds all.
"""

from __future__ import annotations

import numba
import numpy as np

from heapdb.loader.graph import NUMERIC_NAME_KINDS, EdgeKind

# Edge kinds the kernels single out (numba reads module-level integers as compile-time constants).
_ELEMENT, _HIDDEN, _WEAK = int(EdgeKind.ELEMENT), int(EdgeKind.HIDDEN), int(EdgeKind.WEAK)
assert {EdgeKind.ELEMENT, EdgeKind.HIDDEN} == NUMERIC_NAME_KINDS  # first_bad_edge_name tests these two

# Node field roles understood by the node kernel; everything else is read and dropped.
ROLE_SKIP, _ROLE_TYPE, _ROLE_NAME, _ROLE_ID, _ROLE_SELF, _ROLE_EDGES, _ROLE_DETACHED, _ROLE_TRACE = range(8)
NODE_ROLES = {
    "type": _ROLE_TYPE,
    "name": _ROLE_NAME,
    "id": _ROLE_ID,
    "self_size": _ROLE_SELF,
    "edge_count": _ROLE_EDGES,
    "detachedness": _ROLE_DETACHED,
    "trace_node_id": _ROLE_TRACE,  # the allocation call-tree node, when allocations were tracked
}

# Array-scan state (an int64 array carried across chunks).
S_COUNT, S_VALUE, S_IN_NUMBER, S_EXPECT, S_ERROR, S_ERROR_AT, S_DONE = range(7)
_EXPECT_FIRST, EXPECT_SEPARATOR, EXPECT_VALUE = 0, 1, 2
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
    12: "a node's edge_count, name, self_size or trace_node_id is out of range",
    13: "a negative name_or_index outside an element edge",
}
_MAX_VALUE = 1 << 53  # JSON numbers beyond this are not exact in JavaScript either
# S_IN_NUMBER in the edge kernel after a '-' (Dart's element offsets): before its digits, among them.
_SIGNED, _NEGATIVE = 2, 3

# Numba kernels. Each scans buf[pos:end], updates `state` and returns the position it stopped at.
#
# The two array kernels share one grammar (non-negative integers, commas, blanks, a closing ']'),
# written out in each so that the whole scan is one loop over local variables: the state array is
# read on entry and written on exit only, and the field a value belongs to is a counter, not a
# division. A value is stored when the byte after its last digit is seen (or at the end of the
# file); errors are recorded at that byte, with ``S_COUNT`` the number of values stored before.


@numba.njit(cache=True, nogil=True, inline="always")
def _fail(state, code, at):
    """Record error ``code`` at byte ``at`` in the scanner state; returns ``at`` for the caller to return."""
    state[S_ERROR] = code
    state[S_ERROR_AT] = at
    return at


@numba.njit(cache=True, nogil=True, inline="always")
def _fail_after(state, code, at, count):
    """:func:`_fail` for an array kernel, which keeps its value count in a local until it returns."""
    state[S_COUNT] = count
    return _fail(state, code, at)


@numba.njit(cache=True, nogil=True, inline="always")
def _save(state, count, value, in_number, expect):
    state[S_COUNT] = count
    state[S_VALUE] = value
    state[S_IN_NUMBER] = in_number
    state[S_EXPECT] = expect


@numba.njit(cache=True, nogil=True, inline="always")
def _punctuation(state, c, i, expect, count):
    """A byte outside a number: the new ``expect``, or -1 after ']' (done), or -2 on an error."""
    if c == 44:  # ,
        if expect != EXPECT_SEPARATOR:
            _fail_after(state, 2, i, count)
            return -2
        return EXPECT_VALUE
    if c == 93:  # ]
        if expect == EXPECT_VALUE:
            _fail_after(state, 2, i, count)
            return -2
        return -1
    if c == 32 or c == 10 or c == 13 or c == 9:
        return expect
    _fail_after(state, 3, i, count)
    return -2


@numba.njit(cache=True, nogil=True)
def scan_nodes(
    buf,
    pos,
    end,
    final,
    state,
    roles,
    node_type_count,
    max_edges,
    ids,
    kind,
    name,
    self_size,
    edge_counts,
    detached,
    trace,
):
    """Store the ``nodes`` array's values into per-field output arrays. ``final``: no more input."""
    nf = roles.shape[0]
    capacity = ids.shape[0] * nf
    count = state[S_COUNT]
    value = state[S_VALUE]
    in_number = state[S_IN_NUMBER]
    expect = state[S_EXPECT]
    node = count // nf
    field = count - node * nf
    i = pos
    while True:
        if i < end:
            c = buf[i]
            if 48 <= c <= 57:
                if not in_number:
                    if expect == EXPECT_SEPARATOR:
                        return _fail_after(state, 1, i, count)
                    in_number = 1
                    value = 0
                # The rest of the digit run, in a loop of its own: the common path.
                while True:
                    value = value * 10 + (c - 48)
                    if value > _MAX_VALUE:
                        return _fail_after(state, 4, i, count)
                    i += 1
                    if i == end:
                        break
                    c = buf[i]
                    if not 48 <= c <= 57:
                        break
                if i == end:
                    continue  # the number may go on in the next chunk
            elif not in_number:
                expect = _punctuation(state, c, i, expect, count)
                if expect < 0:
                    if expect == -2:
                        return i
                    state[S_DONE] = 1
                    _save(state, count, 0, 0, EXPECT_SEPARATOR)
                    return i + 1
                i += 1
                continue
        elif not (final and in_number):
            break
        # A number ended at byte i (or at the end of the file): store it, then look at byte i again.
        in_number = 0
        expect = EXPECT_SEPARATOR
        if count >= capacity:
            return _fail_after(state, 5, i, count)
        role = roles[field]
        if role == _ROLE_TYPE:
            if value >= node_type_count:
                return _fail_after(state, 6, i, count)
            kind[node] = value
        elif role == _ROLE_NAME:
            if value > 0x7FFFFFFF:
                return _fail_after(state, 12, i, count)
            name[node] = value
        elif role == _ROLE_ID:
            ids[node] = value
        elif role == _ROLE_SELF:
            self_size[node] = value
        elif role == _ROLE_EDGES:
            if value > max_edges:
                return _fail_after(state, 12, i, count)
            edge_counts[node + 1] = value
        elif role == _ROLE_DETACHED:
            if value > 2:
                return _fail_after(state, 7, i, count)
            detached[node] = value
        elif role == _ROLE_TRACE:
            if value > 0x7FFFFFFF:
                return _fail_after(state, 12, i, count)
            trace[node] = value
        count += 1
        field += 1
        if field == nf:
            field = 0
            node += 1
        if i < end and buf[i] == 44:
            # The comma after nearly every value, taken here and not by another turn of the loop
            # through _punctuation: a fifth less time per array.
            expect = EXPECT_VALUE
            i += 1
    _save(state, count, value, in_number, expect)
    return i


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
    count = state[S_COUNT]
    value = state[S_VALUE]
    in_number = state[S_IN_NUMBER]
    expect = state[S_EXPECT]
    edge = count // nf_edge
    field = count - edge * nf_edge
    i = pos
    while True:
        if i < end:
            c = buf[i]
            if 48 <= c <= 57:
                if not in_number:
                    if expect == EXPECT_SEPARATOR:
                        return _fail_after(state, 1, i, count)
                    in_number = 1
                    value = 0
                elif in_number == _SIGNED:
                    in_number = _NEGATIVE
                # The rest of the digit run, in a loop of its own: the common path.
                while True:
                    value = value * 10 + (c - 48)
                    if value > _MAX_VALUE:
                        return _fail_after(state, 4, i, count)
                    i += 1
                    if i == end:
                        break
                    c = buf[i]
                    if not 48 <= c <= 57:
                        break
                if i == end:
                    continue  # the number may go on in the next chunk
            elif not in_number:
                if c == 45 and field == name_at and expect != EXPECT_SEPARATOR:
                    # '-': Dart's profiles put a dropped reference's replacement at the negated
                    # offset. Tested here, in the branch blanks take, not before it: a test of
                    # every byte outside a digit run made the whole scan twice as slow.
                    in_number = _SIGNED
                    value = 0
                    i += 1
                    continue
                expect = _punctuation(state, c, i, expect, count)
                if expect < 0:
                    if expect == -2:
                        return i
                    state[S_DONE] = 1
                    _save(state, count, 0, 0, EXPECT_SEPARATOR)
                    return i + 1
                i += 1
                continue
        elif not (final and in_number):
            break
        # A number ended at byte i (or at the end of the file): store it, then look at byte i again.
        if in_number == _SIGNED:  # a '-' and no digit
            return _fail_after(state, 2, i, count)
        negative = in_number == _NEGATIVE
        in_number = 0
        expect = EXPECT_SEPARATOR
        if count >= capacity:
            return _fail_after(state, 5, i, count)
        if field == type_at:
            if value >= kind_map.shape[0]:
                return _fail_after(state, 8, i, count)
            edge_kind[edge] = kind_map[value]
        elif field == name_at:
            if value > 0xFFFFFFFF:
                return _fail_after(state, 9, i, count)
            # Only an element offset may be negative (its type is read first, as both runtimes write it).
            if negative and (type_at > name_at or edge_kind[edge] != _ELEMENT):
                return _fail_after(state, 13, i, count)
            edge_name[edge] = value
        elif field == to_at:
            # A float division: several times faster than an integer one, and exact here, since
            # value <= 2**53 and a multiple of node_fields divides exactly; for any other value
            # target * node_fields cannot equal it, however the quotient rounds.
            target = np.int64(value / node_fields)
            if target * node_fields != value:
                return _fail_after(state, 10, i, count)
            if target >= node_count:
                return _fail_after(state, 11, i, count)
            edge_to[edge] = target
        count += 1
        field += 1
        if field == nf_edge:
            field = 0
            edge += 1
        if i < end and buf[i] == 44:
            # The comma after nearly every value, taken here and not by another turn of the loop
            # through _punctuation: a fifth less time per array.
            expect = EXPECT_VALUE
            i += 1
    _save(state, count, value, in_number, expect)
    return i


# Skip-scan state: nesting depth, inside a string, after a backslash, value started, error.
K_DEPTH, K_IN_STRING, K_ESCAPE, K_STARTED, K_ERROR, K_ERROR_AT, K_DONE = range(7)


@numba.njit(cache=True, nogil=True)
def skip_value(buf, pos, end, state, max_depth):
    """Find the end of one JSON value (balanced brackets, strings with escapes) without parsing it.

    Stops after a closing bracket or string at depth 0, or *before* the ',' / '}' ending a scalar.
    Nesting deeper than ``max_depth`` is error 3 (the values kept are parsed by :mod:`json`, which
    recurses once per level).
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
            if depth > max_depth:
                state[K_ERROR] = 3
                state[K_ERROR_AT] = i
                return i
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


# Eight bytes at a time in count_commas: each byte set to 1, the low seven bits, a comma in each byte.
_ONES = np.uint64(0x0101010101010101)
_LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)
_COMMAS = np.uint64(0x2C2C2C2C2C2C2C2C)


@numba.njit(cache=True, nogil=True)
def count_commas(buf, pos, end):
    """How many commas ``buf[pos:end]`` holds: the values a clean part of an integer array ends
    (each value but the last is followed by one), so a later part's first value index is known
    before the earlier part is scanned.

    Counted eight bytes at a time (a comma's byte becomes zero under XOR, and a zero byte sets its
    top bit in ``~(((x & 0x7f..) + 0x7f..) | x | 0x7f..)``), four times faster than byte by byte:
    this count is the one part of the scan that runs before the threads start.
    """
    commas = np.int64(0)
    i = pos
    while i < end and i % 8:
        commas += buf[i] == 44
        i += 1
    stop = i + (end - i) // 8 * 8
    for w in buf[i:stop].view(np.uint64):
        x = w ^ _COMMAS
        zero_bytes = ~(((x & _LOW7) + _LOW7) | x | _LOW7)
        commas += np.int64(((zero_bytes >> np.uint64(7)) * _ONES) >> np.uint64(56))
    for j in range(stop, end):
        commas += buf[j] == 44
    return commas


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
