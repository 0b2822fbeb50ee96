"""Reading a snap.bin file chunk by chunk, checking every byte: :func:`iter_records`.

Memory is bounded by the largest chunk. Each chunk's header and payload checksums, lengths and
columns are checked, and every string or type index against the tables defined before it; the
trailer's counts against what was read. Global checks (duplicate ids, dangling references) need the
whole file and are the assembler's (:mod:`~heapdb.loader.formats.snapbin.assemble`). The checks of
the framing (:class:`ChunkChecks`) take bytes already read, so that a stream checked as it arrives
(:mod:`~heapdb.loader.formats.snapbin.stream`) fails as a file would.
"""

from __future__ import annotations

import os
import re
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO

import numpy as np

from heapdb.errors import FormatError
from heapdb.loader.formats.snapbin.layout import (
    CHUNK_FIELDS,
    CHUNK_HEADER,
    CODEC_NONE,
    CODEC_ZSTD,
    COLUMN_DETACHEDNESS,
    FILE_FIELDS,
    FILE_HEADER,
    FLAG_CRITICAL,
    I64,
    KIND_NAMES,
    MAGIC,
    MAJOR,
    MAX_EDGE_KIND,
    MAX_EXPANSION,
    MAX_EXPANSION_FLOOR,
    MAX_PAYLOAD,
    METADATA,
    MINOR,
    NUMERIC_KINDS,
    OBJECT_NAMES,
    OBJECTS,
    ROOTS,
    STRINGS,
    TAG_BOOL,
    TAG_FLOAT,
    TAG_INT,
    TAG_STR,
    TRAILER_FIELDS,
    TYPES,
    U8,
    U32,
    U64,
    MetaValue,
    Totals,
)
from heapdb.loader.formats.snapbin.records import (
    Header,
    Metadata,
    ObjectNames,
    Objects,
    Record,
    Roots,
    Strings,
    Trailer,
    Types,
    Unknown,
)
from heapdb.loader.formats.text import safe_strings, safe_text

if TYPE_CHECKING:
    from heapdb.progress import ByteProgress

# A UTF-8-encoded surrogate (WTF-8, ED A0..BF xx): the only way a lone one gets into a decoded string.
_ENCODED_SURROGATE = re.compile(rb"\xed[\xa0-\xbf]")


def iter_records(path: str | os.PathLike[str], on_bytes: ByteProgress | None = None) -> Iterator[Record]:
    """Yield the records of a snap.bin file one chunk at a time (memory bounded by the largest chunk).

    Checks the header, every chunk's checksums, lengths and columns, and the trailer's counts, raising
    :class:`FormatError` at the first problem. Unknown non-critical chunk kinds come out as
    :class:`Unknown`. Global checks (duplicate ids, dangling references) are :func:`read_graph`'s.
    """
    try:
        # Opened outside the `with` so that only open()'s own failure becomes "cannot open".
        f = open(path, "rb")  # noqa: SIM115
    except OSError as e:
        raise FormatError(path, f"cannot open: {e.strerror}") from None
    with f:
        size = os.fstat(f.fileno()).st_size
        yield from _ChunkReader(path, f, size, on_bytes).records()


@dataclass(frozen=True)
class ChunkHead:
    """A chunk header whose checksum was checked: what follows it, and how to name the chunk."""

    offset: int  # of the header, in the file or stream
    label: str  # "chunk #3 (objects)"
    kind: int
    codec: int
    flags: int
    count: int
    stored: int
    raw: int
    payload_crc: int

    @property
    def body_at(self) -> int:
        return self.offset + CHUNK_HEADER.size


class ChunkChecks:
    """The checks of a file's framing, each on bytes already read: the file header, a chunk header,
    a payload's checksum, an unknown kind, the total expansion. :func:`iter_records` reads a file
    through them; :class:`~heapdb.loader.formats.snapbin.stream.StreamCheck` a stream as it
    arrives, whose size (``size`` None) is what has arrived so far."""

    def __init__(self, path: str | os.PathLike[str], size: int | None) -> None:
        self.path, self.size = path, size
        self.totals = Totals()
        self.minor = 0
        self.declared = 0  # decompressed payload bytes the chunks declared so far (layout.MAX_EXPANSION)

    def fail(self, problem: str, offset: int, record: str | None = None) -> FormatError:
        return FormatError(self.path, problem, offset=offset, record=record)

    def file_header(self, head: bytes) -> None:
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
        if zlib.crc32(head[: FILE_FIELDS.size]) != crc:
            raise self.fail("file header checksum mismatch (corrupted header)", 0)
        self.minor = minor

    def chunk_header(self, head: bytes, offset: int) -> ChunkHead:
        """The chunk header ``head`` (all its bytes) at ``offset``, its checksum checked."""
        kind, codec, flags, count, stored, raw, payload_crc, header_crc = CHUNK_HEADER.unpack(head)
        if zlib.crc32(head[: CHUNK_FIELDS.size]) != header_crc:
            raise self.fail("chunk header checksum mismatch (corrupted)", offset, f"chunk #{self.totals.chunks}")
        label = f"chunk #{self.totals.chunks} ({KIND_NAMES.get(kind, f'kind {kind}')})"
        return ChunkHead(offset, label, kind, codec, flags, count, stored, raw, payload_crc)

    def payload(self, h: ChunkHead, crc: int) -> bool:
        """Check the payload's checksum ``crc`` and count the chunk; whether its kind is known (an
        unknown one is skipped unless critical)."""
        if crc != h.payload_crc:
            raise self.fail("chunk payload checksum mismatch (corrupted)", h.body_at, h.label)
        self.totals.chunks += 1
        if h.kind in KIND_NAMES:
            return True
        if h.flags & FLAG_CRITICAL:
            raise self.fail(
                f"chunk kind {h.kind} is marked critical but unknown to this reader "
                f"(file version 1.{self.minor}, reader 1.{MINOR})",
                h.offset,
                h.label,
            )
        return False

    def expansion(self, h: ChunkHead) -> None:
        """Count a known chunk's decompressed bytes against the limits, before it is decompressed."""
        if h.raw > MAX_PAYLOAD:
            raise self.fail(f"the chunk declares {h.raw} bytes, above the {MAX_PAYLOAD}-byte limit", h.offset, h.label)
        # A stream's limit grows with the bytes received through this chunk: what a file cut after
        # it would have, so no prefix of a stream inflates more than a file of its size may.
        size = h.body_at + h.stored if self.size is None else self.size
        budget = MAX_EXPANSION * size + MAX_EXPANSION_FLOOR - self.declared
        if h.raw > budget:
            of = f"the file's {size}" if self.size is not None else f"the {size} bytes received through this chunk"
            raise self.fail(
                f"the chunk declares {h.raw} decompressed bytes, but only {budget} remain of the limit for "
                f"all chunks together ({MAX_EXPANSION} x {of} bytes + {MAX_EXPANSION_FLOOR}); "
                "a decompression bomb?",
                h.offset,
                h.label,
            )
        self.declared += h.raw


class _ChunkReader(ChunkChecks):
    def __init__(self, path: str | os.PathLike[str], f: BinaryIO, size: int, on_bytes: ByteProgress | None):
        super().__init__(path, size)
        self.f, self.on_bytes = f, on_bytes
        self.size: int = size

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
                    raise self.fail(f"{self.size - offset} unexpected bytes after the trailer chunk", offset)
                return

    def _read_file_header(self) -> None:
        self.file_header(self.f.read(FILE_HEADER.size))
        if self.on_bytes:
            self.on_bytes(FILE_HEADER.size)

    def _read_chunk(self, offset: int) -> tuple[Record, int]:
        t = self.totals
        if self.size - offset < CHUNK_HEADER.size:
            raise self.fail(
                f"the file ends inside a chunk header ({self.size - offset} of {CHUNK_HEADER.size} bytes; truncated?)",
                offset,
                f"chunk #{t.chunks}",
            )
        h = self.chunk_header(self.f.read(CHUNK_HEADER.size), offset)
        if h.stored > self.size - h.body_at:
            raise self.fail(
                f"the chunk declares {h.stored} payload bytes but only {self.size - h.body_at} remain (truncated?)",
                offset,
                h.label,
            )
        payload = self.f.read(h.stored)
        if len(payload) != h.stored:
            raise self.fail("the file shrank while being read", h.body_at, h.label)
        index = t.chunks
        known = self.payload(h, zlib.crc32(payload))
        end = h.body_at + h.stored
        if self.on_bytes:
            self.on_bytes(end - offset)
        if not known:
            return Unknown(offset, index, h.kind, h.stored), end
        self.expansion(h)
        data = self._decode(h.codec, payload, h.raw, offset, h.label)
        return self._parse(h.kind, h.count, data, offset, index, h.label), end

    def _decode(self, codec: int, payload: bytes, raw: int, offset: int, label: str) -> bytes:
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
            first = int(cols.take(U64, 1)[0])
            lengths = cols.take(U32, count)
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
            if _ENCODED_SURROGATE.search(blob):
                values = safe_strings(values)
            t.strings += count
            return Strings(offset, index, first, values)
        if kind == TYPES:
            first = int(cols.take(U64, 1)[0])
            names, kinds = cols.take(U32, count), cols.take(U32, count)
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
            target, kinds, names = cols.take(I64, count), cols.take(U32, count), cols.take(U32, count)
            cols.end()
            self._check_strings(kinds, "a root kind", offset, label)
            self._check_strings(names, "a root name", offset, label)
            t.roots += count
            return Roots(offset, index, target, kinds, names)
        if kind == OBJECT_NAMES:
            ids, names = cols.take(I64, count), cols.take(U32, count)
            cols.end()
            self._check_strings(names, "an object name", offset, label)
            t.names += count
            return ObjectNames(offset, index, ids, names)
        # TRAILER
        declared = dict(zip(TRAILER_FIELDS, (int(v) for v in cols.take(U64, len(TRAILER_FIELDS)))))
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
        flags = int(cols.take(U32, 1)[0])
        cols.take(U32, 1)  # reserved
        refs = int(cols.take(U64, 1)[0])
        if flags & ~COLUMN_DETACHEDNESS:
            raise self.fail(
                f"objects chunk has unknown column flags {flags:#x} (a newer minor version?)", offset, label
            )
        ids, sizes, targets = cols.take(I64, count), cols.take(U64, count), cols.take(I64, refs)
        types, ref_counts, ref_names = cols.take(U32, count), cols.take(U32, count), cols.take(U32, refs)
        detached = cols.take(U8, count) if flags & COLUMN_DETACHEDNESS else None
        ref_kinds = cols.take(U8, refs)
        cols.end()
        if int(ref_counts.sum(dtype=np.uint64)) != refs:
            raise self.fail(
                f"the objects' reference counts add up to {int(ref_counts.sum(dtype=np.uint64))}, "
                f"the chunk declares {refs}",
                offset,
                label,
            )
        if count and int(types.max()) >= t.types:
            bad = int(np.argmax(types >= t.types))
            raise self.fail(
                f"object id {int(ids[bad])} has type {int(types[bad])}, but only {t.types} "
                "types are defined before this chunk",
                offset,
                label,
            )
        if count and int(sizes.max()) >= 1 << 63:
            bad = int(np.argmax(sizes >= np.uint64(1 << 63)))
            raise self.fail(f"object id {int(ids[bad])} has an impossible self size {int(sizes[bad])}", offset, label)
        if detached is not None and count and int(detached.max()) > 2:
            raise self.fail("an object's detachedness is not 0, 1 or 2", offset, label)
        if refs and int(ref_kinds.max()) > MAX_EDGE_KIND:
            raise self.fail(f"a reference has unknown kind {int(ref_kinds.max())}", offset, label)
        named = ~np.isin(ref_kinds, NUMERIC_KINDS)
        self._check_strings(ref_names[named], "a reference name", offset, label)
        t.objects += count
        t.refs += refs
        return Objects(offset, index, ids, types, sizes, ref_counts, targets, ref_kinds, ref_names, detached)

    def _check_strings(self, indexes: np.ndarray, what: str, offset: int, label: str) -> None:
        if indexes.size and int(indexes.max()) >= self.totals.strings:
            raise self.fail(
                f"{what} is string {int(indexes.max())}, but only {self.totals.strings} strings "
                "are defined before this chunk",
                offset,
                label,
            )


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
            return safe_text(take(n).decode("utf-8", "surrogatepass"))
        except UnicodeDecodeError:
            raise reader.fail(f"metadata entry {len(values)} holds text that is not UTF-8", offset, label) from None

    for _ in range(count):
        key = text()
        (tag,) = take(1)
        if tag == TAG_INT:
            values[key] = struct.unpack("<q", take(8))[0]
        elif tag == TAG_FLOAT:
            values[key] = struct.unpack("<d", take(8))[0]
        elif tag == TAG_STR:
            values[key] = text()
        elif tag == TAG_BOOL:
            values[key] = take(1) != b"\0"
        else:
            raise reader.fail(f"metadata entry {key!r} has unknown value tag {tag}", offset, label)
    if pos != len(data):
        raise reader.fail(f"{len(data) - pos} unexpected bytes after the metadata entries", offset, label)
    return values
