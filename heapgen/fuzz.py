"""A structure-aware fuzzer for heapdb's readers: seeds, mutations, and the oracle every case must meet.

Seeds are the small snapshots of :mod:`heapgen.seeds` that the reader tests read too (a V8
``.heapsnapshot``, a Luau dump, and both as snap.bin, compressed and not; hprof dumps), and a real
Mono log-profiler file (:mod:`heapgen.mlpd`). A mutation knows its format:

- JSON (V8, Luau): values anywhere in the parsed document replaced by extreme numbers, wrong shapes
  (a string where a list belongs), nesting thousands deep, lone surrogates, NUL and control
  characters, megabyte-long strings; keys deleted or duplicated; elements added or removed (count
  mismatches); numbers swapped; references pointed past the end (dangling targets);
- snap.bin: chunk header fields rewritten *with the checksums recomputed* (so the change reaches the
  parser), payload values rewritten in place (checksums recomputed, recompressed when zstd), and
  decompression bombs (small zstd frames declaring hundreds of MiB);
- hprof, on the seed's records and heap-dump sub-records as parsed: a top-level record's length or
  tag, or any four bytes of its body, set to extreme values; declared counts and lengths (an
  instance's field bytes, an array's length, a class dump's constant, static and field counts and
  instance size) set to 0, 1, one more or less, 2^31, 2^32 - 1; the header's identifier size (the
  other valid one, or one no JVM writes); class layouts (a type code set to an invalid or another
  basic type, a field count changed); super class ids (a class its own super class, two classes
  each other's, a missing class, another class, none) and chains of up to 2,000 new classes, closed
  into a cycle or not, with an instance of each; whole heap-dump records deleted (a lost segment),
  moved before the STRING and LOAD_CLASS records they need, swapped, written twice, split between or
  inside sub-records, up to 100,000 empty ones added, HEAP_DUMP_END removed or moved; STRING records'
  lengths changed, texts replaced by odd bytes (invalid UTF-8, NUL, 300,000 bytes), ids written
  twice; ids in sub-records pointed at no object, null, or another object's id;
- any format (the only ones for .mlpd): truncation, bit flips, inserted and deleted bytes.

The oracle (:func:`run_case`): the reader returns a valid graph or raises :class:`FormatError`,
nothing else; a case marked *corrupt* (definitely malformed: a truncated file, a flipped bit under a
checksum, a string where a list belongs, a dangling reference, a count mismatch) is rejected; the
peak of traced memory stays within :data:`MEMORY_MULTIPLE` times the file size plus
:data:`MEMORY_FLOOR` (a stated bound: the readers' fixed buffers, and snap.bin's decompression floor);
and no case takes longer than :data:`HANG_SECONDS`.

Why this module is long: each format's mutations need that format's structure (JSON documents,
snap.bin's chunks, hprof's records and sub-records), and they share the oracle; split by format,
each part would import the others' helpers.

Randomness comes from a :class:`random.Random`, so Hypothesis (``st.randoms()``) drives it in the
test suite and ``benchmarks/fuzz.py`` drives it with plain seeds for the long run.
"""

from __future__ import annotations

import json
import os
import random
import struct
import time
import tracemalloc
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from heapdb.errors import FormatError
from heapdb.loader.formats.hprof.layout import BASIC_TYPES, ROOT_TAGS
from heapdb.loader.formats.snapbin.layout import CHUNK_FIELDS, CHUNK_HEADER, FILE_HEADER, MAX_EXPANSION
from heapgen.hprof_writer import HprofWriter
from heapgen.seeds import SAMPLE_ROOTS, dump_text, random_dump, sample_objects, small, small_snapshot, traced_snapshot

FORMATS = ("v8", "luau", "snapbin", "hprof", "mlpd")

MEMORY_MULTIPLE = MAX_EXPANSION + 64  # snap.bin may inflate MAX_EXPANSION x; the rest is working space
MEMORY_FLOOR = 160 << 20  # the V8 reader's 8 MiB window, snap.bin's 64 MiB decompression floor, numpy temporaries
HANG_SECONDS = 10.0

EXTREME_NUMBERS: list[Any] = [
    -1,
    2**31,
    2**32,
    2**53 + 1,
    2**63 - 1,
    2**63,
    2**64,
    -(2**63),
    -(2**63) - 1,
    10**30,
    1e308,
    -0.0,
    0.5,
    True,
    None,
]
WRONG_SHAPES: list[Any] = ["hidden", "", [], {}, [[1, 2]], {"a": [1]}, None, 0, ["x", 1, None]]
ODD_TEXTS = [
    "\ud800",
    "lone \udcff in the middle",
    "nul\0inside",
    "bell\x07 and escape \x1b[31m",
    "\u202eright-to-left",
    "\ufeffbom",
    "a" * 300_000,
]


@dataclass
class Case:
    """One fuzz input: the bytes, what was done to the seed, and whether it is definitely corrupt."""

    fmt: str
    data: bytes
    mutation: str
    corrupt: bool


@dataclass
class Outcome:
    """What a reader did with a case."""

    result: str  # "format_error" | "accepted" | "internal" | "hang" | "over_memory" | "missed_corrupt"
    detail: str
    peak: int
    seconds: float


# -- seeds ---------------------------------------------------------------------------------------


@cache
def seeds(fmt: str) -> tuple[bytes, ...]:
    """The unmutated inputs of one format."""
    if fmt == "v8":  # the second with source locations and allocation traces
        return (json.dumps(small_snapshot()).encode(), json.dumps(traced_snapshot()).encode())
    if fmt == "luau":
        return (dump_text(sample_objects(), SAMPLE_ROOTS).encode(),)
    if fmt == "hprof":
        # Segmented and not, 4- and 8-byte ids, HotSpot's and Android's (heaps, arrays without data).
        out_hprof = [small(4)[0].to_bytes(segment_records=2), small(8)[0].to_bytes()]
        out_hprof.append(small(8)[0].to_bytes(segment_records=3))
        out_hprof.append(random_dump(random.Random(3), 4, True)[0])
        return tuple(out_hprof)
    import tempfile

    if fmt == "mlpd":  # a real run of Mono's log profiler: two heapshots, every event a runtime writes
        from heapgen.mlpd import heapshots

        with tempfile.TemporaryDirectory() as tmp:
            return (heapshots(Path(tmp), 5, 7).read_bytes(),)

    from heapdb.loader.formats import luau, snapbin, v8

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for source in ("v8", "luau"):
            src = Path(tmp, f"seed.{source}")
            src.write_bytes(seeds(source)[0])
            graph = (v8 if source == "v8" else luau).read_graph(src)
            for compress in (False, True):
                dest = Path(tmp, f"seed-{source}-{compress}.snapbin")
                snapbin.write_graph(graph, dest, compress=compress)
                out.append(dest.read_bytes())
    return tuple(out)


# -- byte-level mutations (any format) --------------------------------------------------------------


def _truncate(data: bytes, rng: random.Random) -> tuple[bytes, str, bool]:
    cut = rng.randrange(0, len(data))
    return data[:cut], f"truncate at {cut}", True


def _flip(data: bytes, rng: random.Random) -> tuple[bytes, str, bool]:
    out = bytearray(data)
    flips = rng.choice([1, 1, 1, 2, 8])
    for _ in range(flips):
        at = rng.randrange(len(out))
        out[at] ^= 1 << rng.randrange(8)
    return bytes(out), f"flip {flips} bit(s)", False


def _insert(data: bytes, rng: random.Random) -> tuple[bytes, str, bool]:
    at = rng.randrange(len(data) + 1)
    junk = rng.choice([b"\0", b"\xff", b"[", b"{", b'"', b",", b"9" * 30, bytes(rng.randrange(256) for _ in range(8))])
    return data[:at] + junk + data[at:], f"insert {junk[:8]!r} at {at}", False


def _delete(data: bytes, rng: random.Random) -> tuple[bytes, str, bool]:
    at = rng.randrange(len(data))
    n = rng.choice([1, 2, 7, 64])
    return data[:at] + data[at + n :], f"delete {n} byte(s) at {at}", False


BYTE_MUTATIONS = [_truncate, _flip, _insert, _delete]


# -- JSON mutations (V8, Luau) ----------------------------------------------------------------------


def _containers(doc: Any) -> list[tuple[Any, Any, tuple[Any, ...]]]:
    """Every (container, key, path) slot of a parsed document (long arrays sampled)."""
    out: list[tuple[Any, Any, tuple[Any, ...]]] = []
    stack: list[tuple[Any, tuple[Any, ...]]] = [(doc, ())]
    while stack:
        value, path = stack.pop()
        if isinstance(value, dict):
            for k, v in value.items():
                out.append((value, k, (*path, k)))
                stack.append((v, (*path, k)))
        elif isinstance(value, list):
            for i, v in enumerate(value):
                out.append((value, i, (*path, i)))
                stack.append((v, (*path, i)))
    return out


_DEEP = "\x02deep\x02"  # a placeholder for deep nesting, written into the text after json.dumps (which recurses)


def _deep_text(depth: int, rng: random.Random) -> str:
    if rng.random() < 0.5:
        return "[" * depth + "1" + "]" * depth
    return '{"k":' * depth + '"x"' + "}" * depth


def _json_mutation(fmt: str, seed: bytes, rng: random.Random) -> tuple[bytes, str, bool]:
    doc = json.loads(seed)
    slots = _containers(doc)
    container, key, path = rng.choice(slots)
    where = "/".join(map(str, path))
    op = rng.choice(["extreme", "shape", "deep", "text", "delete", "duplicate", "count", "swap", "dangling", "known"])
    corrupt = False
    duplicate: tuple[str, Any] | None = None
    if op == "extreme":
        container[key] = rng.choice(EXTREME_NUMBERS)
    elif op == "shape":
        container[key] = rng.choice(WRONG_SHAPES)
    elif op == "deep":
        container[key] = _DEEP
    elif op == "text":
        container[key] = rng.choice(ODD_TEXTS)
    elif op == "delete":
        del container[key]
    elif op == "duplicate" and isinstance(container, dict):
        duplicate = (str(key), rng.choice([*EXTREME_NUMBERS[:4], *WRONG_SHAPES[:4]]))
        container["\x01dup\x01"] = duplicate[1]
    elif op == "count" and isinstance(container[key], list):
        items = container[key]
        if items and rng.random() < 0.5:
            items.pop(rng.randrange(len(items)))
        else:
            items.insert(rng.randrange(len(items) + 1), rng.choice([0, 1, 7, 2**31]))
        # One value more or less in V8's nodes/edges can never match the declared counts.
        corrupt = fmt == "v8" and path in (("nodes",), ("edges",))
    elif op == "swap" and isinstance(container, list) and len(container) > 1:
        other = rng.randrange(len(container))
        container[key], container[other] = container[other], container[key]
    elif op == "dangling":
        if fmt == "v8":
            edges = doc.get("edges")
            if isinstance(edges, list) and len(edges) >= 3:
                at = 3 * rng.randrange(len(edges) // 3) + 2
                edges[at] = rng.choice([7 * 1000, 7 * 2**31, 7 * 7 + 3])
                corrupt = True
                where = f"edges/{at}"
        else:
            objects = doc.get("objects")
            holders = [o for o in objects.values() if isinstance(o, dict) and o.get("type") == "table"]
            if holders:
                holder = rng.choice(holders)
                holder["metatable"] = rng.choice(["0xdead", "0x8000000000000000", "zz", "0"])
                where = "a table's metatable"
    elif op == "known":
        corrupt = _known_corruption(fmt, doc, rng)
        where = "a known corruption"
    text = json.dumps(doc)
    if json.dumps(_DEEP) in text:
        text = text.replace(json.dumps(_DEEP), _deep_text(rng.choice([70, 1000, 5000, 20000]), rng), 1)
    if duplicate is not None:
        text = text.replace('"\\u0001dup\\u0001"', json.dumps(duplicate[0]), 1)
    return text.encode("utf-8", "surrogatepass"), f"{op} at {where}"[:200], corrupt


def _known_corruption(fmt: str, doc: dict[str, Any], rng: random.Random) -> bool:
    """The drills' findings: each is definitely corrupt and must be rejected."""
    if fmt == "v8":
        meta = doc["snapshot"]["meta"]
        choice = rng.randrange(4)
        if choice == 0:
            meta["node_types"] = "hidden"
        elif choice == 1:
            meta["node_fields"][rng.randrange(len(meta["node_fields"]))] = ["type"]
        elif choice == 2:
            doc["snapshot"]["meta"] = _DEEP
        else:
            doc["snapshot"]["node_count"] += rng.choice([1, -1])
        return True
    objects = doc["objects"]
    address = rng.choice([a for a in objects if a != "0"])
    choice = rng.randrange(4)
    if choice == 0:
        objects["0x8000000000000000"] = dict(objects[address])
    elif choice == 1:
        objects[address]["size"] = rng.choice([2**63, -(2**63) - 1, 2**64])
    elif choice == 2:
        objects[address] = rng.choice(["string", 1, [], None])
    else:
        objects[address]["pairs"] = rng.choice(["0x1000", {"a": 1}, 3])
        objects[address]["type"] = "table"
    return True


# -- snap.bin mutations ---------------------------------------------------------------------------


def _chunks(data: bytes) -> list[tuple[int, tuple[Any, ...]]]:
    """(offset, header fields) of each chunk of a well-formed seed."""
    out = []
    offset = FILE_HEADER.size
    while offset + CHUNK_HEADER.size <= len(data):
        fields = CHUNK_HEADER.unpack_from(data, offset)
        out.append((offset, fields))
        offset += CHUNK_HEADER.size + fields[4]
    return out


def _chunk_bytes(kind: int, codec: int, flags: int, count: int, payload: bytes, raw: int) -> bytes:
    fields = CHUNK_FIELDS.pack(kind, codec, flags, count, len(payload), raw, zlib.crc32(payload))
    return fields + struct.pack("<I", zlib.crc32(fields)) + payload


@cache
def _bomb_frame(size: int) -> bytes:
    """A small zstd frame that declares (and holds) ``size`` zero bytes."""
    import zstandard

    compressor = zstandard.ZstdCompressor(level=3).compressobj(size=size)
    block = bytes(1 << 20)
    parts = [compressor.compress(block) for _ in range(size >> 20)]
    parts.append(compressor.flush())
    return b"".join(parts)


def _snapbin_mutation(seed: bytes, rng: random.Random) -> tuple[bytes, str, bool]:
    import zstandard

    chunks = _chunks(seed)
    offset, (kind, codec, flags, count, stored, raw, _crc, _header_crc) = rng.choice(chunks)
    payload = seed[offset + CHUNK_HEADER.size : offset + CHUNK_HEADER.size + stored]
    before, after = seed[:offset], seed[offset + CHUNK_HEADER.size + stored :]
    op = rng.choice(["count", "raw", "kind", "codec", "payload", "payload", "bomb", "duplicate"])
    if op == "count":
        new = rng.choice([count + 1, count - 1 if count else 1, 0xFFFFFFFF, count * 2 + 1])
        chunk = _chunk_bytes(kind, codec, flags, new, payload, raw)
        # The trailer checks its counts against what was read; every other chunk's columns against its count.
        return before + chunk + after, f"count {count} -> {new} in a kind-{kind} chunk", new != count and kind != 15
    if op == "raw":
        new = rng.choice([raw + 1, max(raw - 1, 0), 1 << 40, 0])
        chunk = _chunk_bytes(kind, codec, flags, count, payload, new)
        return before + chunk + after, f"raw {raw} -> {new}", new != raw
    if op == "kind":
        new = rng.choice([0, 7, 14, 15, 1, 2, 3, 4, 5, 6, 200])
        chunk = _chunk_bytes(new, codec, rng.choice([0, 1]), count, payload, raw)
        return before + chunk + after, f"kind {kind} -> {new}", False
    if op == "codec":
        new = rng.choice([0, 1, 2, 255])
        chunk = _chunk_bytes(kind, new, flags, count, payload, raw)
        return before + chunk + after, f"codec {codec} -> {new}", False
    if op == "payload":
        data = bytearray(zstandard.ZstdDecompressor().decompress(payload) if codec == 1 else payload)
        if not data:
            return seed, "payload (empty chunk left alone)", False
        width = rng.choice([1, 4, 8])
        at = rng.randrange(max(len(data) - width + 1, 1))
        value = rng.choice([0, 1, 2**width * 8 - 1, rng.randrange(2 ** (width * 8)), 0x80 << (width * 8 - 8)])
        data[at : at + width] = value.to_bytes(width, "little")[: len(data) - at]
        body = zstandard.ZstdCompressor().compress(bytes(data)) if codec == 1 else bytes(data)
        chunk = _chunk_bytes(kind, codec, flags, count, body, len(data))
        return before + chunk + after, f"payload of a kind-{kind} chunk: {width} byte(s) at {at} = {value}", False
    if op == "duplicate":
        here = seed[offset : offset + CHUNK_HEADER.size + stored]
        return before + here + here + after, f"kind-{kind} chunk twice", False
    # A decompression bomb: chunks whose small frames each declare hundreds of MiB.
    size = rng.choice([64 << 20, 256 << 20, 700 << 20])
    frame = _bomb_frame(size)
    bombs = b"".join(_chunk_bytes(rng.choice([2, 4, 99]), 1, 0, 0, frame, size) for _ in range(rng.choice([1, 4, 30])))
    return before + bombs + seed[offset:], f"bomb: frames declaring {size >> 20} MiB each", True


# -- hprof mutations ------------------------------------------------------------------------------
#
# A seed is first parsed into its top-level records and, inside its heap-dump records, its
# sub-records with the positions of the fields worth rewriting: declared counts and lengths, ids,
# super class ids, type codes. Mutations then rewrite those fields, or move whole records, and say
# whether the result is definitely malformed (a case the reader must reject).

HPROF_U4_EXTREMES = [0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 2**31 // 8, 0x00FFFFFF]
HPROF_U2_EXTREMES = [0, 1, 0x7FFF, 0xFFFF]
NO_SUCH_ID = 0x7EADBEE0  # above every id the seeds use, and fits 4-byte ids


@dataclass
class _Sub:
    """One heap-dump sub-record of a well-formed seed: its tag, where it starts and ends, and the
    fields a mutation rewrites (name -> (offset, width)); a class dump's also its id, its super
    class's, the positions of its type codes and the bytes of its own instance fields."""

    tag: int
    start: int
    end: int
    fields: dict[str, tuple[int, int]]
    types: list[int]
    ident: int = 0
    super_id: int = 0
    own_bytes: int = 0


@dataclass
class _HprofSeed:
    """A parsed seed: its id size and where the header holds it; its top-level records as (offset,
    tag, length); its heap-dump sub-records, each with the index of its record."""

    data: bytes
    id_size: int
    id_at: int
    records: list[tuple[int, int, int]]
    subs: list[tuple[int, _Sub]]

    def u(self, at: int, width: int) -> int:
        return int.from_bytes(self.data[at : at + width], "big")

    def record_bytes(self, index: int) -> bytes:
        offset, _, length = self.records[index]
        return self.data[offset : offset + 9 + length]

    def heap_records(self) -> list[int]:
        return [i for i, (_, tag, _) in enumerate(self.records) if tag in (0x0C, 0x1C)]

    def classes(self) -> list[_Sub]:
        return [sub for _, sub in self.subs if sub.tag == 0x20]

    def with_records(self, order: list[bytes]) -> bytes:
        """The header, then ``order`` as the records."""
        return self.data[: self.records[0][0]] + b"".join(order)


def _type_size(code: int, id_size: int) -> int:
    return BASIC_TYPES[code][1] or id_size


def _class_dump(data: bytes, id_size: int, pos: int) -> _Sub:
    """A CLASS_DUMP sub-record at ``pos``: its counts, type codes and own instance field bytes."""
    p = pos + 1
    sub = _Sub(0x20, pos, 0, {"class id": (p, id_size), "super": (p + id_size + 4, id_size)}, [])
    sub.ident = int.from_bytes(data[p : p + id_size], "big")
    sub.super_id = int.from_bytes(data[p + id_size + 4 : p + 2 * id_size + 4], "big")
    p += 7 * id_size + 4
    sub.fields["instance size"] = (p, 4)
    p += 4
    for section, name_width, with_value in (
        ("constant pool", 2, True),
        ("statics", id_size, True),
        ("fields", id_size, False),
    ):
        count = int.from_bytes(data[p : p + 2], "big")
        sub.fields[f"{section} count"] = (p, 2)
        p += 2
        for _ in range(count):
            code = data[p + name_width]
            sub.types.append(p + name_width)
            size = _type_size(code, id_size)
            p += name_width + 1 + (size if with_value else 0)
            if not with_value:
                sub.own_bytes += size
    sub.end = p
    return sub


def _object_sub(data: bytes, id_size: int, pos: int, tag: int) -> _Sub:
    """An instance, object array or primitive array sub-record at ``pos``."""
    p = pos + 1
    fields = {"object id": (p, id_size), "length": (p + id_size + 4, 4)}
    count = int.from_bytes(data[p + id_size + 4 : p + id_size + 8], "big")
    if tag == 0x21:
        fields["class id"] = (p + id_size + 4, id_size)
        fields["length"] = (p + 2 * id_size + 4, 4)
        length = int.from_bytes(data[p + 2 * id_size + 4 : p + 2 * id_size + 8], "big")
        end = p + 2 * id_size + 8 + length
    elif tag == 0x22:
        fields["class id"] = (p + id_size + 8, id_size)
        end = p + 2 * id_size + 8 + count * id_size
    else:
        fields["type"] = (p + id_size + 8, 1)
        end = p + id_size + 9 + (count * _type_size(data[p + id_size + 8], id_size) if tag == 0x23 else 0)
    return _Sub(tag, pos, end, fields, [])


def _hprof_subs(data: bytes, id_size: int, start: int, end: int) -> list[_Sub]:
    """The sub-records of one heap-dump record's body ``data[start:end]`` (of a well-formed seed)."""
    out = []
    pos = start
    while pos < end:
        tag = data[pos]
        if tag == 0x20:
            sub = _class_dump(data, id_size, pos)
        elif tag in (0x21, 0x22, 0x23, 0xC3):
            sub = _object_sub(data, id_size, pos, tag)
        elif tag == 0xFE:  # Android's HEAP_DUMP_INFO
            sub = _Sub(tag, pos, pos + 5 + id_size, {"heap name": (pos + 5, id_size)}, [])
        else:  # a GC root: its id, then what its kind adds (-1: another id)
            extra = ROOT_TAGS[tag][1]
            sub = _Sub(
                tag, pos, pos + 1 + id_size + (id_size if extra < 0 else extra), {"root id": (pos + 1, id_size)}, []
            )
        out.append(sub)
        pos = sub.end
    return out


@cache
def _parse_hprof(data: bytes) -> _HprofSeed:
    """A seed's records and sub-records (seeds are few: parsed once each)."""
    id_at = data.index(b"\0") + 1
    id_size = int.from_bytes(data[id_at : id_at + 4], "big")
    pos = id_at + 12
    records: list[tuple[int, int, int]] = []
    subs: list[tuple[int, _Sub]] = []
    while pos + 9 <= len(data):
        tag, length = data[pos], struct.unpack_from(">I", data, pos + 5)[0]
        if tag in (0x0C, 0x1C):
            subs += [(len(records), sub) for sub in _hprof_subs(data, id_size, pos + 9, pos + 9 + length)]
        records.append((pos, tag, length))
        pos += 9 + length
    return _HprofSeed(data, id_size, id_at, records, subs)


def _put(data: bytes, at: int, width: int, value: int) -> bytes:
    return data[:at] + (value % (1 << (8 * width))).to_bytes(width, "big") + data[at + width :]


def _hprof_record_mutation(seed: _HprofSeed, rng: random.Random) -> tuple[bytes, str, bool]:
    """A top-level record's length, tag, or any 4 bytes of its body set to an extreme value. A
    record's length is certainly wrong when it runs past the file's end or changes a record whose
    length is fixed (LOAD_CLASS, STACK_FRAME)."""
    data = seed.data
    at, tag, length = rng.choice(seed.records)
    choice = rng.random()
    if choice < 0.4:
        value = rng.choice([*HPROF_U4_EXTREMES, length + 1, max(length - 1, 0), rng.randrange(2**32)])
        past_end = at + 9 + value > len(data)
        fixed = tag in (0x02, 0x04) and value != length
        return _put(data, at + 5, 4, value), f"record length {length} -> {value} at {at}", past_end or fixed
    if choice < 0.5:
        new = rng.choice([0x00, 0x01, 0x02, 0x04, 0x05, 0x0C, 0x1C, 0x2C, 0xFF])
        return _put(data, at, 1, new), f"record tag 0x{tag:02x} -> 0x{new:02x} at {at}", False
    if length < 4:
        return _flip(data, rng)
    where = at + 9 + rng.randrange(length - 3)
    value = rng.choice([0, 1, 0x7FFFFFFF, 0xFFFFFFFF, 0x80000000, 0xFF, 0x20, 0x21, 0x22, 0x23])
    return _put(data, where, 4, value), f"body u4 {value:#x} at {where}", False


def _hprof_count_mutation(seed: _HprofSeed, rng: random.Random) -> tuple[bytes, str, bool]:
    """A declared count or length set to an extreme value: an instance's field bytes, an array's
    length, a class dump's constant pool, static and field counts or its declared instance size.

    Certainly wrong: an instance's length changed when its class was dumped before it (its class
    decides its length), and an array whose data would now run past its record's end."""
    candidates = [
        (r, sub, name)
        for r, sub in seed.subs
        for name in sub.fields
        if "count" in name or name.endswith(("length", "size"))
    ]
    record, sub, name = rng.choice(candidates)
    at, width = sub.fields[name]
    old = seed.u(at, width)
    extremes = HPROF_U4_EXTREMES if width == 4 else HPROF_U2_EXTREMES
    value = rng.choice([*extremes, old + 1, max(old - 1, 0), old * 2 + 1])
    corrupt = False
    if value != old and name == "length":
        if sub.tag == 0x21:
            class_id = seed.u(*sub.fields["class id"])
            corrupt = any(c.ident == class_id and c.start < sub.start for c in seed.classes())
        elif sub.tag in (0x22, 0x23):
            offset, _, length = seed.records[record]
            element = seed.id_size if sub.tag == 0x22 else _type_size(seed.data[sub.fields["type"][0]], seed.id_size)
            corrupt = at + 4 + (seed.id_size if sub.tag == 0x22 else 1) + value * element > offset + 9 + length
    return _put(seed.data, at, width, value), f"sub-record 0x{sub.tag:02x} {name} {old} -> {value} at {at}", corrupt


def _hprof_header_mutation(seed: _HprofSeed, rng: random.Random) -> tuple[bytes, str, bool]:
    """The header's identifier size: the other valid one (every id then misread), or one no JVM
    writes (certainly wrong)."""
    value = rng.choice([0, 1, 2, 3, 4, 5, 8, 16, 0xFFFFFFFF])
    data = _put(seed.data, seed.id_at, 4, value)
    return data, f"identifier size {seed.id_size} -> {value}", value not in (4, 8)


def _hprof_layout_mutation(seed: _HprofSeed, rng: random.Random) -> tuple[bytes, str, bool]:
    """A class dump's layout: a type code (of a constant, a static or a field) set to one no JVM
    writes (certainly wrong) or to another basic type, or its field count changed."""
    classes = [c for c in seed.classes() if c.types] or seed.classes()
    cls = rng.choice(classes)
    if cls.types and rng.random() < 0.7:
        at = rng.choice(cls.types)
        value = rng.choice([0, 1, 3, 12, 0x20, 0xFF, *BASIC_TYPES])
        corrupt = value not in BASIC_TYPES
        return _put(seed.data, at, 1, value), f"type code {seed.data[at]} -> {value} at {at}", corrupt
    at, width = cls.fields["fields count"]
    old = seed.u(at, width)
    value = rng.choice([old + 1, max(old - 1, 0), 0, 0xFFFF])
    return _put(seed.data, at, width, value), f"field count {old} -> {value} of the class dump at {cls.start}", False


def _hprof_super_mutation(seed: _HprofSeed, rng: random.Random) -> tuple[bytes, str, bool]:
    """Super class ids: a class its own super class or two classes each other's (a cycle: certainly
    wrong), a super class the dump lacks, another class's, none; or a deep chain of new classes."""
    classes = seed.classes()
    op = rng.choice(["self", "pair", "missing", "other", "none", "chain", "chain"])
    if op == "chain" or len(classes) < 2:
        return _hprof_chain(seed, rng)
    cls = rng.choice(classes)
    at, width = cls.fields["super"]
    if op == "self":
        return _put(seed.data, at, width, cls.ident), f"class at {cls.start} its own super class", True
    if op == "pair":
        other = rng.choice([c for c in classes if c is not cls])
        data = _put(seed.data, at, width, other.ident)
        data = _put(data, other.fields["super"][0], width, cls.ident)
        return data, f"classes at {cls.start} and {other.start} each other's super class", True
    value = {"missing": NO_SUCH_ID, "none": 0}.get(op, rng.choice(classes).ident)
    return _put(seed.data, at, width, value), f"super class of the class at {cls.start} -> {value:#x}", False


def _hprof_chain(seed: _HprofSeed, rng: random.Random) -> tuple[bytes, str, bool]:
    """A chain of new classes appended to a heap-dump record, each the super class of the next, the
    first a subclass of a seed class, one instance of each; closed into a cycle (certainly wrong) or
    not. Every hundredth class declares an object field, every thousandth an int field too."""
    ids = seed.id_size
    depth = rng.choice([2, 50, 500, 2000])  # deeper chains are the bounds tests' (tests/fuzz/test_hprof_bounds.py)
    cycle = rng.random() < 0.25
    base = rng.choice(seed.classes())
    inherited = _hierarchy_bytes(seed, base.ident)
    first = 0x7F000000
    body = bytearray()
    for level in range(depth):
        cid = first + 16 * level
        sup = (first + 16 * (depth - 1) if cycle else base.ident) if level == 0 else cid - 16
        fields = [(1, 2)] if level % 100 == 99 else []
        fields += [(2, 10)] if level % 1000 == 999 else []
        inherited += sum(_type_size(t, ids) for _, t in fields)
        body += b"\x20" + cid.to_bytes(ids, "big") + bytes(4) + sup.to_bytes(ids, "big") + bytes(5 * ids)
        body += struct.pack(">IHHH", inherited, 0, 0, len(fields))
        body += b"".join(name.to_bytes(ids, "big") + bytes([t]) for name, t in fields)
        body += b"\x21" + (cid + 8).to_bytes(ids, "big") + bytes(4) + cid.to_bytes(ids, "big")
        body += struct.pack(">I", inherited) + bytes(inherited)
    where = "cycle" if cycle else f"chain under the class at {base.start}"
    return _append_subs(seed, bytes(body)), f"{depth} classes in a {where}", cycle


def _hierarchy_bytes(seed: _HprofSeed, class_id: int) -> int:
    """The instance field bytes of a seed class over its super classes."""
    by_id = {c.ident: c for c in seed.classes()}
    total, seen = 0, set()
    while class_id in by_id and class_id not in seen:
        seen.add(class_id)
        total += by_id[class_id].own_bytes
        class_id = by_id[class_id].super_id
    return total


def _append_subs(seed: _HprofSeed, body: bytes) -> bytes:
    """The seed with ``body`` (sub-records) added at the end of its last heap-dump record."""
    last = seed.heap_records()[-1]
    tag = seed.records[last][1]
    order = [seed.record_bytes(i) for i in range(len(seed.records))]
    order[last] = HprofWriter.record(tag, order[last][9:] + body)
    return seed.with_records(order)


def _hprof_segment_mutation(seed: _HprofSeed, rng: random.Random) -> tuple[bytes, str, bool]:
    """Whole heap-dump records: one deleted (a lost segment; certainly wrong only when it was the
    heap's only record), moved before the STRING and LOAD_CLASS records it needs, two swapped, one
    written twice (certainly wrong when it holds an object or class: ids written twice), one split in
    two (certainly wrong inside a sub-record), empty ones added, or the HEAP_DUMP_END removed or
    moved before the last segment (certainly wrong: the dump looks truncated)."""
    heaps = seed.heap_records()
    order = [seed.record_bytes(i) for i in range(len(seed.records))]
    ends = [i for i, (_, tag, _) in enumerate(seed.records) if tag == 0x2C]
    pick = rng.choice(heaps)
    op = rng.choice(["delete", "move", "swap", "twice", "split", "empty", "end"])
    if op == "delete":
        del order[pick]
        return seed.with_records(order), f"heap-dump record {pick} deleted", len(heaps) == 1
    if op == "move":
        order.insert(0, order.pop(pick))
        return seed.with_records(order), f"heap-dump record {pick} moved first", False
    if op == "swap" and len(heaps) > 1:
        a, b = rng.sample(heaps, 2)
        order[a], order[b] = order[b], order[a]
        return seed.with_records(order), f"heap-dump records {a} and {b} swapped", False
    if op == "twice":
        order.insert(pick, order[pick])
        holds_ids = any(sub.tag in (0x20, 0x21, 0x22, 0x23, 0xC3) for r, sub in seed.subs if r == pick)
        return seed.with_records(order), f"heap-dump record {pick} written twice", holds_ids
    if op == "split":
        return _hprof_split(seed, order, pick, rng)
    if op == "end" and ends:
        end = order.pop(ends[0])
        if rng.random() < 0.5:
            return seed.with_records(order), "HEAP_DUMP_END deleted", True
        order.insert(heaps[-1], end)
        return seed.with_records(order), "HEAP_DUMP_END before the last segment", True
    count = rng.choice([1, 100, 10_000, 100_000])
    empty = HprofWriter.record(0x1C if ends else 0x0C, b"")
    order[pick:pick] = [empty] * count
    return seed.with_records(order), f"{count} empty heap-dump records before record {pick}", False


def _hprof_split(seed: _HprofSeed, order: list[bytes], pick: int, rng: random.Random) -> tuple[bytes, str, bool]:
    """Heap-dump record ``pick`` cut in two records of its tag, between two sub-records or inside one."""
    offset, tag, length = seed.records[pick]
    subs = [sub for r, sub in seed.subs if r == pick]
    inside = bool(subs) and rng.random() < 0.5
    if inside:
        sub = rng.choice(subs)
        cut = rng.randrange(sub.start + 1, sub.end) - offset - 9
    else:
        cut = rng.choice([0, length, *(sub.start - offset - 9 for sub in subs)])
    body = order[pick][9:]
    order[pick : pick + 1] = [HprofWriter.record(tag, body[:cut]), HprofWriter.record(tag, body[cut:])]
    where = "inside a sub-record" if inside else "between sub-records"
    return seed.with_records(order), f"heap-dump record {pick} split at {cut}, {where}", inside


ODD_NAMES = [
    b"",
    b"a" * 300_000,
    b"\xff\xfe\xc0\x80 not UTF-8",
    b"nul\0inside",
    "\ud800".encode("utf-8", "surrogatepass"),
    b"bell\x07 and escape \x1b[31m",
    "é".encode() * 1000,
]


def _hprof_string_mutation(seed: _HprofSeed, rng: random.Random) -> tuple[bytes, str, bool]:
    """A STRING record: its length changed (certainly wrong when shorter than its id or past the
    file's end), its text replaced by odd bytes (invalid UTF-8, NUL, 300,000 bytes), or its id
    written again with another text."""
    strings = [i for i, (_, tag, _) in enumerate(seed.records) if tag == 0x01]
    i = rng.choice(strings)
    at, _, length = seed.records[i]
    op = rng.choice(["length", "length", "text", "twice"])
    if op == "length":
        value = rng.choice([0, seed.id_size - 1, length - 1, length + 1, 0x7FFFFFFF, 0xFFFFFFFF])
        corrupt = value < seed.id_size or at + 9 + value > len(seed.data)
        return _put(seed.data, at + 5, 4, value), f"STRING length {length} -> {value} at {at}", corrupt
    ident = seed.data[at + 9 : at + 9 + seed.id_size]
    text = rng.choice(ODD_NAMES)
    order = [seed.record_bytes(k) for k in range(len(seed.records))]
    if op == "text":
        order[i] = HprofWriter.record(0x01, ident + text)
    else:
        order.insert(i + 1, HprofWriter.record(0x01, ident + text))
    return seed.with_records(order), f"STRING at {at} {'replaced' if op == 'text' else 'twice'}: {text[:12]!r}", False


def _hprof_id_mutation(seed: _HprofSeed, rng: random.Random) -> tuple[bytes, str, bool]:
    """An id in a sub-record (an object's, its class's, a root's, a heap's name) set to one no record
    has, to null, or to another object's or class's id (certainly wrong for an object's own id: an
    id written twice)."""
    candidates = [(sub, name) for _, sub in seed.subs for name in sub.fields if name.endswith(("id", "heap name"))]
    sub, name = rng.choice(candidates)
    at, width = sub.fields[name]
    taken = [seed.u(*s.fields[key]) for _, s in seed.subs for key in ("object id", "class id") if key in s.fields]
    taken += [c.ident for c in seed.classes()]
    value = rng.choice([NO_SUCH_ID, 0, rng.choice(taken)])
    old = seed.u(at, width)
    is_own = name == "object id" or (sub.tag == 0x20 and name == "class id")
    corrupt = is_own and value != old and value in taken
    return _put(seed.data, at, width, value), f"sub-record 0x{sub.tag:02x} {name} {old:#x} -> {value:#x}", corrupt


HPROF_MUTATIONS: list[Callable[[_HprofSeed, random.Random], tuple[bytes, str, bool]]] = [
    _hprof_record_mutation,
    _hprof_count_mutation,
    _hprof_count_mutation,
    _hprof_header_mutation,
    _hprof_layout_mutation,
    _hprof_layout_mutation,
    _hprof_super_mutation,
    _hprof_super_mutation,
    _hprof_segment_mutation,
    _hprof_segment_mutation,
    _hprof_string_mutation,
    _hprof_id_mutation,
]


def _hprof_mutation(seed: bytes, rng: random.Random) -> tuple[bytes, str, bool]:
    """One of :data:`HPROF_MUTATIONS`, on the seed's parsed records and sub-records."""
    return rng.choice(HPROF_MUTATIONS)(_parse_hprof(seed), rng)


# -- .mlpd --------------------------------------------------------------------------------------------


@cache
def _mlpd_buffer_ends(data: bytes) -> frozenset[int]:
    """Where the header and each buffer of an .mlpd file end (the file's layout: docs/format.md)."""
    at = 38  # the fixed header, then three length-prefixed strings
    for _ in range(3):
        at += 4 + struct.unpack_from("<I", data, at)[0]
    ends = {at}
    while at + 48 <= len(data):
        at += 48 + struct.unpack_from("<I", data, at + 4)[0]
        ends.add(at)
    return frozenset(ends)


# -- cases and the oracle -------------------------------------------------------------------------


def make_case(fmt: str, rng: random.Random) -> Case:
    """One mutated input of ``fmt``: a structure-aware mutation or a byte-level one."""
    seed = rng.choice(seeds(fmt))
    if rng.random() < 0.35 or fmt == "mlpd":
        data, mutation, corrupt = rng.choice(BYTE_MUTATIONS)(seed, rng)
        # Under checksums any single changed byte is caught; in JSON only a truncation is certain.
        corrupt = corrupt or (fmt == "snapbin" and data != seed and not mutation.startswith("insert"))
        if fmt == "mlpd" and len(data) in _mlpd_buffer_ends(seed):
            corrupt = False  # cut between two buffers: a shorter log (it has no trailer), maybe still whole
    elif fmt == "snapbin":
        data, mutation, corrupt = _snapbin_mutation(seed, rng)
    elif fmt == "hprof":
        data, mutation, corrupt = _hprof_mutation(seed, rng)
    else:
        data, mutation, corrupt = _json_mutation(fmt, seed, rng)
    return Case(fmt, data, mutation, corrupt)


def readers(fmt: str) -> list[Callable[[Path], Any]]:
    """Every entry point that reads a file of ``fmt``, the reader first (for Luau also Luau's own path
    attribution, which must not crash either)."""
    from heapdb.loader.formats import luau, snapbin, v8
    from heapdb.loader.luau_heapgraph import heapgraph_files

    if fmt == "v8":
        return [v8.read_graph]
    if fmt == "luau":
        return [luau.read_graph, heapgraph_files]
    if fmt == "hprof":
        from heapdb.loader.formats import hprof

        return [hprof.read_graph]
    if fmt == "mlpd":
        from heapdb.loader.formats import mlpd

        return [mlpd.read_graph]
    return [snapbin.read_graph]


def memory_bound(size: int) -> int:
    return MEMORY_MULTIPLE * size + MEMORY_FLOOR


@cache
def _warm(fmt: str, directory: Path) -> None:
    """Read every seed of ``fmt`` once, untimed: the first call of a numba kernel compiles it (seconds
    on a fresh checkout), which is not the reader hanging on the case that happens to come first."""
    for n, seed in enumerate(seeds(fmt)):
        path = directory / f"seed{n}.{fmt}"
        path.write_bytes(seed)
        for read in readers(fmt):
            read(path)
        os.unlink(path)


def run_case(case: Case, directory: Path) -> Outcome:
    """Read ``case`` with every reader of its format and judge the result (see the module docstring)."""
    _warm(case.fmt, directory)
    path = directory / f"case.{case.fmt}"
    path.write_bytes(case.data)
    worst = Outcome("accepted", "", 0, 0.0)
    for i, read in enumerate(readers(case.fmt)):
        tracemalloc.start()
        started = time.perf_counter()
        try:
            graph = read(path)
            if hasattr(graph, "validate"):
                graph.validate()
            outcome = Outcome("accepted", "", 0, 0.0)
        except FormatError as e:
            outcome = Outcome("format_error", str(e)[:300], 0, 0.0)
            if not (e.path and (e.offset is not None or e.record is not None)):
                outcome = Outcome("internal", f"FormatError without a location: {e}"[:300], 0, 0.0)
        except Exception as e:
            outcome = Outcome("internal", f"{type(e).__name__}: {e}"[:300], 0, 0.0)
        finally:
            seconds = time.perf_counter() - started
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        outcome.peak, outcome.seconds = peak, seconds
        # Luau's path attribution walks only what the roots reach: the reader proper judges the rest.
        if outcome.result == "accepted" and case.corrupt and i == 0:
            outcome.result, outcome.detail = "missed_corrupt", f"{read.__module__}.{read.__name__} accepted it"
        elif outcome.result != "internal" and seconds > HANG_SECONDS:
            outcome.result, outcome.detail = "hang", f"{seconds:.1f} s"
        elif outcome.result != "internal" and peak > memory_bound(len(case.data)):
            outcome.result, outcome.detail = "over_memory", f"peak {peak} bytes for a {len(case.data)}-byte file"
        if _RANK[outcome.result] > _RANK[worst.result]:
            worst = outcome
        else:
            worst.peak, worst.seconds = max(worst.peak, peak), max(worst.seconds, seconds)
    os.unlink(path)
    return worst


_RANK = {"accepted": 0, "format_error": 1, "hang": 2, "over_memory": 3, "missed_corrupt": 4, "internal": 5}
