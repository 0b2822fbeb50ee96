"""A structure-aware fuzzer for heapdb's readers: seeds, mutations, and the oracle every case must meet.

Seeds are the small snapshots of :mod:`heapgen.seeds` that the reader tests read too (a V8
``.heapsnapshot``, a Luau dump, and both as snap.bin, compressed and not; hprof dumps). A mutation
knows its format:

- JSON (V8, Luau): values anywhere in the parsed document replaced by extreme numbers, wrong shapes
  (a string where a list belongs), nesting thousands deep, lone surrogates, NUL and control
  characters, megabyte-long strings; keys deleted or duplicated; elements added or removed (count
  mismatches); numbers swapped; references pointed past the end (dangling targets);
- snap.bin: chunk header fields rewritten *with the checksums recomputed* (so the change reaches the
  parser), payload values rewritten in place (checksums recomputed, recompressed when zstd), and
  decompression bombs (small zstd frames declaring hundreds of MiB);
- hprof: a top-level record's length or tag, or any four bytes of a record's body (ids, counts,
  lengths, sub-record tags), set to extreme values;
- any format: truncation, bit flips, inserted and deleted bytes.

The oracle (:func:`run_case`): the reader returns a valid graph or raises :class:`FormatError`,
nothing else; a case marked *corrupt* (definitely malformed: a truncated file, a flipped bit under a
checksum, a string where a list belongs, a dangling reference, a count mismatch) is rejected; the
peak of traced memory stays within :data:`MEMORY_MULTIPLE` times the file size plus
:data:`MEMORY_FLOOR` (a stated bound: the readers' fixed buffers, and snap.bin's decompression floor);
and no case takes longer than :data:`HANG_SECONDS`.

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
from heapdb.loader.formats.snapbin.layout import CHUNK_FIELDS, CHUNK_HEADER, FILE_HEADER, MAX_EXPANSION
from heapgen.seeds import SAMPLE_ROOTS, dump_text, random_dump, sample_objects, small, small_snapshot, traced_snapshot

FORMATS = ("v8", "luau", "snapbin", "hprof")

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
        out_hprof = [small(4)[0].to_bytes(segment_records=2), small(8)[0].to_bytes()]
        out_hprof.append(random_dump(random.Random(3), 4, True)[0])
        return tuple(out_hprof)
    import tempfile

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


def _hprof_records(data: bytes) -> list[int]:
    """The offsets of an hprof file's top-level records."""
    pos = data.index(b"\0") + 13
    out = []
    while pos + 9 <= len(data):
        out.append(pos)
        pos += 9 + struct.unpack_from(">I", data, pos + 5)[0]
    return out


def _hprof_mutation(seed: bytes, rng: random.Random) -> tuple[bytes, str, bool]:
    """A record's length, or any 4 bytes of a record's body (an id, a count, a length, a tag), set to
    an extreme value; or a record's tag changed."""
    records = _hprof_records(seed)
    at = rng.choice(records)
    choice = rng.random()
    if choice < 0.3:
        value = rng.choice([0, 1, 0x7FFFFFFF, 0xFFFFFFFF, 2**31, rng.randrange(2**32)])
        return seed[: at + 5] + struct.pack(">I", value) + seed[at + 9 :], f"record length {value} at {at}", False
    if choice < 0.4:
        tag = rng.choice([0x00, 0x01, 0x02, 0x0C, 0x1C, 0x2C, 0xFF])
        return seed[:at] + bytes([tag]) + seed[at + 1 :], f"record tag 0x{tag:02x} at {at}", False
    length = struct.unpack_from(">I", seed, at + 5)[0]
    if length < 4:
        return _flip(seed, rng)
    where = at + 9 + rng.randrange(length - 3)
    value = rng.choice([0, 1, 0x7FFFFFFF, 0xFFFFFFFF, 0x80000000, 0xFF, 0x20, 0x21, 0x22, 0x23])
    return seed[:where] + struct.pack(">I", value) + seed[where + 4 :], f"body u4 {value:#x} at {where}", False


# -- cases and the oracle -------------------------------------------------------------------------


def make_case(fmt: str, rng: random.Random) -> Case:
    """One mutated input of ``fmt``: a structure-aware mutation or a byte-level one."""
    seed = rng.choice(seeds(fmt))
    if rng.random() < 0.35:
        data, mutation, corrupt = rng.choice(BYTE_MUTATIONS)(seed, rng)
        # Under checksums any single changed byte is caught; in JSON only a truncation is certain.
        corrupt = corrupt or (fmt == "snapbin" and data != seed and not mutation.startswith("insert"))
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
