"""Session-scoped pytest fixtures for real V8 snapshots and memlab (see :mod:`tests.support.v8`).

Import them in ``tests/conftest.py``. Everything is created once per test run under pytest's
temporary directory:

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

from tests.support.tiers import needs
from tests.support.v8 import MemlabOracle, ensure_node_tools, run_memlab_oracle, write_leak_snapshots

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
    return write_leak_snapshots(tmp_path_factory.mktemp("v8-leak"), LEAK_SIZES)


@pytest.fixture(scope="session")
def leak_snapshot(leak_snapshots: dict[str, Path]) -> Path:
    return leak_snapshots["final"]


@pytest.fixture(scope="session")
def memlab_oracle(node_tools: Path) -> Callable[[str | os.PathLike[str]], MemlabOracle]:
    cache: dict[Path, MemlabOracle] = {}

    def oracle(snapshot: str | os.PathLike[str]) -> MemlabOracle:
        key = Path(snapshot).resolve()
        if key not in cache:
            cache[key] = run_memlab_oracle(key)
        return cache[key]

    return oracle
