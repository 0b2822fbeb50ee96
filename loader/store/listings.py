"""The byte-array properties the questions read back: the type listings ``find`` searches and the
references a snapshot's rules keep from retaining.

Their own module, apart from :mod:`.summaries` which computes them at load, so that a question
reads them without importing the analysis (and numba, a quarter of a second of every CLI question).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

# How a TypeListing's ids and name ends are stored: int64 little-endian byte arrays, 8 bytes each.
LISTING_DTYPE = np.dtype("<i8")


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
    """Every object of one type, largest retained first (ties: lower id), for ``find``.

    Stored on the type's ``:TypeGroup`` as three properties (:meth:`properties`): ``listing_ids``
    and ``listing_name_ends`` (byte arrays of :data:`LISTING_DTYPE`) and ``listing_names``, the
    objects' stored names joined into one string; object ``i``'s name is
    ``names[ends[i - 1]:ends[i]]``. A search for a text in the names of a type with 400,000 objects
    is then one substring search in one string, in process, instead of reading 400,000 nodes.
    """

    ids: np.ndarray  # int64[k]
    names: str
    ends: np.ndarray  # int64[k]: where each object's name ends in ``names``, in characters

    def properties(self) -> dict[str, Any]:
        return {
            "listing_ids": self.ids.astype(LISTING_DTYPE).tobytes(),
            "listing_names": self.names,
            "listing_name_ends": self.ends.astype(LISTING_DTYPE).tobytes(),
        }

    @classmethod
    def from_properties(cls, ids: bytes, names: str, ends: bytes) -> TypeListing:
        return cls(np.frombuffer(ids, dtype=LISTING_DTYPE), names, np.frombuffer(ends, dtype=LISTING_DTYPE))

    @property
    def nbytes(self) -> int:
        """Roughly what the listing holds in memory (a cache weighs it by this)."""
        return int(self.ids.nbytes + self.ends.nbytes + len(self.names))

    def matching(self, text: str, limit: int, mode: str = "contains") -> np.ndarray:
        """The ids of the first ``limit`` objects whose name matches ``text``, in listing order."""
        return self.ids[self.places(text, limit, mode)]

    def places(self, text: str, limit: int, mode: str = "contains") -> list[int]:
        """Where in the listing the first ``limit`` objects are whose name holds ``text`` anywhere
        (``mode`` "contains"), starts with it ("prefix") or is it ("exact")."""
        if not text:
            return list(range(min(limit, self.ids.size)))
        found: list[int] = []
        at = self.names.find(text)
        while at >= 0 and len(found) < limit:
            # The object whose name holds position ``at`` (names of length 0 hold none).
            k = int(np.searchsorted(self.ends, at, side="right"))
            start, end = (int(self.ends[k - 1]) if k else 0), int(self.ends[k])
            inside = at + len(text) <= end
            if inside and (mode == "contains" or (at == start and (mode == "prefix" or at + len(text) == end))):
                found.append(k)
            # Either way the next candidate starts in a later name: a match that crosses the end
            # of name k started after every position where one fits inside it, and a first match
            # inside it that is not at its start is the only one a prefix could have been.
            at = self.names.find(text, end)
        return found
