"""Matching the objects of two snapshots by id: the one rule behind ``diff --by object`` and the
id checks of ``leaks --by id``.

Two objects are the same object when they have the same id and the same type. An id found with
another type is an id reused for a new object (Luau addresses, snap.bin addresses) or a sign that the
snapshots come from different processes, so it counts as one object freed and one new. The stored
query ``leaks`` applies the same rule in Cypher (it has to stand alone in the Neo4j Browser);
:mod:`heapdb.queries.leaks_by_id` applies it to the id listings stored at load.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from heapdb.loader.store.listings import listing_ids


@dataclass(frozen=True)
class ObjectColumns:
    """A snapshot's objects (those the root reaches) as arrays; ``type`` indexes ``type_names``."""

    ids: np.ndarray
    type: np.ndarray
    type_names: list[str]
    self_size: np.ndarray
    retained_size: np.ndarray

    @property
    def nbytes(self) -> int:
        """What the columns hold in memory, for a cache's byte budget (type names are few)."""
        return self.ids.nbytes + self.type.nbytes + self.self_size.nbytes + self.retained_size.nbytes

    @classmethod
    def from_rows(cls, objects: Sequence[Sequence[object]]) -> ObjectColumns:
        """From ``[id, type, self_size, retained_size]`` rows (stored query ``object-columns``)."""
        ids, types, self_sizes, retained_sizes = zip(*objects) if objects else ((), (), (), ())
        type_code: dict[object, int] = {}
        return cls(
            ids=np.array(ids, dtype=np.int64),
            type=np.fromiter(
                (type_code.setdefault(t, len(type_code)) for t in types), dtype=np.int64, count=len(types)
            ),
            type_names=[str(t) for t in type_code],
            self_size=np.array(self_sizes, dtype=np.int64),
            retained_size=np.array(retained_sizes, dtype=np.int64),
        )

    @classmethod
    def from_listings(cls, rows: Sequence[dict[str, Any]], store_version: int) -> ObjectColumns | None:
        """From the per-type id listings (stored query ``id-listings``) of a snapshot stored at
        ``store_version``: ids and types only, the sizes zero; None when a listing is missing (a
        snapshot stored before listings, or pruned)."""
        if any(r["ids"] is None for r in rows):
            return None
        parts = [listing_ids(r["ids"], store_version) for r in rows]
        ids = np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, dtype=np.int64)
        zero = np.zeros(ids.size, dtype=np.int64)
        return cls(
            ids=ids,
            type=np.repeat(np.arange(len(parts), dtype=np.int64), [p.size for p in parts]),
            type_names=[str(r["type"]) for r in rows],
            self_size=zero,
            retained_size=zero,
        )


def pair(old: ObjectColumns, new: ObjectColumns) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each object of ``new``: the index in ``old`` of the object with its id (any index where
    there is none), whether there is one, and whether that one has the same type (the same object).
    Ids are unique within a snapshot, so a search in the sorted ids pairs them."""
    if old.ids.size == 0:
        nothing = np.zeros(new.ids.size, dtype=bool)
        return np.zeros(new.ids.size, dtype=np.int64), nothing, nothing
    order = np.argsort(old.ids, kind="stable")
    candidate = order[np.minimum(np.searchsorted(old.ids[order], new.ids), old.ids.size - 1)]
    same_id = old.ids[candidate] == new.ids
    old_names = np.array(old.type_names, dtype=object)[old.type[candidate]]
    same_type = same_id & (old_names == np.array(new.type_names, dtype=object)[new.type])
    return candidate, same_id, same_type
