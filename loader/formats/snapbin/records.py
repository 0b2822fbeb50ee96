"""The records of a snap.bin file, one per chunk, as :func:`~heapdb.loader.formats.snapbin.iter_records` yields them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from heapdb.loader.formats.snapbin.layout import MetaValue


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
