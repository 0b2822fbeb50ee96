"""Luau heap dumps (``lua_memorydump`` / ``luaC_dump``): JSON keyed by object address.

The VM writes ``{"objects": {"<address>": {...}, ..., "0": {sentinel}}, "roots": {"mainthread": a,
"registry": a}, "stats": {...}}``; every object has ``type``, ``cat`` (memory category) and
``size``, and refers to others by address. Dumps are small next to V8 snapshots, so the file is
parsed with :mod:`json` and the graph built in one pass.

Graph layout (the synthetic root layout of :mod:`heapdb.loader.graph`):

- node 0 ``(root)``, then one ``(<name> roots)`` node per entry of ``roots`` (``(mainthread
  roots)``, ``(registry roots)``), then ``(other roots)``; all of kind ``synthetic`` with ids
  1, 2, 3... (never a real address: those are aligned pointers far above the first page).
- then every object in file order; ``ids`` are the addresses as integers. The ``"0"`` sentinel the
  VM writes last is skipped.
- ``(other roots)`` holds objects that are alive but not strongly reachable from the listed roots
  (the VM also roots type metatables and fixed strings without listing them), counted in
  ``meta["other_roots"]``. Only a minimal set is attached: one object per strongly connected group
  of unreached objects that no other unreached object refers to (the source components, found in
  Kosaraju's finishing order with the search started in file order), so everything below them keeps
  its real dominators. An object held only through weak edges is alive after the VM's full GC, so
  it is held by something unlisted too and hangs under ``(other roots)`` as well.

Edges are :attr:`EdgeKind.REFERENCE` (strong) or :attr:`EdgeKind.WEAK`, with array slots as
:attr:`EdgeKind.ELEMENT`. Names:

- tables: a value under a string key is named by the key's text; other values ``(value)``; the key
  objects themselves ``(key)``; the ``array`` part's collectable slots are numbered 1, 2... in
  order (the VM drops the real indexes and the non-collectable slots); ``__meta`` for the
  metatable. A weak table (its metatable's ``__mode`` holds ``k`` and/or ``v``) gets WEAK edges for
  its weak side(s): keys for ``k``, values and array slots (named ``[1]``, ``[2]``...) for ``v``;
  strings stay strong, as the collector never clears them from weak tables.
- functions: ``__env``, ``__proto``, ``upvalue 1``, ``upvalue 2``... (the dump has no upvalue names);
  threads: ``__env`` and each stack slot named by ``stacknames`` (a local's name or a frame), else
  ``__stack``; userdata: ``__meta``; protos: ``__constant``, ``__proto``; upvalue objects:
  ``__value``. Fields of object types this reader does not know (the experimental ``class``) give an
  edge named by the field for every address they hold.

``type`` is the Luau type name, except a userdata whose metatable has a string ``__type``, which
takes that name. ``name`` is a function's name, a string's text, ``source:line`` for threads and
protos, ``tag N`` for userdata. Sizes are C ``int`` in the VM: negative ones down to -2^31 are taken
as wrapped and read modulo 2^32; a size below that or above 2^63 - 1, like an address above
``0x7fffffffffffffff``, is a FormatError, never wrapped. ``meta["category"]`` holds each node's
memory category (uint8, 0 for synthetic nodes), ``meta["category_names"]`` the named categories
from ``stats``. Functions, protos and threads get source locations (:mod:`.luau_sources`).

Bad input (the ``class`` dump's invalid JSON, a wrong schema, a root that is not an object, JSON
nested more than :data:`MAX_JSON_DEPTH` levels) raises :class:`FormatError` with the file and byte
offset or object address. Lone surrogates in names become their ``\\uXXXX`` escapes
(:mod:`heapdb.loader.formats.text`).
"""

from __future__ import annotations

import json
import os
import re
from typing import TYPE_CHECKING, Any

import numpy as np

from heapdb.errors import FormatError
from heapdb.loader.formats import LUAU
from heapdb.loader.formats.luau_sources import luau_locations
from heapdb.loader.formats.text import safe_strings, safe_text
from heapdb.loader.graph import (
    ROOT_NAME,
    SYNTHETIC_KIND,
    EdgeKind,
    HeapGraph,
    StringTable,
    csr_from_coo,
    root_kind_node_name,
)

if TYPE_CHECKING:
    from heapdb.progress import ByteProgress


SENTINEL = "0"
OTHER_ROOTS = "other"

_SNIFF = re.compile(rb'^\s*\{\s*"objects"\s*:\s*\{')
_KNOWN_FIELDS = {"type", "cat", "size", "data", "name", "source", "line", "tag", "open"}

# The VM writes dumps four levels deep; json recurses once per level, so deeper input is refused
# (by a scan of the brackets outside strings) before it is parsed.
MAX_JSON_DEPTH = 64
_JSON_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[{\]}]', re.DOTALL)
_ADDRESS = re.compile(r"(?:0x)?[0-9a-fA-F]{1,16}")
_MIN_WRAPPED_SIZE = -(1 << 31)  # sizes are C ints: negative ones down to this are read modulo 2^32
_MAX_SIZE = (1 << 63) - 1


def json_depth_error(data: bytes, limit: int = MAX_JSON_DEPTH) -> int | None:
    """The byte offset where ``data`` (JSON) nests deeper than ``limit``, or None.

    Escaped backslashes and quotes are dropped first (``bytes.replace``, in C), so every quote left
    opens or closes a string; numpy then counts the brackets outside strings a chunk at a time, so
    memory stays a small multiple of a chunk. Only a file that is too deep is walked again token by
    token, to find the offset.
    """
    plain = np.frombuffer(data.replace(b"\\\\", b"").replace(b'\\"', b""), dtype=np.uint8)
    deepest = depth = inside = 0
    step = 1 << 22
    for lo in range(0, plain.shape[0], step):
        chunk = plain[lo : lo + step]
        # After each byte: inside a string (1) or not (0), carried over from the chunk before.
        parity = np.bitwise_xor.accumulate((chunk == 34).view(np.uint8)) ^ np.uint8(inside)
        outside = parity == 0
        delta = (((chunk == 91) | (chunk == 123)) & outside).astype(np.int32)
        delta -= ((chunk == 93) | (chunk == 125)) & outside
        levels = np.cumsum(delta, dtype=np.int64)
        deepest = max(deepest, depth + int(levels.max()))
        depth += int(levels[-1])
        inside = int(parity[-1])
    if deepest <= limit:
        return None
    depth = 0
    for match in _JSON_TOKEN.finditer(data):
        token = match.group()
        if token in (b"[", b"{"):
            depth += 1
            if depth > limit:
                return match.start()
        elif token in (b"]", b"}"):
            depth -= 1
    return 0  # brackets inside an unterminated string: the whole file is in doubt


def sniff(head: bytes) -> bool:
    """A Luau dump is a JSON object whose first key is ``objects``."""
    return _SNIFF.match(head) is not None


def read_graph(path: str | os.PathLike[str], on_bytes: ByteProgress | None = None) -> HeapGraph:
    """Read a Luau heap dump into a :class:`HeapGraph` (see the module docstring)."""
    doc = load_dump(path, on_bytes)
    return _Builder(path, doc).build()


def load_dump(path: str | os.PathLike[str], on_bytes: ByteProgress | None = None) -> dict[str, Any]:
    """The dump as the VM wrote it (parsed JSON), with the checks and errors of :func:`read_graph`."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise FormatError(path, f"cannot open: {e.strerror}") from None
    if on_bytes is not None:
        on_bytes(len(data))
    too_deep = json_depth_error(data)
    if too_deep is not None:
        raise FormatError(path, f"JSON nested more than {MAX_JSON_DEPTH} levels deep", offset=too_deep)
    try:
        text = data.decode("utf-8")
        utf8 = True
    except UnicodeDecodeError:
        # Names are written unescaped and may hold any bytes; latin-1 keeps byte offsets exact.
        text = data.decode("latin-1")
        utf8 = False
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        offset = len(text[: e.pos].encode("utf-8")) if utf8 else e.pos
        line_end = text.find("\n", e.pos)
        context = text[max(0, e.pos - 30) : e.pos + 30 if line_end < 0 else min(line_end, e.pos + 30)]
        raise FormatError(
            path,
            f"invalid JSON ({e.msg}) near {context!r}; the VM writes some dumps (e.g. with classes) unescaped",
            offset=offset,
        ) from None
    except RecursionError:  # not expected below MAX_JSON_DEPTH; a FormatError all the same
        raise FormatError(path, "JSON nested too deep", offset=0) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("objects"), dict) or not isinstance(doc.get("roots"), dict):
        raise FormatError(path, "expected a Luau dump: an object with 'objects' and 'roots' objects", offset=0)
    return doc


class _Builder:
    """Turns the parsed dump into node and edge arrays."""

    def __init__(self, path: str | os.PathLike[str], doc: dict[str, Any]) -> None:
        self.path = path
        # Values are the parsed JSON as written: build() checks each one is an object with a 'type'.
        self.objects: dict[str, Any] = {k: v for k, v in doc["objects"].items() if k != SENTINEL}
        self.roots: dict[str, Any] = doc["roots"]
        stats = doc.get("stats")
        self.stats: dict[str, Any] = stats if isinstance(stats, dict) else {}
        self.strings = StringTable()
        self.src: list[int] = []
        self.dst: list[int] = []
        self.kind: list[int] = []
        self.name: list[int] = []
        self.dangling = 0

    def _error(self, address: str, problem: str) -> FormatError:
        return FormatError(self.path, problem, record=f"object {address[:100]}")

    def build(self) -> HeapGraph:
        root_names = list(self.roots)
        synthetic = [ROOT_NAME, *map(root_kind_node_name, root_names), root_kind_node_name(OTHER_ROOTS)]
        first = len(synthetic)
        addresses = list(self.objects)
        self.index = {a: first + i for i, a in enumerate(addresses)}
        n = first + len(addresses)

        ids = np.zeros(n, dtype=np.int64)
        ids[:first] = np.arange(1, first + 1)
        type_ = np.zeros(n, dtype=np.int32)
        name = np.zeros(n, dtype=np.int32)
        self_size = np.zeros(n, dtype=np.int64)
        category = np.zeros(n, dtype=np.uint8)
        node_kinds = [SYNTHETIC_KIND]
        kind_index = {SYNTHETIC_KIND: 0}
        kind = np.zeros(n, dtype=np.uint8)
        intern = self.strings.intern
        for i, label in enumerate(synthetic):
            type_[i] = intern(SYNTHETIC_KIND)
            name[i] = intern(label)

        for node, address in enumerate(addresses, start=first):
            obj = self.objects[address]
            if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
                raise self._error(address, "expected an object with a 'type'")
            if not _ADDRESS.fullmatch(address):
                raise self._error(address, "the key is not a hexadecimal address")
            value = int(address, 16)
            if value >= 1 << 63:
                raise self._error(address, "the address is above 0x7fffffffffffffff")
            ids[node] = value
            luau_type = obj["type"]
            if luau_type not in kind_index:
                if len(node_kinds) == 256:
                    raise self._error(address, "more than 255 object types")
                kind_index[luau_type] = len(node_kinds)
                node_kinds.append(luau_type)
            kind[node] = kind_index[luau_type]
            size = obj.get("size", 0)
            cat = obj.get("cat", 0)
            if type(size) is not int or type(cat) is not int or not 0 <= cat <= 255:
                raise self._error(address, "'size' and 'cat' must be integers (cat 0-255)")
            if not _MIN_WRAPPED_SIZE <= size <= _MAX_SIZE:
                raise self._error(address, f"'size' {size} is out of range ({_MIN_WRAPPED_SIZE} to {_MAX_SIZE})")
            self_size[node] = size % (1 << 32) if size < 0 else size
            category[node] = cat
            type_[node] = intern(self._type_name(obj))
            name[node] = intern(self._node_name(obj))
            self._object_edges(node, address, obj)
        locations = luau_locations(self.objects, self.index, self.strings.intern)

        for r, root in enumerate(root_names, start=1):
            self._edge(0, r, EdgeKind.REFERENCE, root_kind_node_name(root))
            target = self.roots[root]
            if not isinstance(target, str) or target not in self.index:
                raise FormatError(self.path, f"root {root!r} ({target!r}) is not an object of the dump", record="roots")
            self._edge(r, self.index[target], EdgeKind.REFERENCE, root)
        other = first - 1
        self._edge(0, other, EdgeKind.REFERENCE, root_kind_node_name(OTHER_ROOTS))
        self._attach_other_roots(n, other, first)

        edge_start, edge_to, edge_kind, edge_name = csr_from_coo(
            n,
            np.asarray(self.src, dtype=np.int64),
            np.asarray(self.dst, dtype=np.int64),
            np.asarray(self.kind, dtype=np.uint8),
            np.asarray(self.name, dtype=np.int64),
        )
        graph = HeapGraph(
            ids=ids,
            kind=kind,
            type=type_,
            name=name,
            self_size=self_size,
            edge_start=edge_start,
            edge_to=edge_to,
            edge_kind=edge_kind,
            edge_name=edge_name,
            strings=safe_strings(self.strings.strings),
            node_kinds=safe_strings(node_kinds),
            root=0,
            locations=locations,
            meta={
                "format": LUAU.name,
                "category": category,
                "category_names": _category_names(self.stats),
                "total_size": _total_size(self.stats.get("size")),
                "dangling_references": self.dangling,
                "other_roots": int(edge_start[other + 1] - edge_start[other]),
            },
        )
        try:
            graph.validate()
        except ValueError as e:
            raise FormatError(self.path, f"inconsistent dump: {e}", record="objects") from None
        return graph

    # -- per object ----------------------------------------------------------------------------

    def _type_name(self, obj: dict[str, Any]) -> str:
        if obj["type"] == "userdata":
            meta = self._object(obj.get("metatable"))
            if meta is not None:
                type_name = self._string_field(meta, "__type")
                if type_name:
                    return type_name
        return obj["type"]

    def _node_name(self, obj: dict[str, Any]) -> str:
        t = obj["type"]
        if t == "string":
            return str(obj.get("data", ""))
        if t == "function":
            return str(obj.get("name") or "")
        if t in ("thread", "proto") and "source" in obj:
            return f"{obj.get('source')}:{obj.get('line', '')}"
        if t == "userdata" and "tag" in obj:
            return f"tag {obj['tag']}"
        if isinstance(obj.get("name"), str):
            return obj["name"]
        return ""

    def _object(self, address: Any) -> dict[str, Any] | None:
        """The object at ``address``; None for no address, or one that is not an object (build() rejects those)."""
        found = self.objects.get(address) if isinstance(address, str) else None
        return found if isinstance(found, dict) else None

    def _string_data(self, address: Any) -> str | None:
        obj = self._object(address)
        if obj is not None and obj.get("type") == "string":
            return str(obj.get("data", ""))
        return None

    def _string_field(self, table: dict[str, Any], key: str) -> str | None:
        """The string value stored under the string key ``key`` in a table's ``pairs``."""
        pairs = table.get("pairs")
        if not isinstance(pairs, list):
            return None
        for k, v in zip(pairs[0::2], pairs[1::2], strict=False):
            if self._string_data(k) == key:
                return self._string_data(v)
        return None

    def _weak_mode(self, table: dict[str, Any]) -> str:
        meta = self._object(table.get("metatable"))
        return (self._string_field(meta, "__mode") or "") if meta is not None else ""

    def _edge(self, source: int, target: int, kind: EdgeKind, name: str | int) -> None:
        self.src.append(source)
        self.dst.append(target)
        self.kind.append(int(kind))
        self.name.append(name if isinstance(name, int) else self.strings.intern(name))

    def _ref(self, source: int, address: Any, kind: EdgeKind, name: str | int) -> None:
        """An edge to ``address`` if it is an object of the dump (null slots are skipped)."""
        if address is None:
            return
        target = self.index.get(address) if isinstance(address, str) else None
        if target is None:
            self.dangling += 1
            return
        self._edge(source, target, kind, name)

    def _addresses(self, address: str, obj: dict[str, Any], field: str) -> list[Any]:
        value = obj.get(field)
        if value is None:
            return []
        if not isinstance(value, list):
            raise self._error(address, f"'{field}' must be a list of addresses")
        return value

    def _object_edges(self, node: int, address: str, obj: dict[str, Any]) -> None:
        t = obj["type"]
        strong, weak = EdgeKind.REFERENCE, EdgeKind.WEAK
        handled = set(_KNOWN_FIELDS)
        if t == "table":
            mode = self._weak_mode(obj)
            key_kind = weak if "k" in mode else strong
            value_kind = weak if "v" in mode else strong
            pairs = self._addresses(address, obj, "pairs")
            if len(pairs) % 2:
                raise self._error(address, "'pairs' has an odd length")
            for k, v in zip(pairs[0::2], pairs[1::2], strict=False):
                key_text = self._string_data(k)
                # Strings are values to the collector: a weak table never clears them, so they stay strong.
                self._ref(node, k, strong if key_text is not None else key_kind, "(key)")
                v_kind = strong if self._string_data(v) is not None else value_kind
                self._ref(node, v, v_kind, key_text if key_text is not None else "(value)")
            for slot, v in enumerate(self._addresses(address, obj, "array"), start=1):
                if value_kind == weak and self._string_data(v) is None:
                    # Weak edges are string-named; the slot's number goes into the name text.
                    self._ref(node, v, weak, f"[{slot}]")
                else:
                    self._ref(node, v, EdgeKind.ELEMENT, slot)
            self._ref(node, obj.get("metatable"), strong, "__meta")
            handled |= {"pairs", "array", "metatable"}
        elif t == "function":
            self._ref(node, obj.get("env"), strong, "__env")
            self._ref(node, obj.get("proto"), strong, "__proto")
            for i, v in enumerate(self._addresses(address, obj, "upvalues"), start=1):
                self._ref(node, v, strong, f"upvalue {i}")
            handled |= {"env", "proto", "upvalues"}
        elif t == "thread":
            self._ref(node, obj.get("env"), strong, "__env")
            stack = self._addresses(address, obj, "stack")
            stacknames = obj.get("stacknames")
            names: list[Any] = stacknames if isinstance(stacknames, list) else []
            for i, v in enumerate(stack):
                label = names[i] if i < len(names) and isinstance(names[i], str) and names[i] else "__stack"
                self._ref(node, v, strong, label)
            handled |= {"env", "stack", "stacknames"}
        elif t == "userdata":
            self._ref(node, obj.get("metatable"), strong, "__meta")
            handled.add("metatable")
        elif t == "proto":
            for v in self._addresses(address, obj, "constants"):
                self._ref(node, v, strong, "__constant")
            for v in self._addresses(address, obj, "protos"):
                self._ref(node, v, strong, "__proto")
            handled |= {"constants", "protos"}
        elif t == "upvalue":
            self._ref(node, obj.get("object"), strong, "__value")
            handled.add("object")
        # Unknown fields (newer object types): every address they hold is a reference.
        for field, value in obj.items():
            if field in handled:
                continue
            values = value if isinstance(value, list) else [value]
            for v in values:
                if isinstance(v, str) and v in self.index:
                    self._ref(node, v, strong, field)

    # -- other roots ---------------------------------------------------------------------------

    def _attach_other_roots(self, n: int, other: int, first: int) -> None:
        """Link a minimal set of objects not strongly reachable from the listed roots."""
        src = np.asarray(self.src, dtype=np.int64)
        dst = np.asarray(self.dst, dtype=np.int64)
        strong = np.asarray(self.kind, dtype=np.uint8) != EdgeKind.WEAK
        src, dst = src[strong], dst[strong]
        order = np.argsort(src, kind="stable")
        start = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(src, minlength=n), out=start[1:])
        targets = dst[order]
        reached = np.zeros(n, dtype=bool)

        def mark(node: int) -> None:
            stack = [node]
            reached[node] = True
            while stack:
                v = stack.pop()
                for w in targets[start[v] : start[v + 1]]:
                    if not reached[w]:
                        reached[w] = True
                        stack.append(int(w))

        mark(0)
        unreached = np.flatnonzero(~reached)
        # Kosaraju's first pass: the unreached node finishing last lies in a source component (nothing
        # unreached refers into it). Linking nodes in decreasing finish order, skipping those already
        # covered, links exactly one node per source component: the fewest links that reach them all.
        finished: list[int] = []
        seen = np.zeros(n, dtype=bool)
        for start_node in unreached:
            if seen[start_node]:
                continue
            seen[start_node] = True
            stack = [(int(start_node), int(start[start_node]))]
            while stack:
                v, e = stack[-1]
                if e < start[v + 1]:
                    stack[-1] = (v, e + 1)
                    w = int(targets[e])
                    if not seen[w] and not reached[w]:
                        seen[w] = True
                        stack.append((w, int(start[w])))
                else:
                    stack.pop()
                    finished.append(v)
        for node in reversed(finished):
            if not reached[node]:
                self._edge(other, node, EdgeKind.REFERENCE, "(other root)")
                mark(node)


def _total_size(value: Any) -> int | None:
    """The dump's own total from ``stats``, when it is a size at all."""
    return value if type(value) is int and 0 <= value <= _MAX_SIZE else None


def _category_names(stats: dict[str, Any]) -> dict[int, str]:
    categories = stats.get("categories")
    if not isinstance(categories, dict):
        return {}
    names = {}
    for key, value in categories.items():
        if key.isascii() and key.isdigit() and isinstance(value, dict) and isinstance(value.get("name"), str):
            names[int(key)] = safe_text(value["name"])
    return names
