"""Progress bars for long work, on stderr, silent when stderr is not a terminal."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from tqdm import tqdm

# A reader's progress callback: called with the number of bytes consumed since its last call.
ByteProgress = Callable[[int], None]


def enabled() -> bool:
    """Bars show on a terminal, never in pipes or CI logs; HEAPDB_PROGRESS=1 or 0 forces it."""
    forced = os.environ.get("HEAPDB_PROGRESS")
    if forced is not None:
        return forced not in ("0", "", "false", "no")
    return sys.stderr.isatty()


@contextmanager
def bar(description: str, total: int | None = None, unit: str = "it", unit_scale: bool = True) -> Iterator[tqdm]:
    """A tqdm bar with heapdb's defaults; call ``.update(n)`` on what it yields."""
    with tqdm(
        total=total,
        desc=description,
        unit=unit,
        unit_scale=unit_scale,
        disable=not enabled(),
        file=sys.stderr,
        dynamic_ncols=True,
        leave=True,
    ) as b:
        yield b
