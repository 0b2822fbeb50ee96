"""The snap.bin byte layout: every constant of ``docs/format.md`` that both the reader and the writer use.

A 16-byte file header (magic, version, checksum), then length-prefixed, checksummed, optionally
zstd-compressed chunks, each holding one kind of record in little-endian columns, and a trailer
chunk with counts. The reader and the writer import these; neither restates a number.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from heapdb.loader.graph import NUMERIC_NAME_KINDS, EdgeKind

MAGIC = b"\x89SNAPBIN"
MAJOR = 1
MINOR = 0
FILE_FIELDS = struct.Struct("<8sHH")  # magic, major, minor: what the header checksum covers
FILE_HEADER = struct.Struct(FILE_FIELDS.format + "I")  # ... then crc32 of those bytes
CHUNK_FIELDS = struct.Struct("<HBBIQQI")  # kind, codec, flags, count, stored, raw, payload crc
CHUNK_HEADER = struct.Struct(CHUNK_FIELDS.format + "I")  # ... then crc32 of those bytes

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
# All chunks together may hold at most MAX_EXPANSION times the file's size plus MAX_EXPANSION_FLOOR
# bytes once decompressed, so a small file of chunks that each declare a large size (a decompression
# bomb) is refused before it is inflated. Real snapshots compress 3-10x with zstd, degenerate
# synthetic ones (a million identical objects) about 70x.
MAX_EXPANSION = 256
MAX_EXPANSION_FLOOR = 64 << 20
STRINGS_CHUNK_BYTES = 16 << 20  # the writer starts a new strings chunk past this
STRINGS_CHUNK_COUNT = 1 << 18  # ... or past this many strings
TRAILER_FIELDS = ("chunks", "strings", "types", "objects", "refs", "roots", "names")
TRAILER_BODY = struct.Struct("<7Q")
NUMERIC_KINDS = np.array(sorted(int(k) for k in NUMERIC_NAME_KINDS), dtype=np.uint8)
MAX_EDGE_KIND = int(max(EdgeKind))
MAX_NODE_KINDS = 255  # HeapGraph.kind is a u8, and one value is kept for the synthetic nodes

# Metadata value tags.
TAG_INT, TAG_FLOAT, TAG_STR, TAG_BOOL = 1, 2, 3, 4

# Dtypes of the columns, little-endian whatever the host.
I64, U64, U32, U8 = np.dtype("<i8"), np.dtype("<u8"), np.dtype("<u4"), np.dtype("<u1")

MetaValue = int | float | str | bool


@dataclass
class Totals:
    """Running counts of what a file holds so far, in the trailer's terms.

    The reader checks each chunk refers only to strings and types defined before it, and the trailer
    against these; the writer fills the trailer from them.
    """

    chunks: int = 0
    strings: int = 1  # string 0, the empty string, is implicit
    types: int = 0
    objects: int = 0
    refs: int = 0
    roots: int = 0
    names: int = 0


def sniff(head: bytes) -> bool:
    """Whether ``head`` starts with the snap.bin magic."""
    return head.startswith(MAGIC)
