"""snap.bin: heapdb's own streamable heap snapshot format (reader and writer).

The byte layout is specified in ``docs/format.md``; this module is its reference implementation.
In short: a 16-byte file header, then length-prefixed, checksummed, optionally zstd-compressed
chunks, each holding one kind of record in columnar arrays, and a trailer chunk with counts.

- :class:`SnapbinWriter` streams a snapshot out with memory independent of the object count (only the
  string and type interning tables grow); :func:`write_graph` writes any :class:`HeapGraph`.
- :func:`iter_records` reads a file chunk by chunk with bounded memory, checking every chunk.
- :func:`read_graph` loads a file into a :class:`HeapGraph`, reading object columns with
  ``numpy.frombuffer`` and resolving the (arbitrary, sparse, possibly forward) object ids at the end.
"""

from __future__ import annotations

import json
import os
import struct
import zlib
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, BinaryIO, Union

import numpy as np

from heapdb.errors import FormatError
from heapdb.loader.graph import NUMERIC_NAME_KINDS, EdgeKind, HeapGraph

if TYPE_CHECKING:
    from heapdb.loader.formats.snapbin_ids import IdIndex

NAME = "snapbin"

MAGIC = b"\x89SNAPBIN"
MAJOR = 1
MINOR = 0
FILE_HEADER = struct.Struct("<8sHHI")  # magic, major, minor, crc32 of the first 12 bytes
CHUNK_HEADER = struct.Struct("<HBBIQQII")  # kind, codec, flags, count, stored, raw, payload crc, header crc

# Chunk kinds. Kinds this reader does not know are skipped unless flagged critical.
METADATA, STRINGS, TYPES, OBJECTS, ROOTS, OBJECT_NAMES, TRAILER = 1, 2, 3, 4, 5, 6, 15
KIND_NAMES = {
    METADATA: "metadata",
    STRINGS: "strings",
    TYPES: "types",
    OBJECTS: "objects",
    ROOTS: "roots",
    OBJECT_NAMES: "object names",
    TRAILER: "trailer",
}
CODEC_NONE, CODEC_ZSTD = 0, 1
FLAG_CRITICAL = 1
COLUMN_DETACHEDNESS = 1  # OBJECTS column flag: a u8 detachedness column is present

MAX_PAYLOAD = 1 << 30  # no chunk may hold more than 1 GiB once decompressed
_STRINGS_CHUNK_BYTES = 16 << 20  # the writer starts a new strings chunk past this
TRAILER_FIELDS = ("chunks", "strings", "types", "objects", "refs", "roots", "names")
TRAILER_BODY = struct.Struct("<7Q")
_NUMERIC_KINDS = np.array(sorted(int(k) for k in NUMERIC_NAME_KINDS), dtype=np.uint8)
_MAX_EDGE_KIND = int(max(EdgeKind))

# Metadata value tags.
_TAG_INT, _TAG_FLOAT, _TAG_STR, _TAG_BOOL = 1, 2, 3, 4

# Dtypes of the columns, little-endian whatever the host.
_I64, _U64, _U32, _U8 = np.dtype("<i8"), np.dtype("<u8"), np.dtype("<u4"), np.dtype("<u1")

MetaValue = Union[int, float, str, bool]
Ref = Union[int, tuple[int, int, Union[str, int]]]


def sniff(head: bytes) -> bool:
    """Whether ``head`` starts with the snap.bin magic."""
    return head.startswith(MAGIC)


# --------------------------------------------------------------------------------------------------
# Records, as the streaming reader yields them


@dataclass
class Record:
    """One chunk of a snap.bin file; ``offset`` is where its chunk header starts."""

    offset: int
    index: int  # the chunk's ordinal in the file, from 0


@dataclass
class Header(Record):
    """The file header (``index`` -1): the format version the file was written in."""

    major: int
    minor: int


@dataclass
class Metadata(Record):
    values: dict[str, MetaValue]


@dataclass
class Strings(Record):
    first_index: int  # the string index of values[0]
    values: list[str]


@dataclass
class Types(Record):
    first_index: int
    name: np.ndarray  # u32 string index of each type's name
    kind: np.ndarray  # u32 string index of each type's node kind


@dataclass
class Objects(Record):
    id: np.ndarray  # i64
    type: np.ndarray  # u32 type index
    self_size: np.ndarray  # u64
    ref_count: np.ndarray  # u32: the refs of object i follow those of object i-1
    ref_target: np.ndarray  # i64 object ids
    ref_kind: np.ndarray  # u8 EdgeKind values
    ref_name: np.ndarray  # u32 string index, or the element index for numeric kinds
    detachedness: np.ndarray | None  # u8, when present


@dataclass
class Roots(Record):
    target: np.ndarray  # i64 object ids
    kind: np.ndarray  # u32 string index of the root kind
    name: np.ndarray  # u32 string index


@dataclass
class ObjectNames(Record):
    id: np.ndarray  # i64 object ids
    name: np.ndarray  # u32 string index


@dataclass
class Trailer(Record):
    counts: dict[str, int]


@dataclass
class Unknown(Record):
    """A chunk of a kind this reader does not know (from a newer minor version); skipped."""

    kind: int
    length: int


# --------------------------------------------------------------------------------------------------
# Streaming reader


@dataclass
class _Totals:
    """Running counts, to check that each chunk only refers to strings and types defined before it."""

    chunks: int = 0
    strings: int = 1  # string 0, the empty string, is implicit
    types: int = 0
    objects: int = 0
    refs: int = 0
    roots: int = 0
    names: int = 0


def iter_records(
    path: str | os.PathLike[str], on_bytes: Callable[[int], None] | None = None
) -> Iterator[Record]:
    """Yield the records of a snap.bin file one chunk at a time (memory bounded by the largest chunk).

    Checks the header, every chunk's checksums, lengths and columns, and the trailer's counts, raising
    :class:`FormatError` at the first problem. Unknown non-critical chunk kinds come out as
    :class:`Unknown`. Global checks (duplicate ids, dangling references) are :func:`read_graph`'s.
    """
    try:
        f = open(path, "rb")
    except OSError as e:
        raise FormatError(path, f"cannot open: {e.strerror}") from None
    with f:
        size = os.fstat(f.fileno()).st_size
        yield from _ChunkReader(path, f, size, on_bytes).records()


class _ChunkReader:
    def __init__(self, path: str | os.PathLike[str], f: BinaryIO, size: int, on_bytes: Callable[[int], None] | None):
        self.path, self.f, self.size, self.on_bytes = path, f, size, on_bytes
        self.totals = _Totals()
        self.minor = 0

    def fail(self, problem: str, offset: int, record: str | None = None) -> FormatError:
        return FormatError(self.path, problem, offset=offset, record=record)

    def records(self) -> Iterator[Record]:
        self._read_file_header()
        yield Header(0, -1, MAJOR, self.minor)
        offset = FILE_HEADER.size
        while True:
            if offset == self.size:
                raise self.fail("the file ends before the trailer chunk (truncated?)", offset)
            record, offset = self._read_chunk(offset)
            yield record
            if isinstance(record, Trailer):
                if offset != self.size:
                    raise self.fail(
                        f"{self.size - offset} unexpected bytes after the trailer chunk", offset
                    )
                return

    def _read_file_header(self) -> None:
        head = self.f.read(FILE_HEADER.size)
        if not head:
            raise self.fail("the file is empty (expected the snap.bin header)", 0)
        if not head.startswith(MAGIC) and not MAGIC.startswith(head):
            raise self.fail(f"not a snap.bin file (expected magic {MAGIC!r}, found {head[:8]!r})", 0)
        if len(head) < FILE_HEADER.size:
            raise self.fail(f"the file header is cut short: {len(head)} of {FILE_HEADER.size} bytes", 0)
        _, major, minor, crc = FILE_HEADER.unpack(head)
        # The major version comes before the checksum: a later major may lay out the rest differently.
        if major != MAJOR:
            raise self.fail(
                f"snap.bin major version {major} is not supported (this heapdb reads major version {MAJOR}; "
                "a newer heapdb may read it)",
                8,
            )
        if zlib.crc32(head[:12]) != crc:
            raise self.fail("file header checksum mismatch (corrupted header)", 0)
        self.minor = minor
        if self.on_bytes:
            self.on_bytes(FILE_HEADER.size)

    def _read_chunk(self, offset: int) -> tuple[Record, int]:
        t = self.totals
        label = f"chunk #{t.chunks}"
        if self.size - offset < CHUNK_HEADER.size:
            raise self.fail(
                f"the file ends inside a chunk header ({self.size - offset} of {CHUNK_HEADER.size} bytes; truncated?)",
                offset,
                label,
            )
        head = self.f.read(CHUNK_HEADER.size)
        kind, codec, flags, count, stored, raw, payload_crc, header_crc = CHUNK_HEADER.unpack(head)
        if zlib.crc32(head[:28]) != header_crc:
            raise self.fail("chunk header checksum mismatch (corrupted)", offset, label)
        kind_name = KIND_NAMES.get(kind, f"kind {kind}")
        label = f"chunk #{t.chunks} ({kind_name})"
        body_at = offset + CHUNK_HEADER.size
        if stored > self.size - body_at:
            raise self.fail(
                f"the chunk declares {stored} payload bytes but only {self.size - body_at} remain (truncated?)",
                offset,
                label,
            )
        payload = self.f.read(stored)
        if len(payload) != stored:
            raise self.fail("the file shrank while being read", body_at, label)
        if zlib.crc32(payload) != payload_crc:
            raise self.fail("chunk payload checksum mismatch (corrupted)", body_at, label)
        end = body_at + stored
        if self.on_bytes:
            self.on_bytes(end - offset)
        index = t.chunks
        t.chunks += 1
        if kind not in KIND_NAMES:
            if flags & FLAG_CRITICAL:
                raise self.fail(
                    f"chunk kind {kind} is marked critical but unknown to this reader "
                    f"(file version 1.{self.minor}, reader 1.{MINOR})",
                    offset,
                    label,
                )
            return Unknown(offset, index, kind, stored), end
        data = self._decode(codec, payload, raw, offset, label)
        return self._parse(kind, count, data, offset, index, label), end

    def _decode(self, codec: int, payload: bytes, raw: int, offset: int, label: str) -> bytes:
        if raw > MAX_PAYLOAD:
            raise self.fail(f"the chunk declares {raw} bytes, above the {MAX_PAYLOAD}-byte limit", offset, label)
        if codec == CODEC_NONE:
            if raw != len(payload):
                raise self.fail(f"uncompressed chunk: raw length {raw} != stored length {len(payload)}", offset, label)
            return payload
        if codec != CODEC_ZSTD:
            raise self.fail(f"unknown compression codec {codec}", offset, label)
        import zstandard

        try:
            declared = zstandard.frame_content_size(payload)
        except zstandard.ZstdError as e:
            raise self.fail(f"bad zstd frame: {e}", offset, label) from None
        if declared != raw:
            raise self.fail(f"zstd frame holds {declared} bytes, the chunk header says {raw}", offset, label)
        try:
            data = zstandard.ZstdDecompressor().decompress(payload, max_output_size=raw)
        except zstandard.ZstdError as e:
            raise self.fail(f"zstd decompression failed: {e}", offset, label) from None
        if len(data) != raw:
            raise self.fail(f"zstd frame decompressed to {len(data)} bytes, expected {raw}", offset, label)
        return data

    def _parse(self, kind: int, count: int, data: bytes, offset: int, index: int, label: str) -> Record:
        t = self.totals
        cols = _Columns(self, data, offset, label)
        if kind == METADATA:
            return Metadata(offset, index, _parse_metadata(self, data, count, offset, label))
        if kind == STRINGS:
            first = int(cols.take(_U64, 1)[0])
            lengths = cols.take(_U32, count)
            if first != t.strings:
                raise self.fail(f"strings chunk starts at string {first}, expected {t.strings}", offset, label)
            total = int(lengths.sum(dtype=np.uint64))
            blob = cols.rest(total)
            values = []
            pos = 0
            try:
                for n in lengths.tolist():
                    values.append(blob[pos : pos + n].decode("utf-8", "surrogatepass"))
                    pos += n
            except UnicodeDecodeError as e:
                raise self.fail(f"string {first + len(values)} is not UTF-8: {e.reason}", offset, label) from None
            t.strings += count
            return Strings(offset, index, first, values)
        if kind == TYPES:
            first = int(cols.take(_U64, 1)[0])
            names, kinds = cols.take(_U32, count), cols.take(_U32, count)
            cols.end()
            if first != t.types:
                raise self.fail(f"types chunk starts at type {first}, expected {t.types}", offset, label)
            self._check_strings(names, "a type name", offset, label)
            self._check_strings(kinds, "a type's node kind", offset, label)
            t.types += count
            return Types(offset, index, first, names, kinds)
        if kind == OBJECTS:
            return self._parse_objects(cols, count, offset, index, label)
        if kind == ROOTS:
            target, kinds, names = cols.take(_I64, count), cols.take(_U32, count), cols.take(_U32, count)
            cols.end()
            self._check_strings(kinds, "a root kind", offset, label)
            self._check_strings(names, "a root name", offset, label)
            t.roots += count
            return Roots(offset, index, target, kinds, names)
        if kind == OBJECT_NAMES:
            ids, names = cols.take(_I64, count), cols.take(_U32, count)
            cols.end()
            self._check_strings(names, "an object name", offset, label)
            t.names += count
            return ObjectNames(offset, index, ids, names)
        # TRAILER
        declared = dict(zip(TRAILER_FIELDS, (int(v) for v in cols.take(_U64, len(TRAILER_FIELDS)))))
        cols.end()
        seen = {
            "chunks": t.chunks - 1,
            "strings": t.strings - 1,
            "types": t.types,
            "objects": t.objects,
            "refs": t.refs,
            "roots": t.roots,
            "names": t.names,
        }
        for key in TRAILER_FIELDS:
            if declared[key] != seen[key]:
                raise self.fail(
                    f"the trailer counts {declared[key]} {key} but the file holds {seen[key]}", offset, label
                )
        return Trailer(offset, index, declared)

    def _parse_objects(self, cols: _Columns, count: int, offset: int, index: int, label: str) -> Objects:
        t = self.totals
        flags = int(cols.take(_U32, 1)[0])
        cols.take(_U32, 1)  # reserved
        refs = int(cols.take(_U64, 1)[0])
        if flags & ~COLUMN_DETACHEDNESS:
            raise self.fail(f"objects chunk has unknown column flags {flags:#x} (a newer minor version?)", offset, label)
        ids, sizes, targets = cols.take(_I64, count), cols.take(_U64, count), cols.take(_I64, refs)
        types, ref_counts, ref_names = cols.take(_U32, count), cols.take(_U32, count), cols.take(_U32, refs)
        detached = cols.take(_U8, count) if flags & COLUMN_DETACHEDNESS else None
        ref_kinds = cols.take(_U8, refs)
        cols.end()
        if int(ref_counts.sum(dtype=np.uint64)) != refs:
            raise self.fail(f"the objects' reference counts add up to {int(ref_counts.sum(dtype=np.uint64))}, "
                            f"the chunk declares {refs}", offset, label)
        if count and int(types.max()) >= t.types:
            bad = int(np.argmax(types >= t.types))
            raise self.fail(f"object id {int(ids[bad])} has type {int(types[bad])}, but only {t.types} "
                            "types are defined before this chunk", offset, label)
        if count and int(sizes.max()) >= 1 << 63:
            bad = int(np.argmax(sizes >= np.uint64(1 << 63)))
            raise self.fail(f"object id {int(ids[bad])} has an impossible self size {int(sizes[bad])}", offset, label)
        if detached is not None and count and int(detached.max()) > 2:
            raise self.fail("an object's detachedness is not 0, 1 or 2", offset, label)
        if refs and int(ref_kinds.max()) > _MAX_EDGE_KIND:
            raise self.fail(f"a reference has unknown kind {int(ref_kinds.max())}", offset, label)
        named = ~np.isin(ref_kinds, _NUMERIC_KINDS)
        self._check_strings(ref_names[named], "a reference name", offset, label)
        t.objects += count
        t.refs += refs
        return Objects(offset, index, ids, types, sizes, ref_counts, targets, ref_kinds, ref_names, detached)

    def _check_strings(self, indexes: np.ndarray, what: str, offset: int, label: str) -> None:
        if indexes.size and int(indexes.max()) >= self.totals.strings:
            raise self.fail(f"{what} is string {int(indexes.max())}, but only {self.totals.strings} strings "
                            "are defined before this chunk", offset, label)


class _Columns:
    """Takes consecutive little-endian arrays off a chunk payload, checking each fits before viewing it."""

    def __init__(self, reader: _ChunkReader, data: bytes, offset: int, label: str) -> None:
        self.reader, self.data, self.pos, self.offset, self.label = reader, data, 0, offset, label

    def take(self, dtype: np.dtype, count: int) -> np.ndarray:
        need = count * dtype.itemsize
        if need > len(self.data) - self.pos:
            raise self.reader.fail(
                f"the payload holds {len(self.data) - self.pos} more bytes at payload byte {self.pos}, "
                f"but {count} values of {dtype.itemsize} bytes are declared",
                self.offset,
                self.label,
            )
        out = np.frombuffer(self.data, dtype=dtype, count=count, offset=self.pos)
        self.pos += need
        return out

    def rest(self, length: int) -> bytes:
        if len(self.data) - self.pos != length:
            raise self.reader.fail(
                f"expected {length} bytes of string data, the payload has {len(self.data) - self.pos}",
                self.offset,
                self.label,
            )
        return self.data[self.pos :]

    def end(self) -> None:
        if self.pos != len(self.data):
            raise self.reader.fail(
                f"{len(self.data) - self.pos} unexpected bytes at the end of the payload", self.offset, self.label
            )


def _parse_metadata(reader: _ChunkReader, data: bytes, count: int, offset: int, label: str) -> dict[str, MetaValue]:
    values: dict[str, MetaValue] = {}
    pos = 0

    def take(n: int) -> bytes:
        nonlocal pos
        if n > len(data) - pos:
            raise reader.fail(f"metadata entry {len(values)} runs past the payload end", offset, label)
        out = data[pos : pos + n]
        pos += n
        return out

    def text() -> str:
        (n,) = struct.unpack("<I", take(4))
        try:
            return take(n).decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            raise reader.fail(f"metadata entry {len(values)} holds text that is not UTF-8", offset, label) from None

    for _ in range(count):
        key = text()
        (tag,) = take(1)
        if tag == _TAG_INT:
            values[key] = struct.unpack("<q", take(8))[0]
        elif tag == _TAG_FLOAT:
            values[key] = struct.unpack("<d", take(8))[0]
        elif tag == _TAG_STR:
            values[key] = text()
        elif tag == _TAG_BOOL:
            values[key] = take(1) != b"\0"
        else:
            raise reader.fail(f"metadata entry {key!r} has unknown value tag {tag}", offset, label)
    if pos != len(data):
        raise reader.fail(f"{len(data) - pos} unexpected bytes after the metadata entries", offset, label)
    return values


# --------------------------------------------------------------------------------------------------
# Loading a whole file into a HeapGraph

ROOT_NAME = "(root)"
SYNTHETIC_KIND = "synthetic"


def root_kind_node_name(kind: str) -> str:
    """The name of the synthetic node that holds every root of one kind."""
    return f"({kind} roots)"


def read_graph(path: str | os.PathLike[str], on_bytes: Callable[[int], None] | None = None) -> HeapGraph:
    """Read a snap.bin file into a :class:`HeapGraph` with the synthetic root layout.

    Objects keep file order (indexes ``0..n-1``), then come ``"(root)"`` and one ``"(<kind> roots)"``
    node per root kind, in order of first appearance. Raises :class:`FormatError` for any bad input,
    including duplicate object ids and references to ids no object record defines.
    """
    acc = _Accumulator(path)
    for record in iter_records(path, on_bytes):
        acc.add(record)
    return acc.build()


@dataclass
class _Accumulator:
    path: str | os.PathLike[str]
    strings: list[str] = field(default_factory=lambda: [""])
    meta: dict[str, MetaValue] = field(default_factory=dict)
    type_name: list[np.ndarray] = field(default_factory=list)
    type_kind: list[np.ndarray] = field(default_factory=list)
    objects: list[Objects] = field(default_factory=list)
    roots: list[Roots] = field(default_factory=list)
    names: list[ObjectNames] = field(default_factory=list)
    minor: int = 0
    spans: list[tuple[int, int, int]] = field(default_factory=list)  # (offset, ordinal, objects) per chunk

    def add(self, r: Record) -> None:
        if isinstance(r, Header):
            self.minor = r.minor
        elif isinstance(r, Strings):
            self.strings.extend(r.values)
        elif isinstance(r, Types):
            self.type_name.append(r.name)
            self.type_kind.append(r.kind)
        elif isinstance(r, Objects):
            self.objects.append(r)
        elif isinstance(r, Roots):
            self.roots.append(r)
        elif isinstance(r, ObjectNames):
            self.names.append(r)
        elif isinstance(r, Metadata):
            self.meta.update(r.values)

    def build(self) -> HeapGraph:
        """Assemble the graph: objects in file order, then (root) and the root kind nodes.

        The final arrays are allocated once (their pages are touched only as they fill) and filled
        chunk by chunk, each chunk's payload being released as soon as it is copied, so the peak is
        about the payloads or the graph, whichever is larger, plus the id index.
        """
        self.spans = [(o.offset, o.index, o.id.shape[0]) for o in self.objects]
        n = sum(count for _, _, count in self.spans)
        m = sum(o.ref_target.shape[0] for o in self.objects)
        # Roots first: their kinds decide how many synthetic nodes there are.
        root_target = _cat([r.target for r in self.roots], np.int64)
        kinds, group = _in_order_of_appearance(_cat([r.kind for r in self.roots], np.int64))
        group_kinds = [self.strings[int(s)] for s in kinds]
        k, r = len(group_kinds), root_target.shape[0]
        by_group = np.argsort(group, kind="stable")
        total_nodes, total_edges = n + 1 + k, m + k + r

        ids = np.empty(total_nodes, dtype=np.int64)
        _fill(ids[:n], [o.id for o in self.objects])
        index = self._index_ids(ids[:n])
        ids[n:] = _synthetic_ids(ids[:n], 1 + k)
        type_index = _cat([o.type for o in self.objects], np.uint32)
        node_kinds, object_kind = self._node_kinds(type_index)
        type_name = _cat(self.type_name, np.int64)

        node_type = np.empty(total_nodes, dtype=np.int32)
        node_kind = np.empty(total_nodes, dtype=np.uint8)
        self_size = np.empty(total_nodes, dtype=np.int64)
        detachedness = None
        if any(o.detachedness is not None for o in self.objects):
            detachedness = np.zeros(total_nodes, dtype=np.uint8)
        edge_start = np.empty(total_nodes + 1, dtype=np.int64)
        edge_to = np.empty(total_edges, dtype=np.int32)
        edge_kind = np.empty(total_edges, dtype=np.uint8)
        edge_name = np.empty(total_edges, dtype=np.uint32)
        edge_start[0] = node = edge = 0
        while self.objects:
            o = self.objects.pop(0)  # dropped once copied, so its payload is freed
            a, b = node, node + o.id.shape[0]
            e, f = edge, edge + o.ref_target.shape[0]
            self._resolve(index, o.ref_target, edge_to[e:f], lambda j, o=o, a=a: self._where_ref(o, a, j))
            edge_kind[e:f] = o.ref_kind
            edge_name[e:f] = o.ref_name
            np.cumsum(o.ref_count, out=edge_start[a + 1 : b + 1])
            edge_start[a + 1 : b + 1] += edge
            node_type[a:b] = type_name[type_index[a:b]]
            node_kind[a:b] = object_kind[a:b]
            self_size[a:b] = o.self_size.view(np.int64)
            if detachedness is not None and o.detachedness is not None:
                detachedness[a:b] = o.detachedness
            node, edge = b, f

        # (root) -element #i-> (kind roots) -property "root name"-> each root's target.
        edge_to[m : m + k] = np.arange(n + 1, n + 1 + k)
        edge_kind[m : m + k] = int(EdgeKind.ELEMENT)
        edge_name[m : m + k] = np.arange(k)
        self._resolve(index, root_target[by_group], edge_to[m + k :], lambda j: self._where_root(int(by_group[j])))
        edge_kind[m + k :] = int(EdgeKind.PROPERTY)
        edge_name[m + k :] = _cat([r.name for r in self.roots], np.uint32)[by_group]
        edge_start[n + 1] = m + k
        edge_start[n + 2 :] = m + k + np.cumsum(np.bincount(group, minlength=k))
        synthetic_names = [_find_or_add(self.strings, s) for s in [ROOT_NAME, *map(root_kind_node_name, group_kinds)]]
        node_type[n:] = synthetic_names
        if SYNTHETIC_KIND not in node_kinds:
            node_kinds.append(SYNTHETIC_KIND)
        node_kind[n:] = node_kinds.index(SYNTHETIC_KIND)
        self_size[n:] = 0
        node_name = np.zeros(total_nodes, dtype=np.int32)
        self._fill_names(node_name, index)
        node_name[n:] = synthetic_names

        meta: dict[str, Any] = dict(self.meta)
        meta.update(format=NAME, format_version=f"{MAJOR}.{self.minor}")
        graph = HeapGraph(
            ids=ids, kind=node_kind, type=node_type, name=node_name, self_size=self_size,
            edge_start=edge_start, edge_to=edge_to, edge_kind=edge_kind, edge_name=edge_name,
            strings=self.strings, node_kinds=node_kinds, root=n, detachedness=detachedness, meta=meta,
        )
        graph.validate()
        return graph

    def _node_kinds(self, type_index: np.ndarray) -> tuple[list[str], np.ndarray]:
        """The node kind names, and each object's index into them.

        Kinds are listed in order of first appearance among the objects (not in type table order), so
        a graph read, written back and read again gets the same list.
        """
        type_kind = _cat(self.type_kind, np.int64)
        n = type_index.shape[0]
        first_use = np.full(type_kind.shape[0], n, dtype=np.int64)
        np.minimum.at(first_use, type_index, np.arange(n))
        used = np.flatnonzero(first_use < n)
        used = used[np.argsort(first_use[used], kind="stable")]
        kinds, code = _in_order_of_appearance(type_kind[used])
        if kinds.shape[0] > 255:  # one kind is kept for the synthetic nodes
            raise FormatError(self.path, f"the objects use {kinds.shape[0]} node kinds; heapdb handles at most 255")
        kind_of_type = np.zeros(type_kind.shape[0], dtype=np.uint8)
        kind_of_type[used] = code
        return [self.strings[int(s)] for s in kinds], kind_of_type[type_index]

    def _fill_names(self, names: np.ndarray, index: IdIndex) -> None:
        for rec in self.names:
            nodes = np.empty(rec.id.shape[0], dtype=np.int32)
            self._resolve(index, rec.id, nodes,
                          lambda j, rec=rec: f"object name #{j} in {_chunk_label(rec)} names id {int(rec.id[j])}")
            names[nodes] = rec.name  # a later name for the same id wins, as the spec says

    def _index_ids(self, ids: np.ndarray) -> IdIndex:
        from heapdb.loader.formats.snapbin_ids import IdIndex  # numba: only readers need it

        if ids.shape[0] + 1 >= np.iinfo(np.int32).max:
            raise FormatError(self.path, f"{ids.shape[0]} objects are more than heapdb's graph can index")
        index = IdIndex(ids)
        dup = index.duplicate()
        if dup is not None:
            first, second = dup
            raise FormatError(
                self.path,
                f"object id {int(ids[second])} is defined twice: object #{first} "
                f"({self._object_chunk(first)}) and object #{second}",
                offset=self._object_offset(second),
                record=self._object_chunk(second),
            )
        return index

    def _resolve(self, index: IdIndex, wanted: np.ndarray, out: np.ndarray, where: Callable[[int], str]) -> None:
        """Write the node index of each wanted id into ``out``; an id no object defines is a FormatError."""
        missing = index.lookup(wanted, out)
        if missing >= 0:
            raise FormatError(self.path, f"{where(missing)}, which no object record defines (dangling reference)")

    def _where_ref(self, rec: Objects, first: int, j: int) -> str:
        local = int(np.searchsorted(np.cumsum(rec.ref_count, dtype=np.int64), j, side="right"))
        number = first + local
        return (f"object id {int(rec.id[local])} (object #{number}, {_chunk_label(rec)} at byte {rec.offset}) "
                f"refers to id {int(rec.ref_target[j])}")

    def _where_root(self, j: int) -> str:
        for rec in self.roots:
            if j < rec.target.shape[0]:
                return f"root #{j} of {_chunk_label(rec)} targets id {int(rec.target[j])}"
            j -= rec.target.shape[0]
        raise AssertionError("root index out of range")

    def _object_chunk(self, i: int) -> str:
        offset, index = self._object_span(i)
        return f"chunk #{index} at byte {offset}"

    def _object_offset(self, i: int) -> int:
        return self._object_span(i)[0]

    def _object_span(self, i: int) -> tuple[int, int]:
        """The byte offset and ordinal of the chunk holding object number ``i``."""
        for offset, index, count in self.spans:
            if i < count:
                return offset, index
            i -= count
        raise AssertionError("object index out of range")


def _chunk_label(rec: Record) -> str:
    return f"chunk #{rec.index}"


def _fill(out: np.ndarray, parts: list[np.ndarray]) -> None:
    """Concatenate column parts straight into ``out`` (converting dtype), without a temporary."""
    at = 0
    for part in parts:
        out[at : at + part.shape[0]] = part
        at += part.shape[0]


def _cat(parts: list[np.ndarray], dtype: Any) -> np.ndarray:
    if not parts:
        return np.zeros(0, dtype=dtype)
    return np.concatenate(parts).astype(dtype, copy=False)


def _in_order_of_appearance(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values in order of first appearance, and each element's index into them."""
    distinct, first, inverse = np.unique(values, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(order.shape[0], dtype=np.int64)
    rank[order] = np.arange(order.shape[0])
    return distinct[order], rank[inverse.reshape(-1)]


def _find_or_add(strings: list[str], s: str) -> int:
    try:
        return strings.index(s)
    except ValueError:
        strings.append(s)
        return len(strings) - 1


def _synthetic_ids(ids: np.ndarray, count: int) -> np.ndarray:
    """Ids for the synthetic nodes: just above the largest object id, or if that is the largest int64,
    the first unused ids from 0 (among ``len(ids) + count`` candidates at least ``count`` are free)."""
    top = int(ids.max()) if ids.size else 0
    if top + count < 1 << 63:
        return np.arange(top + 1, top + 1 + count, dtype=np.int64)
    candidates = np.arange(ids.shape[0] + count, dtype=np.int64)
    return np.setdiff1d(candidates, ids)[:count]


# --------------------------------------------------------------------------------------------------
# Writer


class SnapbinWriter:
    """Writes a snap.bin file in one pass; use as a context manager.

    Objects may refer to ids written later. Memory stays bounded by one chunk's buffers plus the
    string and type interning tables, whatever the number of objects::

        with SnapbinWriter("out.snapbin", compress=True) as w:
            w.set_metadata(runtime="python", runtime_version="3.11.7")
            t = w.add_type("Node", "object")
            w.add_object(1, t, 48, [(2, EdgeKind.PROPERTY, "next")])
            w.add_object(2, t, 48)
            w.add_root("global", "head", 1)

    A file left without :meth:`close` (an exception inside the ``with``) has no trailer, so every
    reader rejects it as truncated.
    """

    def __init__(
        self,
        target: str | os.PathLike[str] | BinaryIO,
        *,
        compress: bool = False,
        level: int = 3,
        chunk_objects: int = 65536,
        chunk_refs: int = 1 << 20,
    ) -> None:
        if isinstance(target, (str, os.PathLike)):
            self._f: BinaryIO = open(target, "wb")
            self._owns = True
        else:
            self._f, self._owns = target, False
        self._compressor = None
        if compress:
            import zstandard

            self._compressor = zstandard.ZstdCompressor(level=level)
        self.chunk_objects, self.chunk_refs = chunk_objects, chunk_refs
        self._strings: dict[str, int] = {"": 0}
        self._string_count = 1
        self._pending_strings: list[str] = []
        self._pending_string_bytes = 0
        self._types: dict[tuple[int, int], int] = {}
        self._pending_types: list[tuple[int, int]] = []
        self._meta: dict[str, MetaValue] = {}
        self._totals = _Totals()
        self._reset_objects()
        self._roots = (array("q"), array("I"), array("I"))
        self._names = (array("q"), array("I"))
        self._closed = False
        header = struct.pack("<8sHH", MAGIC, MAJOR, MINOR)
        self._f.write(header + struct.pack("<I", zlib.crc32(header)))

    # -- the public API --------------------------------------------------------------------------------

    def add_string(self, s: str) -> int:
        """Intern ``s`` and return its string index (0 is the empty string)."""
        index = self._strings.get(s)
        if index is None:
            index = self._string_count
            self._strings[s] = index
            self._string_count += 1
            self._pending_strings.append(s)
            self._pending_string_bytes += len(s)
            if self._pending_string_bytes > _STRINGS_CHUNK_BYTES:
                self._flush_tables()
        return index

    def add_type(self, name: str, kind: str = "object") -> int:
        """Intern the type ``(name, node kind)`` and return its type index."""
        return self._add_type_pair(self.add_string(name), self.add_string(kind))

    def _add_type_pair(self, name: int, kind: int) -> int:
        key = (name, kind)
        index = self._types.get(key)
        if index is None:
            index = len(self._types)
            self._types[key] = index
            self._pending_types.append(key)
        return index

    def add_object(
        self,
        id: int,
        type: int | str,
        self_size: int,
        refs: Iterable[Ref] = (),
        *,
        name: str | None = None,
        detachedness: int | None = None,
    ) -> None:
        """Add one object. ``type`` is a type index from :meth:`add_type` or a type name (kind "object").

        Each ref is a target id (a plain strong reference) or ``(target id, EdgeKind, name)``; the name
        is a string, a string index from :meth:`add_string`, or for ``ELEMENT``/``HIDDEN`` the index.
        """
        if not isinstance(type, int):
            type = self.add_type(type)
        b = self._buf
        b["id"].append(id)
        b["type"].append(type)
        b["size"].append(self_size)
        targets, kinds, names = b["target"], b["kind"], b["name"]
        count = 0
        for ref in refs:
            if isinstance(ref, int):
                targets.append(ref)
                kinds.append(_REFERENCE)
                names.append(0)
            else:
                target, kind, label = ref
                targets.append(target)
                kinds.append(kind)
                names.append(label if isinstance(label, int) else self.add_string(label))
            count += 1
        b["count"].append(count)
        if detachedness is not None:
            self._has_detachedness = True
        b["detached"].append(detachedness or 0)
        if name:
            self.set_name(id, name)
        if len(b["id"]) >= self.chunk_objects or len(targets) >= self.chunk_refs:
            self._flush_objects()

    def set_name(self, id: int, name: str | int) -> None:
        """Give object ``id`` a name or value (a function's name, a string's contents)."""
        ids, names = self._names
        ids.append(id)
        names.append(name if isinstance(name, int) else self.add_string(name))
        if len(ids) >= self.chunk_objects:
            self._flush_names()

    def add_root(self, kind: str, name: str, target: int) -> None:
        """Declare object ``target`` a GC root of ``kind`` (e.g. "module", "stack"), labelled ``name``."""
        targets, kinds, names = self._roots
        targets.append(target)
        kinds.append(self.add_string(kind))
        names.append(self.add_string(name))
        if len(targets) >= self.chunk_objects:
            self._flush_roots()

    def set_metadata(self, values: Mapping[str, MetaValue] | None = None, **more: MetaValue) -> None:
        """Set metadata entries (written at close); see docs/format.md for the well-known keys."""
        for key, value in {**(values or {}), **more}.items():
            if not isinstance(value, (bool, int, float, str)):
                raise TypeError(f"metadata {key!r}: expected int, float, str or bool, got {type(value).__name__}")
            if isinstance(value, int) and not isinstance(value, bool) and not -(1 << 63) <= value < 1 << 63:
                raise ValueError(f"metadata {key!r}: {value} does not fit in 64 bits")
            self._meta[key] = value

    def add_objects(
        self,
        ids: np.ndarray,
        types: np.ndarray,
        self_sizes: np.ndarray,
        ref_counts: np.ndarray,
        ref_targets: np.ndarray,
        ref_kinds: np.ndarray,
        ref_names: np.ndarray,
        detachedness: np.ndarray | None = None,
    ) -> None:
        """Add objects given as columns (the fast path for bulk producers).

        ``ref_counts[i]`` refs of object ``i`` follow those of object ``i - 1`` in the ``ref_*`` columns;
        type and name indexes must come from :meth:`add_type` and :meth:`add_string`.
        """
        self._flush_objects()
        ref_counts = np.asarray(ref_counts, dtype=np.int64)
        for start, stop, r0, r1 in self._chunk_bounds(ref_counts):
            self._write_objects(
                ids[start:stop], types[start:stop], self_sizes[start:stop], ref_counts[start:stop],
                ref_targets[r0:r1], ref_kinds[r0:r1], ref_names[r0:r1],
                None if detachedness is None else detachedness[start:stop],
            )

    def _chunk_bounds(self, ref_counts: np.ndarray) -> Iterator[tuple[int, int, int, int]]:
        """Cut objects into chunks of at most chunk_objects objects or chunk_refs refs (at least one
        object each); yield (first object, end object, first ref, end ref) of each."""
        ends = np.cumsum(ref_counts)
        start, n = 0, ref_counts.shape[0]
        while start < n:
            first_ref = int(ends[start] - ref_counts[start])
            limit = int(np.searchsorted(ends, first_ref + self.chunk_refs, side="right"))
            stop = max(start + 1, min(start + self.chunk_objects, limit, n))
            yield start, stop, first_ref, int(ends[stop - 1])
            start = stop

    def close(self) -> None:
        """Flush everything, write the metadata and the trailer, and close the file."""
        if self._closed:
            return
        self._flush_objects()
        self._flush_roots()
        self._flush_names()
        self._flush_tables()
        if self._meta:
            self._write_metadata()
        t = self._totals
        counts = (t.chunks, t.strings - 1, t.types, t.objects, t.refs, t.roots, t.names)
        self._write_chunk(TRAILER, 0, [TRAILER_BODY.pack(*counts)], compressible=False)
        self._closed = True
        if self._owns:
            self._f.close()
        else:
            self._f.flush()

    def __enter__(self) -> SnapbinWriter:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.close()
        elif self._owns:
            self._closed = True
            self._f.close()

    # -- chunks ----------------------------------------------------------------------------------------

    def _reset_objects(self) -> None:
        self._buf = {
            "id": array("q"), "type": array("I"), "size": array("Q"), "count": array("I"),
            "target": array("q"), "kind": array("B"), "name": array("I"), "detached": array("B"),
        }
        self._has_detachedness = False

    def _flush_objects(self) -> None:
        b = self._buf
        if not b["id"]:
            return
        col = lambda key, dtype: np.frombuffer(b[key], dtype=dtype)  # noqa: E731
        self._write_objects(
            col("id", np.int64), col("type", np.uint32), col("size", np.uint64), col("count", np.uint32),
            col("target", np.int64), col("kind", np.uint8), col("name", np.uint32),
            col("detached", np.uint8) if self._has_detachedness else None,
        )
        self._reset_objects()

    def _write_objects(self, ids: np.ndarray, types: np.ndarray, sizes: np.ndarray, counts: np.ndarray,
                       targets: np.ndarray, kinds: np.ndarray, names: np.ndarray, detached: np.ndarray | None) -> None:
        """One OBJECTS chunk from its columns (any integer dtypes; converted to the file's)."""
        self._flush_tables()
        n, r = len(ids), len(targets)
        flags = COLUMN_DETACHEDNESS if detached is not None else 0
        parts = [
            struct.pack("<IIQ", flags, 0, r),
            _le(ids, _I64), _le(sizes, _U64), _le(targets, _I64),
            _le(types, _U32), _le(counts, _U32), _le(names, _U32),
        ]
        if detached is not None:
            parts.append(_le(detached, _U8))
        parts.append(_le(kinds, _U8))
        self._write_chunk(OBJECTS, n, parts)
        self._totals.objects += n
        self._totals.refs += r

    def _extend_strings(self, strings: Iterable[str]) -> None:
        """Append strings as they are, without merging duplicates, so their indexes are predictable."""
        for s in strings:
            self._strings.setdefault(s, self._string_count)
            self._string_count += 1
            self._pending_strings.append(s)

    def _flush_tables(self) -> None:
        """Write pending strings, then pending types, so later chunks only refer back."""
        first = self._string_count - len(self._pending_strings)
        encoded: list[bytes] = []
        size = 0
        for s in self._pending_strings:
            data = s.encode("utf-8", "surrogatepass")
            if encoded and (size + len(data) > _STRINGS_CHUNK_BYTES or len(encoded) >= 1 << 18):
                self._write_strings(first, encoded)
                first += len(encoded)
                encoded, size = [], 0
            encoded.append(data)
            size += len(data)
        if encoded:
            self._write_strings(first, encoded)
        self._pending_strings, self._pending_string_bytes = [], 0
        if self._pending_types:
            pairs = np.array(self._pending_types, dtype=_U32).reshape(-1, 2)
            first = len(self._types) - len(self._pending_types)
            self._write_chunk(TYPES, len(pairs), [struct.pack("<Q", first), pairs[:, 0].tobytes(), pairs[:, 1].tobytes()])
            self._totals.types += len(pairs)
            self._pending_types = []

    def _write_strings(self, first: int, encoded: list[bytes]) -> None:
        lengths = np.fromiter((len(e) for e in encoded), dtype=_U32, count=len(encoded))
        self._write_chunk(STRINGS, len(encoded), [struct.pack("<Q", first), lengths.tobytes(), b"".join(encoded)])
        self._totals.strings += len(encoded)

    def _flush_roots(self) -> None:
        targets, kinds, names = self._roots
        if targets:
            self._flush_tables()
            self._write_chunk(ROOTS, len(targets), [_le(np.frombuffer(a, dt), dt) for a, dt in
                                                    ((targets, _I64), (kinds, _U32), (names, _U32))])
            self._totals.roots += len(targets)
            self._roots = (array("q"), array("I"), array("I"))

    def _flush_names(self) -> None:
        ids, names = self._names
        if ids:
            self._write_names(np.frombuffer(ids, np.int64), np.frombuffer(names, np.uint32))
            self._names = (array("q"), array("I"))

    def _write_names(self, ids: np.ndarray, names: np.ndarray) -> None:
        self._flush_tables()
        for start in range(0, len(ids), self.chunk_objects):
            stop = start + self.chunk_objects
            self._write_chunk(OBJECT_NAMES, len(ids[start:stop]), [_le(ids[start:stop], _I64), _le(names[start:stop], _U32)])
            self._totals.names += len(ids[start:stop])

    def _write_metadata(self) -> None:
        out = bytearray()
        for key, value in self._meta.items():
            out += _text(key)
            if isinstance(value, bool):
                out += struct.pack("<BB", _TAG_BOOL, value)
            elif isinstance(value, int):
                out += struct.pack("<Bq", _TAG_INT, value)
            elif isinstance(value, float):
                out += struct.pack("<Bd", _TAG_FLOAT, value)
            else:
                out += struct.pack("<B", _TAG_STR) + _text(value)
        self._write_chunk(METADATA, len(self._meta), [bytes(out)])

    def _write_chunk(self, kind: int, count: int, parts: list[bytes], compressible: bool = True) -> None:
        raw = b"".join(parts)
        if len(raw) > MAX_PAYLOAD:
            raise ValueError(f"a {KIND_NAMES[kind]} chunk of {len(raw)} bytes exceeds the {MAX_PAYLOAD}-byte limit; "
                             "use smaller chunk_objects / chunk_refs")
        codec, stored = CODEC_NONE, raw
        if self._compressor is not None and compressible and len(raw) >= 256:
            codec, stored = CODEC_ZSTD, self._compressor.compress(raw)
        head = struct.pack("<HBBIQQI", kind, codec, FLAG_CRITICAL, count, len(stored), len(raw), zlib.crc32(stored))
        self._f.write(head + struct.pack("<I", zlib.crc32(head)))
        self._f.write(stored)
        self._totals.chunks += 1


_REFERENCE = int(EdgeKind.REFERENCE)


def _le(values: Any, dtype: np.dtype) -> bytes:
    """The bytes of a column in the file's dtype (little-endian)."""
    return np.ascontiguousarray(values, dtype=dtype).tobytes()


def _text(s: str) -> bytes:
    data = s.encode("utf-8", "surrogatepass")
    return struct.pack("<I", len(data)) + data


# --------------------------------------------------------------------------------------------------
# Writing a HeapGraph


def write_graph(graph: HeapGraph, path: str | os.PathLike[str] | BinaryIO, *, compress: bool = False,
                chunk_objects: int = 65536, chunk_refs: int = 1 << 20) -> None:
    """Write any :class:`HeapGraph` as snap.bin.

    A graph with the synthetic root layout (``"(root)"`` over ``"(<kind> roots)"`` nodes, as snap.bin
    and Luau readers build it) is written as root records, so reading the file rebuilds the same
    layout: a graph read from snap.bin round-trips exactly. Any other graph (a V8 snapshot) is written
    node for node, and its root becomes the single root of kind ``"snapshot"``.
    """
    layout = _root_layout(graph)
    keep = np.ones(graph.node_count, dtype=bool)
    if layout is not None:
        keep[[graph.root, *layout]] = False
    nodes = np.flatnonzero(keep)
    with SnapbinWriter(path, compress=compress, chunk_objects=chunk_objects, chunk_refs=chunk_refs) as w:
        # The string table goes out verbatim after the implicit "" (shifted by one if the graph's table
        # does not start with ""), so string indexes survive the round trip.
        shift = 0 if graph.strings and graph.strings[0] == "" else 1
        w._extend_strings(graph.strings[1 - shift :])

        # Types are (type name, node kind) pairs; only the kinds real objects use are written.
        kinds_used = np.unique(graph.kind[nodes])
        kind_string = np.zeros(len(graph.node_kinds), dtype=np.int64)
        for k in kinds_used.tolist():
            kind_string[k] = w.add_string(graph.node_kinds[k])
        pair = (graph.type[nodes].astype(np.int64) + shift) * len(graph.node_kinds) + graph.kind[nodes]
        pairs, type_index = np.unique(pair, return_inverse=True)
        for p in pairs.tolist():
            w._add_type_pair(p // len(graph.node_kinds), int(kind_string[p % len(graph.node_kinds)]))

        # Objects go out a chunk at a time, so the temporaries (target ids as int64) stay chunk-sized.
        counts = np.diff(graph.edge_start)[nodes]
        for start, stop, _, _ in w._chunk_bounds(counts):
            part = nodes[start:stop]
            edges = _expand_ranges(graph.edge_start[part], counts[start:stop])
            edge_kind = graph.edge_kind[edges]
            edge_name = graph.edge_name[edges]
            if shift:
                edge_name = np.where(np.isin(edge_kind, _NUMERIC_KINDS), edge_name, edge_name + 1)
            w.add_objects(
                graph.ids[part], type_index[start:stop], graph.self_size[part], counts[start:stop],
                graph.ids[graph.edge_to[edges]], edge_kind, edge_name,
                None if graph.detachedness is None else graph.detachedness[part],
            )

        empty = np.fromiter((s == "" for s in graph.strings), dtype=bool, count=len(graph.strings))
        names = graph.name[nodes]
        named = np.flatnonzero(~empty[names])
        if named.size:
            w._write_names(graph.ids[nodes][named], (names[named].astype(np.int64) + shift).astype(np.uint32))

        if layout is None:
            w.add_root("snapshot", "", int(graph.ids[graph.root]))
        else:
            for group in layout:
                kind = graph.node_name(group)[1 : -len(" roots)")]
                for e in graph.out_edges(group):
                    w.add_root(kind, graph.edge_label(e), int(graph.ids[graph.edge_to[e]]))
        w.set_metadata(_meta_for_file(graph.meta))


def _expand_ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The positions ``starts[i] .. starts[i] + counts[i]`` of every ``i``, concatenated."""
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.repeat(starts - (np.cumsum(counts) - counts), counts)
    return offsets + np.arange(total)


def _meta_for_file(meta: Mapping[str, Any]) -> dict[str, MetaValue]:
    """A graph's meta as snap.bin metadata: scalars as they are, lists and dicts as JSON text.

    Arrays are left out: they hold per-node data (a reader's extra columns), whose node order does not
    survive the synthetic root layout being rebuilt.
    """
    out: dict[str, MetaValue] = {}
    for key, value in meta.items():
        if key in ("format", "format_version") or isinstance(value, np.ndarray):
            continue
        if isinstance(value, (bool, str, float)) or (isinstance(value, int) and -(1 << 63) <= value < 1 << 63):
            out[key] = value
        elif isinstance(value, (np.integer, np.floating)):
            out[key] = value.item()
        else:
            out[key] = json.dumps(value, default=str)
    if meta.get("format") and meta.get("format") != NAME:
        out.setdefault("source_format", str(meta["format"]))
    return out


def _root_layout(graph: HeapGraph) -> list[int] | None:
    """The ``(<kind> roots)`` nodes under a synthetic ``(root)``, or None if ``graph`` lacks that layout."""
    root = graph.root
    if graph.node_kinds[int(graph.kind[root])] != SYNTHETIC_KIND or graph.node_name(root) != ROOT_NAME:
        return None
    groups = [int(graph.edge_to[e]) for e in graph.out_edges(root)]
    if len(set(groups)) != len(groups) or root in groups:
        return None
    in_degree = np.bincount(graph.edge_to, minlength=graph.node_count)
    if in_degree[root] != 0:
        return None
    for g in groups:
        name = graph.node_name(g)
        if (graph.node_kinds[int(graph.kind[g])] != SYNTHETIC_KIND or in_degree[g] != 1
                or not (name.startswith("(") and name.endswith(" roots)"))):
            return None
    return groups
