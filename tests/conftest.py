"""Fixtures for the whole suite. Each group lives in tests/support/ and is pulled in here."""

from tests.support.neo4j_fixtures import database, isolated_heapdb_home, neo4j_server_settings  # noqa: F401
from tests.support.v8_fixtures import leak_snapshot, leak_snapshots, memlab_oracle, node_tools  # noqa: F401
