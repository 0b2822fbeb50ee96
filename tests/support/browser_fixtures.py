"""Session-scoped pytest fixtures for the Chromium snapshots of the inspection tests.

Import them in ``tests/conftest.py``. A snapshot is captured once per test run, however many
workers run it (:mod:`tests.support.once`): a capture starts Chromium (and, for the React app,
bundles it with esbuild first), which costs seconds a module each. Each is then loaded once per
worker for the modules that only read it, as the leak program's snapshots are
(:func:`tests.support.neo4j_fixtures.leak_series_loaded`):

- ``dom_page_snapshot``: heapgen.chromium's ``DETACHED_DOM_PAGE`` (detached panels, a dialog, a
  cached row), and ``dom_page_loaded``, its load;
- ``react_snapshots``: the React app of ``tests/js/react_leak.jsx``, ``{"mounted", "unmounted"}``
  (before and after its leaking panels close), and ``react_loaded``, both loaded, in that order.

A module that changes a snapshot it stores loads a copy of its own under another tag.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from heapdb.db import Database
from tests.support.chromium import write_detached_dom_snapshot, write_react_snapshots
from tests.support.once import once
from tests.support.snapshots import Loaded, load_snapshot
from tests.support.tiers import needs

REACT_LABELS = ("mounted", "unmounted")  # heapgen.chromium.write_react_snapshots, in the order taken


@pytest.fixture(scope="session")
@needs("chromium")
def dom_page_snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return Path(once(tmp_path_factory, "chromium-dom", lambda d: str(write_detached_dom_snapshot(d))))


@pytest.fixture(scope="session")
@needs("chromium", "node")
def react_snapshots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    def make(directory: Path) -> dict[str, str]:
        return {label: str(path) for label, path in write_react_snapshots(directory).items()}

    return {label: Path(path) for label, path in once(tmp_path_factory, "chromium-react", make).items()}


@pytest.fixture(scope="session")
def dom_page_loaded(database: Database, dom_page_snapshot: Path) -> Loaded:
    return load_snapshot(database, dom_page_snapshot, "dom")


@pytest.fixture(scope="session")
def react_loaded(database: Database, react_snapshots: dict[str, Path]) -> dict[str, Loaded]:
    return {label: load_snapshot(database, react_snapshots[label], f"react-{label}") for label in REACT_LABELS}
