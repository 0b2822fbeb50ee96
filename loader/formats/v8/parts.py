"""Scanning a chunk of the V8 reader's integer arrays in one part per core, at once.

The ``nodes`` and ``edges`` arrays are most of a snapshot's bytes, and their kernels
(:mod:`.scan`) release the GIL, so a chunk can be cut into parts scanned by several threads. A
part's values go to the places their indexes say, and a part's first index is known before any part
is scanned: the values before it, counted by their commas.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from heapdb.loader.formats.v8.scan import (
    EXPECT_SEPARATOR,
    EXPECT_VALUE,
    S_COUNT,
    S_DONE,
    S_ERROR,
    S_EXPECT,
    S_IN_NUMBER,
    count_commas,
)

# A chunk is scanned in parts when each part gets at least this much.
PART_MIN_BYTES = 1 << 20
# How far past a part's nominal start its first comma is looked for (V8 writes one every few bytes).
_COMMA_SEARCH = 4096

# scan(lo, hi, final, state) -> where it stopped: a kernel of .scan bound to its outputs.
Scan = Callable[[int, int, bool, np.ndarray], int]


def cores() -> int:
    """The processors this process may run on: the integer arrays are scanned in as many parts."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def scan_in_parts(
    scan: Scan, buf: np.ndarray, pos: int, final: bool, state: np.ndarray, parts: int, pool: ThreadPoolExecutor
) -> int:
    """``scan`` over ``buf[pos:]`` in ``parts`` parts at once (all but the first on ``pool``);
    returns where it stopped, and leaves in ``state`` what one scan would have.

    The parts are cut just after commas, and each part's first value index is the state's count
    plus the commas before it, so every part knows where its values go before any is scanned
    (the kernels release the GIL). The parts' outcomes are then taken in file order, as one scan
    would have met them: the first error or the array's end wins, and the last part's state is
    carried on to the next chunk. A part after the array's end can only fail or write past the
    declared count, which the kernels refuse, so nothing it did is kept.
    """
    end = buf.shape[0]
    if final or parts < 2 or end - pos < parts * PART_MIN_BYTES:
        return scan(pos, end, final, state)
    cuts = [pos]
    for k in range(1, parts):
        at = pos + (end - pos) * k // parts
        commas = np.flatnonzero(buf[at : at + _COMMA_SEARCH] == 44)
        if not commas.shape[0]:  # a long run of blanks: no cut here
            return scan(pos, end, final, state)
        cuts.append(at + int(commas[0]) + 1)
    cuts.append(end)
    states = [state] + [np.zeros_like(state) for _ in range(parts - 1)]
    # Each comma follows one value; only a value stored before this window (one that ended at a
    # blank) is followed by a comma that is not in the count of values to come.
    stored = int(not state[S_IN_NUMBER] and state[S_EXPECT] == EXPECT_SEPARATOR)
    for k in range(1, parts):
        states[k][S_COUNT] = states[k - 1][S_COUNT] + count_commas(buf, cuts[k - 1], cuts[k]) - stored
        states[k][S_EXPECT] = EXPECT_VALUE
        stored = 0
    starts = [int(st[S_COUNT]) for st in states]
    later = [pool.submit(scan, cuts[k], cuts[k + 1], False, states[k]) for k in range(1, parts)]
    stops = [scan(cuts[0], cuts[1], False, states[0])] + [future.result() for future in later]
    for k in range(parts - 1):
        st = states[k]
        # A clean part stops at its cut, with the next part's first index; should one not (it
        # cannot), what it did is kept and the rest is scanned again from where it stopped.
        if st[S_ERROR] or st[S_DONE] or stops[k] != cuts[k + 1] or st[S_COUNT] != starts[k + 1]:
            state[:] = st
            return stops[k]
    state[:] = states[-1]
    return stops[-1]
