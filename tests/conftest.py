"""Fixtures for the whole suite. Each group lives in tests/support/ and is pulled in here."""

from tests.support.neo4j_fixtures import database, isolated_heapdb_home, neo4j_server_settings  # noqa: F401
