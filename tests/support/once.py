"""Work done once per test run, whatever the number of pytest-xdist workers.

``scripts/test.sh`` runs the suite on several workers, each a process with its own session
fixtures (and its own Neo4j). A file that takes a real runtime long to make (Node's leak
snapshots, memlab's analysis of them) is made by the first worker that needs it, in a directory
all workers share, while the others wait on a lock; they then read the same file, so every
worker tests the same snapshot. Without xdist the shared directory is the run's own.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest


def shared_directory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory of this test run that every worker sees: xdist gives each worker its own base
    temporary directory, all under the run's one."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@contextlib.contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if missing) for the ``with`` block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def once(tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], Any]) -> Any:
    """``make(directory)``'s answer (JSON-able; paths as strings), computed once per test run.

    The first caller runs ``make`` in ``<shared>/<name>/`` and records its answer; every later
    caller, in this worker or another, reads the record. A ``make`` that failed leaves no record,
    so the next caller tries again and sees the same error.
    """
    directory = shared_directory(tmp_path_factory) / name
    record = directory.with_name(name + ".json")
    with exclusive(directory.with_name(name + ".lock")):
        if not record.exists():
            directory.mkdir(parents=True, exist_ok=True)
            answer = make(directory)
            record.write_text(json.dumps(answer))
    return json.loads(record.read_text())
