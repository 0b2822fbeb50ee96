"""Chrome / V8 ``.heapsnapshot`` reader (Node's ``v8.writeHeapSnapshot``, Chrome DevTools, CDP).

A ``.heapsnapshot`` is one JSON object::

    {"snapshot": {"meta": {...}, "node_count": N, "edge_count": M, ...},
     "nodes": [flat integers, N * len(node_fields)],
     "edges": [flat integers, M * len(edge_fields)],
     ... "strings": ["", "(GC roots)", ...]}

The file is never loaded whole. It is read in chunks into one reused buffer; the two big integer
arrays are scanned by numba kernels straight into the :class:`HeapGraph` arrays (preallocated from
the declared counts, after checking those counts against the file size); only ``snapshot`` and
``strings`` go through :mod:`json`. The source sections (``locations``, ``trace_function_infos``,
``trace_tree``) are kept as bytes and read by :mod:`.traces` into the graph's source locations and
allocation stacks (:mod:`heapdb.loader.sources`); every other section (``samples``, and whatever
newer V8 versions add) is skipped with a structural scan (balanced brackets, terminated strings)
without being interpreted.

Bad input of any kind is a :class:`FormatError` with the byte offset: a header field of the wrong
shape (``node_types`` a string, a field name that is not a string or appears twice), JSON nested
deeper than :data:`MAX_JSON_DEPTH` in the sections that are parsed (refused by the skip-scan before
:mod:`json` recurses), numbers out of range. Lone surrogates in ``strings`` become their ``\\uXXXX``
escapes (:mod:`heapdb.loader.formats.text`).

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

The package: this module is the reader (it walks the file and assembles the graph; the format's
interface, ``sniff``/``read_graph``, and its tunable ``CHUNK_BYTES`` live here), the numba
kernels it drives are in :mod:`.scan`, run over each chunk of an integer array in one part per core
by :mod:`.parts`, the header check in :mod:`.header`, the DevTools class names in
:mod:`.classes`, the source locations and allocation traces in :mod:`.traces`.
"""

from __future__ import annotations

import io
import json
import os
import re
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np

from heapdb.errors import FormatError
from heapdb.loader.formats import V8
from heapdb.loader.formats.text import safe_strings
from heapdb.loader.formats.v8.classes import class_names
from heapdb.loader.formats.v8.header import REQUIRED_EDGE_FIELDS, parse_header
from heapdb.loader.formats.v8.parts import cores, scan_in_parts
from heapdb.loader.formats.v8.scan import (
    ERRORS,
    K_DONE,
    K_ERROR,
    K_ERROR_AT,
    NODE_ROLES,
    ROLE_SKIP,
    S_COUNT,
    S_DONE,
    S_ERROR,
    S_ERROR_AT,
    first_bad_edge_name,
    propagate_detachedness,
    scan_edges,
    scan_nodes,
    skip_value,
)
from heapdb.loader.formats.v8.traces import read_sources
from heapdb.loader.graph import EdgeKind, HeapGraph

if TYPE_CHECKING:
    from heapdb.progress import ByteProgress

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


# The sections parsed by json (the header, a key, 'strings') may nest at most this deep; V8 writes
# four levels. json recurses once per level, so deeper input is refused before it is parsed.
# Sections that are only skipped (trace_tree nests as deep as allocation stacks) have no limit.
MAX_JSON_DEPTH = 64
_UNLIMITED_DEPTH = 1 << 62
# The sections read into source locations and allocation stacks (heapdb.loader.sources).
SOURCE_SECTIONS = ("locations", "trace_function_infos", "trace_tree")
# A JSON escape of a UTF-16 surrogate: where 'strings' can hold a lone one (raw UTF-8 cannot).
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


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
        # Opened outside the `with` so that only open()'s own failure becomes "cannot open".
        f = open(path, "rb")  # noqa: SIM115
    except OSError as e:
        raise FormatError(path, f"cannot open: {e.strerror}") from None
    parts = cores()
    with f, ThreadPoolExecutor(max_workers=max(parts - 1, 1)) as pool:
        return _SnapshotReader(f, path, on_bytes, pool, parts).read()


class _SnapshotReader:
    """Walks the top-level JSON object section by section over a sliding byte window."""

    def __init__(
        self,
        f: io.BufferedReader,
        path: str | os.PathLike[str],
        on_bytes: ByteProgress | None,
        pool: ThreadPoolExecutor,
        parts: int,
    ) -> None:
        self.f = f
        self.path = path
        self.on_bytes = on_bytes
        self.pool = pool  # scans the integer arrays' later parts (.parts)
        self.parts = parts
        self.file_size = os.fstat(f.fileno()).st_size
        self.window = np.empty(0, dtype=np.uint8)  # the buffer chunks are read into, reused
        self.buf = self.window  # the unread part of the file that is in memory: a view of window
        self.pos = 0  # position in buf
        self.base = 0  # file offset of buf[0]
        self.eof = False
        self.meta: dict[str, Any] | None = None
        self.arrays: dict[str, Any] = {}
        self.strings: list[str] | None = None
        self.sources: dict[str, tuple[bytes, int]] = {}  # SOURCE_SECTIONS found: (bytes, file offset)

    # -- byte window ---------------------------------------------------------------------------

    def _error(self, problem: str, offset: int | None = None) -> FormatError:
        return FormatError(self.path, problem, offset=self.base + self.pos if offset is None else offset)

    def _refill(self) -> bool:
        """Drop consumed bytes and read the next chunk after the rest; False at end of file."""
        if self.eof:
            return False
        rest = self.buf.shape[0] - self.pos
        if self.window.shape[0] < rest + CHUNK_BYTES:
            window = np.empty(rest + CHUNK_BYTES, dtype=np.uint8)
            window[:rest] = self.buf[self.pos :]
            self.window = window
        elif rest:
            self.window[:rest] = self.buf[self.pos :].copy()
        self.base += self.pos
        self.buf = self.window[:rest]
        self.pos = 0
        read = self.f.readinto(self.window[rest : rest + CHUNK_BYTES].data)
        if not read:
            self.eof = True
            return False
        if self.on_bytes is not None:
            self.on_bytes(read)
        self.buf = self.window[: rest + read]
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

    def _value_bytes(self, key: str, keep: bool, max_depth: int = MAX_JSON_DEPTH) -> bytes | None:
        """Scan one JSON value; return its bytes when ``keep`` (nested at most ``max_depth`` deep then)."""
        self._peek(f"the value of {key!r}")
        start_offset = self.base + self.pos
        state = np.zeros(7, dtype=np.int64)
        parts: list[bytes] = []
        while True:
            start = self.pos
            self.pos = skip_value(self.buf, self.pos, self.buf.shape[0], state, max_depth if keep else _UNLIMITED_DEPTH)
            if keep:
                parts.append(self.buf[start : self.pos].tobytes())
            if state[K_ERROR]:
                problem = {
                    1: "a control character inside a string",
                    3: f"JSON nested more than {max_depth} levels deep",
                }.get(int(state[K_ERROR]), "a malformed value")
                raise self._error(f"{problem} in {key!r}", offset=self.base + int(state[K_ERROR_AT]))
            if state[K_DONE]:
                break
            if not self._refill():
                raise self._error(
                    f"the file ends inside {key!r} (started at byte {start_offset})", offset=self.file_size
                )
        return b"".join(parts) if keep else None

    def _json_value(self, key: str) -> Any:
        self._peek(f"the value of {key!r}")
        offset = self.base + self.pos
        return self._parse_json(self._kept_bytes(key), key, offset)

    def _parse_json(self, raw: bytes, key: str, offset: int) -> Any:
        try:
            return json.loads(raw)
        except json.JSONDecodeError as e:
            where = offset + len(e.doc[: e.pos].encode("utf-8", "surrogatepass"))
            raise FormatError(self.path, f"invalid JSON in {key!r}: {e.msg}", offset=where) from None
        except UnicodeDecodeError as e:
            raise FormatError(self.path, f"invalid UTF-8 in {key!r}", offset=offset + e.start) from None
        except RecursionError:  # not expected below MAX_JSON_DEPTH; a FormatError all the same
            raise FormatError(self.path, f"JSON nested too deep in {key!r}", offset=offset) from None

    def _kept_bytes(self, key: str) -> bytes:
        raw = self._value_bytes(key, keep=True)
        assert raw is not None
        return raw

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
        if key in ("snapshot", "strings") and (self.meta if key == "snapshot" else self.strings) is not None:
            raise FormatError(self.path, f"a second {key!r} section", offset=key_offset)
        if key == "snapshot":
            self.meta = parse_header(self.path, self._json_value("snapshot"), key_offset, self.file_size)
        elif key in ("nodes", "edges"):
            if self.meta is None:
                raise FormatError(
                    self.path, f"{key!r} comes before 'snapshot' (its meta is needed first)", offset=key_offset
                )
            if key in self.arrays:
                raise FormatError(self.path, f"a second {key!r} section", offset=key_offset)
            self._read_int_array(key)
        elif key == "strings":
            self._peek("the value of 'strings'")
            offset = self.base + self.pos
            raw = self._kept_bytes("strings")
            strings = self._parse_json(raw, "strings", offset)
            if not isinstance(strings, list) or not set(map(type, strings)) <= {str}:
                raise FormatError(self.path, "'strings' must be an array of strings", offset=key_offset)
            # Only an escape can make a lone surrogate (json.loads refuses one in raw UTF-8).
            self.strings = safe_strings(strings) if _SURROGATE_ESCAPE.search(raw) else strings
        elif key in SOURCE_SECTIONS:
            # A repeated one replaces the first, as in JSON.parse (which DevTools reads them with).
            self._peek(f"the value of {key!r}")
            offset = self.base + self.pos
            # Not parsed by json: trace_tree nests as deep as allocation stacks go (see .traces).
            self.sources[key] = (self._value_bytes(key, keep=True, max_depth=_UNLIMITED_DEPTH) or b"", offset)
        else:
            self._value_bytes(key, keep=False)

    def _read_int_array(self, key: str) -> None:
        meta = self.meta
        assert meta is not None
        n, m = meta["node_count"], meta["edge_count"]
        self._expect("[", f"'[' opening {key!r}")
        start_offset = self.base + self.pos
        state = np.zeros(7, dtype=np.int64)
        if key == "nodes":
            fields = meta["node_fields"]
            roles = np.array([NODE_ROLES.get(f, ROLE_SKIP) for f in fields], dtype=np.int64)
            out = {
                "ids": np.zeros(n, dtype=np.int64),
                "kind": np.zeros(n, dtype=np.uint8),
                "name": np.zeros(n, dtype=np.int32),
                "self_size": np.zeros(n, dtype=np.int64),
                "edge_start": np.zeros(n + 1, dtype=np.int64),
                "detachedness": np.zeros(n, dtype=np.uint8),
                "trace": np.zeros(n if "trace_node_id" in fields else 0, dtype=np.uint32),
            }

            def scan(lo: int, hi: int, final: bool, state: np.ndarray) -> int:
                return scan_nodes(
                    self.buf,
                    lo,
                    hi,
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
                    out["trace"],
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
            type_at, name_at, to_at = (fields.index(f) for f in REQUIRED_EDGE_FIELDS)

            def scan(lo: int, hi: int, final: bool, state: np.ndarray) -> int:
                return scan_edges(
                    self.buf,
                    lo,
                    hi,
                    final,
                    state,
                    len(fields),
                    type_at,
                    name_at,
                    to_at,
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
            self.pos = scan_in_parts(scan, self.buf, self.pos, final, state, self.parts, self.pool)
            if state[S_ERROR]:
                raise FormatError(
                    self.path,
                    f"in {key!r} (value #{int(state[S_COUNT])}): {ERRORS[int(state[S_ERROR])]}",
                    offset=self.base + int(state[S_ERROR_AT]),
                )
            if state[S_DONE]:
                break
            if final:
                raise FormatError(
                    self.path, f"the file ends inside {key!r} (started at byte {start_offset})", offset=self.file_size
                )
            final = not self._refill()
        if state[S_COUNT] != expected:
            raise FormatError(
                self.path,
                f"{key!r} holds {int(state[S_COUNT])} values but the header declares {expected} "
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
        bad = first_bad_edge_name(edges["edge_kind"], edges["edge_name"], len(strings))
        if bad >= 0:
            raise FormatError(
                self.path, f"edge {bad}'s name is not an index into 'strings' ({len(strings)})", record="edges"
            )

        node_types = meta["node_types"]
        detachedness = None
        if "detachedness" in meta["node_fields"]:
            detachedness = nodes["detachedness"]
            if "native" in node_types and detachedness.any():
                propagate_detachedness(
                    detachedness,
                    nodes["kind"],
                    node_types.index("native"),
                    edge_start,
                    edges["edge_to"],
                    edges["edge_kind"],
                )
        type_ = class_names(nodes["kind"], nodes["name"], detachedness, node_types, strings)
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
            meta={
                "format": V8.name,
                "v8_meta": meta["header"].get("meta", {}),
                "v8_edge_types": list(meta["edge_types"]),
            },
        )
        trace_ids = nodes["trace"] if "trace_node_id" in meta["node_fields"] else None
        read_sources(self.path, graph, meta["header"]["meta"], len(meta["node_fields"]), self.sources, trace_ids)
        self.sources.clear()
        try:
            graph.validate()
        except ValueError as e:
            raise FormatError(self.path, f"inconsistent snapshot: {e}", record="nodes/edges") from None
        return graph
