"""Map snap.bin object ids (arbitrary int64: addresses, counters) to node indexes.

A hash table with open addressing, built and probed by numba kernels. A binary search over sorted
ids costs some twenty cache misses per reference on a large heap; a hash probe costs one or two,
which is the difference between seconds and a minute on 100M references with address-like ids.
Kept apart from the snap.bin writer so that a process capturing its own heap never imports numba.
"""

from __future__ import annotations

import numba
import numpy as np

_FIBONACCI = np.uint64(0x9E3779B97F4A7C15)  # 2^64 / golden ratio: spreads aligned addresses evenly


def table_bits(n: int) -> int:
    """The bits of a table for ``n`` ids: a power of two at least 1.5 times the id count keeps probe
    chains short (load factor <= 2/3)."""
    return max(1, int(np.ceil(np.log2(max(n * 3 // 2, 2)))))


class IdIndex:
    """Node index of each object id; built once per file, probed for every reference, root and name."""

    def __init__(self, ids: np.ndarray) -> None:
        self.bits = table_bits(ids.shape[0])
        self.keys, self.slots, self.first, self.second = _build(ids.astype(np.int64, copy=False), self.bits)

    def duplicate(self) -> tuple[int, int] | None:
        """The indexes of the first id found twice (earlier, later), or None if all ids are unique."""
        return None if self.second < 0 else (int(self.first), int(self.second))

    def lookup(self, wanted: np.ndarray, out: np.ndarray) -> int:
        """Write the node index of each wanted id into ``out`` (int32); return the position of the first
        id no object has, or -1 if all were found."""
        return int(_lookup(self.keys, self.slots, self.bits, wanted.astype(np.int64, copy=False), out))


@numba.njit(cache=True, nogil=True)
def _build(
    ids: np.ndarray, bits: int
) -> tuple[np.ndarray, np.ndarray, np.int64, np.int64]:  # pragma: no cover - compiled
    size = 1 << bits
    mask = size - 1
    shift = np.uint64(64 - bits)
    keys = np.zeros(size, np.int64)
    slots = np.full(size, -1, np.int32)  # node indexes fit in int32, as HeapGraph's edge_to
    for i in range(ids.shape[0]):
        key = ids[i]
        j = np.int64((np.uint64(key) * _FIBONACCI) >> shift)
        while slots[j] != -1:
            if keys[j] == key:
                return keys, slots, np.int64(slots[j]), np.int64(i)
            j = (j + 1) & mask
        keys[j] = key
        slots[j] = i
    return keys, slots, np.int64(-1), np.int64(-1)


@numba.njit(cache=True, nogil=True)
def _lookup(
    keys: np.ndarray, slots: np.ndarray, bits: int, wanted: np.ndarray, out: np.ndarray
) -> int:  # pragma: no cover
    mask = (1 << bits) - 1
    shift = np.uint64(64 - bits)
    for k in range(wanted.shape[0]):
        key = wanted[k]
        j = np.int64((np.uint64(key) * _FIBONACCI) >> shift)
        while True:
            slot = slots[j]
            if slot == -1:
                return k
            if keys[j] == key:
                out[k] = slot
                break
            j = (j + 1) & mask
    return -1
