"""Sending a load's rows to Neo4j in batches, each in its own write transaction, several at a time.

Shared by every step that writes many rows (:mod:`.writer`'s objects and references, :mod:`.groups`'
groups and listings), so that all of them overlap building the next batch with Neo4j writing the
previous one in the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from heapdb.loader.store import pace

DEFAULT_BATCH = 20_000  # rows per write transaction


def chunks(total: int, size: int) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of each stretch of at most ``size`` of ``total`` rows, in order."""
    for start in range(0, total, size):
        yield start, min(total, start + size)


def run_batches(send: Callable[[Any], int], batches: Iterator[Any], bar: Any, workers: int) -> int:
    """``send`` each batch (in its own write transaction), ``workers`` at a time; how many rows went.
    Each worker makes way for the questions of a busy service after each batch (:mod:`.pace`)."""
    written = 0

    def paced(batch: Any) -> int:
        started = time.monotonic()
        rows = send(batch)
        pace.after_write(time.monotonic() - started)
        return rows

    # Building the next batch's rows overlaps with Neo4j writing the previous one.
    with ThreadPoolExecutor(max_workers=workers) as pool:
        pending = []
        for batch in batches:
            pending.append(pool.submit(paced, batch))
            while len(pending) >= workers * 2:
                done = pending.pop(0).result()
                written += done
                bar.update(done)
        for future in pending:
            done = future.result()
            written += done
            bar.update(done)
    return written
