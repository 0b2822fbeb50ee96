"""Chrome / V8 ``.heapsnapshot`` reader (Node's ``v8.writeHeapSnapshot``, Chrome DevTools, CDP).

A ``.heapsnapshot`` is one JSON object::

    {"snapshot": {"meta": {...}, "node_count": N, "edge_count": M, ...},
     "nodes": [flat integers, N * len(node_fields)],
     "edges": [flat integers, M * len(edge_fields)],
     ... "strings": ["", "(GC roots)", ...]}

The file is never loaded whole. It is read in chunks; the two big integer arrays are scanned by numba
kernels straight into the :class:`HeapGraph` arrays (preallocated from the declared counts, after
checking those counts against the file size); only ``snapshot`` and ``strings`` go through
:mod:`json`. Every other section (``trace_function_infos``, ``trace_tree``, ``samples``,
``locations``, and whatever newer V8 versions add) is skipped with a structural scan (balanced
brackets, terminated strings) without being interpreted.

Everything is driven by ``snapshot.meta``: field order, node types and edge types are looked up by
name, so Node 20 (``trace_node_id``, ``detachedness``) and Chromium (its own field list) read alike.

Mapping onto the graph contract:

- ``ids`` are V8's node ids, ``kind`` indexes the snapshot's own ``node_types`` (``node_kinds``),
  ``name`` the node's raw name; V8 edges store ``to_node`` as node index * field count, converted to
  node indexes. The root is node ``root_index / node field count`` (node 0 unless the header says).
- ``type`` follows Chrome DevTools' class names: ``hidden`` → ``"(system)"``, ``object`` and
  ``native`` → the node's name (the constructor; DOM names such as ``<div id="a">`` shortened to
  ``<div>``), ``code`` → ``"(compiled code)"``, everything else ``"(<node type>)"``: ``"(closure)"``,
  ``"(string)"``, ``"(array)"``, ``"(regexp)"``, ``"(concatenated string)"``... (Recent DevTools
  show closures as ``Function`` and regexps as ``RegExp``; heapdb keeps the long-standing names so a
  closure never groups with ``Function`` objects.) Class names the snapshot lacks are appended to
  ``strings``; ones it has are reused, so reading an exported graph again gives identical arrays.
- ``detachedness`` is filled when the snapshot has the field, after DevTools' propagation: a native
  (DOM) node reachable from an attached native node through strong edges is attached, otherwise one
  reachable from a detached node is detached. Detached native nodes get the type
  ``"Detached <name>"`` as in DevTools.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any, BinaryIO

import numba
import numpy as np

from heapdb.errors import FormatError
from heapdb.loader.graph import Detachedness, EdgeKind, HeapGraph

NAME = "v8"

CHUNK_BYTES = 8 << 20

# V8 edge type names -> EdgeKind. "invisible" (older V8) never retains, like a weak edge.
EDGE_KIND_BY_V8_TYPE = {
    "context": EdgeKind.CONTEXT,
    "element": EdgeKind.ELEMENT,
    "property": EdgeKind.PROPERTY,
    "internal": EdgeKind.INTERNAL,
    "hidden": EdgeKind.HIDDEN,
    "shortcut": EdgeKind.SHORTCUT,
    "weak": EdgeKind.WEAK,
    "invisible": EdgeKind.WEAK,
}

# DevTools class names for node types whose class is not the node's own name.
_CLASS_BY_NODE_TYPE = {"hidden": "(system)", "code": "(compiled code)"}
_NAMED_CLASS_NODE_TYPES = ("object", "native")

# Node field roles understood by the node kernel; everything else is read and dropped.
_ROLE_SKIP, _ROLE_TYPE, _ROLE_NAME, _ROLE_ID, _ROLE_SELF, _ROLE_EDGES, _ROLE_DETACHED = range(7)
_NODE_ROLES = {
    "type": _ROLE_TYPE,
    "name": _ROLE_NAME,
    "id": _ROLE_ID,
    "self_size": _ROLE_SELF,
    "edge_count": _ROLE_EDGES,
    "detachedness": _ROLE_DETACHED,
}
_REQUIRED_NODE_FIELDS = ("type", "name", "id", "self_size", "edge_count")
_REQUIRED_EDGE_FIELDS = ("type", "name_or_index", "to_node")

# Kernel scan state (an int64 array carried across chunks).
_S_COUNT, _S_VALUE, _S_IN_NUMBER, _S_EXPECT, _S_ERROR, _S_ERROR_AT, _S_DONE = range(7)
_EXPECT_FIRST, _EXPECT_SEPARATOR, _EXPECT_VALUE = 0, 1, 2
_ERRORS = {
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

ByteProgress = Callable[[int], None]


def sniff(head: bytes) -> bool:
    """A V8 snapshot starts with an object whose first key is ``snapshot`` holding ``meta``."""
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not text.startswith(b"{"):
        return False
    text = text[1:].lstrip()
    return text.startswith(b'"snapshot"') and b'"meta"' in head and b'"node_fields"' in head


def read_graph(path: str | os.PathLike[str], on_bytes: ByteProgress | None = None) -> HeapGraph:
    """Read a V8 ``.heapsnapshot`` into a :class:`HeapGraph` (see the module docstring)."""
    try:
        f = open(path, "rb")
    except OSError as e:
        raise FormatError(path, f"cannot open: {e.strerror}") from None
    with f:
        return _SnapshotReader(f, path, on_bytes).read()


# ----------------------------------------------------------------------------------------------
# Numba kernels. Each scans buf[pos:end], updates `state` and returns the position it stopped at.


@numba.njit(cache=True, nogil=True, inline="always")
def _fail(state, code, at):
    """Record error ``code`` at byte ``at`` in the scanner state; returns ``at`` for the caller to return."""
    state[_S_ERROR] = code
    state[_S_ERROR_AT] = at
    return at


@numba.njit(cache=True, nogil=True)
def _int_array_step(buf, pos, end, state):
    """Advance the JSON integer-array grammar by one byte-run; returns (pos, value_ready, value).

    Shared by both array kernels: stops after each complete number so the caller can store it.
    """
    expect = state[_S_EXPECT]
    in_number = state[_S_IN_NUMBER]
    value = state[_S_VALUE]
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
            state[_S_IN_NUMBER] = 0
            state[_S_EXPECT] = _EXPECT_SEPARATOR
            state[_S_VALUE] = 0
            return i, True, value
        if c == 44:  # ,
            if expect != _EXPECT_SEPARATOR:
                return _fail(state, 2, i), False, 0
            expect = _EXPECT_VALUE
        elif c == 93:  # ]
            if expect == _EXPECT_VALUE:
                return _fail(state, 2, i), False, 0
            state[_S_DONE] = 1
            state[_S_EXPECT] = expect
            return i + 1, False, 0
        elif c == 32 or c == 10 or c == 13 or c == 9:
            pass
        else:
            return _fail(state, 3, i), False, 0
        i += 1
    state[_S_EXPECT] = expect
    state[_S_IN_NUMBER] = in_number
    state[_S_VALUE] = value
    return i, False, 0


@numba.njit(cache=True, nogil=True, inline="always")
def _next_value(buf, pos, end, final, state, capacity):
    """The next integer of an array and its position in it; ``ready`` is False when none is complete
    yet, or on an error (recorded in ``state``). Shared by both array kernels."""
    if pos >= end and final and state[_S_IN_NUMBER]:
        # A number running into the end of the file still counts; the missing ']' is reported.
        pos, ready, value = end, True, state[_S_VALUE]
        state[_S_IN_NUMBER] = 0
        state[_S_EXPECT] = _EXPECT_SEPARATOR
    else:
        pos, ready, value = _int_array_step(buf, pos, end, state)
    count = state[_S_COUNT]
    if ready and count >= capacity:
        state[_S_ERROR] = 5
        state[_S_ERROR_AT] = pos
        ready = False
    return pos, ready, value, count


@numba.njit(cache=True, nogil=True)
def _scan_nodes(
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
        state[_S_COUNT] = count + 1
        if pos >= end:
            return pos


@numba.njit(cache=True, nogil=True)
def _scan_edges(
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
        state[_S_COUNT] = count + 1
        if pos >= end:
            return pos


# Skip-scan state: nesting depth, inside a string, after a backslash, value started, error.
_K_DEPTH, _K_IN_STRING, _K_ESCAPE, _K_STARTED, _K_ERROR, _K_ERROR_AT, _K_DONE = range(7)


@numba.njit(cache=True, nogil=True)
def _skip_value(buf, pos, end, state):
    """Find the end of one JSON value (balanced brackets, strings with escapes) without parsing it.

    Stops after a closing bracket or string at depth 0, or *before* the ',' / '}' ending a scalar.
    """
    depth = state[_K_DEPTH]
    in_string = state[_K_IN_STRING]
    escape = state[_K_ESCAPE]
    started = state[_K_STARTED]
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
                    state[_K_DONE] = 1
                    state[_K_IN_STRING] = 0
                    return i + 1
            elif c < 32:
                state[_K_ERROR] = 1
                state[_K_ERROR_AT] = i
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
                    state[_K_DONE] = 1
                    return i
                state[_K_ERROR] = 2
                state[_K_ERROR_AT] = i
                return i
            depth -= 1
            if depth == 0:
                state[_K_DONE] = 1
                state[_K_DEPTH] = 0
                return i + 1
        elif c == 44 and depth == 0:  # ,
            if started:
                state[_K_DONE] = 1
                return i
            state[_K_ERROR] = 2
            state[_K_ERROR_AT] = i
            return i
        elif not (c == 32 or c == 10 or c == 13 or c == 9):
            started = 1
        i += 1
    state[_K_DEPTH] = depth
    state[_K_IN_STRING] = in_string
    state[_K_ESCAPE] = escape
    state[_K_STARTED] = started
    return i


@numba.njit(cache=True, nogil=True)
def _first_bad_edge_name(edge_kind, edge_name, string_count):
    """The first edge whose name should index ``strings`` but does not, or -1 (no temporaries)."""
    for e in range(edge_kind.shape[0]):
        k = edge_kind[e]
        if k != 1 and k != 4 and edge_name[e] >= string_count:  # element and hidden names are numbers
            return e
    return -1


@numba.njit(cache=True, nogil=True)
def _propagate_detachedness(state, kind, native_kind, edge_start, edge_to, edge_kind):
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
                if k == 4 or k == 6:  # hidden, weak (and invisible, mapped to weak)
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


# ----------------------------------------------------------------------------------------------


class _SnapshotReader:
    """Walks the top-level JSON object section by section over a sliding byte window."""

    def __init__(self, f: BinaryIO, path: str | os.PathLike[str], on_bytes: ByteProgress | None) -> None:
        self.f = f
        self.path = path
        self.on_bytes = on_bytes
        self.file_size = os.fstat(f.fileno()).st_size
        self.buf = np.empty(0, dtype=np.uint8)
        self.pos = 0  # position in buf
        self.base = 0  # file offset of buf[0]
        self.eof = False
        self.meta: dict[str, Any] | None = None
        self.arrays: dict[str, Any] = {}
        self.strings: list[str] | None = None

    # -- byte window ---------------------------------------------------------------------------

    def _error(self, problem: str, offset: int | None = None) -> FormatError:
        return FormatError(self.path, problem, offset=self.base + self.pos if offset is None else offset)

    def _refill(self) -> bool:
        """Drop consumed bytes and read the next chunk; False at end of file."""
        if self.eof:
            return False
        data = self.f.read(CHUNK_BYTES)
        if self.on_bytes is not None and data:
            self.on_bytes(len(data))
        if not data:
            self.eof = True
            return False
        rest = self.buf[self.pos :]
        self.base += self.pos
        self.buf = (
            np.concatenate((rest, np.frombuffer(data, dtype=np.uint8)))
            if rest.size
            else np.frombuffer(data, dtype=np.uint8)
        )
        self.pos = 0
        return True

    def _peek(self, what: str) -> int:
        """The next non-blank byte (not consumed); FormatError at end of file."""
        while True:
            buf, pos = self.buf, self.pos
            while pos < buf.shape[0] and buf[pos] in (32, 9, 10, 13):
                pos += 1
            self.pos = pos
            if pos < buf.shape[0]:
                return int(buf[pos])
            if not self._refill():
                raise self._error(f"the file ends where {what} was expected")

    def _expect(self, char: str, what: str) -> None:
        c = self._peek(what)
        if c != ord(char):
            raise self._error(f"expected {what}, found {chr(c)!r}")
        self.pos += 1

    def _value_bytes(self, key: str, keep: bool) -> bytes | None:
        """Scan one JSON value; return its bytes when ``keep``."""
        self._peek(f"the value of {key!r}")
        start_offset = self.base + self.pos
        state = np.zeros(7, dtype=np.int64)
        parts: list[bytes] = []
        while True:
            start = self.pos
            self.pos = _skip_value(self.buf, self.pos, self.buf.shape[0], state)
            if keep:
                parts.append(self.buf[start : self.pos].tobytes())
            if state[_K_ERROR]:
                problem = "a control character inside a string" if state[_K_ERROR] == 1 else "a malformed value"
                raise self._error(f"{problem} in {key!r}", offset=self.base + int(state[_K_ERROR_AT]))
            if state[_K_DONE]:
                break
            if not self._refill():
                raise self._error(
                    f"the file ends inside {key!r} (started at byte {start_offset})", offset=self.file_size
                )
        return b"".join(parts) if keep else None

    def _json_value(self, key: str) -> Any:
        self._peek(f"the value of {key!r}")
        offset = self.base + self.pos
        raw = self._value_bytes(key, keep=True)
        assert raw is not None
        try:
            return json.loads(raw)
        except json.JSONDecodeError as e:
            where = offset + len(e.doc[: e.pos].encode("utf-8", "surrogatepass"))
            raise FormatError(self.path, f"invalid JSON in {key!r}: {e.msg}", offset=where) from None
        except UnicodeDecodeError as e:
            raise FormatError(self.path, f"invalid UTF-8 in {key!r}", offset=offset + e.start) from None

    # -- top level ----------------------------------------------------------------------------

    def read(self) -> HeapGraph:
        if self.file_size == 0:
            raise FormatError(self.path, "the file is empty", offset=0)
        if self._peek("'{'") == 0xEF:  # a UTF-8 byte order mark
            self.pos += 3
        self._expect("{", "'{' opening the snapshot object")
        first = True
        while True:
            c = self._peek("a key or '}'")
            if c == ord("}"):
                self.pos += 1
                break
            if not first:
                self._expect(",", "',' or '}' after a section")
                self._peek("a key")
            first = False
            key_offset = self.base + self.pos
            key = self._json_value("a key")
            if not isinstance(key, str):
                raise FormatError(self.path, "expected a quoted section name", offset=key_offset)
            self._expect(":", f"':' after {key!r}")
            self._section(key, key_offset)
        while self.pos < self.buf.shape[0] or self._refill():
            if self.buf[self.pos] not in (32, 9, 10, 13):
                raise self._error("unexpected data after the snapshot object")
            self.pos += 1
        return self._finish()

    def _section(self, key: str, key_offset: int) -> None:
        if key == "snapshot":
            self.meta = self._parse_header(self._json_value("snapshot"), key_offset)
        elif key in ("nodes", "edges"):
            if self.meta is None:
                raise FormatError(
                    self.path, f"{key!r} comes before 'snapshot' (its meta is needed first)", offset=key_offset
                )
            if key in self.arrays:
                raise FormatError(self.path, f"a second {key!r} section", offset=key_offset)
            self._read_int_array(key)
        elif key == "strings":
            strings = self._json_value("strings")
            if not isinstance(strings, list) or not all(type(s) is str for s in strings):
                raise FormatError(self.path, "'strings' must be an array of strings", offset=key_offset)
            self.strings = strings
        else:
            self._value_bytes(key, keep=False)

    def _parse_header(self, header: Any, offset: int) -> dict[str, Any]:
        """Validate ``snapshot`` and work out field positions; sizes are checked against the file."""
        try:
            meta = header["meta"]
            node_fields = list(meta["node_fields"])
            node_types = list(meta["node_types"][0])
            edge_fields = list(meta["edge_fields"])
            edge_types = list(meta["edge_types"][0])
            node_count = header["node_count"]
            edge_count = header["edge_count"]
        except (KeyError, IndexError, TypeError) as e:
            raise FormatError(
                self.path,
                f"'snapshot' lacks meta.node_fields/node_types/edge_fields/edge_types or node_count/edge_count ({e!r})",
                offset=offset,
            ) from None
        for label, fields, required in (
            ("node_fields", node_fields, _REQUIRED_NODE_FIELDS),
            ("edge_fields", edge_fields, _REQUIRED_EDGE_FIELDS),
        ):
            missing = [f for f in required if f not in fields]
            if missing:
                raise FormatError(self.path, f"meta.{label} lacks {missing}", offset=offset)
        if not all(isinstance(t, str) for t in node_types + edge_types) or not 0 < len(node_types) <= 256:
            raise FormatError(self.path, "meta.node_types[0] / edge_types[0] must be lists of names", offset=offset)
        for label, count in (("node_count", node_count), ("edge_count", edge_count)):
            if type(count) is not int or count < 0:
                raise FormatError(self.path, f"snapshot.{label} must be a non-negative integer", offset=offset)
        # Each value takes at least two bytes ("0,"), so the declared counts cannot exceed this.
        if node_count * len(node_fields) * 2 > self.file_size or edge_count * len(edge_fields) * 2 > self.file_size:
            raise FormatError(
                self.path,
                f"declared node_count {node_count} / edge_count {edge_count} cannot fit in a "
                f"{self.file_size}-byte file",
                offset=offset,
            )
        if node_count == 0:
            raise FormatError(self.path, "snapshot.node_count is 0 (a snapshot has at least its root)", offset=offset)
        root_index = header.get("root_index", 0)
        if (
            type(root_index) is not int
            or root_index % len(node_fields)
            or not 0 <= root_index < node_count * len(node_fields)
        ):
            raise FormatError(self.path, f"snapshot.root_index {root_index!r} is not a node position", offset=offset)
        return {
            "node_fields": node_fields,
            "node_types": node_types,
            "edge_fields": edge_fields,
            "edge_types": edge_types,
            "node_count": node_count,
            "edge_count": edge_count,
            "root": root_index // len(node_fields),
            "header": header,
        }

    def _read_int_array(self, key: str) -> None:
        meta = self.meta
        assert meta is not None
        n, m = meta["node_count"], meta["edge_count"]
        self._expect("[", f"'[' opening {key!r}")
        start_offset = self.base + self.pos
        state = np.zeros(7, dtype=np.int64)
        if key == "nodes":
            fields = meta["node_fields"]
            roles = np.array([_NODE_ROLES.get(f, _ROLE_SKIP) for f in fields], dtype=np.int64)
            out = {
                "ids": np.zeros(n, dtype=np.int64),
                "kind": np.zeros(n, dtype=np.uint8),
                "name": np.zeros(n, dtype=np.int32),
                "self_size": np.zeros(n, dtype=np.int64),
                "edge_start": np.zeros(n + 1, dtype=np.int64),
                "detachedness": np.zeros(n, dtype=np.uint8),
            }

            def scan(final: bool) -> int:
                return _scan_nodes(
                    self.buf,
                    self.pos,
                    self.buf.shape[0],
                    final,
                    state,
                    roles,
                    len(meta["node_types"]),
                    m,
                    out["ids"],
                    out["kind"],
                    out["name"],
                    out["self_size"],
                    out["edge_start"],
                    out["detachedness"],
                )

            expected = n * len(fields)
        else:
            fields = meta["edge_fields"]
            kind_map = np.array(
                [int(EDGE_KIND_BY_V8_TYPE.get(t, EdgeKind.INTERNAL)) for t in meta["edge_types"]], dtype=np.uint8
            )
            out = {
                "edge_to": np.zeros(m, dtype=np.int32),
                "edge_kind": np.zeros(m, dtype=np.uint8),
                "edge_name": np.zeros(m, dtype=np.uint32),
            }
            positions = [fields.index(f) for f in _REQUIRED_EDGE_FIELDS]

            def scan(final: bool) -> int:
                return _scan_edges(
                    self.buf,
                    self.pos,
                    self.buf.shape[0],
                    final,
                    state,
                    len(fields),
                    *positions,
                    kind_map,
                    len(meta["node_fields"]),
                    n,
                    out["edge_to"],
                    out["edge_kind"],
                    out["edge_name"],
                )

            expected = m * len(fields)
        final = False
        while True:
            self.pos = scan(final)
            if state[_S_ERROR]:
                raise FormatError(
                    self.path,
                    f"in {key!r} (value #{int(state[_S_COUNT])}): {_ERRORS[int(state[_S_ERROR])]}",
                    offset=self.base + int(state[_S_ERROR_AT]),
                )
            if state[_S_DONE]:
                break
            if final:
                raise FormatError(
                    self.path, f"the file ends inside {key!r} (started at byte {start_offset})", offset=self.file_size
                )
            final = not self._refill()
        if state[_S_COUNT] != expected:
            raise FormatError(
                self.path,
                f"{key!r} holds {int(state[_S_COUNT])} values but the header declares {expected} "
                f"({n if key == 'nodes' else m} x {len(fields)} fields)",
                offset=self.base + self.pos - 1,
            )
        self.arrays[key] = out

    # -- assembly ------------------------------------------------------------------------------

    def _finish(self) -> HeapGraph:
        for section in ("nodes", "edges"):
            if section not in self.arrays:
                raise FormatError(self.path, f"the snapshot has no {section!r} array", offset=self.file_size)
        if self.strings is None:
            raise FormatError(self.path, "the snapshot has no 'strings' array", offset=self.file_size)
        meta = self.meta
        assert meta is not None
        nodes, edges, strings = self.arrays["nodes"], self.arrays["edges"], self.strings
        edge_start = nodes["edge_start"]
        np.cumsum(edge_start, out=edge_start)
        if edge_start[-1] != meta["edge_count"]:
            raise FormatError(
                self.path,
                f"the nodes' edge_count fields add up to {int(edge_start[-1])}, "
                f"the header declares {meta['edge_count']}",
                record="nodes",
            )
        if nodes["name"].max() >= len(strings):
            bad = int(np.argmax(nodes["name"] >= len(strings)))
            raise FormatError(
                self.path, f"node {bad}'s name is not an index into 'strings' ({len(strings)})", record="nodes"
            )
        bad = _first_bad_edge_name(edges["edge_kind"], edges["edge_name"], len(strings))
        if bad >= 0:
            raise FormatError(
                self.path, f"edge {bad}'s name is not an index into 'strings' ({len(strings)})", record="edges"
            )

        node_types = meta["node_types"]
        detachedness = None
        if "detachedness" in meta["node_fields"]:
            detachedness = nodes["detachedness"]
            if "native" in node_types and detachedness.any():
                _propagate_detachedness(
                    detachedness,
                    nodes["kind"],
                    node_types.index("native"),
                    edge_start,
                    edges["edge_to"],
                    edges["edge_kind"],
                )
        type_ = _class_names(nodes["kind"], nodes["name"], detachedness, node_types, strings)
        graph = HeapGraph(
            ids=nodes["ids"],
            kind=nodes["kind"],
            type=type_,
            name=nodes["name"],
            self_size=nodes["self_size"],
            edge_start=edge_start,
            edge_to=edges["edge_to"],
            edge_kind=edges["edge_kind"],
            edge_name=edges["edge_name"],
            strings=strings,
            node_kinds=list(node_types),
            root=meta["root"],
            detachedness=detachedness,
            meta={"format": NAME, "v8_meta": meta["header"].get("meta", {}), "v8_edge_types": list(meta["edge_types"])},
        )
        try:
            graph.validate()
        except ValueError as e:
            raise FormatError(self.path, f"inconsistent snapshot: {e}", record="nodes/edges") from None
        return graph


def _class_names(
    kind: np.ndarray, name: np.ndarray, detachedness: np.ndarray | None, node_types: list[str], strings: list[str]
) -> np.ndarray:
    """DevTools' class name for every node, as string indexes; appends missing names to ``strings``."""
    existing: dict[str, int] = {}
    # Only strings that could be a class name DevTools makes up need a reverse index.
    for i, s in enumerate(strings):
        if s[:1] in ("(", "<") or s.startswith("Detached "):
            existing.setdefault(s, i)

    def index_of(s: str) -> int:
        i = existing.get(s)
        if i is None:
            i = existing[s] = len(strings)
            strings.append(s)
        return i

    per_kind = np.zeros(len(node_types), dtype=np.int32)
    named_kinds = []
    for k, t in enumerate(node_types):
        if t in _NAMED_CLASS_NODE_TYPES:
            named_kinds.append(k)
        else:
            per_kind[k] = index_of(_CLASS_BY_NODE_TYPE.get(t, f"({t})"))
    type_ = per_kind[kind]
    named = np.isin(kind, named_kinds)
    type_[named] = name[named]
    # DOM-like names ("<div id=...>", "Detached <div ...>") group by their tag only.
    candidates = np.flatnonzero(np.bincount(name[named], minlength=len(strings)))
    remap = {}
    for i in candidates:
        short = _short_dom_name(strings[i])
        if short != strings[i]:
            remap[int(i)] = index_of(short)
    if remap:
        src = np.fromiter(remap.keys(), dtype=np.int32)
        dst = np.fromiter(remap.values(), dtype=np.int32)
        hit = named & np.isin(type_, src)
        order = np.argsort(src)
        type_[hit] = dst[order][np.searchsorted(src[order], type_[hit])]
    if detachedness is not None and "native" in node_types:
        detached = (kind == node_types.index("native")) & (detachedness == Detachedness.DETACHED)
        for t in np.flatnonzero(np.bincount(type_[detached], minlength=len(strings))):
            label = strings[int(t)]
            if not label.startswith("Detached "):
                type_[detached & (type_ == t)] = index_of("Detached " + label)
    return type_


def _short_dom_name(name: str) -> str:
    """``<div id="a">`` → ``<div>``, ``Detached <div id="a">`` → ``Detached <div>``; others unchanged."""
    start = 0 if name.startswith("<") else 10 if name.startswith("Detached <") else -1
    if start < 0:
        return name
    space = name.find(" ", start)
    return name if space == -1 else name[:space] + ">"
