"""The one ranking of objects by what they retain, shared by every top list.

Order: retained size descending, then object id ascending, so ties go to the lower id and the
answer is the same whoever asks (``heapdb analyze``, the ranks stored at load, the ``top`` query).
"""

from __future__ import annotations

import numpy as np


def largest_first(
    retained_size: np.ndarray, ids: np.ndarray, candidates: np.ndarray, count: int | None = None
) -> np.ndarray:
    """``candidates`` (node indexes) by retained size descending, then id; only the first ``count`` if given."""
    if count is not None and count <= 0:
        return candidates[:0]
    sizes = retained_size[candidates]
    if count is not None and candidates.size > count:
        # Select before sorting so the sort touches `count` values, not millions: everything above
        # the count-th largest size, then the lowest ids among those equal to it.
        kth = np.partition(sizes, sizes.size - count)[sizes.size - count]
        above = np.flatnonzero(sizes > kth)
        tied = np.flatnonzero(sizes == kth)
        tied = tied[np.argsort(ids[candidates[tied]], kind="stable")[: count - above.size]]
        chosen = np.concatenate([above, tied])
        candidates, sizes = candidates[chosen], sizes[chosen]
    return candidates[np.lexsort((ids[candidates], -sizes))]


# Objects ranked per slice by :func:`largest_first_of`: its temporaries stay a few MB on 10^7 objects.
_SLICE = 1 << 18


def largest_first_of(retained_size: np.ndarray, ids: np.ndarray, keep: np.ndarray, count: int) -> np.ndarray:
    """The first ``count`` objects ``keep`` (bool[n]) marks, in :func:`largest_first`'s order.

    Ranked slice by slice, then the slices' winners together: the first ``count`` overall are among
    them, and no index or size array of all the objects is ever made (on a large heap those
    temporaries, not the analysis, would set a command's peak memory).
    """
    if count <= 0:
        return np.zeros(0, dtype=np.int64)
    n = keep.shape[0]
    winners = [
        largest_first(retained_size, ids, np.flatnonzero(keep[lo : lo + _SLICE]) + lo, count)
        for lo in range(0, n, _SLICE)
    ]
    return largest_first(retained_size, ids, np.concatenate(winners) if winners else np.zeros(0, np.int64), count)
