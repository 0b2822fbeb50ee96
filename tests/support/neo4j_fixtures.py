"""One real Neo4j for the whole test session, managed by heapdb itself.

The session gets its own XDG data and config directories (so tests never touch a person's own
heapdb instance or config) and free ports. Maven's ~/.m2 is shared, so after the first run the
install is only a classpath lookup. Tests that write data use unique snapshot tags and leave them (see CONTRIBUTING.md, "Tests").
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from heapdb import config, db, neo4j_server, settings
from heapdb.queries.questions import Questions
from tests.support.snapshots import Loaded, load_snapshot
from tests.support.tiers import needs

CONNECTION_VARIABLES = ("NEO4J_URI", "NEO4J_USER", "NEO4J_PASSWORD", "NEO4J_DATABASE")
# The garbage collector of every Neo4j the tests start: serial, a third less of Neo4j's CPU per load
# than G1 on a suite whose time is Neo4j's CPU (heapdb.settings.GARBAGE_COLLECTORS).
TEST_GC = os.environ.get("HEAPDB_TEST_NEO4J_GC", "serial")
LEAK_LABELS = ("baseline", "target", "final")  # tests.support.v8_fixtures.leak_snapshots, oldest first


@pytest.fixture(scope="session", autouse=True)
def isolated_heapdb_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Point heapdb's XDG directories at a temporary home for the whole session."""
    home = tmp_path_factory.mktemp("heapdb-home")
    saved = {
        k: os.environ.get(k) for k in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", settings.WARM_UP.name, *CONNECTION_VARIABLES)
    }
    os.environ["XDG_DATA_HOME"] = str(home / "data")
    os.environ["XDG_CONFIG_HOME"] = str(home / "config")
    # No start-up warm-up in the services the tests start: it would read every snapshot the other
    # tests left, in the background of each (tests/test_service_warmup.py asks for it).
    os.environ[settings.WARM_UP.name] = "0"
    for variable in CONNECTION_VARIABLES:
        os.environ.pop(variable, None)  # the tests use the managed instance, whatever the shell says
    yield home
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="session")
@needs("neo4j")
def neo4j_server_settings(isolated_heapdb_home: Path) -> Iterator[config.ManagedSettings]:
    """A running managed Neo4j on free ports; stopped at the end of the session.

    3 GB of heap, not 1: with 1 GB, Neo4j's long-lived half (about 500 MB by mid-run) left G1 an eden
    of 18 MB, and the JVM spent a third of its CPU collecting (1,674 young collections and 908
    concurrent cycles in 13 minutes), on a suite whose time is Neo4j's CPU. Users' instances get a
    sixth of the machine's memory by default (`heapdb neo4j install --heap`). The serial collector
    (TEST_GC)."""
    with neo4j_server.running_on_free_ports(
        heap=os.environ.get("HEAPDB_TEST_NEO4J_HEAP", "3g"),
        pagecache=os.environ.get("HEAPDB_TEST_NEO4J_PAGECACHE", "1g"),
        gc=TEST_GC,
    ) as settings:
        yield settings


@pytest.fixture(scope="session")
@needs("neo4j")
def database(neo4j_server_settings: config.ManagedSettings) -> Iterator[db.Database]:
    """A heapdb :class:`~heapdb.db.Database` connected to the session's Neo4j."""
    with db.connect(start_managed=False) as database:
        yield database


@pytest.fixture(scope="session")
def leak_series_loaded(database: db.Database, leak_snapshots: dict[str, Path]) -> dict[str, Loaded]:
    """The leak program's three snapshots (``baseline``, ``target``, ``final``), loaded without rules
    once per worker, oldest first, for the modules that only read them.

    A load of one costs Neo4j some ten seconds of CPU, on a suite whose time is Neo4j's CPU. A module
    that changes its snapshots (their tags, rules or analysis, or drops them) loads its own; one that
    changes a property for a moment puts it back before it ends. The three are loaded together so
    that, whichever module asks first, they stay in load order."""
    return {label: load_snapshot(database, leak_snapshots[label], f"leak-{label}") for label in LEAK_LABELS}


@pytest.fixture(scope="session")
def leak_loaded(leak_series_loaded: dict[str, Loaded]) -> Loaded:
    """The ``final`` one of :func:`leak_series_loaded`."""
    return leak_series_loaded["final"]


@pytest.fixture(scope="module")
def ask(database: db.Database) -> Questions:
    """The questions over the test database, without a cache, as the CLI asks them."""
    return Questions(database, timeout=60)


@pytest.fixture(scope="module")
def client(database: db.Database) -> TestClient:
    """The service over the test database, without a token; one a module, so each module's answers
    are cached apart from the others'."""
    from heapdb.service.app import create_app  # the service's imports only where a test asks for it

    return TestClient(create_app(token=""))
