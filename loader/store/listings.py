"""The byte-array properties the questions read back: the type listings ``find`` searches and the
references a snapshot's rules keep from retaining.

Their own module, apart from :mod:`.summaries` which computes them at load, so that a question
reads them without importing the analysis (and numba, a quarter of a second of every CLI question).
"""

from __future__ import annotations

import functools
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

# The values of a TypeListing's ids, name ends, self sizes and path signatures: int64 little-endian.
LISTING_DTYPE = np.dtype("<i8")
DISTANCE_DTYPE = np.dtype("<i4")  # a TypeListing's distances

# From this store version on, a listing's columns are stored packed (:func:`pack`); before it, as the
# raw bytes of their values, and the names as a string. Packed, listings take 5 to 60 times less room
# (docs/benchmarks.md, "Packed type listings"): 132 MB raw against 2 MB for the 220 MB snapshot, 623 MB
# against 84 MB for a 1.3 GB one of 13 million varied objects. Reading one back costs a decompression
# in the process that asks: 1.7 s for every listing of those 13 million objects.
PACKED_LISTINGS_VERSION = 6
# zlib's level. On those 13 million objects, 1 packs in 3.8 s to 90.5 MB, 6 in 7.0 s to 83.7 MB and
# 9 in 10.6 s to 83.3 MB: 6 takes most of what there is, and a load spends the time once.
PACK_LEVEL = 6
# The properties a listing is stored in, on its :TypeGroup (TypeListing.properties).
LISTING_PROPERTIES = (
    "listing_ids",
    "listing_names",
    "listing_name_ends",
    "listing_self_sizes",
    "listing_distances",
    "listing_path_sigs",
)


def pack(values: np.ndarray) -> bytes:
    """``values`` (one-dimensional) as stored packed: their bytes regrouped by significance, every
    value's first byte, then every value's second, and so on, then compressed with zlib. Ids, sizes
    and distances are small numbers in wide integers, so the regrouped high bytes are long runs of
    zeros, and names, types and paths repeat, so their values do too."""
    raw = np.ascontiguousarray(values).view(np.uint8).reshape(-1, values.dtype.itemsize)
    return zlib.compress(raw.T.tobytes(), PACK_LEVEL)


def unpack(data: bytes, dtype: np.dtype) -> np.ndarray:
    """The values :func:`pack` packed, as ``dtype``."""
    raw = np.frombuffer(zlib.decompress(data), dtype=np.uint8)
    if raw.size % dtype.itemsize:
        raise ValueError(f"a packed listing column of {raw.size} bytes does not hold {dtype.itemsize}-byte values")
    return np.ascontiguousarray(raw.reshape(dtype.itemsize, -1).T).view(dtype).reshape(-1)


def _column(data: bytes, dtype: np.dtype, packed: bool) -> np.ndarray:
    """One stored listing column's values: packed (:func:`pack`) or raw, by the snapshot's store version."""
    return unpack(data, dtype) if packed else np.frombuffer(data, dtype=dtype)


def listing_ids(data: bytes, store_version: int) -> np.ndarray:
    """The ids of a stored ``listing_ids`` property of a snapshot stored at ``store_version``."""
    return _column(data, LISTING_DTYPE, store_version >= PACKED_LISTINGS_VERSION)


@dataclass(frozen=True)
class DroppedReferences:
    """The references a snapshot's rules keep from retaining (ignored, weak, outranked by an owner)
    that its ``:REF`` relationships still record, by object pair: ``holders[i]`` to ``targets[i]``,
    sorted by target, then holder. Stored on the snapshot's root object as two byte arrays of
    :data:`LISTING_DTYPE` (:meth:`properties`), read by the questions that walk :REF at question time."""

    holders: np.ndarray  # int64[k]
    targets: np.ndarray  # int64[k]

    def properties(self) -> dict[str, Any]:
        return {
            "dropped_holders": self.holders.astype(LISTING_DTYPE).tobytes(),
            "dropped_targets": self.targets.astype(LISTING_DTYPE).tobytes(),
        }

    @classmethod
    def from_properties(cls, holders: bytes, targets: bytes) -> DroppedReferences:
        return cls(np.frombuffer(holders, dtype=LISTING_DTYPE), np.frombuffer(targets, dtype=LISTING_DTYPE))

    @property
    def nbytes(self) -> int:
        return int(self.holders.nbytes + self.targets.nbytes)

    def __len__(self) -> int:
        return int(self.holders.size)

    def contains(self, holder: int, target: int) -> bool:
        """Whether the rules keep every reference from ``holder`` to ``target`` from retaining."""
        lo, hi = np.searchsorted(self.targets, [target, target + 1])
        return bool(np.any(self.holders[lo:hi] == holder))


@dataclass(frozen=True)
class TypeListing:
    """Every object of one type, largest retained first (ties: lower id), for ``find`` and a type's
    page.

    Stored on the type's ``:TypeGroup`` (:meth:`properties`), each packed (:func:`pack`):
    ``listing_ids``, ``listing_name_ends``, ``listing_self_sizes`` (of :data:`LISTING_DTYPE`),
    ``listing_distances`` (of :data:`DISTANCE_DTYPE`, -1 where the root does not reach the object),
    ``listing_path_sigs`` (of :data:`LISTING_DTYPE`, the signature of each object's first retainer
    path, 0 where there is none) and ``listing_names``, the objects' stored names joined into one
    string, as UTF-8; object ``i``'s name is ``names[ends[i - 1]:ends[i]]``, in characters. A search
    for a text in the names of a type with 400,000 objects is then one substring search in one
    string, in process, instead of reading 400,000 nodes, and a page of them by self size or
    distance one sort of two arrays, and the objects of one retainer path (a row of a diff by path)
    one comparison. Loads of an older heapdb have no sizes and
    distances, or no path signatures (None): those orders and filters are read object by object.
    """

    ids: np.ndarray  # int64[k]
    names: str
    ends: np.ndarray  # int64[k]: where each object's name ends in ``names``, in characters
    self_sizes: np.ndarray | None = None  # int64[k]
    distances: np.ndarray | None = None  # int32[k], -1: unreachable
    path_sigs: np.ndarray | None = None  # int64[k], 0: no path

    def properties(self) -> dict[str, Any]:
        found = {
            "listing_ids": pack(self.ids.astype(LISTING_DTYPE)),
            "listing_names": zlib.compress(self.names.encode("utf-8"), PACK_LEVEL),
            "listing_name_ends": pack(self.ends.astype(LISTING_DTYPE)),
        }
        if self.self_sizes is not None and self.distances is not None:
            found["listing_self_sizes"] = pack(self.self_sizes.astype(LISTING_DTYPE))
            found["listing_distances"] = pack(self.distances.astype(DISTANCE_DTYPE))
        if self.path_sigs is not None:
            found["listing_path_sigs"] = pack(self.path_sigs.astype(LISTING_DTYPE))
        return found

    @classmethod
    def from_properties(
        cls,
        store_version: int,
        ids: bytes,
        names: str | bytes,
        ends: bytes,
        self_sizes: bytes | None = None,
        distances: bytes | None = None,
        path_sigs: bytes | None = None,
    ) -> TypeListing:
        """The listing as stored by a load of ``store_version``, packed or raw."""
        packed = store_version >= PACKED_LISTINGS_VERSION
        figures = self_sizes is not None and distances is not None
        return cls(
            _column(ids, LISTING_DTYPE, packed),
            zlib.decompress(names).decode("utf-8") if isinstance(names, bytes) else names,
            _column(ends, LISTING_DTYPE, packed),
            _column(self_sizes, LISTING_DTYPE, packed) if figures else None,  # type: ignore[arg-type]
            _column(distances, DISTANCE_DTYPE, packed) if figures else None,  # type: ignore[arg-type]
            None if path_sigs is None else _column(path_sigs, LISTING_DTYPE, packed),
        )

    @property
    def nbytes(self) -> int:
        """Roughly what the listing holds in memory (a cache weighs it by this)."""
        figures = (
            0 if self.self_sizes is None or self.distances is None else self.self_sizes.nbytes + self.distances.nbytes
        )
        paths = 0 if self.path_sigs is None else self.path_sigs.nbytes
        return int(self.ids.nbytes + self.ends.nbytes + len(self.names) + figures + paths)

    def matching(self, text: str, limit: int, mode: str = "contains") -> np.ndarray:
        """The ids of the first ``limit`` objects whose name matches ``text``, in listing order."""
        return self.ids[self.places(text, limit, mode)]

    def places(self, text: str, limit: int, mode: str = "contains") -> np.ndarray:
        """Where in the listing the first ``limit`` objects are whose name holds ``text`` anywhere
        (``mode`` "contains"), starts with it ("prefix") or is it ("exact"): int64 indexes, in order."""
        if not text:
            return np.arange(min(limit, self.ids.size), dtype=np.int64)
        if mode != "contains":
            return self._starting_with(text, mode == "exact")[:limit]
        found: list[int] = []
        at = self.names.find(text)
        while at >= 0 and len(found) < limit:
            # The object whose name holds position ``at`` (names of length 0 hold none).
            k = int(np.searchsorted(self.ends, at, side="right"))
            end = int(self.ends[k])
            if at + len(text) <= end:
                found.append(k)
            # Either way the next candidate starts in a later name: a match that crosses the end
            # of name k started after every position where one fits inside it.
            at = self.names.find(text, end)
        return np.array(found, dtype=np.int64)

    def _starting_with(self, text: str, whole: bool) -> np.ndarray:
        """Every place whose name starts with ``text`` (is it, if ``whole``), in order. Names are
        compared where they start, not found by searching the text: a common prefix such as "e"
        occurs in most names but starts few, and a search would visit every occurrence."""
        starts = np.concatenate((np.zeros(1, np.int64), self.ends[:-1]))
        lengths = self.ends - starts
        places = np.flatnonzero(lengths == len(text) if whole else lengths >= len(text))
        if self.names.isascii() and text.isascii():
            # One byte a character: compare the text's bytes column by column, a vector at a time.
            for j, byte in enumerate(text.encode("ascii")):
                places = places[self._ascii[starts[places] + j] == byte]
            return places
        names, begins = self.names, starts.tolist()
        return np.array([k for k in places.tolist() if names.startswith(text, begins[k])], dtype=np.int64)

    @functools.cached_property
    def _ascii(self) -> np.ndarray:
        """The names as bytes (for ASCII names only), made at the first prefix or exact search."""
        return np.frombuffer(self.names.encode("ascii"), dtype=np.uint8)

    def ordered(self, places: np.ndarray, sort: str) -> np.ndarray:
        """``places`` by ``sort``: retained size as listed, self size largest first, distance nearest
        first (unreachable last); ties to the lower id, as the stored query ``instances`` orders them."""
        if sort == "retained_size":
            return places
        assert self.self_sizes is not None and self.distances is not None, "a listing without figures"
        if sort == "self_size":
            key = -self.self_sizes[places]
        else:
            distance = self.distances[places].astype(np.int64)
            key = np.where(distance < 0, np.iinfo(np.int64).max, distance)
        return places[np.lexsort((self.ids[places], key))]
