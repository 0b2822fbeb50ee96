"""Writing snap.bin in one pass: :class:`SnapbinWriter`.

Memory stays bounded by one chunk's buffers plus the string and type interning tables, whatever the
number of objects. This module never imports numba (only numpy and, when compressing, zstandard), so
a process capturing its own heap (:mod:`heapdb.capture`) stays light.
"""

from __future__ import annotations

import os
import struct
import zlib
from array import array
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, BinaryIO

import numpy as np

from heapdb.loader.formats.snapbin.layout import (
    CHUNK_FIELDS,
    CODEC_NONE,
    CODEC_ZSTD,
    COLUMN_DETACHEDNESS,
    FILE_FIELDS,
    FLAG_CRITICAL,
    I64,
    KIND_NAMES,
    MAGIC,
    MAJOR,
    MAX_PAYLOAD,
    METADATA,
    MINOR,
    OBJECT_NAMES,
    OBJECTS,
    ROOTS,
    STRINGS,
    STRINGS_CHUNK_BYTES,
    STRINGS_CHUNK_COUNT,
    TAG_BOOL,
    TAG_FLOAT,
    TAG_INT,
    TAG_STR,
    TRAILER,
    TRAILER_BODY,
    TYPES,
    U8,
    U32,
    U64,
    MetaValue,
    Totals,
)
from heapdb.loader.graph import EdgeKind

# A reference as add_object takes it: a target id, or (target id, EdgeKind, name or index).
Ref = int | tuple[int, int, str | int]


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
            # The writer owns the file for its lifetime; close() (or the `with` block's exit) closes it.
            self._f: BinaryIO = open(target, "wb")  # noqa: SIM115
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
        self._totals = Totals()
        self._reset_objects()
        self._roots = (array("q"), array("I"), array("I"))
        self._names = (array("q"), array("I"))
        self._closed = False
        header = FILE_FIELDS.pack(MAGIC, MAJOR, MINOR)
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
            if self._pending_string_bytes > STRINGS_CHUNK_BYTES:
                self._flush_tables()
        return index

    def add_type(self, name: str, kind: str = "object") -> int:
        """Intern the type ``(name, node kind)`` and return its type index."""
        return self.add_type_by_index(self.add_string(name), self.add_string(kind))

    def add_type_by_index(self, name: int, kind: int) -> int:
        """Intern the type whose name and node kind are the string indexes ``name`` and ``kind``."""
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
        for start, stop, r0, r1 in self.chunk_bounds(ref_counts):
            self._write_objects(
                ids[start:stop],
                types[start:stop],
                self_sizes[start:stop],
                ref_counts[start:stop],
                ref_targets[r0:r1],
                ref_kinds[r0:r1],
                ref_names[r0:r1],
                None if detachedness is None else detachedness[start:stop],
            )

    def add_names(self, ids: np.ndarray, names: np.ndarray) -> None:
        """Name objects given as columns: ``names[i]`` (a string index from :meth:`add_string`) names ``ids[i]``."""
        self._flush_names()  # names set earlier go out first: a later name for the same id wins
        self._write_names(ids, names)

    def chunk_bounds(self, ref_counts: np.ndarray) -> Iterator[tuple[int, int, int, int]]:
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
            "id": array("q"),
            "type": array("I"),
            "size": array("Q"),
            "count": array("I"),
            "target": array("q"),
            "kind": array("B"),
            "name": array("I"),
            "detached": array("B"),
        }
        self._has_detachedness = False

    def _flush_objects(self) -> None:
        b = self._buf
        if not b["id"]:
            return
        col = lambda key, dtype: np.frombuffer(b[key], dtype=dtype)  # noqa: E731
        self._write_objects(
            col("id", np.int64),
            col("type", np.uint32),
            col("size", np.uint64),
            col("count", np.uint32),
            col("target", np.int64),
            col("kind", np.uint8),
            col("name", np.uint32),
            col("detached", np.uint8) if self._has_detachedness else None,
        )
        self._reset_objects()

    def _write_objects(
        self,
        ids: np.ndarray,
        types: np.ndarray,
        sizes: np.ndarray,
        counts: np.ndarray,
        targets: np.ndarray,
        kinds: np.ndarray,
        names: np.ndarray,
        detached: np.ndarray | None,
    ) -> None:
        """One OBJECTS chunk from its columns (any integer dtypes; converted to the file's)."""
        self._flush_tables()
        n, r = len(ids), len(targets)
        flags = COLUMN_DETACHEDNESS if detached is not None else 0
        parts = [
            struct.pack("<IIQ", flags, 0, r),
            _le(ids, I64),
            _le(sizes, U64),
            _le(targets, I64),
            _le(types, U32),
            _le(counts, U32),
            _le(names, U32),
        ]
        if detached is not None:
            parts.append(_le(detached, U8))
        parts.append(_le(kinds, U8))
        self._write_chunk(OBJECTS, n, parts)
        self._totals.objects += n
        self._totals.refs += r

    def append_strings(self, strings: Iterable[str]) -> None:
        """Append strings as they are, without merging duplicates, so their indexes are predictable.

        A writer copying a whole string table (:func:`~heapdb.loader.formats.snapbin.write_graph`) calls
        this first, on a fresh writer: string ``i`` of the table is then string ``i + 1`` of the file.
        """
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
            if encoded and (size + len(data) > STRINGS_CHUNK_BYTES or len(encoded) >= STRINGS_CHUNK_COUNT):
                self._write_strings(first, encoded)
                first += len(encoded)
                encoded, size = [], 0
            encoded.append(data)
            size += len(data)
        if encoded:
            self._write_strings(first, encoded)
        self._pending_strings, self._pending_string_bytes = [], 0
        if self._pending_types:
            pairs = np.array(self._pending_types, dtype=U32).reshape(-1, 2)
            first = len(self._types) - len(self._pending_types)
            self._write_chunk(
                TYPES, len(pairs), [struct.pack("<Q", first), pairs[:, 0].tobytes(), pairs[:, 1].tobytes()]
            )
            self._totals.types += len(pairs)
            self._pending_types = []

    def _write_strings(self, first: int, encoded: list[bytes]) -> None:
        lengths = np.fromiter((len(e) for e in encoded), dtype=U32, count=len(encoded))
        self._write_chunk(STRINGS, len(encoded), [struct.pack("<Q", first), lengths.tobytes(), b"".join(encoded)])
        self._totals.strings += len(encoded)

    def _flush_roots(self) -> None:
        targets, kinds, names = self._roots
        if targets:
            self._flush_tables()
            self._write_chunk(
                ROOTS,
                len(targets),
                [_le(np.frombuffer(a, dt), dt) for a, dt in ((targets, I64), (kinds, U32), (names, U32))],
            )
            self._totals.roots += len(targets)
            self._roots = (array("q"), array("I"), array("I"))

    def _flush_names(self) -> None:
        ids, names = self._names
        if ids:
            self._names = (array("q"), array("I"))
            self._write_names(np.frombuffer(ids, np.int64), np.frombuffer(names, np.uint32))

    def _write_names(self, ids: np.ndarray, names: np.ndarray) -> None:
        self._flush_tables()
        for start in range(0, len(ids), self.chunk_objects):
            stop = start + self.chunk_objects
            self._write_chunk(
                OBJECT_NAMES, len(ids[start:stop]), [_le(ids[start:stop], I64), _le(names[start:stop], U32)]
            )
            self._totals.names += len(ids[start:stop])

    def _write_metadata(self) -> None:
        out = bytearray()
        for key, value in self._meta.items():
            out += _text(key)
            if isinstance(value, bool):
                out += struct.pack("<BB", TAG_BOOL, value)
            elif isinstance(value, int):
                out += struct.pack("<Bq", TAG_INT, value)
            elif isinstance(value, float):
                out += struct.pack("<Bd", TAG_FLOAT, value)
            else:
                out += struct.pack("<B", TAG_STR) + _text(value)
        self._write_chunk(METADATA, len(self._meta), [bytes(out)])

    def _write_chunk(self, kind: int, count: int, parts: list[bytes], compressible: bool = True) -> None:
        raw = b"".join(parts)
        if len(raw) > MAX_PAYLOAD:
            raise ValueError(
                f"a {KIND_NAMES[kind]} chunk of {len(raw)} bytes exceeds the {MAX_PAYLOAD}-byte limit; "
                "use smaller chunk_objects / chunk_refs"
            )
        codec, stored = CODEC_NONE, raw
        if self._compressor is not None and compressible and len(raw) >= 256:
            codec, stored = CODEC_ZSTD, self._compressor.compress(raw)
        head = CHUNK_FIELDS.pack(kind, codec, FLAG_CRITICAL, count, len(stored), len(raw), zlib.crc32(stored))
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
