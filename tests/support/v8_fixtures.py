"""Session-scoped pytest fixtures for real V8 snapshots and memlab (see :mod:`tests.support.v8`).

Import them in ``tests/conftest.py``. Everything is created once per test run, however many
workers run it (:mod:`tests.support.once`):

- ``node_tools``: ``tests/js`` with its npm dependencies installed (``npm ci`` on demand);
- ``leak_snapshots``: ``{"baseline", "target", "final"}`` → paths of three snapshots of ``leak.js``
  (sizes 100, 200, 300 leak units, so each one leaks more than the one before);
- ``leak_snapshot``: the ``final`` one of those;
- ``memlab_oracle``: a function ``path -> MemlabOracle`` that runs memlab once per snapshot path
  (cached for the session).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.once import exclusive, once
from tests.support.tiers import needs
from tests.support.v8 import (
    MemlabOracle,
    ensure_node_tools,
    load_memlab_oracle,
    run_memlab_oracle,
    write_leak_snapshots,
)

LEAK_SIZES = (100, 200, 300)

# Owner buckets for leak.js's snapshots (docs/rules.md): the program's leaked classes, and the
# engine's objects (V8's "(...)" and "system / ..." types) in the other.
BUCKET_RULES = """\
version = 1

[[bucket]]
name = "app"
object.type = ["LeakyCache", "LeakedItem", "LeakedBuffer"]

[[bucket]]
name = "engine"
object.type = [{ glob = "(*)" }, { glob = "system / *" }]
"""


@pytest.fixture(scope="session")
@needs("node")
def node_tools() -> Path:
    return ensure_node_tools()


@pytest.fixture(scope="session")
def leak_snapshots(tmp_path_factory: pytest.TempPathFactory, node_tools: Path) -> dict[str, Path]:
    def make(directory: Path) -> dict[str, str]:
        return {label: str(path) for label, path in write_leak_snapshots(directory, LEAK_SIZES).items()}

    return {label: Path(path) for label, path in once(tmp_path_factory, "v8-leak", make).items()}


@pytest.fixture(scope="session")
def leak_snapshot(leak_snapshots: dict[str, Path]) -> Path:
    return leak_snapshots["final"]


@pytest.fixture(scope="session")
def memlab_oracle(node_tools: Path) -> Callable[[str | os.PathLike[str]], MemlabOracle]:
    cache: dict[Path, MemlabOracle] = {}

    def oracle(snapshot: str | os.PathLike[str]) -> MemlabOracle:
        key = Path(snapshot).resolve()
        if key not in cache:
            # memlab writes its answer beside the snapshot: another worker may have made it already.
            answer = key.with_name(key.name + ".memlab")
            with exclusive(key.with_name(key.name + ".memlab.lock")):
                if not answer.exists():
                    partial = answer.with_name(answer.name + ".partial")  # never read half written
                    run_memlab_oracle(key, partial)
                    partial.rename(answer)
            cache[key] = load_memlab_oracle(answer)
        return cache[key]

    return oracle
