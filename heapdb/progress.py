"""Progress bars for long work, on stderr, silent when stderr is not a terminal."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

from heapdb import settings

# A reader's progress callback: called with the number of bytes consumed since its last call. What it
# returns is ignored (a bar's ``update`` returns whether it redrew).
ByteProgress = Callable[[int], object]

# When set, every bar also keeps this file up to date with one JSON object, {"phase": its
# description, "done": n, "total": total or null}: how the service follows a load it runs as a child
# process (heapdb.service.jobs), whatever the terminal. Rewritten whole (atomically) at most every
# MIRROR_SECONDS, so a reader never sees half a line.
PROGRESS_FILE_VARIABLE = settings.PROGRESS_FILE.name
MIRROR_SECONDS = 0.5


def enabled() -> bool:
    """Bars show on a terminal, never in pipes or CI logs; HEAPDB_PROGRESS=1 or 0 forces it."""
    forced = settings.PROGRESS.get()
    return sys.stderr.isatty() if forced is None else forced


class Bar(Protocol):
    """What :func:`bar` yields: a tqdm bar, or :class:`Silent` when bars are off."""

    def update(self, n: float | None = 1) -> bool | None: ...


class Silent:
    """A bar that draws and counts nothing: what :func:`bar` yields when bars are off, so that a
    command run in a pipe, a CI job or a benchmark does not import tqdm (0.03 s) for nothing."""

    def update(self, n: float | None = 1) -> bool | None:
        return None


@contextmanager
def bar(description: str, total: int | None = None, unit: str = "it", unit_scale: bool = True) -> Iterator[Bar]:
    """A tqdm bar with heapdb's defaults; call ``.update(n)`` on what it yields."""
    mirror = settings.PROGRESS_FILE.get()
    if not enabled():
        silent = Silent()
        if mirror:
            _mirror_to(mirror, silent, description, total)
        yield silent
        return
    from tqdm import tqdm

    with tqdm(
        total=total,
        desc=description,
        unit=unit,
        unit_scale=unit_scale,
        file=sys.stderr,
        dynamic_ncols=True,
        leave=True,
    ) as b:
        if mirror:
            _mirror_to(mirror, b, description, total)
        yield b


def _mirror_to(path: Path, b: Bar, description: str, total: int | None) -> None:
    """Make ``b.update`` also write the bar's state to ``path`` (a silent bar counts nothing itself)."""
    update = b.update
    done = 0
    written = 0.0

    def write() -> None:
        state = json.dumps({"phase": description, "done": done, "total": total})
        tmp = f"{path}.tmp"
        try:
            with open(tmp, "w") as f:
                f.write(state)
            os.replace(tmp, path)
        except OSError:  # progress is a courtesy: never fail the work over it
            pass

    def mirrored(n: float | None = 1) -> bool | None:
        nonlocal done, written
        done += int(n or 0)
        if time.monotonic() - written >= MIRROR_SECONDS:
            written = time.monotonic()
            write()
        return update(n)

    write()
    setattr(b, "update", mirrored)  # noqa: B010 - an instance attribute, where mypy refuses method assignment
