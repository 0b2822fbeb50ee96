"""Where a reader's big arrays live: in memory while they fit a budget, else in memory-mapped files.

A reader asks :class:`Arrays` for each array the size of the heap (the graph's columns, its own
per-object rows, its id table). While the arrays asked for so far add up to at most the budget
(``HEAPDB_READ_MEMORY``, by default a share of the memory available when the read starts), each is
an ordinary numpy array. Past it, each further one is backed by a file in ``spill/`` under heapdb's
cache directory, memory-mapped: the kernel keeps in memory the pages in use and writes the others
back to the file, so a heap dump whose arrays do not fit is read anyway, at disk speed, rather
than the process being killed. The answers are the same, only where the bytes live differs.

A file is deleted as soon as it is mapped: the mapping keeps its blocks until the array (the graph
holding it) is freed, and nothing is left behind when the process ends, fails or is killed. The
directory made for one read is removed when the read ends.
"""

from __future__ import annotations

import mmap
import os
import shutil
import tempfile
from pathlib import Path
from types import TracebackType

import numpy as np

from heapdb import config, settings


def available_memory() -> int:
    """The memory the kernel says a new process could take without swapping (``MemAvailable``), or
    the physical memory where it does not say."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def read_budget() -> int:
    """The bytes of arrays a reader keeps in memory (the setting, else its default)."""
    given = settings.READ_MEMORY.get()
    return given if given is not None else available_memory() * settings.READ_MEMORY_SHARE // 100


class Arrays:
    """The allocator of one read (a context manager: leaving it removes its directory)."""

    def __init__(self, budget: int | None = None) -> None:
        self.budget = read_budget() if budget is None else budget
        self.held = 0  # bytes of the arrays handed out, in memory or not (never lowered: a bound)
        self.spilled = 0  # bytes handed out as mapped files
        self._directory: Path | None = None

    def __enter__(self) -> Arrays:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._directory is not None:
            shutil.rmtree(self._directory, ignore_errors=True)
            self._directory = None

    def zeros(self, count: int, dtype: type | np.dtype) -> np.ndarray:
        """``np.zeros(count, dtype)``, in memory or in a mapped file (see the module docstring)."""
        size = int(count) * np.dtype(dtype).itemsize
        self.held += size
        if self.held <= self.budget or size == 0:
            return np.zeros(count, dtype=dtype)
        self.spilled += size
        if self._directory is None:
            root = config.cache_dir() / "spill"
            root.mkdir(parents=True, exist_ok=True)
            self._directory = Path(tempfile.mkdtemp(prefix=f"read-{os.getpid()}-", dir=root))
        fd, name = tempfile.mkstemp(dir=self._directory, suffix=".array")
        try:
            os.ftruncate(fd, size)  # a sparse file reads as zeros
            mapped = mmap.mmap(fd, size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        finally:
            os.close(fd)
            os.unlink(name)
        # A plain ndarray over the mapping (numba takes no memmap subclass); it keeps the mapping alive.
        return np.frombuffer(mapped, dtype=dtype, count=count)

    def full(self, count: int, value: int, dtype: type | np.dtype) -> np.ndarray:
        array = self.zeros(count, dtype)
        if value:
            array.fill(value)
        return array
