"""Matching the objects of two snapshots by id: the one rule behind ``diff --by object`` and the
id checks of ``leaks --by id``.

Two objects are the same object when they have the same id and the same type. An id found with
another type is an id reused for a new object (Luau addresses, snap.bin addresses) or a sign that the
snapshots come from different processes, so it counts as one object freed and one new. The stored
query ``leaks`` applies the same rule in Cypher (it has to stand alone in the Neo4j Browser).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ObjectColumns:
    """A snapshot's objects (those the root reaches) as arrays; ``type`` indexes ``type_names``."""

    ids: np.ndarray
    type: np.ndarray
    type_names: list[str]
    self_size: np.ndarray
    retained_size: np.ndarray

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
